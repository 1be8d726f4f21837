"""The decision-level account (lib/evaluation/why_paths.py) and the judges over real trees
(lib/evaluation/judges.py): one hand-built case per path, points that add up exactly, exact expectations."""
import itertools

import numpy as np
import pandas as pd
import pytest

from lib.designs import Question, Result
from lib.evaluation import judges, why_paths
from lib.evaluation.metrics import scores_of

FILL = [f"f{i}" for i in range(60)]


def listed(source_at: int | None, tag: str = "") -> list[str]:
    """A 50-deep list with the source ("s") at a 1-based rank (None: absent)."""
    ids = [f"{tag}{x}" for x in FILL[:50]]
    if source_at is not None:
        ids[source_at - 1] = "s"
    return ids


def agent_result(qid, queries, ranked):
    return Result(qid, "agent", 1, ranked, len(queries), queries, 0.0)


# (question's rank of the source, new query's rank, saved list's rank, dense rank) -> the path expected
CASES = {
    "stopped; same as dense": ((1, None, 1, 1), "stopped"),
    "searched again; at rank 1; same; same as dense": ((1, 1, 1, 1), "again"),
    "searched again; at rank 1; worse; below dense": ((1, 3, 2, 1), "again"),
    "searched again; at rank 1; lost; below dense": ((1, None, 2, 1), "again"),
    "searched again; at 2-5; better; above dense": ((3, 1, 2, 3), "again"),
    "searched again; at 2-5; worse; same as dense": ((3, 8, 3, 3), "again"),
    "searched again; not shown; better; above dense": ((9, 1, 4, 9), "again"),
    "searched again; not shown; same; same as dense": ((None, None, None, None), "again"),
}


def build():
    lists, results, questions, dense = {}, [], [], {}
    for i, (path, ((q, new, saved, d), kind)) in enumerate(CASES.items()):
        qid = f"q{i}"
        qtext, ntext = f"question {i}", f"query {i}"
        lists[qtext], lists[ntext] = listed(q, "a"), listed(new, "b")
        queries = [qtext] if kind == "stopped" else [qtext, ntext]
        results.append(agent_result(qid, queries, listed(saved, "c")))
        questions.append(Question(qid, qtext, "s"))
        dense[qid] = listed(d, "d")
    return lists, results, questions, dense


def test_each_case_lands_on_its_path_and_only_there():
    lists, results, questions, dense = build()
    pr = why_paths.design_paths(results, questions, lists.__getitem__, dense, "agent")
    assert list(pr.path) == list(CASES)


def test_points_add_up_to_the_difference_from_dense_over_runs():
    lists, results, questions, dense = build()
    # a second run of two questions: each question weighs 1 / questions, each run of it 1 / its runs
    extra = [Result(r.qid, "agent", 2, listed(5, "e"), 1, [r.queries[0]], 0.0) for r in results[:2]]
    pr = why_paths.design_paths(results + extra, questions, lists.__getitem__, dense, "agent")
    table = why_paths.summary(pr, "c", "agent", "m")
    by_q = pd.DataFrame([{"qid": r.qid, "run": r.run, "m": scores_of(r.ranked_ids, "s")["mrr_at_10"]}
                         for r in results + extra]).groupby("qid").m.mean()
    want = float(np.mean([by_q[q.qid] - scores_of(dense[q.qid], "s")["mrr_at_10"] for q in questions]))
    assert table.mrr_at_10_points.sum() == pytest.approx(want, abs=1e-12)
    assert table.results.sum() == len(results) + 2


def test_multiquery_paths():
    lists = {"q": listed(2, "a"), "better": listed(1, "b"), "same": listed(2, "c"), "worse": listed(7, "d"),
             "lost": listed(None, "e")}
    cases = {("better", "same", "same"): "a rewrite better, none worse", ("better", "lost", "same"): "better and worse",
             ("same", "worse", "same"): "none better, some worse", ("same", "same", "same"): "all the same"}
    for rewrites, word in cases.items():
        r = Result("q1", "multiquery", 1, listed(2, "f"), 4, ["q", *rewrites], 0.0)
        p = why_paths.multiquery_path(r, "s", lists.__getitem__, listed(2, "g"))
        assert p["query"] == word and p["final"] == "same as dense"


def test_a_tie_is_not_better():
    assert why_paths.query_effect(listed(1), listed(1, "x"), "s") == "same"
    assert why_paths.query_effect(listed(None), listed(None, "x"), "s") == "same"
    assert why_paths.query_effect(listed(2), listed(1, "x"), "s") == "better"


def chain(shown, leaves_mrr, decisions=("stop", "stop"), path=1, dense=1.0):
    leaves = [{"mrr_at_10": m, "recall_at_5": float(m > 0)} for m in leaves_mrr]
    return judges.Chain("q", leaves, list(shown), list(decisions), path, {"mrr_at_10": dense, "recall_at_5": 1.0}, 3)


def test_judge_expectation_by_enumeration():
    """The exact expectation equals the sum over every decision sequence of its chance times its leaf."""
    c = chain([True, False, False], [0.5, 1.0, 0.25])
    for ps, pq in itertools.product([0, 0.3, 1], [0, 0.6, 1]):
        # state 1 shown: stop w.p. ps; state 2 not shown: search w.p. pq; state 3 is the cap
        want = ps * 0.5 + (1 - ps) * ((1 - pq) * 1.0 + pq * 0.25)
        assert judges.expected(c, ps, pq, "mrr_at_10") == pytest.approx(want)
    # a chain that ended early stops where it ends
    short = chain([False], [0.2], decisions=("stop",))
    assert judges.expected(short, 0.0, 1.0, "mrr_at_10") == pytest.approx(0.2)


def test_measured_accuracy_and_the_prediction_at_it():
    cs = [chain([True, True, True], [1.0, 0.5, 0.5], ("stop", "stop"), 1),
          chain([True, True, True], [1.0, 0.5, 0.5], ("search", "stop"), 2),
          chain([False, False, True], [0.0, 0.0, 1.0], ("search", "search"), 3, dense=0.0),
          chain([False, True, True], [0.0, 1.0, 1.0], ("stop", "stop"), 1, dense=0.0)]
    acc = judges.accuracy(cs)
    # shown: (q1: stop, stop), (q2: search, stop), (q4 state 2: stop) -> 4 of 5; not shown: q3 twice search, q4 stop
    assert (acc["p_stop"], acc["p_search"]) == (pytest.approx(4 / 5), pytest.approx(2 / 3))
    rows = pd.DataFrame(judges.judge_rows(cs, "c", "m", n_resamples=200))
    model = rows[(rows.point == "model") & (rows.metric == "mrr_at_10")].iloc[0]
    # actual: leaf at each path minus dense: (1-1) + (0.5-1) + (1-0) + (0-0), over 4
    assert model.actual == pytest.approx((0 - 0.5 + 1 + 0) / 4)
    assert model.ceiling == pytest.approx((0 + 0 + 1 + 1) / 4)
    oracle = rows[(rows.point == "oracle judge") & (rows.metric == "mrr_at_10")].iloc[0]
    assert oracle.predicted == pytest.approx((0 + 0 + 1 + 1) / 4)  # here the oracle stop picks the best leaf


def test_docs_statistics_is_generated_from_the_saved_comparisons():
    """docs/statistics.md's counts are the saved tests' (never typed): the family is the comparisons' rows."""
    from lib.config import ROOT
    from lib.report.statistics_doc import DOC, statistics_doc

    comparisons = pd.read_csv(ROOT / "results" / "comparisons.csv")
    assert (ROOT / DOC).read_text(encoding="utf-8") == statistics_doc(comparisons)
    assert f"{len(comparisons)} tests" in statistics_doc(comparisons)


def test_why_paths_add_up_to_the_saved_comparisons():
    """Each (condition, design, profile model)'s points in results/why_paths.csv sum to its difference from
    dense in results/comparisons.csv (to 1e-9)."""
    from lib.config import ROOT, load_profile

    paths = pd.read_csv(ROOT / "results" / "why_paths.csv", keep_default_na=False, na_values=[""])
    comparisons = pd.read_csv(ROOT / "results" / "comparisons.csv")
    own = load_profile("offline").llm_model
    sums = paths[paths.model == own].groupby(["condition", "design"])[["mrr_at_10_points", "recall_at_5_points"]].sum()
    assert len(sums) >= 2
    for (condition, design), row in sums.iterrows():
        for metric in ("mrr_at_10", "recall_at_5"):
            want = comparisons[(comparisons.condition == condition) & (comparisons.design == design)
                               & (comparisons.metric == metric)].delta
            assert len(want) == 1, (condition, design, metric)
            assert row[f"{metric}_points"] == pytest.approx(float(want.iloc[0]), abs=1e-9), (condition, design, metric)


def test_every_saved_reply_names_its_decoding_path():
    """The table page 12 prints: every record of the shipped record store has a decoding path, and the runs made
    with the fast path are the ones docs/speed.md names (the short questions' runs 2 and 3) and the trees."""
    from lib.report.why_tables import decoding_table

    t = decoding_table()
    assert not t.empty and set(t.decoding) <= {"token", "fast"}
    fast = t[t.decoding == "fast"]
    assert set(fast.kind) <= {"agent", "rewrite", "agent_tree", "agent_tree_search"}
    assert set(fast[fast.kind.isin(["agent", "rewrite"])].run) <= {2, 3}


def test_every_saved_run_of_a_condition_was_made_by_one_decoding_path():
    """Each saved run of an LLM design in the shipped conditions was written by one decoding path (issue 47: one
    path per saved run), and every question of it is found among the records or answered without a model."""
    from lib.config import ROOT
    from lib.report.why_tables import run_decoding

    made = run_decoding(ROOT / "results")
    assert len(made) >= 40  # every condition's agent, multi-query, loop and escalate runs, both models
    one = made.decoding.str.fullmatch(r"(token|fast|no model call) \(\d+\)")
    assert one.all(), made[~one].to_dict("records")
    counts = made.decoding.str.extract(r"\((\d+)\)")[0].astype(int)
    assert (counts == made.questions).all()
    assert set(made[made["run file"].str.startswith("short/agent/")].decoding.str.split(" ").str[0]) == {"token", "fast"}
