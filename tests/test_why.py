"""The why analysis in words (lib/report/why.py): every sentence generated from computed tables, checked
on hand-made numbers and on tiny records."""
import math

import pandas as pd

from lib.designs import Question, Result
from lib.evaluation import attribution as at
from lib.evaluation import loss
from lib.report import why


def table():
    # the agent: the AND of stop, queries and merge (a third each); the question-first loop: a wrong citation
    rows = [at.summary(pd.DataFrame([at.attribute(at.Case("agent", "s", ["s", "a", "b"],
                                                          [["s", "a", "b"], ["a", "b", "s"]], 1, qid="q"))]),
                       "full questions", "agent"),
            at.summary(pd.DataFrame([at.attribute(at.Case("loop_question_first", "s", ["s", "a"], [["s", "a"]], 1,
                                                          citations=["c"], qid="q"))]), "full questions",
                       "loop_question_first")]
    return pd.concat(rows, ignore_index=True)


def test_why_line_names_each_share_from_the_attribution():
    t = table()
    line = why.why_line(t, "full questions", "agent")
    assert line.startswith("Why the agent loses here (MRR@10 −0.500 against dense, page 12): of the loss, ")
    for f in ("the stop judgement 0.167 (33%)", "the new queries 0.167 (33%)", "the merge (RRF) 0.167 (33%)"):
        assert f in line
    loop = why.why_line(t, "full questions", "loop_question_first")
    assert "citations put first 0.500 (100%)" in loop and loop.index("citations") < loop.index("stop judgement")
    assert why.why_clause(t, "full questions", "agent") == ". " + line
    assert why.why_line(t, "short questions", "agent") == "" and why.why_clause(pd.DataFrame(), "x") == ""
    gain = t.assign(loss=-0.1)
    assert why.why_line(gain, "full questions", "agent") == ""  # no loss, nothing to take apart


def test_attribution_reading_and_the_saved_table_round_trip(tmp_path):
    t = table()
    t.to_csv(tmp_path / why.ATTRIBUTION_CSV, index=False)
    back = why.attribution_table(tmp_path)
    text = why.attribution_reading(back, "full questions", "agent")
    assert text.startswith("In full questions, the agent's MRR@10 is 0.500 against dense's 1.000 (−0.500; 1 of 1")
    assert "each factor would recover: " in text and "the merge (RRF) alone +0.500" in text
    assert why.attribution_table(tmp_path / "none").empty and why.attribution_reading(back, "x", "agent") == ""


def test_break_even_line_says_the_ceiling_or_the_accuracy_needed():
    m = "qwen2.5-coder-1.5b-instruct-q4_k_m"
    t = pd.DataFrame([{"condition": "c", "design": "agent", "axis": "stop judge accuracy", "break_even": math.nan,
                       "ceiling": -0.0001, f"{m}_p_stop": 0.68, f"{m}_p_search": 0.37, f"{m}_mrr_at_10_as_run": -0.046},
                      {"condition": "c", "design": "agent", "axis": "share of better queries", "break_even": 0.92,
                       "ceiling": 0.01, f"{m}_accuracy": 0.57}])
    line = why.break_even_line(t, "c")
    assert line.startswith("In c, no stop judge lets the agent beat dense with its queries (a perfect one: ±0.000 MRR@10)")
    assert "it would take 92% of its new queries" in line
    assert "Qwen2.5-Coder 1.5B stops on 68% of the decisions with the source shown and searches on in 37%" in line
    assert "57% of its queries better (−0.046 as run)" in line
    t.loc[0, "break_even"], t.loc[0, "ceiling"] = 0.93, 0.003
    assert "with a stop judge right 93% of the time both ways (a perfect one: +0.003)" in why.break_even_line(t, "c")
    assert why.break_even_line(t, "other") == "" and why.break_even_line(pd.DataFrame(), "c") == ""


def test_account_reading_of_the_agent():
    qs = [Question("q1", "Q1", "s")]
    lists = {"Q1": ["s", "a"], "w": ["a", "s"]}
    res = [Result("q1", "agent", 1, ["a", "s"], 2, ["Q1", "w"], 0.0, stop_reason="stop")]
    out = loss.analyse("full questions", "agent", res, qs, lists.__getitem__, n_resamples=100,
                       article={"stopped_after_one": 0.59, "used_all": 0.26})
    text = why.account_reading("full questions", "agent", out.accounts["mrr_at_10"])
    assert "the agent's 1 new queries, each searched alone, ranked the source worse than the question in 100%" in text
    assert "used all 3 on 0% (the article's agent: 59% and 26%)" in text
    assert "Of the 2 decisions it made with the source among the shown titles, 1 searched again" in text


def test_two_part_reading_step_by_step():
    counts = pd.DataFrame([{"failed": "both cited", "loops": 1, "share": 0.5, "no_search_of_its_own": 1},
                           {"failed": "shown, not read", "loops": 1, "share": 0.5, "no_search_of_its_own": 0}])
    text = why.two_part_reading(counts)
    assert text == ("In two-part questions, over 2 loops of the question-first loop: both papers cited in 1 (50%); the "
                    "second paper shown by a search but never read in 1 (50%). 1 of the 2 loops made no search of their own.")


def test_the_charts_draw_from_the_computed_tables(tmp_path):
    from lib.evaluation import breakeven as be
    from lib.report import why_plots

    cases = [at.Case("agent", "s", ["s", "a", "b"], [["s", "a", "b"], ["a", "b", "s"]], 1, qid="q1")]
    curve, _ = be.query_curve(cases, grid=[0.0, 1.0])
    point = {**be.stop_point(cases, 3, accuracy={"p_stop": 0.5, "p_search": 0.5}), "mrr_at_10_as_run": -0.5}
    item = be.BreakEven("c", be.stop_curve(cases, 3, grid=[0.0, 1.0]), {"m": point}, {"agent": curve},
                        {"agent": {"m": {"share_better": 0.0, "mrr_at_10": -0.5}}})
    assert item.stop_break_even() == 1.0 and item.stop_ceiling() == 0.0
    why_plots.break_even_chart([item], tmp_path / "be.png")
    why_plots.shares_chart(table(), tmp_path / "shares.png")
    assert (tmp_path / "be.png").stat().st_size > 0 and (tmp_path / "shares.png").stat().st_size > 0
    summary = be.summary_table([item])
    assert summary.axis.tolist() == ["stop judge accuracy", "share of better queries"]


def test_a_conditions_finding_names_the_parts_that_carry_the_loss():
    text = why.condition_finding(table(), pd.DataFrame(), "full questions", ["agent", "loop_question_first", "multiquery"])
    assert text.startswith("- **full questions.** The agent is −0.500 MRR@10 against dense: the stop judgement 33%, "
                           "the new queries 33%, the merge (RRF) 33% of the loss.")
    assert "The question-first loop is −0.500 MRR@10 against dense: citations put first 100% of the loss (the rest " \
           "under 5% each)." in text and "Multi-query" not in text
