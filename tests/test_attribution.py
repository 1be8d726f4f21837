"""The Shapley attribution of the loss (lib/evaluation/attribution.py): hand-built cases where one factor
alone causes the loss, each RRF score worked out by hand (k = 60), and the recount against the saved runs."""
import math

import pandas as pd
import pytest

from lib.designs import Question, Result
from lib.designs.loop import QUESTION_FIRST
from lib.evaluation import attribution as at


def shares(case, metric="mrr_at_10"):
    row = at.attribute(case)
    return row, {f: row[f"{metric}_{f}"] for f in at.design_factors(case.design)}


def test_citations_alone_a_wrong_citation_put_first():
    # the question-first loop ran only the code's search and cited "c": c, s, a, b (dense: s first)
    case = at.Case(QUESTION_FIRST, "s", ["s", "a", "b"], [["s", "a", "b"]], 1, citations=["c"])
    row, sh = shares(case)
    assert row["mrr_at_10_loss"] == pytest.approx(0.5)
    assert sh == pytest.approx({"stop": 0, "queries": 0, "merge": 0, "citations": 0.5})


def test_merge_alone_rrf_ranks_the_source_below_both_lists():
    # s is 6th in both lists, never among the shown top 5 (the oracle stop keeps both searches), the query
    # ranks it as the question does (nothing to repair); RRF: a1..a4 and X (1/61 + 1/67 = .031318) and a5
    # (1/65 + 1/67 = .030310) all above s (2/66 = .030303): s 7th, dense 6th
    q = ["a1", "a2", "a3", "a4", "a5", "s", "X"]
    other = ["X", "a1", "a2", "a3", "a4", "s", "a5"]
    case = at.Case("agent", "s", q, [q, other], 1)
    row, sh = shares(case)
    assert row["mrr_at_10_loss"] == pytest.approx(1 / 6 - 1 / 7)
    assert sh == pytest.approx({"stop": 0, "queries": 0, "merge": 1 / 6 - 1 / 7})


def test_queries_alone_the_model_first_loop_searched_a_worse_query():
    # the model-first loop never searched the question ("s" first there); its one query ranks s 2nd
    case = at.Case("loop", "s", ["s", "a"], [["a", "s"]], 0)
    row, sh = shares(case)
    assert row["mrr_at_10_loss"] == pytest.approx(0.5) and row["mrr_at_10_start"] == 0
    assert sh == pytest.approx({"stop": 0, "queries": 0.5, "merge": 0, "citations": 0})


def test_the_stop_acts_only_through_the_merge_and_shares_with_it():
    # s shown 2nd by the question; the model searched again with a query that ranks s 2nd too (no worse:
    # nothing to repair), yet RRF puts a1 and X (1/61 + 1/63 = .032266) above s (2/62 = .032258): the
    # further search hurts only because it was made (stop) and blended in (merge), each half; queries none
    case = at.Case("agent", "s", ["a1", "s", "X"], [["a1", "s", "X"], ["X", "s", "a1"]], 1)
    row, sh = shares(case)
    assert row["mrr_at_10_loss"] == pytest.approx(0.5 - 1 / 3)
    assert sh == pytest.approx({"stop": (0.5 - 1 / 3) / 2, "queries": 0, "merge": (0.5 - 1 / 3) / 2})
    # had the model stopped as the oracle does, the stop has nothing to answer for
    stopped = at.Case("agent", "s", ["a1", "s", "X"], [["a1", "s", "X"]], 1)
    assert shares(stopped)[1] == pytest.approx({"stop": 0, "queries": 0, "merge": 0})


def test_the_and_of_stop_queries_and_merge_is_split_equally():
    # shown 1st; the further query ranks s 3rd (worse); RRF: a (1/62 + 1/61) above s (1/61 + 1/63)
    case = at.Case("agent", "s", ["s", "a", "b"], [["s", "a", "b"], ["a", "b", "s"]], 1)
    row, sh = shares(case)
    assert row["mrr_at_10_loss"] == pytest.approx(0.5)
    assert sh == pytest.approx({"stop": 0.5 / 3, "queries": 0.5 / 3, "merge": 0.5 / 3})
    assert row["mrr_at_10_fix_stop"] == row["mrr_at_10_fix_queries"] == row["mrr_at_10_fix_merge"] == pytest.approx(0.5)


def test_levelling_puts_each_relevant_paper_at_the_questions_rank():
    assert at.levelled(["a", "b", "s"], ["s", "x"], "s") == ["s", "a", "b"]           # worse: moved up
    assert at.levelled(["s", "a", "b"], ["x", "y", "s"], "s") == ["a", "b", "s"]      # better: moved down
    assert at.levelled(["a", "b"], ["x", "y", "s"], "s") == ["a", "b", "s"]           # missing: put at its rank
    assert at.levelled(["a", "s", "b"], ["x", "y"], "s") == ["a", "b"]                # the question misses it
    assert at.levelled(["c", "a", "b", "d"], ["b", "x", "a"], "a;b") == ["b", "c", "a", "d"]  # both papers


def test_shares_sum_to_the_loss_and_a_gain_is_split_too():
    # multi-query whose rewrite ranks s first where the question had it 3rd: RRF a (1/61 + 1/62), s (1/63 +
    # 1/61), b: a gain of 1/2 - 1/3 that needs the better query and the merge, credited to both, half each
    q = ["a", "b", "s"]
    rows = [at.attribute(at.Case("multiquery", "s", q, [q, ["s", "a", "b"]], 1, saved=None)),
            at.attribute(at.Case("agent", "s", ["s", "a", "b"], [["s", "a", "b"], ["a", "b", "s"]], 1, qid="x"))]
    for row in rows:
        for m in at.METRICS:
            parts = sum(row[f"{m}_{f}"] for f in at.FACTORS if not math.isnan(row[f"{m}_{f}"]))
            assert parts + row[f"{m}_start"] == pytest.approx(row[f"{m}_loss"])
    assert rows[0]["mrr_at_10_loss"] == pytest.approx(1 / 3 - 1 / 2)
    assert rows[0]["mrr_at_10_queries"] == rows[0]["mrr_at_10_merge"] == pytest.approx((1 / 3 - 1 / 2) / 2)


def test_results_rebuilt_and_averaged_over_runs_first():
    lists = {"Q": ["s", "a", "b"], "w": ["a", "b", "s"], "g": ["s", "a"]}
    qs = [Question("q1", "Q", "s")]
    res = [Result("q1", "agent", 1, ["a", "s", "b"], 2, ["Q", "w"], 0.0, stop_reason="stop"),
           Result("q1", "agent", 2, ["s", "a", "b"], 2, ["Q", "g"], 0.0, stop_reason="stop")]
    pr = at.per_result(res, qs, lists.__getitem__)
    assert pr.rebuilt.all() and len(pr) == 2
    table = at.summary(pr, "c", "agent")
    mrr = table[table.metric == "mrr_at_10"].iloc[0]
    assert mrr.questions == 1 and mrr.below == 1 and mrr.loss == pytest.approx(0.25)
    assert mrr.stop + mrr.queries + mrr.merge == pytest.approx(0.25)
    found = at.findings(table)
    assert {f.factor for f in found} == {"stop", "queries", "merge"} and found[0].loss == pytest.approx(0.25)
    assert at.leading(table, "c", "agent") is not None and at.leading(table, "c", "multiquery") is None


def test_an_unknown_design_is_named():
    with pytest.raises(ValueError, match="q1 run 1: design 'dense'"):
        at.case_of(Result("q1", "dense", 1, ["s"], 1, ["Q"], 0.0), Question("q1", "Q", "s"), lambda t: ["s"])


# --------------------------------------------------------------------------- the saved runs
@pytest.fixture(scope="module")
def saved():
    from lib import pipeline
    from lib.config import load_profile
    from lib.runs import read_results, run_files

    cfg = load_profile("offline")
    qs = pipeline.scored_questions(cfg, pipeline.search_papers(cfg))
    rdir = pipeline.results_dir(cfg)
    runs = {d: [r for p in run_files(rdir, d) for r in read_results(p)] for d in ("dense", "agent", QUESTION_FIRST)}
    return qs, {r.qid: list(r.ranked_ids) for r in runs["dense"]}, runs


def test_the_recount_of_the_saved_agent_runs(saved):
    qs, dense, runs = saved
    got = at.agent_recount(runs["agent"], qs, dense)
    assert (got["results"], got["below"], got["shown_and_searched_again"]) == (891, 73, 72)
    assert (round(got["points_lost"], 2), round(got["points_shown_and_searched_again"], 2)) == (44.19, 44.16)


def test_the_recount_of_the_saved_question_first_loop(saved):
    qs, dense, runs = saved
    got = at.loop_recount(runs[QUESTION_FIRST], qs, dense)
    assert (got["results"], got["only_code_search"], got["questions_below"]) == (297, 289, 15)
    # every losing question has a wrong citation at rank 1; 12 of them (5.97 of 8.22 points) made only the
    # code's search, the other 3 searched again as well
    assert got["below_wrong_citation_first"] == 15 and got["below_wrong_citation_first_only_code"] == 12
    assert round(got["points_lost"], 2) == 8.22 and round(got["points_wrong_citation_first_only_code"], 2) == 5.97


def test_summary_columns_are_named_per_factor():
    table = at.summary(pd.DataFrame([at.attribute(at.Case("multiquery", "s", ["s"], [["s"], ["s"]], 1))]), "c")
    assert set(at.FACTORS) <= set(table.columns) and math.isnan(table.stop.iloc[0])
