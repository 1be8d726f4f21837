"""Scores against graded judgements with one or more relevant documents, cross-checked against
trec_eval's (ir_measures over pytrec_eval: R@5, RR@10, nDCG@10)."""
from math import log2

import numpy as np
import pytest

from lib.evaluation.metrics import mrr_at_k, ndcg_at_k, qrels_scores, rank_of, recall_at_k

MEASURES = {"recall_at_5": "R@5", "mrr_at_10": "RR@10", "ndcg_at_10": "nDCG@10"}


def reference(ranked: list[str], relevant: dict[str, int]) -> dict[str, float]:
    """ir_measures' per-query values for one ranked list (scores strictly decreasing: no ties)."""
    import ir_measures

    measures = [ir_measures.parse_measure(m) for m in MEASURES.values()]
    run = {"q": {d: float(len(ranked) - i) for i, d in enumerate(ranked)}}
    got = {str(m.measure): m.value for m in ir_measures.iter_calc(measures, {"q": relevant}, run)}
    return {ours: got[theirs] for ours, theirs in MEASURES.items()}


def assert_matches(ranked, relevant):
    ours = qrels_scores(ranked, relevant)
    theirs = reference(ranked, relevant)
    for name in MEASURES:
        assert ours[name] == pytest.approx(theirs[name], abs=1e-9), (name, ranked, relevant)


def test_graded_by_hand():
    # grades 2 and 1 retrieved at ranks 2 and 4; a judged-not-relevant document at rank 1
    ranked = ["n", "a", "x", "b", "y"]
    rel = {"a": 2, "b": 1, "n": 0}
    s = qrels_scores(ranked, rel)
    assert s["recall_at_5"] == 1.0 and s["mrr_at_10"] == 0.5 and s["rank"] == 2
    assert s["ndcg_at_10"] == pytest.approx((2 / log2(3) + 1 / log2(5)) / (2 + 1 / log2(3)))
    assert_matches(ranked, rel)


def test_relevant_beyond_five_and_beyond_ten():
    ranked = [f"d{i}" for i in range(1, 16)]
    rel = {"d3": 1, "d7": 3, "d12": 2}  # one in the top 5, one in 6-10, one past 10
    s = qrels_scores(ranked, rel)
    assert s["recall_at_5"] == pytest.approx(1 / 3) and s["mrr_at_10"] == pytest.approx(1 / 3) and s["rank"] == 3
    ideal = 3 + 2 / log2(3) + 1 / log2(4)
    assert s["ndcg_at_10"] == pytest.approx((1 / log2(4) + 3 / log2(8)) / ideal)
    assert_matches(ranked, rel)


def test_no_relevant_found():
    ranked = [f"d{i}" for i in range(10)]
    s = qrels_scores(ranked, {"elsewhere": 2, "d3": 0})
    assert s == {"recall_at_5": 0.0, "mrr_at_10": 0.0, "ndcg_at_10": 0.0, "rank": None}
    assert_matches(ranked, {"elsewhere": 2, "d3": 0})
    # found, but only past rank 10: rank is still reported, the cut scores are 0
    s = qrels_scores(ranked + ["late"], {"late": 1})
    assert s["rank"] == 11 and s["mrr_at_10"] == 0.0 and s["ndcg_at_10"] == 0.0


def test_ranking_shorter_than_ten():
    ranked = ["a", "b", "c"]
    rel = {"c": 1, "z": 2}  # the unretrieved grade-2 document still counts in the ideal list
    s = qrels_scores(ranked, rel)
    assert s["recall_at_5"] == 0.5 and s["mrr_at_10"] == pytest.approx(1 / 3)
    assert s["ndcg_at_10"] == pytest.approx((1 / log2(4)) / (2 + 1 / log2(3)))
    assert_matches(ranked, rel)
    # an empty list finds nothing
    assert qrels_scores([], rel) == {"recall_at_5": 0.0, "mrr_at_10": 0.0, "ndcg_at_10": 0.0, "rank": None}


def test_more_relevant_than_the_cut():
    # 12 relevant documents: the ideal list is cut at 10, so a perfect top 10 scores 1
    ranked = [f"d{i}" for i in range(20)]
    rel = {f"d{i}": 1 for i in range(12)}
    s = qrels_scores(ranked, rel)
    assert s["ndcg_at_10"] == pytest.approx(1.0) and s["recall_at_5"] == pytest.approx(5 / 12)
    assert_matches(ranked, rel)
    # the best grades must come first for a perfect score
    graded = {"d0": 1, "d1": 3}
    assert ndcg_at_k(ranked, graded) < 1.0 and ndcg_at_k(["d1", "d0"], graded) == pytest.approx(1.0)


def test_negative_grades_are_not_relevant():
    ranked = ["bad", "a"]
    rel = {"bad": -1, "a": 1}
    s = qrels_scores(ranked, rel)
    assert s["rank"] == 2 and s["ndcg_at_10"] == pytest.approx(1 / log2(3))
    assert_matches(ranked, rel)


def test_random_graded_cases_match_ir_measures():
    rng = np.random.default_rng(11)
    docs = [f"doc/{i}" for i in range(40)]
    for _ in range(150):
        ranked = list(rng.permutation(docs)[:rng.integers(1, 25)])
        judged = rng.choice(docs, size=rng.integers(1, 15), replace=False)
        rel = {str(d): int(g) for d, g in zip(judged, rng.integers(0, 4, size=len(judged)))}
        if not any(g > 0 for g in rel.values()):
            rel[str(judged[0])] = 1
        assert_matches(ranked, rel)


def test_one_relevant_document_agrees_with_the_shipped_scores():
    """With one source, recall@5, MRR@10 and rank are the single-source functions' values."""
    rng = np.random.default_rng(5)
    docs = [f"p{i}" for i in range(30)]
    for _ in range(100):
        ranked = list(rng.permutation(docs)[:12])
        source = str(rng.choice(docs))
        s = qrels_scores(ranked, {source: 1})
        assert s["recall_at_5"] == recall_at_k(ranked, source, 5)
        assert s["mrr_at_10"] == mrr_at_k(ranked, source, 10)
        assert s["rank"] == rank_of(ranked, source)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least one relevant"):
        qrels_scores(["a"], {"a": 0})
    with pytest.raises(ValueError, match="at least one relevant"):
        qrels_scores(["a"], {})
    with pytest.raises(ValueError, match="more than once"):
        qrels_scores(["a", "b", "a"], {"a": 1})
