"""Projected calls, tokens and cost before any paid call, and the max_cost_usd check."""
import pytest

from lib.config import load_profile
from lib.designs import Question
from lib.designs.agent import AgentDesign
from lib.designs.dense import DenseDesign
from lib.designs.multiquery import MultiQueryDesign
from lib.errors import ProfileError
from lib.llm import LLMError, LLMRequest, LLMResponse, RecordedLLM, RecordStore
from lib.llm.anthropic_backend import AnthropicBackend
from lib.llm.base import load_prices
from lib.llm.cost import BudgetExceeded, check_budget, combine, project_cost, project_designs, request_chars
from tests.fakes import FakeClient, ListSearcher

HAIKU, SONNET = "claude-haiku-5-5", "claude-sonnet-5-5"
P = load_prices()


def req(i, chars=400, max_tokens=200, kind="rewrite"):
    return LLMRequest(kind, "s" * 100, (("user", f"{i:04d}" + "u" * (chars - 104)),), max_tokens, 0.0, 1)


def test_from_prompt_sizes_when_nothing_is_recorded():
    reqs = [req(i) for i in range(10)]
    assert request_chars(reqs[0]) == 400
    proj = project_cost(reqs, HAIKU)
    assert (proj["calls"], proj["input_tokens"], proj["output_tokens"]) == (10, 1000, 2000)  # chars/4, max_tokens
    p = P[HAIKU]
    assert proj["usd"] == pytest.approx((1000 * p["input_per_mtok"] + 2000 * p["output_per_mtok"]) / 1e6)
    assert proj["batch_usd"] == pytest.approx(proj["usd"] / 2)
    assert (proj["input_basis"], proj["output_basis"]) == ("characters / 4", "max_tokens")
    assert proj["prices_date"] == "2026-11-30"


def test_from_counts():
    proj = project_cost({"calls": 300, "input_tokens": 150_000, "output_tokens": 30_000}, SONNET)
    assert proj["usd"] == pytest.approx((150_000 * 2.0 + 30_000 * 10.0) / 1e6)
    assert proj["batch_usd"] == pytest.approx((150_000 * 1.0 + 30_000 * 5.0) / 1e6)
    chars = project_cost({"calls": 2, "input_chars": 800, "max_tokens": 100}, HAIKU)
    assert (chars["input_tokens"], chars["output_tokens"]) == (200, 200)


def test_a_long_prompt_is_projected_at_the_long_rate():
    long = P[HAIKU]["long_prompt"]
    proj = project_cost([req(0, chars=4 * 120_000, max_tokens=100)], HAIKU)
    assert proj["usd"] == pytest.approx((120_000 * long["input_per_mtok"] + 100 * long["output_per_mtok"]) / 1e6)


def recorded_store(tmp_path, n=3, tokens_in=150, tokens_out=40):
    store = RecordStore(tmp_path)
    for i in range(n):
        store.put(req(1000 + i), LLMResponse("a\nb\nc", tokens_in, tokens_out, 0.4, 0.0, HAIKU, "anthropic"))
    return store


def test_recorded_averages_and_recorded_requests(tmp_path):
    store = recorded_store(tmp_path)
    reqs = [req(i) for i in range(4)] + [req(1000)]  # the last one is recorded: it replays for free
    proj = project_cost(reqs, HAIKU, recorded=store)
    assert (proj["calls"], proj["already_recorded"]) == (4, 1)
    assert proj["input_tokens"] == 4 * 150  # 150 recorded tokens for 400 characters: the same ratio
    assert proj["output_tokens"] == 4 * 40  # the recorded mean, not max_tokens
    assert (proj["input_basis"], proj["output_basis"]) == ("recorded tokens per character", "recorded mean")
    # records of another kind give no averages
    agent = project_cost([req(1, kind="agent")], HAIKU, recorded=store)
    assert (agent["input_tokens"], agent["output_tokens"]) == (100, 200)
    # records may also be given as a list
    listed = project_cost([req(1)], HAIKU, recorded=list(store.records("rewrite").values()))
    assert listed["output_tokens"] == 40


def test_check_budget_names_the_setting():
    proj = project_cost([req(i) for i in range(1000)], SONNET)
    assert check_budget(proj, None) == pytest.approx(proj["usd"])  # no limit
    assert check_budget(proj, 100.0) == pytest.approx(proj["usd"])
    with pytest.raises(BudgetExceeded, match=r"above max_cost_usd = \$1.00.*Nothing was sent.*max_cost_usd") as info:
        check_budget(proj, 1.0)
    assert "1000 calls to claude-sonnet-5-5" in str(info.value) and isinstance(info.value, LLMError)
    assert check_budget(proj, proj["usd"] * 0.6, batch=True) == pytest.approx(proj["batch_usd"])  # half price fits
    both = combine([proj, project_cost([req(1)], HAIKU)])
    assert both["calls"] == 1001 and both["model"] == "claude-haiku-5-5, claude-sonnet-5-5"
    with pytest.raises(BudgetExceeded):
        check_budget([proj, proj], proj["usd"] * 1.5)


def test_max_cost_usd_is_a_profile_setting():
    assert load_profile("offline").max_cost_usd is None
    assert load_profile("offline", max_cost_usd=2.5).max_cost_usd == 2.5
    assert load_profile("article").max_cost_usd == 25.0
    with pytest.raises(ProfileError, match="max_cost_usd"):
        load_profile("offline", max_cost_usd=-1)


def test_project_designs(tmp_path):
    llm = RecordedLLM(AnthropicBackend(HAIKU, client=FakeClient()), RecordStore(tmp_path), backend_name="anthropic",
                      model=HAIKU)
    questions = [Question(f"q{i}", f"question number {i}?", "a") for i in range(5)]
    searcher = ListSearcher({})
    designs = [DenseDesign(searcher), MultiQueryDesign(searcher, llm, "anthropic"),
               AgentDesign(searcher, llm, {i: f"Title {i}" for i in ["x1", "x2", "x3", "x4", "x5", "x6"]}, "anthropic",
                           max_searches=3)]
    out = project_designs(designs, questions, [1, 2, 3])
    assert set(out) == {"multiquery", "agent"}
    assert out["multiquery"]["calls"] == 15
    assert out["agent"]["calls"] == 30  # up to 2 decisions a question
    assert out["agent"]["output_tokens"] == 30 * 150 and "note" in out["agent"]  # the article's max_tokens 150
    assert check_budget(list(out.values()), 1.0) < 0.01  # Haiku 5.5 on short prompts: well under a cent


def test_the_pipeline_projects_and_stops_a_run_over_budget_before_any_call(tmp_path, capsys):
    from lib import pipeline
    from lib.config import load_profile
    from lib.designs import Question
    from lib.designs.multiquery import MultiQueryDesign
    from lib.llm import RecordedLLM, RecordStore
    from lib.llm.anthropic_backend import AnthropicBackend
    from lib.llm.cost import BudgetExceeded
    from tests.fakes import FakeClient, ListSearcher

    client = FakeClient()
    llm = RecordedLLM(AnthropicBackend("claude-haiku-5-5", client=client), RecordStore(tmp_path),
                      backend_name="anthropic", model="claude-haiku-5-5")
    design = MultiQueryDesign(ListSearcher({}), llm, "anthropic")
    qs = [Question(f"q{i}", f"a question about retrieval number {i}", "a") for i in range(50)]
    with pytest.raises(BudgetExceeded, match="max_cost_usd"):
        pipeline.paid_preflight(load_profile("article", max_cost_usd=1e-6), [design], qs, [1, 2, 3])
    assert "multiquery: about 150 calls" in capsys.readouterr().out
    assert client.calls == []
