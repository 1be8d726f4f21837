"""The merge rules of lib/search/fusion.py on tiny hand-made lists, the dev choice's rule on a tiny
fixture, and the merge table on a stub search (docs/merge.md)."""
import math

import pandas as pd
import pytest

from lib.designs import Result
from lib.evaluation import merge_selection as sel
from lib.evaluation import merges
from lib.search.fusion import best_score, merge, question_first, rrf, weighted_rrf

Q = [("s", 0.9), ("a", 0.8), ("b", 0.7)]        # the question's list
N1 = [("x", 0.95), ("a", 0.85), ("s", 0.6)]     # a new query's list: its own best score is higher
N2 = [("y", 0.5), ("b", 0.4)]


def ids(lists):
    return [[d for d, _ in lst] for lst in lists]


def test_best_score_ranks_by_each_papers_highest_similarity():
    got = best_score([Q, N1, N2])
    assert [d for d, _ in got] == ["x", "s", "a", "b", "y"]  # x 0.95 pushes the question's s down
    assert dict(got)["a"] == pytest.approx(0.85) and dict(got)["s"] == pytest.approx(0.9)


def test_best_score_ties_keep_first_appearance_and_missing_scores_are_refused():
    tied = best_score([[("b", 0.5), ("a", 0.5)], [("c", 0.5), ("a", 0.4)]])
    assert [d for d, _ in tied] == ["b", "a", "c"]
    with pytest.raises(ValueError, match="list 2, rank 1 .*score None"):
        best_score([[("a", 0.5)], [("b", None)]])
    with pytest.raises(ValueError, match="nan"):
        best_score([[("a", math.nan)]])
    # a paper absent from a list is not scored there: its best is over the lists it is in
    assert dict(best_score([[("a", 0.2)], [("b", 0.3)]])) == {"b": 0.3, "a": 0.2}


def test_question_first_keeps_the_question_list_and_appends_new_finds_in_order():
    assert question_first(ids([Q, N1, N2])) == ["s", "a", "b", "x", "y"]
    assert question_first([["a"], []]) == ["a"]


def test_weighted_rrf_weights_the_question_list():
    lists = [["s", "b", "c"], ["x", "a", "s"], ["a", "y"]]
    # equal weights rank exactly as rrf
    assert weighted_rrf(lists, [1, 1, 1]) == rrf(lists)
    # with k = 60: a, at ranks 2 and 1 of the new lists (1/62 + 1/61), beats s, at rank 1 of the question's
    # and 3 of a new list (1/61 + 1/63), under RRF; weight 2 on the question's list puts s (2/61 + 1/63) first
    assert [d for d, _ in rrf(lists)][:2] == ["a", "s"]
    assert [d for d, _ in weighted_rrf(lists, [2, 1, 1])][:2] == ["s", "a"]
    with pytest.raises(ValueError):
        weighted_rrf(lists, [1, 1])


def test_merge_dispatches_and_cuts_at_depth():
    assert merge("rrf", [Q, N1, N2], 2) == [d for d, _ in rrf(ids([Q, N1, N2]))][:2]
    assert merge("best_score", [Q, N1, N2], 3) == ["x", "s", "a"]
    assert merge("question_first", [Q, N1, N2], 4) == ["s", "a", "b", "x"]
    assert merge("weighted_rrf", [Q, N1, N2], 1, weight=2.0) == ["s"]
    assert merge("rrf", [Q], 50) == ["s", "a", "b"]  # one list: every rule returns it
    with pytest.raises(ValueError, match="unknown merge rule"):
        merge("combsum", [Q], 5)


def _rows(scores):
    """merge_scores-like rows: arm -> list of (qid, mrr)."""
    return pd.DataFrame([{"arm": a, "qid": q, "mrr_at_10": m, "recall_at_5": float(m > 0.2)}
                         for a, pairs in scores.items() for q, m in pairs])


def test_selection_keeps_rrf_within_the_tie_and_takes_a_clear_winner():
    qs = ["q1", "q2"]
    base = {a: [("q1", 0.5), ("q2", 0.5)] for a in merges.ARM_NAMES}
    # best_score 0.001 above rrf: inside the tie (0.002), rrf is first in the order
    near = dict(base, best_score=[("q1", 0.502), ("q2", 0.5)])
    c = sel.choose(sel.arm_measures(_rows(near), qs))
    assert c["arm"] == "rrf" and c["best_arm"] == "best_score" and "within" in c["why"]
    # weighted w4 clearly best
    far = dict(base, weighted_rrf_w4=[("q1", 1.0), ("q2", 0.5)])
    c = sel.choose(sel.arm_measures(_rows(far), qs))
    assert c["arm"] == "weighted_rrf_w4" and c["within_tie"] == ["weighted_rrf_w4"]
    # equal best: the earlier in the order wins
    eq = dict(base, question_first=[("q1", 1.0), ("q2", 0.5)], best_score=[("q1", 1.0), ("q2", 0.5)])
    assert sel.choose(sel.arm_measures(_rows(eq), qs))["arm"] == "question_first"


def test_selection_refuses_an_incomplete_arm():
    scores = {a: [("q1", 0.5), ("q2", 0.5)] for a in merges.ARM_NAMES}
    scores["best_score"] = [("q1", 0.5)]
    with pytest.raises(sel.IncompleteArms, match="best_score misses 1 of 2"):
        sel.arm_measures(_rows(scores), ["q1", "q2"])


def test_merge_scores_and_table_from_saved_queries_on_a_stub_search():
    lists = {"question one": Q, "new query": N1, "question two": [("t", 0.9), ("u", 0.5)]}
    res = [Result("q1", "agent", 1, ["s", "a", "x", "b"], 2, ["question one", "new query"], 0.0),
           Result("q2", "agent", 1, ["t", "u"], 1, ["question two"], 0.0)]
    rows = merges.merge_scores(res, {"q1": "s", "q2": "t"}, lists.__getitem__, depth=50)
    r = rows.set_index(["qid", "arm"])
    # RRF (s: 1/61 + 1/63 just above a: 2/62) rebuilds the saved list; best score puts x (0.95) above s
    assert r.loc[("q1", "rrf"), "as_saved"] and r.loc[("q1", "rrf"), "mrr_at_10"] == 1.0
    assert r.loc[("q1", "best_score"), "rank"] == 2 and not r.loc[("q1", "best_score"), "as_saved"]
    assert r.loc[("q1", "question_first"), "mrr_at_10"] == 1.0 and r.loc[("q1", "rrf"), "lists"] == 2
    assert (r.xs("q2", level="qid").mrr_at_10 == 1.0).all()  # one list: every rule the same
    dense = {"q1": {"recall_at_5": 1.0, "mrr_at_10": 1.0}, "q2": {"recall_at_5": 1.0, "mrr_at_10": 1.0}}
    t = merges.merge_table(rows, dense, chosen="question_first", n_resamples=50, n_permutations=200)
    best = t[(t.merge_rule == "best_score") & (t.run == "mean")].iloc[0]
    assert best.mrr_at_10 == pytest.approx(0.75) and best.mrr_at_10_delta == pytest.approx(-0.25)
    assert best.mrr_at_10_low <= -0.25 <= best.mrr_at_10_high and 0 < best.mrr_at_10_p_value <= 1
    assert best.recall_at_5_delta == 0 and best.recall_at_5_p_value == 1.0
    assert t[t.merge_rule == "question_first"].chosen_on_dev.all() and not t[t.merge_rule == "rrf"].chosen_on_dev.any()
    assert set(t.run) == {"1", "mean"} and t[t.merge_rule == "rrf"].as_saved.eq(1.0).all()


def test_findings_and_reading_name_rrf_the_choice_and_the_best_rule_per_condition():
    from lib.report.merges import merges_reading, merges_table

    def row(arm, delta, low, high, chosen=False):
        return {"condition": "full questions", "design": "agent", "merge_rule": arm, "run": "mean", "questions": 9,
                "chosen_on_dev": chosen, "mrr_at_10": 0.9 + delta, "mrr_at_10_dense": 0.9, "mrr_at_10_delta": delta,
                "mrr_at_10_low": low, "mrr_at_10_high": high, "mrr_at_10_p_value": 0.01, "recall_at_5": 1.0,
                "recall_at_5_dense": 1.0, "recall_at_5_delta": 0.0, "recall_at_5_low": 0.0, "recall_at_5_high": 0.0,
                "recall_at_5_p_value": 1.0}

    t = pd.DataFrame([row("rrf", -0.05, -0.08, -0.02), row("question_first", 0.0, 0.0, 0.0, True),
                      row("weighted_rrf_w8", 0.01, 0.002, 0.02)])
    f = merges.merge_findings(t)[0]
    assert f["rrf"]["delta"] == -0.05 and f["chosen"]["arm"] == "question_first" and f["best"]["arm"] == "weighted_rrf_w8"
    assert f["above_dense"] == ["weighted_rrf_w8"] and f["below_dense"] == ["rrf"]
    text = merges_reading([f], None)
    assert "−0.050 [−0.080, −0.020]" in text and "weighted RRF, w = 8, +0.010" in text and "above dense" in text
    assert f["best_other"]["arm"] == "weighted_rrf_w8" and "the best of the others" not in text  # it is the best
    shown = merges_table(t)
    assert shown["merge rule"].tolist()[1] == "the question's list first (chosen on dev)"


def test_the_saved_merge_table_covers_every_saved_run_of_every_condition():
    """results/merges.csv (scripts/select_merge.py --conditions) re-fuses the saved queries of every complete
    run; a run added later (a new run in a condition) must be in it, or page 6 would read fewer runs than the
    index. Rerun ``python scripts/select_merge.py --conditions`` after adding runs."""
    from lib.report import queries
    from lib.config import load_profile

    base = load_profile("offline")
    table = pd.read_csv(base.results_dir / "merges.csv")
    for cname, cp in queries.condition_profiles(base).items():
        pq = queries.load_scored(cp).pq
        for design in merges.MERGE_DESIGNS:
            saved = sorted(int(r) for r in pq[pq.design == design].run.unique())
            rows = table[(table.condition == cname) & (table.design == design) & (table.run.astype(str) != "mean")]
            assert sorted({int(r) for r in rows.run}) == saved, (cname, design, "rerun scripts/select_merge.py --conditions")


def test_the_merge_doc_quotes_the_saved_merge_table():
    """docs/merge.md's table of every rule in every condition is the saved merges.csv (the agent, MRR@10, mean
    over runs), cell by cell, so a new run that moves a figure fails here until the doc is brought up to date."""
    from pathlib import Path

    from lib.config import load_profile
    from lib.report.display import fixed, with_range

    table = pd.read_csv(load_profile("offline").results_dir / "merges.csv")
    table = table[(table.design == "agent") & (table.run.astype(str) == "mean")]
    doc = (Path(__file__).resolve().parent.parent / "docs" / "merge.md").read_text(encoding="utf-8")
    lines = [line for line in doc.splitlines() if line.startswith("| `")]
    order = ["full questions", "short questions", "two-part questions", "full questions, whole snapshot",
             "short questions, whole snapshot"]
    names = {"rrf": "`rrf` (as run)", "question_first": "`question_first` (dev choice)", "best_score": "`best_score`",
             "weighted_rrf_w2": "`weighted_rrf`, w = 2", "weighted_rrf_w4": "`weighted_rrf`, w = 4",
             "weighted_rrf_w8": "`weighted_rrf`, w = 8"}

    def cell(r):
        ends = {fixed(x, sign=True) for x in (r.mrr_at_10_delta, r.mrr_at_10_low, r.mrr_at_10_high)}
        if len(ends) == 1:  # no range: the list is dense's
            return fixed(r.mrr_at_10_delta, sign=True)
        return with_range(r.mrr_at_10_delta, r.mrr_at_10_low, r.mrr_at_10_high)

    for rule, shown in names.items():
        rows = table[table.merge_rule == rule].set_index("condition")
        want = f"| {shown} | " + " | ".join(cell(rows.loc[c]) for c in order) + " |"
        assert want in lines, (want, [line for line in lines if line.startswith(f"| {shown} |")])
