"""Bounded escalation: the first pass answers confident questions alone; weak ones call the agent
under hard bounds; the lists are fused by RRF; the signal is chosen by the dev rule."""
import numpy as np
import pandas as pd
import pytest

from lib.designs import Question, Result
from lib.designs.agent import AgentDesign
from lib.designs.escalate import Bounds, EscalateDesign, request_id, signals
from lib.evaluation import escalation
from lib.search.fusion import rrf
from tests.fakes import ListSearcher, ScriptedLLM

TITLES = {i: f"Title {i}" for i in "abcdefghxyz"}
Q = Question("q1", "which paper?", "c")
LISTS = {Q.text: (["a", "b", "c", "d", "e", "f"], [5.0, 4.9, 1.0, 0.5, 0.2, 0.1]),
         "sub one": (["c", "g", "a"], [3.0, 1.0, 0.5]), "sub two": (["h", "c"], [2.0, 1.0])}


class FirstPass:
    """Stands in for hybrid_rerank: a fixed (ids, fused scores) per query, and dense cosines."""

    def __init__(self, lists=LISTS):
        self.lists, self.calls = lists, []
        self.searcher = self

    def search(self, query):
        self.calls.append(query)
        ids, scores = self.lists.get(query, (["x", "y", "z"], [1.0, 0.5, 0.1]))
        return list(ids), list(scores)

    def scores_for(self, query, ids):
        return [0.42 for _ in ids]


def design(replies, threshold=1.0, signal="margin", bounds=None, lists=LISTS):
    llm = ScriptedLLM(replies)
    agent = AgentDesign(ListSearcher({}), llm, TITLES, "anthropic")
    first = FirstPass(lists)
    d = EscalateDesign(first, agent, signal, threshold, bounds or Bounds(), provenance={"escalate_signal": signal})
    return d, llm, first


def test_signals_of_a_first_pass():
    s = signals([5.0, 4.9, 1.0], 0.42)
    assert s == {"margin": pytest.approx(0.1), "top_score": 5.0, "dense_top": 0.42}


def test_confident_question_is_answered_by_the_first_pass_alone():
    d, llm, first = design([], threshold=0.05)  # margin 0.1 is not below 0.05
    r = d.retrieve(Q)
    assert r.ranked_ids == ["a", "b", "c", "d", "e", "f"] and r.stop_reason == "confident"
    assert r.llm_calls == 0 and llm.requests == [] and first.calls == [Q.text]
    assert r.details["escalated"] is False and r.details["signals"]["margin"] == pytest.approx(0.1)
    assert r.details["first_pass"] == ["a", "b", "c", "d", "e", "f"] and "request_id" not in r.details


def test_weak_question_escalates_and_fuses_every_list():
    d, llm, first = design(['{"decision":"search","query":"sub one"}', '{"decision":"stop"}'])
    r = d.retrieve(Q)
    assert r.details["escalated"] is True and r.stop_reason == "stop"
    assert r.queries == [Q.text, "sub one"] and first.calls == [Q.text, "sub one"]
    assert r.ranked_ids == [i for i, _ in rrf([LISTS[Q.text][0], LISTS["sub one"][0]], 60)]
    assert r.ranked_ids[:2] == ["a", "c"]  # c, found first by the sub-query, climbs from 3 to 2
    assert r.llm_calls == 2 and r.tokens_in == 200 and r.cost_usd == pytest.approx(0.002)
    # the agent saw the first pass's top 5, then the sub-query's list; kept in its own record
    first_user, second_user = (req.messages[-1][1] for req in llm.requests)
    assert "  - Title a" in first_user and 'Search 2: "sub one"\n  - Title c' in second_user
    assert {req.kind for req in llm.requests} == {"escalate"}
    assert r.details["llm_requests"] == [req.key()[:16] for req in llm.requests]


def test_query_cap_bounds_the_subqueries():
    d, llm, _ = design(['{"decision":"search","query":"sub one"}', '{"decision":"search","query":"sub two"}'],
                       bounds=Bounds(max_queries=2, max_llm_calls=5))
    r = d.retrieve(Q)
    assert r.queries == [Q.text, "sub one", "sub two"] and r.llm_calls == 2 and r.stop_reason == "query cap"


@pytest.mark.parametrize("bounds,calls,reason", [
    (Bounds(max_queries=3, max_llm_calls=1), 1, "llm call cap"),
    (Bounds(max_queries=3, max_llm_calls=5, max_tokens=150), 1, "token budget"),  # 110 used + 100 + 100 > 150
    (Bounds(max_queries=3, max_llm_calls=5, max_tokens=50), 0, "token budget"),   # even the first reply could not fit
    (Bounds(max_queries=3, max_llm_calls=5, max_cost_usd=0.0015), 1, "cost budget"),
])
def test_hard_bounds_stop_before_the_next_call(bounds, calls, reason):
    replies = ['{"decision":"search","query":"sub one"}', '{"decision":"search","query":"sub two"}',
               '{"decision":"search","query":"three"}']
    d, llm, _ = design(replies, bounds=bounds)
    r = d.retrieve(Q)
    assert r.llm_calls == calls == len(llm.requests) and r.stop_reason == reason
    assert r.details["escalated"] is True


def test_request_id_is_stable_and_names_question_run_and_settings():
    a = request_id(Q, 1, {"escalate_threshold": 1.0})
    assert a == request_id(Q, 1, {"escalate_threshold": 1.0})
    assert len({a, request_id(Q, 2, {"escalate_threshold": 1.0}), request_id(Q, 1, {"escalate_threshold": 2.0})}) == 3


def test_unknown_signal_is_refused():
    with pytest.raises(ValueError, match="escalate_signal"):
        design([], signal="vibes")


def _probe(helped_low: bool, n: int = 40) -> list[Result]:
    """A probe where the escalation helps the questions with the lowest margins (or none)."""
    out = []
    for i in range(n):
        margin = i / n
        weak = i < n // 4
        first = ["w", "s"] if weak else ["s", "w"]           # weak: the source at rank 2
        final = ["s", "w"] if weak and helped_low else ["w", "s"] if weak else ["s", "w"]
        if not helped_low and not weak and i % 5 == 0:
            final = ["w", "s"]                               # escalation hurts some confident ones
        out.append(Result(f"q{i}", "escalate", 1, final, 4, ["q"], 0.1, llm_calls=1, details={
            "escalated": True, "first_pass": first,
            "signals": {"margin": margin, "top_score": 1.0 - margin, "dense_top": 0.5}}))
    return out


def test_the_dev_rule_picks_the_signal_that_finds_the_weak_questions():
    res = _probe(helped_low=True)
    table = escalation.probe_table(res, {r.qid: "s" for r in res})
    swept = escalation.sweep(table)
    choice = escalation.choose(swept)
    assert choice["signal"] == "margin" and choice["rate"] == 0.25 and choice["mrr@10"] == 1.0
    assert choice["helped"] == 10 and choice["hurt"] == 0
    assert 0.225 < choice["threshold"] < 0.25  # midway between the 10th and 11th margins


def test_the_dev_rule_never_escalates_when_escalation_does_not_pay():
    res = _probe(helped_low=False)
    table = escalation.probe_table(res, {r.qid: "s" for r in res})
    choice = escalation.choose(escalation.sweep(table))
    assert choice["rate"] == 0.0 and choice["threshold"] == -np.inf and choice["escalated"] == 0.0


def test_probe_must_escalate_every_question():
    res = _probe(helped_low=True)
    res[3].details["escalated"] = False
    with pytest.raises(ValueError, match="q3"):
        escalation.probe_table(res, {r.qid: "s" for r in res})


def test_outcomes_count_helped_and_hurt():
    res = _probe(helped_low=True)[:12]
    for r in res[10:]:
        r.details["escalated"] = False
    out = escalation.outcomes(res, {r.qid: "s" for r in res})
    assert (out["escalated"], out["helped"], out["hurt"], out["unchanged"]) == (10, 10, 0, 0)
    assert out["rate"] == pytest.approx(10 / 12)


def test_sweep_matches_a_direct_count():
    res = _probe(helped_low=True)
    table = escalation.probe_table(res, {r.qid: "s" for r in res})
    row = escalation.sweep(table, rates=[0.1]).query("signal == 'margin'").iloc[0]
    esc = table["signal_margin"] < row["threshold"]
    assert esc.sum() == 4
    assert row["mrr@10"] == pytest.approx(pd.Series(np.where(esc, table["esc_mrr"], table["first_mrr"])).mean())


def test_saved_escalate_runs_read_back_per_condition():
    """The shipped escalate runs, as notebook 8 reads them: one row per condition with a complete
    run, escalations counted from the records, and LLM calls against the agent's saved runs."""
    from lib import pipeline
    from lib.report import queries
    from lib.config import load_profile

    cfg = load_profile("offline")
    table = queries.escalation_outcomes(cfg).set_index("condition")
    assert {"full questions", "short questions", "two-part questions"} <= set(table.index)
    for cname, cp in queries.condition_profiles(cfg).items():
        if cname not in table.index:
            continue
        res = pipeline.read_results(pipeline.run_path(cp.results_dir, "escalate", 1))
        row = table.loc[cname]
        assert row.questions == len(res) and row.escalated == sum(r.details["escalated"] for r in res)
        assert row.llm_calls_per_q == pytest.approx(sum(r.llm_calls for r in res) / len(res))
        assert row.helped + row.hurt + row.unchanged == row.escalated
        if cp.escalate_threshold == float("-inf"):  # the dev rule chose never to escalate
            assert row.escalated == 0
            if row.agent_llm_calls_per_q == row.agent_llm_calls_per_q:  # the agent has runs in this condition
                assert row.calls_saved_vs_agent == pytest.approx(1.0)
