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


def test_measured_accuracy_per_decision_and_the_prediction_at_it():
    cs = [chain([True, True, True], [1.0, 0.5, 0.5], ("stop", "stop"), 1),
          chain([True, True, True], [1.0, 0.5, 0.5], ("search", "stop"), 2),
          chain([False, False, True], [0.0, 0.0, 1.0], ("search", "search"), 3, dense=0.0),
          chain([False, True, True], [0.0, 1.0, 1.0], ("stop", "stop"), 1, dense=0.0)]
    first, second = judges.accuracy(cs)
    # first decision: shown in q1 (stop), q2 (search): 1 of 2; not shown in q3 (search), q4 (stop): 1 of 2
    assert (first["p_stop"], first["shown"], first["p_search"], first["not_shown"]) == (0.5, 2, 0.5, 2)
    # second decision: shown in q1, q2, q4 (all stop): 3 of 3; not shown in q3 (search): 1 of 1
    assert (second["p_stop"], second["shown"], second["p_search"], second["not_shown"]) == (1.0, 3, 1.0, 1)
    rows = pd.DataFrame(judges.judge_rows(cs, "c", "m", n_resamples=200))
    model = rows[(rows.point == "model") & (rows.metric == "mrr_at_10")].iloc[0]
    assert (model.p_stop_1, model.shown_1, model.p_stop_2, model.shown_2) == (0.5, 2, 1.0, 3)
    want = np.mean([judges.expected(c, [0.5, 1.0], [0.5, 1.0], "mrr_at_10") - c.dense["mrr_at_10"] for c in cs])
    assert model.predicted == pytest.approx(want)
    # actual without saved runs: the tree's own path (run 1): (1-1) + (0.5-1) + (1-0) + (0-0), over 4; no run
    # outside the tree, so no test of the prediction
    assert model.actual == pytest.approx((0 - 0.5 + 1 + 0) / 4) and np.isnan(model.gap) and model.tested_runs == ""
    assert model.hindsight == pytest.approx((0 + 0 + 1 + 1) / 4)
    perfect = rows[(rows.point == "perfect judge") & (rows.metric == "mrr_at_10")].iloc[0]
    assert perfect.predicted == pytest.approx((0 + 0 + 1 + 1) / 4)  # here the perfect judge picks the best leaf


def test_the_prediction_is_tested_on_the_runs_outside_the_tree():
    """Run 1 (the tree's own) is never the run its accuracies are tested against: runs 2 and 3 are."""
    def listed_at(rank):
        return listed(rank, "r")
    cs = [judges.Chain(q, [scores_of(listed_at(1), "s")] * 3, [True] * 3, ["stop", "stop"], 1,
                       scores_of(listed_at(1), "s"), 3, source="s") for q in ("a", "b")]
    runs = {1: {"a": listed_at(1), "b": listed_at(1)}, 2: {"a": listed_at(2), "b": listed_at(1)},
            3: {"a": listed_at(1), "b": listed_at(4)}}
    rows = pd.DataFrame(judges.judge_rows(cs, "c", "m", n_resamples=200, runs=runs, tree_run=1))
    model = rows[(rows.point == "model") & (rows.metric == "mrr_at_10")].iloc[0]
    assert model.runs == "1, 2, 3" and model.tested_runs == "2, 3"
    # actual: every run; the test: runs 2 and 3 only (per question the mean over them) minus the prediction (0)
    # (dense and every leaf 1): a's runs score 1, 0.5, 1; b's 1, 1, 0.25
    assert model.actual == pytest.approx(((0.5 - 1) / 3 + (0.25 - 1) / 3) / 2)
    assert model.gap == pytest.approx(((0.5 - 1) / 2 + (0.25 - 1) / 2) / 2)


def repeating_tree(qid="q"):
    """A chain whose query after the first search repeats the question (the forced query where the model
    stopped): by the agent's rule the search ends there, so its later lists are never reached."""
    q, other = "the question ", "a new query"
    lists = [listed(2, "a"), listed(2, "a"), listed(1, "b")]
    decisions = [{"searches": 1, "on_path": True, "decision": "stop", "why": "repeated query", "forced": True},
                 {"searches": 2, "on_path": False, "decision": "search", "why": ""}]
    return Result(qid, "agent_tree", 1, lists[0], 1, [q], 0.0,
                  details={"chain_queries": [q, q.strip(), other], "chain_lists": lists, "decisions": decisions,
                           "path_searches": 1})


def test_a_repeated_query_ends_the_chain_as_it_ends_the_agent():
    from lib.designs.agent import next_query

    tree = repeating_tree()
    # the agent's own rule reads the forced query as the end of the search
    class Use:
        stop_reason = "stop"
    assert next_query(Use(), '{"decision": "search", "query": "the question"}', ["the question "]) == (None,
                                                                                                     "repeated query")
    c = judges.chain_of(tree, "s", listed(2, "d"))
    assert len(c.leaves) == 1 and c.cut and c.repeat_stops == 1 and c.decisions == ["stop"]
    # no leaf fuses the repeated list: the judge stops where the chain ends, whatever its accuracies
    for ps, pq in itertools.product([0, 1], [0, 1]):
        assert judges.expected(c, ps, pq, "mrr_at_10") == pytest.approx(0.5)
    # the repeat is a stop by the agent's rule: counted at the first decision, nothing at the second
    first, second = judges.accuracy([c])
    assert (first["shown"], first["stops"], second["shown"], second["not_shown"]) == (1, 1, 0, 0)
    # a repeat of an earlier query (not the one just searched) does not end it
    later = Result("q", "agent_tree", 1, [], 1, [], 0.0, details={
        "chain_queries": ["x", "y", "x"], "chain_lists": [listed(3, "a"), listed(None, "b"), listed(1, "c")],
        "decisions": [{"searches": 1, "decision": "search"}, {"searches": 2, "decision": "stop"}], "path_searches": 2})
    assert len(judges.chain_of(later, "s", listed(3, "d")).leaves) == 3
    # query quality counts the repeat apart, never as a query compared
    from lib.evaluation import query_quality

    q = query_quality.tree_quality([tree], [Question("q", "the question ", "s")], "c", "m")
    assert int(q.queries.sum()) == 0 and int(q.repeated.sum()) == 1


def known_chains():
    """One decision (cap 2). Shown at the first search, searching again halves the score (1 -> 0.5); not shown,
    searching again finds it at rank 5 (0 -> 0.2). The judge minus dense: (0.5 s + 0.2 q - 0.5) / 2."""
    def leaf(m):
        return {"mrr_at_10": m, "recall_at_5": m}
    return [judges.Chain("a", [leaf(1.0), leaf(0.5)], [True, True], ["stop"], 1, leaf(1.0), 2),
            judges.Chain("b", [leaf(0.0), leaf(0.2)], [False, True], ["search"], 2, leaf(0.0), 2)]


def test_a_judge_grid_whose_break_even_is_known():
    cs = known_chains()
    grid = pd.DataFrame(judges.grid_rows(cs, "c", "m"))
    for r in grid.itertuples():
        assert r.difference == pytest.approx((0.5 * r.p_stop + 0.2 * r.p_search - 0.5) / 2)
    row = judges.breakeven_row(cs, "mrr_at_10", n_resamples=200)
    # with search accuracy 1, the judge beats dense above stop accuracy 0.6; with stop accuracy 1, above 0
    assert row["beats_dense"] and row["breakeven_stop"] == pytest.approx(0.6)
    assert row["breakeven_stop_1"] == pytest.approx(0.6) and row["breakeven_search"] == pytest.approx(0.0)
    assert row["best_judge"] == pytest.approx(0.1) and row["best_judge_at"] == "stop 100%, search 100%"
    # no judge beats dense when searching never finds it: always stopping (dense itself) is the best
    hopeless = [cs[0], judges.Chain("b", [{"mrr_at_10": 0.0, "recall_at_5": 0.0}] * 2, [False, False], ["search"], 2,
                                    {"mrr_at_10": 0.0, "recall_at_5": 0.0}, 2)]
    row = judges.breakeven_row(hopeless, "mrr_at_10", n_resamples=200)
    assert not row["beats_dense"] and np.isnan(row["breakeven_stop"]) and row["best_judge"] == 0.0


def test_the_best_judge_is_searched_exactly_over_per_decision_accuracies():
    """The corners hold the best judge: no point of a fine grid of (p_stop, p_search) per decision beats it."""
    rng = np.random.default_rng(3)
    cs = [chain(list(rng.random(3) < 0.5), list(rng.random(3)), dense=float(rng.random())) for _ in range(12)]
    ps, pq, best = judges.best_judge(cs, "mrr_at_10")
    base = np.mean([c.dense["mrr_at_10"] for c in cs])
    axis = np.linspace(0, 1, 6)
    for s1, s2, q1, q2 in itertools.product(axis, axis, axis, axis):
        assert np.mean(judges.values(cs, [s1, s2], [q1, q2], "mrr_at_10")) - base <= best + 1e-12


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
    with the fast path are the ones docs/speed.md names (the short questions' runs 2 and 3), the trees and the query
    strategies."""
    from lib.report.why_tables import decoding_table

    t = decoding_table()
    assert not t.empty and set(t.decoding) <= {"token", "fast"}
    fast = t[t.decoding == "fast"]
    # the query strategies (decompose, hyde) were run with the fast path from their first run
    assert set(fast.kind) <= {"agent", "rewrite", "agent_tree", "agent_tree_search", "decompose", "hyde"}
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


def strategy_results():
    """Scripted results of the two query strategies over three questions, two runs each: decompose (the question
    and 1-3 sub-queries, searched and fused by RRF, its saved list the fusion) and HyDE (one search with the mean
    vector of the question and an abstract: queries = [question, abstract], its saved list that search's)."""
    from lib.search.fusion import rrf

    lists = {f"question {i}": listed(r, f"q{i}") for i, r in enumerate((2, 1, None))}
    lists.update({"part a": listed(1, "pa"), "part b": listed(9, "pb"), "part c": listed(None, "pc"),
                  "part d": listed(3, "pd")})
    parts = {("q0", 1): ["part a", "part b"], ("q0", 2): ["part c"], ("q1", 1): ["part b"], ("q1", 2): [],
             ("q2", 1): ["part a", "part d", "part c"], ("q2", 2): ["part c"]}
    hyde_rank = {("q0", 1): 1, ("q0", 2): 5, ("q1", 1): 1, ("q1", 2): None, ("q2", 1): 7, ("q2", 2): None}
    questions = [Question(f"q{i}", f"question {i}", "s") for i in range(3)]
    decompose, hyde = [], []
    for (qid, run), ps in parts.items():
        q = f"question {qid[1]}"
        queries = [q, *ps]
        fused_ids = [d for d, _ in rrf([lists[x] for x in queries], 60)][:50]
        decompose.append(Result(qid, "decompose", run, fused_ids, len(queries), queries, 0.0))
        hyde.append(Result(qid, "hyde", run, listed(hyde_rank[(qid, run)], f"h{qid}{run}"), 1,
                           [q, f"An abstract for {qid}."], 0.0))
    dense = {q.qid: lists[q.text] for q in questions}
    return lists, questions, dense, decompose, hyde


def test_the_new_strategies_paths_sum_exactly_to_their_difference_from_dense():
    lists, questions, dense, decompose, hyde = strategy_results()
    for design, results in (("decompose", decompose), ("hyde", hyde)):
        pr = why_paths.design_paths(results, questions, lists.__getitem__, dense, design)
        table = why_paths.summary(pr, "c", design, "m")
        for metric in ("mrr_at_10", "recall_at_5"):
            per_q = pd.DataFrame([{"qid": r.qid, "v": scores_of(r.ranked_ids, "s")[metric]} for r in results])
            want = float(np.mean([per_q[per_q.qid == q.qid].v.mean() - scores_of(dense[q.qid], "s")[metric]
                                  for q in questions]))
            assert table[f"{metric}_points"].sum() == pytest.approx(want, abs=1e-12), (design, metric)
        assert table.results.sum() == 6
    pr = why_paths.design_paths(decompose, questions, lists.__getitem__, dense, "decompose")
    by = dict(zip(zip(pr.qid, pr.run), pr.path))
    # q0 run 1: part a better (1 < 2), part b worse (9) -> better and worse; q1 run 2: no sub-query
    assert by[("q0", 1)].startswith("sub-queries; better and worse; ")
    assert by[("q1", 2)] == "sub-queries; no query of its own; same as dense"
    assert by[("q2", 1)].startswith("sub-queries; a sub-query better, none worse; ")  # source missing from the question
    pr = why_paths.design_paths(hyde, questions, lists.__getitem__, dense, "hyde")
    by = dict(zip(zip(pr.qid, pr.run), pr.path))
    assert by[("q0", 1)] == "one search; above dense" and by[("q1", 2)] == "one search; below dense"
    assert by[("q2", 2)] == "one search; same as dense"  # missing from both


def test_page_12_takes_apart_every_design_of_a_known_kind_whose_runs_exist():
    """condition_paths and condition_quality pick up any LLM design with complete runs and a kind (so runs saved
    later are read when the tables are regenerated); escalate, searched with hybrid and a rerank, is left out."""
    from types import SimpleNamespace

    from lib.evaluation import query_quality
    from lib.evaluation.loss import ConditionRecords

    lists, questions, dense, decompose, hyde = strategy_results()
    rec = ConditionRecords(questions, {"decompose": (decompose, []), "hyde": (hyde, []),
                                       "escalate": ([Result("q0", "escalate", 1, [], 1, ["question 0"], 0.0)], [])},
                           lists.__getitem__, dense, {}, SimpleNamespace(rrf_k=60))
    paths = why_paths.condition_paths("c", {"m": rec})
    assert set(paths.design) == {"decompose", "hyde"}
    assert {"decompose", "hyde", "agent", "multiquery"} <= set(why_paths.PATH_DESIGNS)
    q = query_quality.condition_quality("c", {"m": rec})
    assert set(q.design) == {"decompose", "hyde"}
    d = q[q.design == "decompose"]
    # every sub-query against the question's own list: q0 r1 a better (1 vs 2), b worse (9); r2 c lost;
    # q1 r1 b worse (9 vs 1); q2 (missing from the question's list) a, d better, c same; r2 c same
    assert (int(d.queries.sum()), int(d.better.sum()), int(d.worse.sum()), int(d.lost.sum()), int(d.same.sum())) == (
        8, 3, 2, 1, 2)
    assert set(d.asked) == {"sub-query"}
    h = q[q.design == "hyde"]
    # HyDE's list against dense's on the question: q0 r1 better (1 vs 2), r2 worse (5); q1 r1 same (1),
    # r2 lost; q2 r1 better (7 vs missing), r2 same (missing from both)
    assert (int(h.better.sum()), int(h.worse.sum()), int(h.same.sum()), int(h.lost.sum())) == (2, 1, 2, 1)
