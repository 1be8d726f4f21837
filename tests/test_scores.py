import json

import numpy as np
import pandas as pd
import pytest

from lib.designs import Result
from lib.evaluation.failures import added_words, agent_added_words, differing_cases
from lib.evaluation.metrics import per_question
from lib.evaluation.scores import check_drift, complete_questions, deltas, design_summary, expected_from, headroom, wins_losses

SOURCES = {"q1": "s1", "q2": "s2", "q3": "s3", "q4": "s4"}


def R(qid, design, run, ranked, queries=None, **kw):
    return Result(qid, design, run, ranked, len(queries or ["x"]), queries or ["x"], 1.0, **kw)


@pytest.fixture
def pq():
    res = [R("q1", "dense", 1, ["s1"]), R("q2", "dense", 1, ["a", "b", "c", "d", "e", "s2"]),
           R("q3", "dense", 1, ["a", "s3"]), R("q4", "dense", 1, ["z"] * 12)]
    for run in (1, 2, 3):
        res += [R("q1", "agent", run, ["a", "b", "c", "d", "e", "s1"] if run == 1 else ["s1"],
                  ["how q1", "q1 extra words"] if run == 1 else ["how q1"]),
                R("q2", "agent", run, ["s2"], ["how q2", "q2 better"]), R("q3", "agent", run, ["a", "s3"]),
                R("q4", "agent", run, ["z"])]
    return per_question(res, SOURCES), res


def test_summary_over_runs(pq):
    df, _ = pq
    s = design_summary(df).set_index("design")
    assert s.loc["dense", "recall_at_5"] == pytest.approx(0.5)  # q1, q3
    assert s.loc["agent", "runs"] == 3
    assert s.loc["agent", "recall_at_5_min"] == pytest.approx(0.5) and s.loc["agent", "recall_at_5_max"] == pytest.approx(0.75)
    assert s.loc["agent", "recall_at_5"] == pytest.approx((0.5 + 0.75 + 0.75) / 3)


def test_headroom_wins_losses(pq):
    df, _ = pq
    assert headroom(df)["dense_misses_at_5"] == 2
    wl = wins_losses(df).set_index("run")
    assert wl.loc[1, "wins"] == 1 and wl.loc[1, "losses"] == 1 and wl.loc[2, "losses"] == 0


def test_deltas_paired_on_run_means(pq):
    df, _ = pq
    d = deltas(df).set_index(["design", "metric"])
    # per question agent means: q1 2/3, q2 1, q3 1, q4 0 -> 2/3 ; dense 0.5
    assert d.loc[("agent", "recall_at_5"), "delta"] == pytest.approx((2 / 3 + 1 + 1 + 0) / 4 - 0.5)
    row = d.loc[("agent", "recall_at_5")]
    assert row["low"] <= row["delta"] <= row["high"]


def test_complete_questions_needs_every_run():
    from lib.evaluation.scores import partial_runs

    df = pd.DataFrame({"design": ["dense", "dense", "agent"], "run": [1, 1, 1], "qid": ["q1", "q2", "q1"]})
    # the agent's run stopped part-way: it is left out (saved, not scored) instead of shrinking the comparison
    assert partial_runs(df, 2) == [("agent", 1)]
    assert complete_questions(df, ["q1", "q2"]) == ["q1", "q2"]
    full = pd.concat([df, pd.DataFrame({"design": ["agent"] * 2, "run": [2, 2], "qid": ["q1", "q2"]})])
    assert complete_questions(full, ["q1", "q2"]) == ["q1", "q2"] and partial_runs(full, 2) == [("agent", 1)]


def test_drift_flagged(pq, tmp_path):
    df, _ = pq
    s = design_summary(df)
    path = tmp_path / "expected.json"
    path.write_text(json.dumps(expected_from(s, "pilot")))
    assert (check_drift(s, path).status == "ok").all()
    exp = expected_from(s, "pilot")
    exp["designs"]["agent"]["recall_at_5"] += 0.01
    path.write_text(json.dumps(exp))
    d = check_drift(s, path)
    assert list(d[d.status == "DRIFT"].design) == ["agent"]


def test_added_words_and_their_effect(pq):
    df, res = pq
    assert added_words("How do agents search the web?", "agents searching web pages tools") == ["searching", "pages", "tools"]
    qtext = {"q1": "how q1", "q2": "how q2", "q3": "q3", "q4": "q4"}
    per_query, summary = agent_added_words(res, df, qtext)
    assert set(per_query.added_words) == {"extra words", "better"}
    s = summary.set_index("added_any")
    # q1 run 1 added words and lost the source dense had; q2 added words and won
    assert s.loc[True, "lost"] == 1 and s.loc[True, "won"] == 3
    cases = differing_cases(df, res, qtext)
    # q4 is missed by both (same "rank"), so it is not a differing case
    assert set(zip(cases.qid, cases.run)) == {("q1", 1), ("q2", 1), ("q2", 2), ("q2", 3)}
    row = cases[(cases.qid == "q1")].iloc[0]
    assert row.dense_rank == 1 and row.design_rank == 6 and row.change == "worse"
    assert row.queries_written == "q1 extra words"


def test_partial_runs_are_left_out_not_shrinking_the_comparison():
    from lib.evaluation.scores import partial_runs, scored_runs

    df = pd.DataFrame({"design": ["dense"] * 3 + ["agent"] * 5, "run": [1, 1, 1, 1, 1, 1, 2, 2],
                       "qid": ["q1", "q2", "q3", "q1", "q2", "q3", "q1", "q2"]})
    assert partial_runs(df) == [("agent", 2)]
    assert complete_questions(df, ["q1", "q2", "q3"]) == ["q1", "q2", "q3"]
    assert len(scored_runs(df)) == 6
    # a design whose only run stopped part-way is partial too: it is not scored on fewer questions
    only = df[~((df.design == "agent") & (df.run == 1))]
    assert partial_runs(only, 3) == [("agent", 2)] and complete_questions(only, ["q1", "q2", "q3"]) == ["q1", "q2", "q3"]


def test_saved_results_of_every_condition_match_their_expected_scores():
    """The drift check (2CR) over every condition's saved runs, as the report reads them."""
    from lib import pipeline
    from lib.report import queries
    from lib.config import load_profile

    checked = 0
    for name, cp in queries.condition_profiles(load_profile("offline")).items():
        expected = pipeline.results_dir(cp) / "expected_scores.json"
        if not expected.exists():
            continue
        drift = check_drift(queries.summary_for_profile(cp), expected)
        assert (drift.status == "ok").all(), f"{name}: scores drifted from {expected}:\n{drift}"
        checked += 1
    assert checked >= 1


def test_condition_answer_names_the_cheapest_step_worth_its_cost():
    """The index's per-condition answer: the cheapest design measurably better than dense, and the
    best LLM design against the best without an LLM (from the table's own numbers)."""
    import pandas as pd

    from lib.report.index_page import condition_answer

    rows = [("dense", 0.90, None, 0.0, 0.01), ("rerank", 0.95, 0.02, 0.0, 0.08), ("bm25", 0.97, 0.03, 0.0, 0.001),
            ("agent", 0.93, 0.01, 1.7, 6.0), ("multiquery", 0.80, -0.2, 1.0, 3.0)]
    table = pd.DataFrame([{"condition": "short questions", "design": d, "questions": 100, "runs": 1, "mrr_at_10": m,
                           "mrr_at_10_low": low, "recall_at_5_low": None, "recall_at_5_delta": 0.0,
                           "mrr_at_10_delta": (m - 0.90) if low is not None else None, "llm_calls": calls,
                           "latency_median_s": lat, "dense_misses_at_5": 7} for d, m, low, calls, lat in rows])
    text = condition_answer(table)
    assert "Cheapest measurably better step: bm25 (MRR@10 0.970, 0.00 LLM calls" in text
    assert "The best design calling an LLM, agent (MRR@10 0.930, 1.70 calls per question), is not above the best " \
           "without one, bm25 (0.970)" in text
    assert "not run in this condition" not in text
    other = pd.DataFrame([{**table.iloc[0].to_dict(), "condition": "short questions, whole snapshot"}])
    assert ". Not run in this condition yet: rerank, bm25, agent, multiquery" in condition_answer(
        pd.concat([table, other], ignore_index=True))
    table.loc[table.design == "agent", "mrr_at_10"] = 0.99
    assert "agent (MRR@10 0.990, 1.70 calls per question), is above the best without one, bm25" in condition_answer(table)


def test_power_sentence_states_the_tables_own_numbers():
    import math

    from lib.evaluation.power import power_sentence, power_table

    rows = []
    for i in range(40):  # dense finds 30 of 40; the design finds 34 (it gains 5, loses 1); another equals dense
        dense = 1.0 if i < 30 else 0.0
        design = 0.0 if i == 0 else (1.0 if i < 35 else 0.0)
        rows += [{"qid": f"q{i}", "design": "dense", "run": 1, "recall_at_5": dense, "mrr_at_10": dense},
                 {"qid": f"q{i}", "design": "hybrid", "run": 1, "recall_at_5": design, "mrr_at_10": design / 2},
                 {"qid": f"q{i}", "design": "same", "run": 1, "recall_at_5": dense, "mrr_at_10": dense}]
    pw = power_table(pd.DataFrame(rows))
    rec = pw[(pw.design == "hybrid") & (pw.metric == "recall_at_5")].iloc[0]
    diff = [(0.0 if i == 0 else (1.0 if i < 35 else 0.0)) - (1.0 if i < 30 else 0.0) for i in range(40)]
    mean = sum(diff) / 40
    sd = math.sqrt(sum((d - mean) ** 2 for d in diff) / 39)
    assert rec.sd_of_differences == pytest.approx(sd)
    assert rec.min_detectable_difference == pytest.approx((1.959964 + 0.841621) * sd / math.sqrt(40), rel=1e-5)
    text = power_sentence(pw)
    # "same" has no differences at all, so it is left out of the ranges rather than shown as 0
    assert text.startswith(f"with 40 questions the smallest difference from dense a paired test detects (80% power, "
                           f"two-sided 5%) is {rec.min_detectable_difference:.3f} to {rec.min_detectable_difference:.3f}"
                           " in recall@5")
    assert f"would need {int(rec['questions_for_0.01']):,} to {int(rec['questions_for_0.01']):,} questions" in text


def test_breakdowns_and_power_cover_every_condition_with_saved_runs():
    """By style, by length and power per condition, each row naming its condition, groups adding up to
    the questions that condition scores, and each group's delta its own mean minus dense's."""
    from lib.report import queries
    from lib.config import load_profile

    cfg = load_profile("offline")
    out = queries.condition_breakdowns(cfg)
    table = queries.condition_table(cfg)
    scored = table[table.questions.fillna(0) > 0]
    assert set(out["power"].condition) == set(scored.condition)
    for c, g in scored.groupby("condition"):
        n = int(g.questions.max())
        for k in ("by_style", "by_length"):
            b = out[k][(out[k].condition == c) & (out[k].design == "dense") & (out[k].metric == "recall_at_5")]
            assert b.questions.sum() == n, (c, k)
        assert len(set(out["by_length"][out["by_length"].condition == c].group)) == 3
        assert set(out["power"][out["power"].condition == c].design) == set(g.design) - {"dense"}
    bl = out["by_length"]
    row = bl[(bl.design == "bm25") & (bl.metric == "mrr_at_10")].iloc[0]
    dense = bl[(bl.condition == row.condition) & (bl.group == row.group) & (bl.design == "dense")
               & (bl.metric == "mrr_at_10")].iloc[0]
    assert row["delta"] == pytest.approx(row["mean"] - dense["mean"])
    assert row.low <= row["delta"] <= row.high


@pytest.mark.parametrize("name", ["offline", "pilot"])
def test_every_committed_summary_is_derived_from_its_runs(name):
    """The committed summary.json holds what its saved runs give now (a summary left from older runs fails)."""
    from lib import pipeline
    from lib.report import queries
    from lib.config import load_profile

    cfg = load_profile(name)
    path = pipeline.results_dir(cfg) / "summary.json"
    saved = {d["design"]: d for d in json.loads(path.read_text())["designs"]}
    now = design_summary(queries.load_scored(cfg).pq).set_index("design")
    assert sorted(saved) == sorted(now.index), path
    for design, row in now.iterrows():
        for col in ("runs", "questions", "recall_at_5", "mrr_at_10", "searches", "llm_calls"):
            assert saved[design][col] == pytest.approx(row[col], abs=1e-9), (path, design, col)


def test_deltas_carry_the_randomization_p_value_and_holm_over_their_family(pq):
    from lib.evaluation.metrics import holm, paired_permutation
    from lib.evaluation.scores import ALPHA

    df, _ = pq
    d = deltas(df, n_resamples=200, n_permutations=2000)
    row = d.set_index(["design", "metric"]).loc[("agent", "mrr_at_10")]
    # per question agent means against dense, as the bootstrap pairs them
    table = df.pivot_table(index="qid", columns="design", values="mrr_at_10", aggfunc="mean")
    assert row.p_value == pytest.approx(paired_permutation(table["agent"], table["dense"], 2000, 7))
    assert list(d.p_holm) == pytest.approx(list(holm(d.p_value)))
    assert (d.p_holm >= d.p_value).all() and list(d.measurable) == list(d.p_holm < ALPHA)
    assert d.family.iloc[0].endswith(f"({len(d)} tests)")


def test_holm_wide_runs_over_every_row_and_measure_as_one_family():
    from lib.evaluation.metrics import holm
    from lib.evaluation.scores import holm_wide

    t = pd.DataFrame({"condition": ["c1", "c1", "c2"], "design": ["dense", "agent", "agent"],
                      "recall_at_5_p_value": [None, 0.01, 0.04], "mrr_at_10_p_value": [None, 0.002, 0.5]})
    out = holm_wide(t)
    want = holm([0.01, 0.002, 0.04, 0.5])  # four tests; dense's row has none
    assert list(out.recall_at_5_p_holm[1:]) == pytest.approx([want[0], want[2]])
    assert list(out.mrr_at_10_p_holm[1:]) == pytest.approx([want[1], want[3]])
    assert np.isnan(out.recall_at_5_p_holm[0]) and not out.recall_at_5_measurable[0]
    assert list(out.mrr_at_10_measurable) == [False, True, False]
    assert out.holm_family.iloc[0].endswith("(4 tests)")


def test_family_from_takes_the_condition_tables_correction(pq):
    from lib.evaluation.scores import family_from, holm_wide

    df, _ = pq
    d = deltas(df, n_resamples=100, n_permutations=500)
    table = holm_wide(pd.DataFrame(
        [{"condition": "full questions", "design": "agent", "recall_at_5_p_value": 0.01, "mrr_at_10_p_value": 0.02},
         {"condition": "short questions", "design": "agent", "recall_at_5_p_value": 0.03, "mrr_at_10_p_value": 0.5}]))
    got = family_from(d, table, "full questions").set_index(["design", "metric"])
    assert got.loc[("agent", "recall_at_5"), "p_holm"] == pytest.approx(0.04)  # 0.01 of four tests
    assert got.loc[("agent", "mrr_at_10"), "p_holm"] == pytest.approx(0.06)    # 0.02 x 3
    assert got.loc[("agent", "recall_at_5"), "measurable"] and not got.loc[("agent", "mrr_at_10"), "measurable"]
    assert got.family.iloc[0].endswith("(4 tests)")
    assert family_from(d, table, "two-part questions").equals(d)


def test_comparisons_lists_every_test_of_the_condition_table_once():
    from lib.evaluation.scores import comparisons, holm_wide

    table = holm_wide(pd.DataFrame(
        [{"condition": "c", "design": "dense", "questions": 3},
         {"condition": "c", "design": "agent", "questions": 3, "recall_at_5_delta": -0.1, "recall_at_5_low": -0.2,
          "recall_at_5_high": 0.0, "recall_at_5_p_value": 0.01, "mrr_at_10_delta": 0.0, "mrr_at_10_low": 0.0,
          "mrr_at_10_high": 0.0, "mrr_at_10_p_value": 1.0}]))
    got = comparisons(table)
    assert list(zip(got.design, got.metric)) == [("agent", "recall_at_5"), ("agent", "mrr_at_10")]
    assert list(got.p_holm) == pytest.approx([0.02, 1.0]) and list(got.measurable) == [True, False]


def test_rows_a_table_leaves_out_leave_the_family():
    """An escalate that never escalates repeats hybrid_rerank's rows; the tables leave it out, and so does the
    family: its p is kept, it gets no p_holm, and comparisons.csv (the family's tests) has no row for it."""
    from lib.evaluation.scores import comparisons, holm_wide

    t = pd.DataFrame([{"condition": "c", "design": d, "questions": 10, "recall_at_5_p_value": p, "mrr_at_10_p_value": p,
                       **{f"{m}_{e}": 0.0 for m in ("recall_at_5", "mrr_at_10") for e in ("delta", "low", "high")}}
                      for d, p in (("hybrid_rerank", 0.01), ("escalate", 0.01), ("agent", 0.5))])
    out = holm_wide(t, left_out=t.design.eq("escalate"))
    assert out.holm_family.iloc[0].endswith("(4 tests)")
    assert out.recall_at_5_p_holm.isna().tolist() == [False, True, False] and not out.recall_at_5_measurable[1]
    assert out.recall_at_5_p_value[1] == 0.01 and out.recall_at_5_p_holm[0] == pytest.approx(0.04)
    c = comparisons(out)
    assert len(c) == 4 and "escalate" not in set(c.design)
