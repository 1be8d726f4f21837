import json

import pytest

from lib.designs import Question, Result
from lib.designs.agent import AgentDesign, parse_decision
from lib.designs.dense import DenseDesign
from lib.designs.multiquery import MultiQueryDesign, parse_rewrites
from lib.runs import read_results, run_design, run_designs, write_trec
from lib.search.fusion import rrf
from lib.llm import LLMRequest, RecordedLLM, RecordStore, ReplayMiss, prompts
from tests.fakes import ListSearcher, ScriptedLLM, ranx_says

TITLES = {i: f"Title {i}" for i in ["a", "b", "c", "d", "e", "f", "g", "h", "x1", "x2", "x3", "x4", "x5", "x6"]}
Q = Question("q001", "how do agents search?", "c")


def agent(replies, lists=None, style="anthropic", max_searches=3):
    llm = ScriptedLLM(replies)
    s = ListSearcher(lists or {Q.text: ["a", "b", "c", "d", "e", "f"], "new query": ["c", "g", "a"],
                               "third": ["h", "c"]})
    return AgentDesign(s, llm, TITLES, style, max_searches=max_searches), llm, s


def test_agent_stops_after_first_search():
    d, llm, s = agent(['{"decision":"stop"}'])
    r = d.retrieve(Q)
    assert r.searches == 1 and r.queries == [Q.text] and r.stop_reason == "stop"
    assert r.ranked_ids == ["a", "b", "c", "d", "e", "f"]  # one list: RRF keeps its order
    assert r.llm_calls == 1 and r.tokens_in == 100 and r.cost_usd == pytest.approx(0.001)
    # the model saw the question and the search's top-5 titles in the article's layout
    req = llm.requests[0]
    assert req.messages[-1][1] == ('Question: how do agents search?\n\nSearch 1: "how do agents search?"\n'
                                   "  - Title a\n  - Title b\n  - Title c\n  - Title d\n  - Title e")
    assert req.system == prompts.AGENT_SYSTEM and req.max_tokens == 150 and len(req.messages) == 1


def test_agent_searches_again_and_fuses():
    d, llm, s = agent(['{"decision":"search","query":"new query"}', '{"decision":"stop"}'])
    r = d.retrieve(Q)
    assert r.queries == [Q.text, "new query"] and r.searches == 2 and r.stop_reason == "stop"
    assert r.ranked_ids == [doc for doc, _ in rrf([["a", "b", "c", "d", "e", "f"], ["c", "g", "a"]], 60)]
    assert r.ranked_ids[:2] == ["a", "c"]
    # the second call sees every search so far: the first one's titles and the new one's
    assert llm.requests[1].messages[-1][1] == (
        'Question: how do agents search?\n\nSearch 1: "how do agents search?"\n'
        "  - Title a\n  - Title b\n  - Title c\n  - Title d\n  - Title e\n\n"
        'Search 2: "new query"\n  - Title c\n  - Title g\n  - Title a')


def test_article_system_prompt_word_for_word():
    article = ('You are a research assistant finding the single arXiv paper that answers a question. After each '
               'search decide whether the results contain it. Reply with only JSON: {"decision": "stop"} or '
               '{"decision": "search", "query": "<a new, different query>"}.')
    assert prompts.AGENT_SYSTEM == article and prompts.AGENT_MAX_TOKENS == 150


def test_agent_repeat_of_an_earlier_query_searches_again():
    # the article ends the loop only on a query equal to the current one
    d, llm, s = agent(['{"decision":"search","query":"new query"}', '{"decision":"search","query":"%s"}' % Q.text])
    r = d.retrieve(Q)
    assert r.queries == [Q.text, "new query", Q.text] and r.stop_reason == "cap"


def test_agent_cap_of_three_searches():
    d, llm, s = agent(['{"decision":"search","query":"new query"}', '{"decision":"search","query":"third"}'])
    r = d.retrieve(Q)
    assert r.searches == 3 and r.llm_calls == 2 and r.stop_reason == "cap"
    assert s.calls == [Q.text, "new query", "third"]


@pytest.mark.parametrize("reply,reason", [
    ("I think we should stop", "malformed: no JSON object in reply"),
    ('{"decision": "search"}', "malformed: search without a query string"),
    ('{"decision": "maybe"}', "malformed: unknown decision 'maybe'"),
    ('{"decision":"search","query":"  "}', "empty query"),
    ('{"decision":"search","query":" how do agents search? "}', "repeated query"),
])
def test_agent_ends_on_bad_replies(reply, reason):
    d, llm, s = agent([reply])
    r = d.retrieve(Q)
    assert r.searches == 1 and r.stop_reason == reason and r.replies == [reply]


def test_local_style_uses_examples_and_grammar():
    d, llm, s = agent(['{"match": 3, "decision": "stop"}'], style="local")
    r = d.retrieve(Q)
    req = llm.requests[0]
    assert req.grammar and len(req.messages) == 5 and r.stop_reason == "stop"
    assert parse_decision('{"match": 0, "decision": "search", "query": "q"}') == ("search", "q")


def test_multiquery_four_searches_fused():
    llm = ScriptedLLM(["1. first rewrite\n- second rewrite\nthird rewrite\nfourth ignored"])
    s = ListSearcher({Q.text: ["a", "b"], "first rewrite": ["b", "c"], "second rewrite": ["c", "b"],
                      "third rewrite": ["d"]})
    d = MultiQueryDesign(s, llm, "anthropic")
    r = d.retrieve(Q, run=2)
    assert r.queries == [Q.text, "first rewrite", "second rewrite", "third rewrite"] and r.searches == 4
    assert r.ranked_ids == ["b", "c", "a", "d"]
    assert llm.requests[0].run == 2 and r.run == 2 and r.stop_reason == ""


def test_parse_rewrites_drops_duplicates_and_the_original():
    assert parse_rewrites("a b\nA B\n\nhow do agents search?\nc d", Q.text) == ["a b", "c d"]


def test_rrf_hand_computed():
    fused = dict(rrf([["a", "b", "c"], ["b", "c", "d"]], k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["d"] == pytest.approx(1 / 63)
    order = [d for d, _ in rrf([["a", "b", "c"], ["b", "c", "d"]], k=60)]
    assert order == ["b", "c", "a", "d"]
    # ties keep the order of first appearance (the article's stable sort), never the ids' order
    assert [d for d, _ in rrf([["y"], ["x"]])] == ["y", "x"]
    assert [d for d, _ in rrf([["z", "a"], ["a", "z"]])] == ["z", "a"]
    assert [d for d, _ in rrf([["b"], ["c", "a"], ["a", "c"]])] == ["c", "a", "b"]


RRF_LISTS = [["a", "b", "c", "d"], ["c", "a", "e"], ["e", "d", "b", "a", "f"]]


@pytest.fixture(scope="module")
def ranx_answers(tmp_path_factory):
    """What ranx says, asked once (one process: its import is most of the cost): RRF over RRF_LISTS, and
    the ranking it reads from our TREC export of one result."""
    res = [Result("q1", "dense", 1, ["a", "b", "c"], 1, ["q"], 0.1)]
    path = write_trec(res, tmp_path_factory.mktemp("trec") / "run1.trec", "dense-run1")
    return ranx_says(
        "import json\nfrom ranx import Run, fuse\n"
        f"runs = [Run({{'q': {{doc: float(len(lst) - i) for i, doc in enumerate(lst)}}}}) for lst in {RRF_LISTS!r}]\n"
        "fused = fuse(runs, method='rrf', params={'k': 60}).to_dict()['q']\n"
        f"trec = Run.from_file({str(path)!r}, kind='trec').to_dict()['q1']\n"
        "print(json.dumps({'rrf': fused, 'trec': trec}))")


def test_rrf_matches_ranx(ranx_answers):
    ranx_scores = ranx_answers["rrf"]
    ours = dict(rrf(RRF_LISTS, 60))
    assert set(ours) == set(ranx_scores)
    for doc, score in ours.items():
        assert score == pytest.approx(ranx_scores[doc], rel=1e-9)


class Crash(Exception):
    pass


class CrashingDense(DenseDesign):
    def __init__(self, searcher, crash_at):
        super().__init__(searcher)
        self.crash_at, self.n = crash_at, 0

    def retrieve(self, question, run=1):
        self.n += 1
        if self.n == self.crash_at:
            raise Crash()
        return super().retrieve(question, run)


def test_killed_run_resumes_without_lost_or_duplicated_rows(tmp_path):
    qs = [Question(f"q{i:03d}", f"question {i}", "a") for i in range(1, 11)]
    s = ListSearcher({})
    with pytest.raises(Crash):
        run_design(CrashingDense(s, crash_at=5), qs, 1, tmp_path, progress=False)
    path = tmp_path / "dense" / "run1.jsonl"
    assert [r.qid for r in read_results(path)] == ["q001", "q002", "q003", "q004"]
    # a write torn in the middle of a line (killed process) is dropped, then redone
    with open(path, "a") as fh:
        fh.write('{"qid": "q005", "design": "de')
    out = run_design(DenseDesign(s), qs, 1, tmp_path, progress=False)
    lines = path.read_text().splitlines()
    assert [json.loads(line)["qid"] for line in lines] == [q.qid for q in qs]
    assert [r.qid for r in out] == [q.qid for q in qs]
    # a third call computes nothing
    s.calls.clear()
    run_design(DenseDesign(s), qs, 1, tmp_path, progress=False)
    assert s.calls == []


def test_interleaved_designs_resume_each_on_its_own(tmp_path):
    qs = [Question(f"q{i}", f"question {i}", "a") for i in range(4)]
    s = ListSearcher({})
    run_design(DenseDesign(s), qs[:2], 1, tmp_path, progress=False)
    llm = ScriptedLLM(['{"decision":"stop"}'] * 4)
    out = run_designs([DenseDesign(s), AgentDesign(s, llm, TITLES, "anthropic")], qs, 1, tmp_path, progress=False)
    assert len(out["dense"]) == 4 and len(out["agent"]) == 4 and len(llm.requests) == 4


def test_replay_answers_recorded_and_fails_clearly_on_a_miss(tmp_path):
    store = RecordStore(tmp_path)
    live = RecordedLLM(ScriptedLLM(['{"decision":"stop"}']), store, backend_name="scripted", model="m")
    req = LLMRequest("agent", "sys", (("user", "hello"),), 50, 0.3, run=1)
    first = live.complete(req)
    assert not first.replayed
    replay = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:scripted", model="m")
    again = replay.complete(req)
    assert again.replayed and again.text == first.text and again.tokens_in == 100 and again.latency_s == 0.5
    with pytest.raises(ReplayMiss, match="no recorded 'agent' response"):
        replay.complete(LLMRequest("agent", "sys", (("user", "hello"),), 50, 0.3, run=2))
    # a torn last line in the record is ignored and does not swallow the next record
    with open(tmp_path / "agent.jsonl", "a") as fh:
        fh.write('{"key": "abc", "kind"')
    store2 = RecordStore(tmp_path)
    live2 = RecordedLLM(ScriptedLLM(["ok"]), store2, backend_name="scripted", model="m")
    req3 = LLMRequest("agent", "sys", (("user", "other"),), 50, 0.3, run=1)
    live2.complete(req3)
    assert RecordStore(tmp_path).count("agent") == 2


def test_trec_export_is_read_by_ranx(ranx_answers):
    d = ranx_answers["trec"]
    assert sorted(d, key=lambda k: -d[k]) == ["a", "b", "c"]
