"""Break-even (lib/evaluation/breakeven.py): simulated stop judges and query writers on hand-built
results, each expected score worked out by hand (RRF k = 60)."""
import math

import pandas as pd
import pytest

from lib.evaluation import breakeven as be
from lib.evaluation.attribution import Case

# shown by the question (1st); the further query ranks s 3rd: RRF a (1/62 + 1/61) above s (1/61 + 1/63)
SHOWN = Case("agent", "s", ["s", "a", "b"], [["s", "a", "b"], ["a", "b", "s"]], 1, qid="q1")
# not shown (6th); the further query ranks it 1st: RRF s (1/66 + 1/61) first
HIDDEN_Q = ["x1", "x2", "x3", "x4", "x5", "s"]
HIDDEN = Case("agent", "s", HIDDEN_Q, [HIDDEN_Q, ["s", "y"]], 1, qid="q2")


def test_the_expected_score_of_a_judge_is_exact():
    p = be.stop_path(SHOWN, 3)
    assert p.shown == [True, True] and [s["mrr_at_10"] for s in p.scores] == [1.0, 0.5]
    for p_stop, want in ((1.0, 1.0), (0.0, 0.5), (0.4, 0.4 + 0.6 * 0.5)):
        assert be.expected_stop(p, p_stop, 0.3, "mrr_at_10") == pytest.approx(want)
    h = be.stop_path(HIDDEN, 3)
    assert h.shown == [False, True]
    assert be.expected_stop(h, 0.9, 0.25, "mrr_at_10") == pytest.approx(0.75 / 6 + 0.25)


def test_a_judge_cannot_search_on_without_a_saved_query_nor_past_the_cap():
    one = Case("agent", "s", HIDDEN_Q, [HIDDEN_Q], 1, qid="q3")
    assert be.expected_stop(be.stop_path(one, 3), 0.0, 1.0, "mrr_at_10") == pytest.approx(1 / 6)
    capped = be.stop_path(HIDDEN, 1)  # one search allowed: no decision is asked
    assert capped.decisions == 0 and be.expected_stop(capped, 0.0, 1.0, "mrr_at_10") == pytest.approx(1 / 6)


def test_measured_accuracy_counts_each_decision():
    paths = [be.stop_path(SHOWN, 3), be.stop_path(HIDDEN, 3)]
    # both searched again after their first search and stopped after their second (s shown in both by
    # then): shown 3 decisions (SHOWN's two, HIDDEN's second), 2 of them stops; hidden 1, searched on
    acc = be.judge_accuracy(paths, [2, 2])
    assert acc == {"p_stop": pytest.approx(2 / 3), "p_search": 1.0, "shown_decisions": 3, "hidden_decisions": 1}


def test_the_judge_curve_and_a_model_on_it():
    curve = be.stop_curve([SHOWN, HIDDEN], 3, grid=[0.0, 0.5, 1.0])
    # accuracy 0: SHOWN searches on (0.5 - 1), HIDDEN stops (1/6 - 1/6); accuracy 1: both at the oracle
    assert curve.mrr_at_10.tolist() == pytest.approx([-0.25, (-0.25 + (0.5 / 6 + 0.5 - 1 / 6)) / 2,
                                                      (0 + 1 - 1 / 6) / 2])
    point = be.stop_point([SHOWN, HIDDEN], 3, accuracy={"p_stop": 0.0, "p_search": 1.0})
    assert point["accuracy"] == 0.5 and point["mrr_at_10"] == pytest.approx(((0.5 - 1) + (1 - 1 / 6)) / 2)


def test_break_even_is_linear_between_grid_points_or_none():
    curve = pd.DataFrame({"x": [0.0, 0.5, 1.0], "mrr_at_10": [-0.2, -0.1, 0.1]})
    assert be.break_even(curve, "x") == pytest.approx(0.75)
    assert math.isnan(be.break_even(curve.assign(mrr_at_10=[-0.3, -0.2, -0.01]), "x"))
    assert be.break_even(curve.assign(mrr_at_10=[0.0, 0.1, 0.2]), "x") == 0.0


def test_better_queries_mixed_in_exactly():
    # the question ranks s 2nd; the query misses it: RRF a, b (1/61), s (1/62): 3rd. Made better, s first.
    case = Case("multiquery", "s", ["a", "s"], [["a", "s"], ["b", "c"]], 1, qid="m")
    assert be.better_list(["b", "c"], ["a", "s"], "s") == ["s", "b", "c"]
    assert be.is_good(["s", "b"], ["a", "s"], "s") and not be.is_good(["b", "s"], ["a", "s"], "s")
    assert be.is_good(["s"], ["s"], "s")  # first where the question ranks it first: good
    mix = be.query_mix(case)
    assert (mix.replaceable, mix.better) == (1, 0)
    assert [be.expected_mix(mix, g, "mrr_at_10") for g in (0, 0.5, 1)] == pytest.approx([1 / 3, 2 / 3, 1])
    curve, b0 = be.query_curve([case], grid=[0.0, 1.0])
    assert b0 == 0 and curve.share_better.tolist() == [0.0, 1.0]
    assert curve.mrr_at_10.tolist() == pytest.approx([1 / 3 - 1 / 2, 1 - 1 / 2])


def test_a_condition_from_its_records_with_two_models_placed():
    from types import SimpleNamespace

    from lib.designs import Question, Result
    from lib.evaluation import attribution as at
    from lib.evaluation.loss import ConditionRecords

    lists = {"Q": ["s", "a", "b"], "w": ["a", "b", "s"], "v": ["s", "c"]}
    qs = [Question("q1", "Q", "s")]
    prof = SimpleNamespace(rrf_k=60, agent_max_searches=3)
    big = ConditionRecords(qs, {"agent": ([Result("q1", "agent", 1, ["a", "s", "b"], 2, ["Q", "w"], 0.0)], []),
                                "multiquery": ([], [])}, lists.__getitem__, None, {"agent": 5}, prof)
    small = ConditionRecords(qs, {"agent": ([Result("q1", "agent", 1, ["s", "a", "b"], 1, ["Q"], 0.0)], [])},
                             lists.__getitem__, None, {"agent": 5}, prof)
    item = be.condition_break_even("c", big, {"big": big, "small": small}, grid=[0.0, 1.0])
    # the profile model searched again with the source shown (p_stop 0, then stopped: 1 of 2); the small one stopped
    assert item.stop_curve.mrr_at_10.tolist() == pytest.approx([0.5 - 1, 0.0])
    assert item.stop_points["big"]["p_stop"] == 0.5 and item.stop_points["small"]["p_stop"] == 1.0
    assert item.stop_points["big"]["mrr_at_10_as_run"] == pytest.approx(-0.5)
    assert item.stop_points["small"]["mrr_at_10_as_run"] == 0.0
    assert item.stop_points["small"]["mrr_at_10"] == pytest.approx(0.0)  # a judge that always stops when shown
    assert set(item.query_curves) == {"agent"} and item.query_points["agent"]["big"]["share_better"] == 0.0
    table, rows = at.condition_table(big, "c")
    assert list(table.design.unique()) == ["agent"] and rows["agent"].rebuilt.all()
