"""The why analysis in words (lib/report/why.py) and its chart: every sentence generated from page 12's
computed tables, checked on hand-made trees and paths."""
import re

import pandas as pd

from lib.designs import Question, Result
from lib.evaluation import judges, query_bound, query_quality, why_paths
from lib.report import why

MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def listed(rank, tag):
    ids = [f"{tag}{i}" for i in range(50)]
    if rank:
        ids[rank - 1] = "s"
    return ids


def tree(qid, ranks, decisions, path):
    """A saved decision tree: the chain's lists with the source at these ranks."""
    return Result(qid, "agent_tree", 1, [], path, [], 0.0,
                  details={"chain_lists": [listed(r, f"{qid}{i}") for i, r in enumerate(ranks)],
                           "decisions": [{"searches": i + 1, "decision": d, "forced": d == "stop"}
                                         for i, d in enumerate(decisions)], "path_searches": path})


def tables():
    qs = [Question(f"q{i}", "t", "s") for i in range(4)]
    dense = {f"q{i}": listed(1, f"d{i}") for i in range(4)}
    trees = [tree("q0", [1, 1, 1], ["stop", "stop"], 1), tree("q1", [1, 4, None], ["search", "stop"], 2),
             tree("q2", [1, 2, 2], ["stop", "search"], 1), tree("q3", [1, 1, 3], ["stop", "stop"], 1)]
    chains = judges.condition_chains(trees, qs, dense)
    j = judges.frame(judges.judge_rows(chains, "full questions", MODEL, n_resamples=200))
    g = pd.DataFrame(judges.grid_rows(chains, "full questions", MODEL))
    q = query_quality.tree_quality(trees, qs, "full questions", MODEL)
    pr = pd.DataFrame([{"qid": "q1", "run": 1, "decision": "searched again", "shown": "at rank 1", "query": "worse",
                        "final": "below dense", "path": "x", "mrr_at_10_points": -0.1875, "recall_at_5_points": 0.0},
                       {"qid": "q0", "run": 1, "decision": "stopped", "shown": "", "query": "", "final": "same as dense",
                        "path": "y", "mrr_at_10_points": 0.0, "recall_at_5_points": 0.0}])
    p = why_paths.summary(pr, "full questions", "agent", MODEL)
    return p, j, g, q


def numbers(text):
    return re.findall(r"[−+±]?\d+\.\d+|\d+%", text)


def test_judges_sentence_gives_each_accuracy_per_decision_with_its_count_and_the_best_leaf_as_hindsight():
    _, j, _, _ = tables()
    text = why.judges_sentence(j, "full questions", MODEL)
    # shown at every state: first decision 3 stops of 4 (q1 searched), second 3 of 4 (q2 searched); none unshown
    assert ("Qwen2.5-Coder 1.5B had a stop accuracy of 75% of 4 at the first decision and 75% of 4 at the second "
            "decision, a search accuracy of n/a of 0 at the first and n/a of 0 at the second") in text
    row = j[(j.point == "model") & (j.metric == "mrr_at_10")].iloc[0]
    assert why._signed(row.actual) in text and why._signed(row.predicted) in text
    assert "in hindsight, the best of its leaves per question" in text and "not a judge" in text
    assert "no run outside the tree to test the prediction on" in text and "ceiling" not in text
    assert why.judges_sentence(j, "other", MODEL) == "" and why.judges_sentence(pd.DataFrame(), "x", MODEL) == ""


def test_breakeven_is_said_per_model_or_that_none_exists():
    _, j, _, _ = tables()
    text = why.breakeven_sentence(j, "full questions")
    # dense has the source first everywhere: no judge beats it, and the perfect judge ties it
    assert text == ("Judging when to stop (MRR@10): with Qwen2.5-Coder 1.5B's queries, no stop or search accuracy at "
                    "either decision makes the agent beat dense (a perfect judge reaches ±0.0000 [±0.0000, ±0.0000]).")
    # a model for which a judge does beat dense: its least accuracies, the perfect and the best judge
    beats = j.copy()
    beats.loc[beats.point == "perfect judge", ["predicted", "predicted_low", "predicted_high"]] = [0.004, -0.001, 0.01]
    beats = beats.assign(beats_dense=True, breakeven_stop=0.9387, breakeven_stop_1=0.9375, breakeven_stop_2=0.0,
                         breakeven_search=0.0, best_judge=0.0042, best_judge_low=-0.0005, best_judge_high=0.0115,
                         best_judge_at="stop 100% then 0%, search 100% then 100%")
    text = why.breakeven_sentence(beats, "full questions")
    assert ("a judge beats dense only with a stop accuracy of at least 94% at every decision (at least 94% at the "
            "first, any value above 0% at the second, the other accuracies perfect) and a search accuracy of any "
            "value above 0%: a perfect judge reaches +0.0040 [−0.0010, +0.0100]") in text


def test_the_bound_sentence_and_placement():
    qs = [Question("q0", "t", "s")]
    dense = {"q0": listed(3, "d")}
    t = tree("q0", [3, None], ["search"], 2)
    chains = judges.condition_chains([t], qs, dense, cap=2)
    b, _ = query_bound.frames(*query_bound.bound_tables(chains, "full questions", MODEL))
    text = why.bound_sentence(b, "full questions")
    assert text.startswith("On the query side, the agent reaches dense on MRR@10 only if a query gives the best list")
    assert "where it wrote 0 of 1 (0.0%) strictly better" in text
    j = judges.frame(judges.judge_rows(chains, "full questions", MODEL, n_resamples=100))
    line = why.placement(j, b, "full questions", MODEL)
    # shown at 3, it searched: a stop accuracy of 0 of 1
    assert "stop accuracy 0% (n 1), search accuracy n/a (n 0)" in line and "Better-rate: 0 of 1" in line


def test_paths_sentence_adds_up_and_names_the_decision():
    p, _, _, _ = tables()
    text = why.paths_sentence(p, "full questions", "agent")
    assert text.startswith("The agent's MRR@10 difference from dense, −0.188, is −0.188 from searching again after "
                           "the source was already among the titles shown (1 results; 100% of the points lost)")
    assert "the new query had ranked the source worse −0.188" in text
    assert why.paths_sentence(p, "full questions", "multiquery") == ""


def test_quality_counts_ties_apart():
    _, _, _, q = tables()
    text = why.quality_sentence(q, "full questions", MODEL)
    # against the fused list so far (the source at 1 in each): q0 same, same; q1 worse (4), then lost; q2 worse (2),
    # worse (2 against 1); q3 same, worse (3)
    assert "Of Qwen2.5-Coder 1.5B's 8 new queries in the trees, 0 ranked the source strictly higher" in text
    assert "3 the same (a tie is not a gain), 4 lower and 1 lost it" in text and "0 more repeated" in text


def test_the_finding_holds_at_most_five_sentences_and_opens_with_break_even():
    p, j, _, _ = tables()
    text = why.finding(p, j, "full questions")
    assert 1 <= len(re.findall(r"[.!?](?:\s|$)", text)) <= 5 and "Shapley" not in text and "%" in text
    assert text.startswith("Judging when to stop (MRR@10): ") and "best leaf" not in text


def test_the_chart_draws_from_the_computed_tables(tmp_path):
    from lib.report import why_plots

    _, j, g, _ = tables()
    fig = why_plots.judges_chart(g, j, tmp_path / "judges.png")
    # the model's bar runs from its first decision's stop accuracy to its second's, at the prediction's height
    row = j[(j.point == "model") & (j.metric == "mrr_at_10")].iloc[0]
    drawn = [(tuple(line.get_xdata()), tuple(line.get_ydata())) for line in fig.axes[0].lines]
    assert ((row.p_stop_1, row.p_stop_2), (row.predicted, row.predicted)) in drawn
    why_plots.judges_chart(pd.DataFrame(), pd.DataFrame(columns=judges.JUDGE_COLUMNS), tmp_path / "none.png")
    assert (tmp_path / "judges.png").stat().st_size > 0 and (tmp_path / "none.png").stat().st_size > 0
    qs = [Question("q0", "t", "s")]
    chains = judges.condition_chains([tree("q0", [3, None], ["search"], 2)], qs, {"q0": listed(3, "d")}, cap=2)
    b, bg = query_bound.frames(*query_bound.bound_tables(chains, "full questions", MODEL))
    fig = why_plots.bound_chart(bg, b, tmp_path / "bound.png")
    xs = [tuple(line.get_xdata()) for line in fig.axes[0].lines]
    assert tuple(bg[(bg.metric == "mrr_at_10") & (bg.accuracies == "perfect")].share) in xs


def test_two_part_reading_step_by_step():
    counts = pd.DataFrame([{"failed": "both cited", "loops": 1, "share": 0.5, "no_search_of_its_own": 1},
                           {"failed": "shown, not read", "loops": 1, "share": 0.5, "no_search_of_its_own": 0}])
    text = why.two_part_reading(counts)
    assert text == ("In two-part questions, over 2 loops of the question-first loop: both papers cited in 1 (50%); the "
                    "second paper shown by a search but never read in 1 (50%). 1 of the 2 loops made no search of their own.")


def test_one_definition_of_each_accuracy():
    assert set(why.ACCURACY_WORDS) == {"p_stop", "p_search"}
    assert all(name in {"stop accuracy", "search accuracy"} for name, _ in why.ACCURACY_WORDS.values())
