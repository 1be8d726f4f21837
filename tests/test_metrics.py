import json

import numpy as np
import pytest

from lib.designs import Result
from lib.evaluation.metrics import mrr_at_k, paired_bootstrap, per_question, rank_of, recall_at_k
from tests.fakes import ranx_says


def test_recall_and_mrr_by_hand():
    ranked = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
    assert recall_at_k(ranked, "e", 5) == 1.0 and recall_at_k(ranked, "f", 5) == 0.0
    assert mrr_at_k(ranked, "a") == 1.0 and mrr_at_k(ranked, "d") == 0.25
    assert mrr_at_k(ranked, "j") == 0.1 and mrr_at_k(ranked, "k") == 0.0
    assert rank_of(ranked, "k") == 11 and rank_of(ranked, "zz") is None


def test_metrics_match_ir_measures():
    """recall@5 and MRR@10 against trec_eval's (ir_measures over pytrec_eval)."""
    import ir_measures
    from ir_measures import RR, R

    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(30)]
    results, qrels, run = [], {}, {}
    for q in range(40):
        ranked = list(rng.permutation(docs)[:12])
        rel = docs[rng.integers(0, 30)]
        qid = f"q{q}"
        results.append(Result(qid, "dense", 1, ranked, 1, ["x"], 0.0))
        qrels[qid] = {rel: 1}
        run[qid] = {d: float(12 - i) for i, d in enumerate(ranked)}
    df = per_question(results, {q: next(iter(r)) for q, r in qrels.items()})
    ref = ir_measures.calc_aggregate([R @ 5, RR @ 10], qrels, run)
    assert df["recall_at_5"].mean() == pytest.approx(ref[R @ 5])
    assert df["mrr_at_10"].mean() == pytest.approx(ref[RR @ 10])


def test_bootstrap_known_answers():
    # constant difference: the range is the point
    a = np.array([1.0, 0.5, 0.0, 1.0])
    assert paired_bootstrap(a, a - 0.25) == (0.25, 0.25, 0.25)
    # 30 wins in 100 paired questions: mean 0.3, 95% range close to the normal approximation
    a = np.r_[np.ones(30), np.zeros(70)]
    b = np.zeros(100)
    d, lo, hi = paired_bootstrap(a, b, n_resamples=2000, seed=1)
    se = np.sqrt(0.3 * 0.7 / 100)
    assert d == pytest.approx(0.3)
    assert lo == pytest.approx(0.3 - 1.96 * se, abs=0.02) and hi == pytest.approx(0.3 + 1.96 * se, abs=0.02)
    # same seed, same answer
    assert paired_bootstrap(a, b, seed=1) == (d, lo, hi)


def test_bootstrap_is_paired():
    rng = np.random.default_rng(3)
    base = rng.random(200)
    a, b = base + 0.01, base  # every question gains exactly 0.01 -> no spread when paired
    d, lo, hi = paired_bootstrap(a, b)
    assert lo == pytest.approx(0.01) and hi == pytest.approx(0.01)
    with pytest.raises(ValueError):
        paired_bootstrap(a, b[:-1])


def test_exported_trec_and_qrels_score_the_same_in_ir_measures(tmp_path):
    import ir_measures
    from ir_measures import R, RR

    from lib.designs import Question
    from lib.runs import write_qrels, write_trec

    qs = [Question("q1", "a", "d3"), Question("q2", "b", "d9"), Question("q3", "c", "d1")]
    res = [Result("q1", "dense", 1, ["d1", "d2", "d3", "d4"], 1, ["a"], 0.1),
           Result("q2", "dense", 1, [f"d{i}" for i in range(10, 30)], 1, ["b"], 0.1),
           Result("q3", "dense", 1, ["d5", "d6", "d7", "d8", "d9", "d2", "d1"], 1, ["c"], 0.1)]
    run = ir_measures.read_trec_run(str(write_trec(res, tmp_path / "run1.trec", "dense-run1")))
    qrels = ir_measures.read_trec_qrels(str(write_qrels(qs, tmp_path / "qrels.txt")))
    agg = ir_measures.calc_aggregate([RR @ 10, R @ 5], qrels, run)
    ours = per_question(res, {q.qid: q.source_id for q in qs})
    assert agg[RR @ 10] == pytest.approx(ours.mrr_at_10.mean())
    assert agg[R @ 5] == pytest.approx(ours.recall_at_5.mean())


def test_two_part_measures_against_ir_measures_with_two_relevant_papers(tmp_path):
    import ir_measures
    from ir_measures import R

    from lib.designs import Question
    from lib.evaluation.metrics import twopart_scores
    from lib.runs import write_qrels, write_trec

    qs = [Question("t1", "a", "d2;d7"), Question("t2", "b", "d1;d30"), Question("t3", "c", "d4;d5")]
    res = [Result("t1", "dense", 1, [f"d{i}" for i in range(1, 20)], 1, ["a"], 0.1),
           Result("t2", "dense", 1, [f"d{i}" for i in range(1, 20)], 1, ["b"], 0.1),
           Result("t3", "dense", 1, ["d9", "d5", "d8", "d4"], 1, ["c"], 0.1)]
    assert twopart_scores(res[0].ranked_ids, ["d2", "d7"]) == {"recall_at_5": 0.5, "mrr_at_10": 1 / 7,
                                                                "both_found_at_10": 1.0, "rank": 7}
    assert twopart_scores(res[1].ranked_ids, ["d1", "d30"])["both_found_at_10"] == 0.0
    run = ir_measures.read_trec_run(str(write_trec(res, tmp_path / "run1.trec", "dense-run1")))
    qrels = ir_measures.read_trec_qrels(str(write_qrels(qs, tmp_path / "qrels.txt")))
    per_q = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc([R @ 5, R @ 10], qrels, run)}
    ours = per_question(res, {q.qid: q.source_id for q in qs}).set_index("qid")
    for q in qs:
        assert ours.loc[q.qid, "recall_at_5"] == pytest.approx(per_q[(q.qid, "R@5")])  # per-paper recall@5
        assert ours.loc[q.qid, "both_found_at_10"] == float(per_q[(q.qid, "R@10")] == 1.0)  # both in the top 10


def test_the_citation_hit_rate_counts_the_cited_sources_of_the_designs_that_cite_and_only_theirs():
    """``cited`` per question: the share of the source(s) among a loop's citations (a two-part question
    counts each paper), NaN for a design that cites nothing; the run and design means leave the
    NaN designs out, and the loop page's and the dev choice's measures agree with it."""
    import math

    from lib.evaluation import loop_selection
    from lib.evaluation.scores import design_summary, run_scores
    from lib.report.loop import measures

    def loop(qid, cites, run=1):
        return Result(qid, "loop", run, ["p9", *cites], 1, ["x"], 1.0, details={"citations": cites})

    sources = {"q1": "p1", "q2": "p2", "q3": "p3;p4"}
    res = [loop("q1", ["p1"]), loop("q2", ["p7", "p8"]), loop("q3", ["p4"]),
           loop("q1", [], run=2), loop("q2", ["p2"], run=2), loop("q3", ["p3", "p4"], run=2),
           Result("q1", "dense", 1, ["p1"], 1, ["x"], 0.1)]
    pq = per_question(res, sources)
    got = pq.set_index(["design", "run", "qid"]).cited
    assert got[("loop", 1, "q1")] == 1.0 and got[("loop", 1, "q2")] == 0.0 and got[("loop", 1, "q3")] == 0.5
    assert got[("loop", 2, "q1")] == 0.0 and got[("loop", 2, "q3")] == 1.0
    assert math.isnan(got[("dense", 1, "q1")])
    rs = run_scores(pq).set_index(["design", "run"]).cited
    assert rs[("loop", 1)] == pytest.approx(0.5) and rs[("loop", 2)] == pytest.approx(2 / 3)
    assert math.isnan(rs[("dense", 1)])
    summary = design_summary(pq).set_index("design").cited
    assert summary["loop"] == pytest.approx((0.5 + 2 / 3) / 2) and math.isnan(summary["dense"])
    run1 = [r for r in res if r.design == "loop" and r.run == 1]
    assert loop_selection.arm_measures(run1, sources)["citation_hit_rate"] == pytest.approx(0.5)
    assert measures(run1, sources).citation_hit.mean() == pytest.approx(0.5)
    # with a two-part question among them, the loop's summary also gives the share citing every source
    from lib.report.loop import summary as loop_summary

    assert loop_summary(measures(run1, sources)).citation_all_rate.iloc[0] == pytest.approx(1 / 3)
    assert "citation_all_rate" not in loop_summary(measures(run1[:2], sources))


def _two_systems(n=30, seed=3):
    """Two systems' ranked lists over n one-source questions (the source "s" among five others)."""
    rng = np.random.default_rng(seed)
    docs = ["s", "a", "b", "c", "e", "f"]
    return ({f"q{i}": list(rng.permutation(docs)) for i in range(n)},
            {f"q{i}": list(rng.permutation(docs)) for i in range(n)})


def test_paired_permutation_agrees_with_ranx_compare_and_scipy():
    """The sign-flip p-value matches ranx's Fisher randomization test (its ``compare``, 20,000 flips) and scipy's
    paired-samples permutation test on the same per-question MRR@10, to Monte Carlo error. ranx is asked in a
    process of its own with numba's compiler off (tests/fakes.py ranx_says): compiling its functions took half a
    minute of the test; interpreted, the same 20,000 flips take about two seconds."""
    from scipy import stats

    from lib.evaluation.metrics import paired_permutation

    a_lists, b_lists = _two_systems()
    a = np.array([mrr_at_k(a_lists[q], "s") for q in a_lists])
    b = np.array([mrr_at_k(b_lists[q], "s") for q in b_lists])
    ours = paired_permutation(a, b, 20000, seed=1)
    lists = json.dumps({"a": {q: [str(d) for d in ids] for q, ids in a_lists.items()},
                        "b": {q: [str(d) for d in ids] for q, ids in b_lists.items()}})
    ranx = ranx_says(
        "import json\nfrom ranx import Qrels, Run, compare\n"
        f"lists = json.loads({lists!r})\n"
        "qrels = Qrels({q: {'s': 1} for q in lists['a']})\n"
        "runs = [Run({q: {d: 1.0 / (j + 1) for j, d in enumerate(ids)} for q, ids in lists[name].items()}, name=name) "
        "for name in ('a', 'b')]\n"
        "report = compare(qrels, runs, ['mrr@10'], stat_test='fisher', n_permutations=20000, random_seed=1).to_dict()\n"
        "print(json.dumps({'p': report['a']['comparisons']['b']['mrr@10'], 'mrr': report['a']['scores']['mrr@10']}))")
    scipy_p = stats.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                     n_resamples=20000, vectorized=True, random_state=1).pvalue
    assert ranx["mrr"] == pytest.approx(a.mean())
    assert 0.2 < ours < 0.9  # no difference to speak of between two random systems
    assert ours == pytest.approx(ranx["p"], abs=0.02) and ours == pytest.approx(scipy_p, abs=0.02)


def test_paired_permutation_by_hand():
    from lib.evaluation.metrics import paired_permutation

    # no difference anywhere: p = 1; the same value on every side: p = 1 whatever the seed
    assert paired_permutation([1, 0, 1], [1, 0, 1]) == 1.0
    # 12 questions all +1: of the 2^12 sign patterns only the two all-equal ones reach |mean| = 1: exactly 2 / 4096
    assert paired_permutation(np.ones(12), np.zeros(12)) == 2 / 4096
    # 40 questions all +1: 2 / 2^40, far below what 10,000 random flips could resolve (1 / 10,001)
    assert paired_permutation(np.ones(40), np.zeros(40)) == pytest.approx(2 / 2 ** 40, rel=1e-9)
    # zero differences add nothing, and a difference within 1e-12 of zero is zero
    assert paired_permutation([1, 0, 1, 1, 0.5], [0, 0, 0, 1, 0.5]) == paired_permutation([1, 0, 1], [0, 0, 0]) == 0.5
    assert paired_permutation([1 + 1e-13, 0.5], [1, 0.5]) == 1.0
    with pytest.raises(ValueError):
        paired_permutation([1, 2], [1])


def test_exact_sign_flip_equals_full_enumeration_and_scipy():
    """The dynamic programme over integer-scaled sums gives the p of full enumeration (small cases, MRR@10
    differences of run means of three: multiples of 1/7,560), and scipy's exact paired permutation test."""
    from scipy import stats

    from lib.evaluation.metrics import integer_scale, sign_flip_distribution

    rng = np.random.default_rng(5)
    mrr = np.array([0, 1, 1 / 2, 1 / 3, 1 / 4, 1 / 7, 1 / 10])
    for n in (6, 11, 16):
        a = rng.choice(mrr, size=(n, 3)).mean(axis=1)
        b = rng.choice(mrr, size=(n, 3)).mean(axis=1)
        d = a - b
        d = d[np.abs(d) > 1e-12]
        signs = 1 - 2 * ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1)
        enumerated = float(np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12))
        x, scale = integer_scale(d)
        assert scale in (2520, 5040, 7560) and np.allclose(x * np.abs(d).sum() / np.abs(x).sum(), d)
        dist, total = sign_flip_distribution(x)
        assert dist.sum() == pytest.approx(1.0)
        dp = float(dist[np.abs(np.arange(-total, total + 1)) >= abs(x.sum())].sum())
        assert dp == pytest.approx(enumerated, abs=1e-12)
        exact = stats.permutation_test((a, b), lambda x, y, axis: np.abs(np.mean(x - y, axis=axis)),
                                       permutation_type="samples", n_resamples=np.inf, vectorized=True,
                                       alternative="greater").pvalue
        assert dp == pytest.approx(exact, abs=1e-9)


def test_exact_p_over_many_questions_matches_random_flips():
    """297 questions, run means of three: the exact p against 100,000 random flips (Monte Carlo error)."""
    from lib.evaluation.metrics import exact_sign_flip, random_sign_flips

    rng = np.random.default_rng(9)
    mrr = np.array([0, 1, 1 / 2, 1 / 3, 1 / 5, 1 / 9])
    d = rng.choice(mrr, size=(297, 3)).mean(axis=1) - rng.choice(mrr, size=(297, 3)).mean(axis=1)
    d = d[np.abs(d) > 1e-12]
    p, method = exact_sign_flip(d)
    assert method.startswith("exact (distribution")
    assert p == pytest.approx(random_sign_flips(d, 100_000, 3), abs=0.006)


def test_holm_by_hand():
    from lib.evaluation.metrics import holm

    # sorted 0.01, 0.03, 0.04, 0.5 of m = 4: 0.04, 0.09, max(0.08, 0.09), 0.5; NaN is no test
    got = holm([0.01, 0.04, 0.03, np.nan, 0.5])
    assert got[[0, 1, 2, 4]] == pytest.approx([0.04, 0.09, 0.09, 0.5]) and np.isnan(got[3])
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert len(holm([])) == 0


def test_a_range_end_within_1e12_of_zero_is_zero():
    """Floating-point noise of a mean (e.g. 9.3e-20 as the low end of a range) is no difference: it reads 0, so a
    range whose low end is that noise does not lie above 0."""
    from lib.evaluation.metrics import paired_bootstrap

    # differences that cancel up to rounding: 0.1 + 0.2 - 0.3 is 5.6e-17, not 0
    a = np.array([0.1, 0.2, 0.0, 0.7])
    b = np.array([0.0, 0.0, 0.3, 0.7])
    d, lo, hi = paired_bootstrap(a, b, 200, 1)
    assert d == 0.0 and lo <= 0 <= hi
    same = np.array([1 / 3] * 5)
    assert paired_bootstrap(same + 1e-19, same, 200, 1) == (0.0, 0.0, 0.0)
