"""The query side's bound (lib/evaluation/query_bound.py) on a tiny hand-built case whose answer is worked out
by hand: the share of new queries that would have to give the source first for the agent to reach dense."""
import numpy as np
import pytest

from lib.designs import Question, Result
from lib.evaluation import judges, query_bound


def listed(rank, tag):
    ids = [f"{tag}{i}" for i in range(50)]
    if rank:
        ids[rank - 1] = "s"
    return ids


def tree(qid, first_rank, decision):
    """One decision (cap 2): the question's list with the source at ``first_rank``, then a new query whose list
    lacks it."""
    return Result(qid, "agent_tree", 1, [], 2, [], 0.0, details={
        "chain_queries": [f"question {qid}", f"query {qid}"], "chain_lists": [listed(first_rank, f"a{qid}"),
                                                                             listed(None, f"b{qid}")],
        "decisions": [{"searches": 1, "decision": decision, "why": ""}], "path_searches": 2})


def chains():
    # q1: the source at 8 (not shown, MRR 1/8); fused with the new list it falls to 15 (MRR 0); given the source
    # first, the fusion puts it first (MRR 1). q2: at 2 (shown, MRR 1/2); fused with the new list, at 3 (1/3);
    # given the source first, first (1). Dense is the question's list. The model searched again at both.
    qs = [Question("q1", "question q1", "s"), Question("q2", "question q2", "s")]
    dense = {"q1": listed(8, "aq1"), "q2": listed(2, "aq2")}
    return judges.condition_chains([tree("q1", 8, "search"), tree("q2", 2, "search")], qs, dense, cap=2)


def test_the_best_list_puts_every_relevant_document_first():
    assert query_bound.best_list(["x", "b", "a"], "a;b")[:3] == ["a", "b", "x"]
    assert query_bound.best_list(["x", "d2"], '{"d1": 1, "d2": 2, "d3": 0}')[:3] == ["d2", "d1", "x"]


def test_the_bound_on_a_tiny_case_worked_by_hand():
    cs = chains()
    assert [c.leaves[0]["mrr_at_10"] for c in cs] == [pytest.approx(1 / 8), 0.5]
    assert [c.leaves[1]["mrr_at_10"] for c in cs] == [0.0, pytest.approx(1 / 3)]
    rows, grid = query_bound.bound_tables(cs, "c", "m")
    own = next(r for r in rows if r["metric"] == "mrr_at_10" and r["accuracies"] == "the model's")
    perfect = next(r for r in rows if r["metric"] == "mrr_at_10" and r["accuracies"] == "perfect")
    # the model's accuracies: stop 0 of 1 shown, search 1 of 1 not shown: it searches at both. Given a share f
    # of the new queries the source first: q1 (1 - f) 0 + f 1 - 1/8; q2 (1 - f) 1/3 + f 1 - 1/2; the mean
    # (5/3 f - 7/24) / 2 reaches dense at f = 7/40
    assert own["at_none"] == pytest.approx((-1 / 8 + 1 / 3 - 1 / 2) / 2)
    assert own["least_share"] == pytest.approx(7 / 40)
    # a perfect judge stops at q2 (shown) and searches at q1: (f - 1/8) / 2, dense at f = 1/8
    assert perfect["least_share"] == pytest.approx(1 / 8) and perfect["at_all"] == pytest.approx(7 / 16)
    # both new queries lost the source: none strictly better
    assert (own["new_queries"], own["better"], own["better_rate"]) == (2, 0, 0.0)
    curve = [g for g in grid if g["metric"] == "mrr_at_10" and g["accuracies"] == "the model's"]
    for g in curve:
        assert g["difference"] == pytest.approx((5 / 3 * g["share"] - 7 / 24) / 2)


def test_a_bound_no_share_reaches_says_so():
    assert np.isnan(query_bound.least_share(np.polynomial.Polynomial([-1.0, 0.5])))
    assert query_bound.least_share(np.polynomial.Polynomial([0.1, 0.5])) == 0.0
    assert query_bound.least_share(np.polynomial.Polynomial([-0.25, 1.0])) == pytest.approx(0.25)
