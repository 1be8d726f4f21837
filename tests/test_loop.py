"""The tool-calling loop: the real loop with the stub models over a small real collection (dense
search with the real embedder), its caps and the forced final answer, the trace and the record,
replay through the run files, the ranked-list rule; native tool use through the Anthropic SDK over
a scripted transport (recorded replies in the Messages API's current format); the local backend's
tool turns (prefix reuse, context per kind) and its grammar, checked against the model's own
tokenizer when the model file is here."""
import ctypes
import json
import math

import httpx2
import numpy as np
import pytest

from lib.config import ROOT, load_profile
from lib.designs import Question, design_names
from lib.designs.loop import Caps, LoopDesign, parse_citations, ranked_list, shown_ids
from lib.errors import ProfileError
from lib.llm import LLMRequest, LLMResponse, RecordedLLM, RecordStore, prompts
from lib.llm.anthropic_backend import AnthropicBackend
from lib.llm.base import cost_usd
from lib.llm.stubs import EchoModel, ScriptedLoopModel, StubLLM
from lib.llm.tools import chat_messages, json_call_text
from lib.runs import read_results, run_design
from lib.search.fusion import rrf
from tests.fakes import ListSearcher, Spy, mock_sdk_client, reply_body

HAIKU = "claude-haiku-5-5"
LOCAL_MODEL = ROOT / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


# ------------------------------------------------------------------------------ a small real collection
@pytest.fixture(scope="module")
def tiny(snapshot, minilm_embedder):
    from lib.search.dense import DenseIndex, DenseSearcher

    papers = [{"id": p.id, "title": p.title, "abstract": p.abstract} for p in snapshot[:60]]
    searcher = DenseSearcher(DenseIndex.build(papers, minilm_embedder, progress=False), minilm_embedder)
    return {p["id"]: (p["title"], p["abstract"]) for p in papers}, searcher


def question(papers, i=7):
    pid = list(papers)[i]
    return Question(f"t{i:03d}", papers[pid][0], pid)


def design(tiny, model, style="local", **caps):
    papers, searcher = tiny
    llm = Spy(model if hasattr(model, "store") else StubLLM(model))
    return LoopDesign(searcher, llm, papers, style, Caps(**caps), k=50), llm


# ------------------------------------------------------------------------------ the stubs, through the real loop
@pytest.mark.parametrize("style", ["local", "anthropic"])
def test_scripted_stub_searches_reads_the_top_hit_and_cites_it(tiny, style):
    papers, searcher = tiny
    q = question(papers)
    d, llm = design(tiny, ScriptedLoopModel(), style)
    r = d.retrieve(q, run=2)
    top = [h.id for h in searcher.search(q.text, 50)]
    assert (r.stop_reason, r.llm_calls, r.searches, r.run) == ("stop", 3, 1, 2)
    assert r.details["citations"] == [top[0]] and r.details["read"] == [top[0]] and r.details["papers_read"] == 1
    assert r.details["citation_form"] == ("answer call" if style == "local" else "cited line")
    assert r.details["final_by"] == "model" and not r.details["forced_final"] and r.details["turns"] == 3
    assert r.queries == [q.text, q.text]  # the question as written, then the one search the model made
    assert r.ranked_ids == top  # the citation is the top hit: citations first, then the fused search
    assert r.tokens_in > 0 and r.tokens_out > 0 and r.details["tokens_used"] == r.tokens_in + r.tokens_out
    # the trace: model turn, the code runs its call, ... the answer, then the code ranks
    assert [(s["kind"], s["decided_by"], s["title"]) for s in r.trace] == [
        ("model", "model", "calls search"), ("code", "model", "search"), ("model", "model", "calls read"),
        ("code", "model", "read"), ("model", "model", "answer"), ("code", "code", "ranked list")]
    assert r.trace[1]["detail"].startswith(f'"{q.text[:30]}') and top[0] in r.trace[3]["detail"]
    assert all(set(s) >= {"step", "kind", "decided_by", "title", "detail", "tokens_in", "tokens_out", "ms"}
               for s in r.trace)
    assert sum(s["tokens_in"] for s in r.trace) == r.tokens_in
    # every turn offered the tools; the local model's grammar lets it read only what search showed
    assert all(req.tools and req.tool_choice == "auto" and req.kind == "loop" for req in llm.requests)
    if style == "local":
        assert llm.requests[0].grammar.startswith("root ::= search | answer")
        assert f'"\\"{top[0]}\\""' in llm.requests[1].grammar and top[5] not in llm.requests[1].grammar
    else:
        assert all(req.grammar is None for req in llm.requests)
        assert [t["name"] for t in llm.requests[0].tools] == ["search", "read"]


def test_the_funnel_follows_the_source_from_shown_to_read_to_cited(tiny):
    """Where a loop loses the source: what its searches showed (kept in the record, or read back from
    the trace of records saved before), what it read and cited, against a baseline's top 5."""
    import dataclasses

    from lib.report.loop import funnel, funnel_table

    papers, searcher = tiny
    q = question(papers)
    top = [h.id for h in searcher.search(q.text, 50)]
    far = Question("t999", q.text, top[20])  # a source the scripted search shows but never in its top 5
    d, _ = design(tiny, ScriptedLoopModel())
    found, lost = d.retrieve(q), d.retrieve(far)
    assert shown_ids(found) == top[:5]
    old = dataclasses.replace(found, details={k: v for k, v in found.details.items() if k != "shown"})
    assert shown_ids(old) == top[:5]  # the same, from the trace
    fq = funnel([old, lost], [q, far], {q.qid: top, far.qid: [top[20]]})
    assert fq[["baseline_top_k", "shown", "read", "cited"]].values.tolist() == [[True] * 4, [True] + [False] * 3]
    assert fq.query_words.tolist() == [len(q.text.split())] * 2  # the scripted model searches with the question
    table = funnel_table(fq)
    assert table.loops.tolist() == [2, 1, 1, 1] and table.share.tolist() == [1.0, 0.5, 0.5, 0.5]


def test_echo_stub_ends_on_its_first_turn_with_nothing_retrieved(tiny):
    q = question(tiny[0])
    d, llm = design(tiny, EchoModel())
    r = d.retrieve(q)
    assert (r.stop_reason, r.llm_calls, r.searches, r.ranked_ids) == ("stop", 1, 0, [])
    assert r.details["citations"] == [] and r.details["answer"] == q.text and r.details["final_by"] == "model"
    assert [s["title"] for s in r.trace] == ["answer", "ranked list"]


def test_the_step_cap_forces_a_final_answer_and_is_named(tiny):
    papers, searcher = tiny
    q = question(papers, 11)
    d, llm = design(tiny, ScriptedLoopModel(), max_steps=2)
    r = d.retrieve(q)
    top = searcher.search(q.text, 1)[0].id
    assert (r.stop_reason, r.llm_calls, r.searches) == ("step_cap", 2, 1)
    assert r.details["forced_final"] and r.details["final_by"] == "model" and r.details["citations"] == [top]
    assert r.details["read"] == []  # the last turn was answer-only: no read
    final = llm.requests[-1]
    assert final.tool_choice == "none" and final.grammar == prompts.loop_grammar(
        [h.id for h in searcher.search(q.text, 5)], final=True)
    assert final.messages[-1][1][-1] == {"type": "text", "text": d._final_text("step_cap")}
    steps = [(s["kind"], s["decided_by"], s["title"]) for s in r.trace]
    assert ("code", "code", "step cap") in steps and ("model", "code", "forced answer") in steps
    assert steps.index(("code", "code", "step cap")) == steps.index(("model", "code", "forced answer")) - 1


def test_the_token_budget_is_a_hard_cap_and_forces_the_answer(tiny):
    """Budgets from tiny to ample: the loop never uses more than its budget, and a budget that stops
    it is named, with the answer asked for when it fits and made by the code (no call) otherwise."""
    q = question(tiny[0], 23)
    seen = set()
    for budget in range(400, 9000, 200):
        d, llm = design(tiny, ScriptedLoopModel(), max_tokens=budget)
        r = d.retrieve(q)
        assert r.details["tokens_used"] <= budget, budget
        assert r.stop_reason in ("stop", "token_budget")
        if r.stop_reason == "token_budget":
            assert r.details["final_by"] in ("model", "code")
            assert any(s["title"] == "token budget" and s["decided_by"] == "code" for s in r.trace)
            if r.details["final_by"] == "code":  # no room for a call: nothing cited, the searches still rank
                assert r.details["citations"] == [] and any(s["title"] == "answer by code" for s in r.trace)
                assert len(llm.requests) == r.llm_calls
            else:
                assert llm.requests[-1].tool_choice == "none" and r.details["forced_final"]
        seen.add((r.stop_reason, r.details["final_by"], r.searches > 0))
    assert ("token_budget", "code", False) in seen       # not even the first turn fits
    assert ("token_budget", "model", False) in seen      # only the answer fits
    assert ("token_budget", "model", True) in seen       # a search, then the forced answer
    assert ("stop", "model", True) in seen               # enough for the whole loop


# ------------------------------------------------------------------------------ scripted tool calls
class Calls:
    """A model that makes the given tool calls in turn (("search", {...}), a reply text, or an
    LLMResponse as it is)."""

    name = model = "calls"

    def __init__(self, *turns):
        self.turns, self.requests = list(turns), []

    def complete(self, request):
        self.requests.append(request)
        t = self.turns.pop(0)
        if isinstance(t, LLMResponse):
            return t
        calls = [] if isinstance(t, str) else [{"id": f"c{len(self.requests)}", "name": t[0], "input": t[1]}]
        return LLMResponse(text=t if isinstance(t, str) else "", tokens_in=100, tokens_out=10, latency_s=0.5,
                           cost_usd=0.0, model="m", backend="calls", stop_reason="tool_use" if calls else "end_turn",
                           tool_calls=calls)


def test_citations_first_then_the_rrf_fusion_of_every_search_no_duplicates():
    assert ranked_list(["c", "x"], [["a", "b", "c"], ["b", "d"]]) == ["c", "x", "b", "a", "d"]
    lists = {"first": ["p1", "p2", "p3", "p4"], "second": ["p5", "p3", "p6"]}
    papers = {f"p{i}": (f"Title {i}", f"Abstract {i}.") for i in range(1, 7)}
    llm = Calls(("search", {"query": "first"}), ("search", {"query": "second"}), ("read", {"paper_id": "p6"}),
                "Both matter.\nCited: p6, p3")
    r = LoopDesign(ListSearcher(lists), llm, papers, "anthropic").retrieve(Question("q1", "q?", "p3"))
    fused = [d for d, _ in rrf([lists["first"], lists["second"]], 60)]
    assert r.ranked_ids == ["p6", "p3"] + [d for d in fused if d not in ("p6", "p3")]
    assert len(r.ranked_ids) == len(set(r.ranked_ids)) and r.searches == 2 and r.queries == ["q?", "first", "second"]
    assert r.details["citations"] == ["p6", "p3"] and r.llm_calls == 4 and r.latency_s >= 2.0  # recorded model time


def test_bad_calls_get_error_results_and_the_loop_goes_on():
    papers = {"a1": ("Title a1", "Abstract a1.")}
    llm = Calls(("read", {"paper_id": "zz"}), ("search", {"query": "  "}), ("fetch", {"url": "x"}),
                ("search", {"query": "a"}), "Cited: a1")
    r = LoopDesign(ListSearcher({"a": ["a1"]}), llm, papers, "anthropic").retrieve(Question("q1", "q?", "a1"))
    assert r.stop_reason == "stop" and r.details["tool_errors"] == 3 and r.details["citations"] == ["a1"]
    results = [b for req in llm.requests[1:4] for b in req.messages[-1][1]]
    assert all(b["type"] == "tool_result" and b["is_error"] for b in results)
    assert "no paper with id 'zz'" in results[0]["content"] and "unknown tool 'fetch'" in results[2]["content"]
    assert [s["title"] for s in r.trace if s["kind"] == "code"][:3] == ["read", "search", "fetch"]


@pytest.mark.parametrize("stop", ["refusal", "max_tokens"])
def test_a_refused_or_cut_reply_ends_the_loop_named(stop):
    cut = LLMResponse(text='{"tool": "search", "query": "x', tokens_in=50, tokens_out=128, latency_s=0.1, cost_usd=0.0,
                      model="m", backend="calls", stop_reason=stop)
    papers = {"a": ("Title a", "Abstract a.")}
    r = LoopDesign(ListSearcher({"a": ["a"]}), Calls(("search", {"query": "a"}), cut), papers, "local").retrieve(
        Question("q1", "q?", "a"))
    assert (r.stop_reason, r.details["final_by"], r.details["citations"], r.ranked_ids) == (stop, "code", [], ["a"])
    assert r.trace[-2]["title"] == f"reply stopped: {stop}"


def test_malformed_tool_arguments_stop_the_loop_at_once_named_through_the_openai_backend(tmp_path):
    """A recorded chat-completions reply (a search), then the same reply with its arguments cut: the
    loop stops at once with its own stop reason (no retry, no step cap), the first search still ranks,
    the arguments are kept, and the result saves and reads back as it is."""
    from tests.test_llm_openai import Server, backend, body

    papers = {f"x{i}": (f"Title {i}", f"Abstract of paper {i}.") for i in range(1, 7)}
    broken = body("loop_search")
    broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"query": "unterminated'
    server = Server((200, {}, body("loop_search")), (200, {}, broken))
    d = LoopDesign(ListSearcher({}), backend(server), papers, "anthropic", Caps(max_steps=8))
    r = run_design(d, [Question("q1", "q?", "x3")], 1, tmp_path, progress=False)[0]
    assert len(server.seen) == 2 and not server.responses  # two turns, not the step cap's eight
    assert (r.stop_reason, r.details["final_by"], r.details["citations"]) == ("bad_tool_arguments", "code", [])
    assert r.details["bad_tool_arguments"] == ['{"query": "unterminated'] and r.llm_calls == 2
    assert r.searches == 1 and r.ranked_ids == ["x1", "x2", "x3", "x4", "x5", "x6"]  # the first search ranks
    assert r.trace[-2]["title"] == "bad tool arguments" and "unterminated" in r.trace[-2]["detail"]
    assert read_results(tmp_path / "loop" / "run1.jsonl") == [r]


def test_a_local_reply_that_opens_a_json_call_it_does_not_finish_is_bad_tool_arguments():
    papers = {"a": ("Title a", "Abstract a.")}
    broken = LLMResponse(text='{"tool": "search", "query": "x', tokens_in=50, tokens_out=9, latency_s=0.1, cost_usd=0.0,
                         model="m", backend="calls", stop_reason="end_turn")
    llm = Calls(("search", {"query": "a"}), broken)
    r = LoopDesign(ListSearcher({"a": ["a"]}), llm, papers, "local").retrieve(Question("q1", "q?", "a"))
    assert (r.stop_reason, r.details["turns"], r.ranked_ids) == ("bad_tool_arguments", 2, ["a"])
    # valid JSON that is no call, and text, are answers as before
    papers = {"a1": ("Title a1", "Abstract a1.")}
    for text in ('{"cited": "a1"}', "Cited: a1"):
        r = LoopDesign(ListSearcher({}), Calls(text), papers, "local").retrieve(Question("q1", "q?", "a1"))
        assert (r.stop_reason, r.details["citations"]) == ("stop", ["a1"]), text


def test_no_saved_loop_reply_is_a_malformed_call_so_every_saved_loop_replays_as_before():
    """The stop on malformed arguments changes a loop only where a reply is one: none of the saved
    records is, so every saved loop replays to the result saved for it."""
    from lib.io import read_jsonl
    from lib.llm.tools import malformed_calls

    files = [f for pattern in ("data/llm_records/**/loop*.jsonl", "results/**/llm_records/**/loop*.jsonl",
                               "examples/**/llm_records/**/loop*.jsonl") for f in ROOT.glob(pattern)]
    replies = [(f, rec) for f in files for rec in read_jsonl(f, torn_tail_ok=True)]
    assert len(replies) > 1000  # the recorded loops of the shipped study and the dev set
    bad = [(f.name, rec["key"]) for f, rec in replies
           if malformed_calls(LLMResponse(**rec["response"]), bool(rec["request"].get("grammar")))]
    assert bad == []


def test_parse_citations():
    known = {"2607.06223", "2607.00412"}
    assert parse_citations("text\nCited: 2607.06223, 2607.00412v2, 2699.99999", known) == (
        ["2607.06223", "2607.00412"], ["2699.99999"], "cited line")
    assert parse_citations("**Cited:** none", known) == ([], [], "none")
    assert parse_citations("I rely on 2607.00412 and then 2607.06223.", known) == (
        ["2607.00412", "2607.06223"], [], "ids in text")
    assert parse_citations("Cited: 2607.06223\nsee 2607.00412\nCited: 2607.00412", known)[0] == ["2607.00412"]


def test_caps_refuse_bad_values():
    with pytest.raises(ValueError, match="at least 2"):
        Caps(max_steps=1)
    with pytest.raises(ValueError, match="style"):
        LoopDesign(ListSearcher({}), Calls(), {}, "claude")


# ------------------------------------------------------------------------------ the record
class SlowScripted(ScriptedLoopModel):
    def complete(self, request):
        r = super().complete(request)
        r.latency_s = 0.25
        return r


class MustNotCall:
    name = model = "none"

    def complete(self, request):
        raise AssertionError("a saved or recorded answer was asked of the model again")


def test_the_record_saves_reloads_and_replays(tiny, tmp_path):
    papers, searcher = tiny
    qs = [question(papers, i) for i in (3, 9, 30)]
    store = tmp_path / "records"
    live = RecordedLLM(SlowScripted(), RecordStore(store), backend_name="scripted", model="scripted")
    d = LoopDesign(searcher, live, papers, "local", provenance={"loop_max_steps": 8})
    saved = run_design(d, qs, 1, tmp_path / "results", progress=False)
    again = read_results(tmp_path / "results" / "loop" / "run1.jsonl")
    assert [r.trace for r in again] == [r.trace for r in saved] and [r.details for r in again] == \
        [r.details for r in saved]
    assert all(r.inputs and r.provenance == {"loop_max_steps": 8} for r in again)
    recs = [json.loads(line) for line in (store / "loop.jsonl").read_text().splitlines()]
    assert len(recs) == 9 and all(rec["request"]["tools"] and rec["request"]["tool_choice"] == "auto" for rec in recs)
    assert all(rec["response"]["tool_calls"] for rec in recs)
    # resumed: nothing asked again
    d2 = LoopDesign(searcher, RecordedLLM(MustNotCall(), RecordStore(store), backend_name="scripted",
                                          model="scripted"), papers, "local", provenance={"loop_max_steps": 8})
    run_design(d2, qs, 1, tmp_path / "results", progress=False)
    # replayed into another folder: the same answers, the recorded model time
    replay = RecordedLLM(None, RecordStore(store), backend_name="replay:scripted", model="scripted")
    d3 = LoopDesign(searcher, replay, papers, "local", provenance={"loop_max_steps": 8})
    replayed = run_design(d3, qs, 1, tmp_path / "replayed", progress=False)
    for a, b in zip(saved, replayed):
        assert (a.ranked_ids, a.details, a.llm_calls, a.tokens_in, a.llm_latency_s) == \
            (b.ranked_ids, b.details, b.llm_calls, b.tokens_in, b.llm_latency_s)
        assert [(s["title"], s["detail"], s["tokens_in"]) for s in a.trace] == \
            [(s["title"], s["detail"], s["tokens_in"]) for s in b.trace]
        assert b.llm_latency_s == pytest.approx(0.75) and b.latency_s >= 0.75
        assert [s["ms"] for s in b.trace if s["kind"] == "model"] == [250.0] * 3


def test_record_keys_of_requests_without_tools_are_unchanged():
    """Every recorded local call still has the key its request hashes to (the replay depends on it)."""
    folder = ROOT / "data" / "llm_records" / "local__qwen2.5-coder-1.5b-instruct-q4_k_m"
    checked = 0
    for kind in ("rewrite", "agent"):
        path = folder / f"{kind}.jsonl"
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as fh:
            for line, _ in zip(fh, range(40)):
                rec = json.loads(line)
                q = rec["request"]
                req = LLMRequest(rec["kind"], q["system"], tuple(tuple(m) for m in q["messages"]), q["max_tokens"],
                                 q["temperature"], rec["run"], q["grammar"])
                assert req.key() == rec["key"]
                checked += 1
    if not checked:
        pytest.skip("no recorded local calls here")


def test_tools_enter_the_key_only_when_set_and_bad_requests_are_refused():
    plain = LLMRequest("loop", "s", (("user", "q"),), 50)
    tools = prompts.loop_tools(5, local=False)
    with_tools = LLMRequest("loop", "s", (("user", "q"),), 50, tools=tools, tool_choice="auto")
    final = LLMRequest("loop", "s", (("user", "q"),), 50, tools=tools, tool_choice="none")
    assert len({plain.key(), with_tools.key(), final.key()}) == 3 and hash(with_tools) == hash(
        LLMRequest("loop", "s", (("user", "q"),), 50, tools=tools, tool_choice="auto"))
    with pytest.raises(ValueError, match="without tools"):
        LLMRequest("loop", "s", (("user", "q"),), 50, tool_choice="auto")
    with pytest.raises(ValueError, match="tool_choice must be one of"):
        LLMRequest("loop", "s", (("user", "q"),), 50, tools=tools, tool_choice="any")
    with pytest.raises(ValueError, match="name and an input_schema"):
        LLMRequest("loop", "s", (("user", "q"),), 50, tools=({"name": "search"},), tool_choice="auto")


def test_a_tool_turn_is_counted_by_its_text_in_cost_projections():
    from lib.llm.cost import request_chars

    blocks = ({"type": "tool_result", "tool_use_id": "t1", "content": "x" * 500},)
    req = LLMRequest("loop", "sys", (("user", "q"), ("assistant", ({"type": "tool_use", "id": "t1", "name": "read",
                                                                     "input": {"paper_id": "p1"}},)), ("user", blocks)),
                     50, tools=prompts.loop_tools(5, True), tool_choice="auto")
    assert request_chars(req) == 3 + 1 + len(json_call_text("read", {"paper_id": "p1"})) + 500


def test_a_response_without_tool_use_keeps_its_record_shape(tmp_path):
    store = RecordStore(tmp_path)
    req = LLMRequest("agent", "s", (("user", "q"),), 50)
    store.put(req, LLMResponse("t", 1, 1, 0.1, 0.0, "m", "local"))
    rec = json.loads((tmp_path / "agent.jsonl").read_text())
    assert set(rec["request"]) == {"system", "messages", "max_tokens", "temperature", "grammar"}
    assert not {"tool_calls", "content", "prompt_tokens_reused"} & set(rec["response"])


# ------------------------------------------------------------------------------ the profile and the pipeline
def test_caps_are_profile_settings_in_every_profile_and_in_provenance():
    for name in ("offline", "pilot", "dev", "article"):
        p = load_profile(name)
        assert p.loop_backend is None and p.loop_max_steps >= 2 and p.loop_max_tokens >= 1000 and p.loop_search_k == 5
    assert design_names().index("loop") > design_names().index("agent_rerank")
    for key in ("loop_max_steps", "loop_max_tokens", "loop_search_k", "loop_turn_max_tokens", "loop_backend"):
        assert key in LoopDesign.settings
    with pytest.raises(ProfileError, match="loop_max_steps"):
        load_profile("offline", loop_max_steps=1)


def test_a_stub_run_never_lands_in_the_main_results(tmp_path, monkeypatch):
    import lib.config as config

    offline = load_profile("offline")
    stub = load_profile("offline", loop_backend="echo")
    assert stub.results_dir.parent == offline.results_dir / "variants" and not stub.shipped
    (tmp_path / "offline.yaml").write_text((ROOT / "profiles" / "offline.yaml").read_text().replace(
        "loop_backend: null", "loop_backend: scripted"))
    monkeypatch.setattr(config, "PROFILE_DIR", tmp_path)
    with pytest.raises(ProfileError, match="give it as a parameter"):
        load_profile("offline")


def test_the_pipeline_runs_the_loop_with_a_stub_and_names_it(tmp_path):
    from lib import pipeline
    from lib.report import queries

    cfg = load_profile("pilot", loop_backend="scripted", question_limit=3, results_dir=str(tmp_path))
    parts = pipeline.ProfileParts(cfg, progress=False)
    assert pipeline.default_runs(parts, "loop") == [1]  # deterministic, nothing to replay
    out = pipeline.run(cfg, "loop", progress=False)
    res = read_results(tmp_path / "loop" / "run1.jsonl")
    assert len(res) == 3 and out[1][0].ranked_ids == res[0].ranked_ids
    assert res[0].provenance["llm_backend"] == "stub:scripted" and res[0].provenance["loop_backend"] == "scripted"
    assert res[0].provenance["loop_max_tokens"] == cfg.loop_max_tokens and res[0].stop_reason == "stop"
    table = queries.provenance_table(cfg, "loop")
    assert table.loc[0, "loop_max_steps"] == cfg.loop_max_steps


def test_cost_projection_is_bounded_by_the_caps(tiny, tmp_path):
    from lib.llm.cost import project_designs

    papers, searcher = tiny
    qs = [question(papers, i) for i in range(4)]
    replay = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:anthropic", model=HAIKU)
    d = LoopDesign(searcher, replay, papers, "anthropic", Caps(max_steps=5, max_tokens=10000, turn_max_tokens=200))
    p = project_designs([d], qs, [1, 2])["loop"]
    assert (p["calls"], p["input_tokens"] + p["output_tokens"], p["output_tokens"]) == (8 * 5, 8 * 10000, 8 * 5 * 200)
    assert p["usd"] == pytest.approx(8 * cost_usd(HAIKU, 9000, 1000))
    stubbed = LoopDesign(searcher, StubLLM(ScriptedLoopModel()), papers, "anthropic")
    assert project_designs([stubbed], qs, [1]) == {}  # a stub has no fee
    assert [r.tool_choice for r in d.first_requests(qs, [1])] == ["auto"] * 4


# ------------------------------------------------------------------------------ Anthropic: native tool use
PAPERS = {"2607.06223": ("Information-Gain Rollout Allocation for LLM Search Agents", "We allocate rollouts ..."),
          "2607.00412": ("Budgeted Exploration in Agentic RL", "A budget ..."),
          **{f"2607.1000{i}": (f"Other paper {i}", "Other abstract.") for i in range(5)}}
SEARCH = {"rollout budget allocation for LLM search agents": ["2607.00412", "2607.06223", "2607.10000", "2607.10001",
                                                             "2607.10002", "2607.10003", "2607.10004"]}
AQ = Question("q002", "How should LLM search agents spend a limited rollout budget?", "2607.06223")


def sdk(*bodies):
    seen, queue = [], list(bodies)

    def handler(request):
        seen.append(json.loads(request.content))
        return httpx2.Response(200, json=reply_body(queue.pop(0)))

    return mock_sdk_client(handler), seen


def test_anthropic_tool_use_through_the_sdk_passes_thinking_back_and_records_usage(tmp_path):
    client, seen = sdk("loop_search", "loop_read_thinking", "loop_answer")
    backend = AnthropicBackend(HAIKU, client=client, thinking="adaptive", effort="low")
    llm = RecordedLLM(backend, RecordStore(tmp_path), backend_name="anthropic", model=HAIKU)
    r = LoopDesign(ListSearcher(SEARCH), llm, PAPERS, "anthropic").retrieve(AQ)
    first, second, third = seen
    assert [t["name"] for t in first["tools"]] == ["search", "read"]
    assert first["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert first["messages"] == [{"role": "user", "content": f"Question: {AQ.text}"}]
    assert "Cited:" in first["system"] and "temperature" not in first and first["thinking"] == {"type": "adaptive"}
    # the turn that called search goes back as it came, its result keyed by the call's id
    assert second["messages"][1] == {"role": "assistant", "content": reply_body("loop_search")["content"]}
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01A9sKx3Vq7LmN2pR8tYwZcE"
    assert result["content"].splitlines()[1] == "1. [2607.00412] Budgeted Exploration in Agentic RL"
    # the thinking block is passed back unchanged (signature included) in the following turn
    assert third["messages"][3]["content"][0] == reply_body("loop_read_thinking")["content"][0]
    assert third["messages"][4]["content"][0]["content"].startswith("[2607.06223] Information-Gain")
    assert all(m["role"] == "user" for m in (first["messages"][-1], second["messages"][-1], third["messages"][-1]))
    assert (r.stop_reason, r.llm_calls, r.searches, r.details["read"]) == ("stop", 3, 1, ["2607.06223"])
    assert r.details["citations"] == ["2607.06223"] and r.ranked_ids[:3] == ["2607.06223", "2607.00412", "2607.10000"]
    assert (r.tokens_in, r.tokens_out) == (1184 + 1362 + 1745, 71 + 148 + 38)
    assert r.cost_usd == pytest.approx(cost_usd(HAIKU, 1184 + 1362 + 1745, 71 + 148 + 38))
    recs = [json.loads(line) for line in (tmp_path / "loop.jsonl").read_text().splitlines()]
    assert recs[1]["response"]["content"][0]["signature"].startswith("EqQB") and recs[1]["response"]["thinking"]
    assert recs[0]["response"]["tool_calls"] == [{"id": "toolu_01A9sKx3Vq7LmN2pR8tYwZcE", "name": "search",
                                                  "input": {"query": "rollout budget allocation for LLM search agents"}}]
    assert "content" not in recs[2]["response"] and recs[2]["response"]["stop_reason"] == "end_turn"
    # replayed with no client: the same loop, the same usage
    replay = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:anthropic", model=HAIKU)
    again = LoopDesign(ListSearcher(SEARCH), replay, PAPERS, "anthropic").retrieve(AQ)
    assert (again.ranked_ids, again.details, again.cost_usd) == (r.ranked_ids, r.details, r.cost_usd)


def test_anthropic_forced_final_answer_sends_tool_choice_none(tmp_path):
    client, seen = sdk("loop_search", "loop_forced")
    llm = RecordedLLM(AnthropicBackend(HAIKU, client=client), RecordStore(tmp_path), backend_name="anthropic",
                      model=HAIKU)
    d = LoopDesign(ListSearcher(SEARCH), llm, PAPERS, "anthropic", Caps(max_steps=2))
    r = d.retrieve(AQ)
    assert seen[1]["tool_choice"] == {"type": "none"} and [t["name"] for t in seen[1]["tools"]] == ["search", "read"]
    last = seen[1]["messages"][-1]["content"]
    assert last[0]["type"] == "tool_result" and last[1] == {"type": "text", "text": d._final_text("step_cap")}
    assert (r.stop_reason, r.details["forced_final"], r.llm_calls) == ("step_cap", True, 2)
    assert r.details["citations"] == ["2607.06223", "2607.00412"] and r.details["invalid_citations"] == ["2699.99999"]
    assert r.ranked_ids[:3] == ["2607.06223", "2607.00412", "2607.10000"]


# ------------------------------------------------------------------------------ the local backend
class FakeLlama:
    """Stands in for llama_cpp.Llama: characters as tokens, and the KV bookkeeping llama.cpp keeps
    (the prompt and the reply it evaluated)."""

    made = []

    def __init__(self, **kwargs):
        self.kwargs, self.replies = kwargs, []
        self.input_ids, self.n_tokens = np.zeros(100_000, dtype=np.intc), 0
        FakeLlama.made.append(self)

    def create_chat_completion(self, messages, **kwargs):
        prompt = [ord(c) for m in messages for c in f"<{m['role']}>{m['content']}<end>"] + [ord(c) for c in "<assistant>"]
        text, finish = self.replies.pop(0)
        out = [ord(c) for c in text]
        self.input_ids[:len(prompt) + len(out)] = prompt + out
        self.n_tokens = len(prompt) + len(out) - 1
        return {"choices": [{"message": {"content": text}, "finish_reason": finish}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(out)}}


@pytest.fixture
def local(tmp_path, monkeypatch):
    llama_cpp = pytest.importorskip("llama_cpp")
    from lib.llm.local_backend import LocalBackend

    monkeypatch.setattr(llama_cpp, "Llama", FakeLlama)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"gguf")
    FakeLlama.made.clear()
    return LocalBackend("qwen", model_path=model, n_threads=1)


def test_local_tool_turns_parse_calls_and_reuse_the_processed_prefix(local):
    loop = LLMRequest("loop", "sys", (("user", "Question: q"),), 64, tools=prompts.loop_tools(5, True),
                      tool_choice="auto")
    llm = local._llm("loop")
    llm.replies += [('{"tool": "search", "query": "kv cache"}', "stop"), ('{"tool": "read", "paper_id": "a"}', "stop"),
                    ('{"tool": "answer", "ids": ["a', "length")]
    first = local.complete(loop)
    assert first.tool_calls == [{"id": "call_1", "name": "search", "input": {"query": "kv cache"}}]
    assert (first.stop_reason, first.prompt_tokens_reused) == ("tool_use", 0)
    convo = loop.messages + (("assistant", ({"type": "tool_use", **first.tool_calls[0]},)),
                             ("user", ({"type": "tool_result", "tool_use_id": "call_1", "content": "1. [a] A"},)))
    second = local.complete(LLMRequest("loop", "sys", convo, 64, tools=loop.tools, tool_choice="auto"))
    assert second.tool_calls[0]["name"] == "read" and second.tool_calls[0]["id"] == "call_2"
    # everything up to the new turn was taken from the cache: the previous prompt and the reply it wrote
    assert second.prompt_tokens_reused == first.tokens_in + first.tokens_out - 1
    third = local.complete(LLMRequest("loop", "sys", convo, 64, tools=loop.tools, tool_choice="auto"))
    assert (third.stop_reason, third.tool_calls) == ("max_tokens", [])
    # the context is set per kind: the loop's conversation gets a larger one, other kinds keep theirs
    local._llm("agent")
    assert [m.kwargs["n_ctx"] for m in FakeLlama.made] == [8192, 2048]
    plain = local._llm("agent")
    plain.replies.append(('{"decision": "stop"}', "stop"))
    r = local.complete(LLMRequest("agent", "sys", (("user", "q"),), 64))
    assert (r.tool_calls, r.stop_reason, r.prompt_tokens_reused) == ([], "", 0)  # requests without tools: as before


def test_chat_rendering_of_a_tool_conversation():
    blocks = (("user", "Question: q"),
              ("assistant", ({"type": "thinking", "thinking": "hm", "signature": "s"},
                             {"type": "tool_use", "id": "t1", "name": "read", "input": {"paper_id": "2607.06223"}})),
              ("user", ({"type": "tool_result", "tool_use_id": "t1", "content": "[2607.06223] T\nabstract"},
                        {"type": "text", "text": "Answer now."})))
    assert chat_messages("sys", blocks) == [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "Question: q"},
        {"role": "assistant", "content": '{"tool": "read", "paper_id": "2607.06223"}'},
        {"role": "user", "content": "[2607.06223] T\nabstract\n\nAnswer now."}]
    # the worked example's calls are written exactly as the calls are rendered back
    example_calls = [c for role, c in prompts.LOOP_EXAMPLE if role == "assistant"]
    assert example_calls[1] == json_call_text("read", {"paper_id": "2601.04321"})


@pytest.fixture(scope="module")
def vocab():
    llama_cpp = pytest.importorskip("llama_cpp")
    if not LOCAL_MODEL.exists():
        pytest.skip("the local model is not installed (make local-llm)")
    model = llama_cpp.Llama(model_path=str(LOCAL_MODEL), vocab_only=True, verbose=False)
    return llama_cpp, model, llama_cpp.llama_model_get_vocab(model.model)


def grammar_accepts(vocab, grammar: str, text: str) -> bool:
    """Whether the grammar lets the model write ``text`` and stop, token by token (llama.cpp's own
    grammar sampler on the model's own tokenizer; no weights loaded)."""
    llama_cpp, model, v = vocab
    sampler = llama_cpp.llama_sampler_init_grammar(v, grammar.encode(), b"root")
    assert sampler, f"the grammar does not parse:\n{grammar}"

    def allowed(token):
        data = (llama_cpp.llama_token_data * 1)()
        data[0].id, data[0].logit, data[0].p = token, 0.0, 0.0
        array = llama_cpp.llama_token_data_array(data=data, size=1, selected=-1, sorted=False)
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(array))
        return data[0].logit != -math.inf

    try:
        for token in model.tokenize(text.encode(), add_bos=False, special=False):
            if not allowed(token):
                return False
            llama_cpp.llama_sampler_accept(sampler, token)
        return allowed(model.token_eos())
    finally:
        llama_cpp.llama_sampler_free(sampler)


def test_the_local_grammar_allows_one_call_with_only_ids_shown(vocab):
    ids = ["2607.06223", "2607.00412"]
    g = prompts.loop_grammar(ids)
    for ok in (json_call_text("search", {"query": "rollout budgets for search agents"}),
               json_call_text("read", {"paper_id": "2607.00412"}),
               json_call_text("answer", {"ids": ["2607.06223", "2607.00412"]}), json_call_text("answer", {"ids": []})):
        assert grammar_accepts(vocab, g, ok), ok
    for bad in (json_call_text("read", {"paper_id": "2607.99999"}), json_call_text("answer", {"ids": ["x"]}),
                json_call_text("search", {"query": "ab"}), '{"tool": "search", "query": "unterminated',
                "I think the answer is 2607.06223", json_call_text("search", {"query": "a"}) + "\n" +
                json_call_text("read", {"paper_id": "2607.00412"})):
        assert not grammar_accepts(vocab, g, bad), bad
    final = prompts.loop_grammar(ids, final=True)
    assert grammar_accepts(vocab, final, json_call_text("answer", {"ids": ["2607.06223"]}))
    assert not grammar_accepts(vocab, final, json_call_text("search", {"query": "one more search"}))
    assert not grammar_accepts(vocab, prompts.loop_grammar([]), json_call_text("read", {"paper_id": "2607.06223"}))
    for example in (c for role, c in prompts.LOOP_EXAMPLE if role == "assistant"):  # the worked example obeys it
        assert grammar_accepts(vocab, prompts.loop_grammar(["2601.04321"]), example)
