import matplotlib
import pandas as pd
import pytest

from lib.report import plots

matplotlib.use("Agg")


def test_pareto_keeps_only_designs_nothing_beats_for_less():
    pts = [("dense", 0.0, 0.90), ("bm25", 0.0, 0.95), ("agent", 5.0, 0.97), ("multiquery", 3.0, 0.80),
           ("tie", 5.0, 0.97)]
    # dense: bm25 is as cheap and better; multiquery: bm25 is cheaper and better; agent and tie are
    # equal, so neither is strictly beaten by the other
    assert plots.pareto(pts) == {"bm25", "agent", "tie"}


def test_cost_axis_is_usd_only_where_a_design_has_a_fee():
    offline = pd.DataFrame({"cost_usd_per_q": [0.0, 0.0], "tokens": [0, 1500]})
    article = pd.DataFrame({"cost_usd_per_q": [0.0, 0.0012], "tokens": [0, 1500]})
    assert plots.cost_axis(offline)[0] == "tokens"
    assert plots.cost_axis(article)[0] == "cost_usd_per_q"


def _row(condition, design, r5, mrr, lat, tokens, lo=None, hi=None):
    return {"condition": condition, "design": design, "recall_at_5": r5, "mrr_at_10": mrr, "latency_mean_s": lat,
            "tokens": tokens, "cost_usd_per_q": 0.0, "recall_at_5_min": r5, "recall_at_5_max": r5,
            "mrr_at_10_min": lo if lo is not None else mrr, "mrr_at_10_max": hi if hi is not None else mrr}


def test_frontier_chart_fills_frontier_points_and_draws_run_ranges(tmp_path):
    t = pd.DataFrame([_row("full", "dense", 0.90, 0.80, 0.04, 0), _row("full", "bm25", 0.95, 0.90, 0.001, 0),
                      _row("full", "agent", 0.97, 0.92, 6.0, 2400, lo=0.90, hi=0.94),
                      _row("short", "dense", 0.70, 0.60, 0.04, 0), _row("short", "agent", 0.60, 0.50, 6.0, 2400)])
    fig = plots.frontier_chart(t, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 0
    axes = fig.axes
    assert len(axes) == 8  # 2 conditions x (recall@5, MRR@10) x (latency, tokens)
    mrr_latency_full = axes[2]
    points = {round(line.get_xdata()[0], 3): line for line in mrr_latency_full.lines if line.get_marker() == "o"}
    filled = {x for x, line in points.items() if line.get_markerfacecolor() != "white"}
    assert filled == {0.001, 6.0}  # bm25 (cheapest, better than dense) and agent (best); dense is beaten
    ranges = [line for line in mrr_latency_full.lines if line.get_marker() != "o"]
    assert len(ranges) == 1 and list(ranges[0].get_ydata()) == pytest.approx([0.90, 0.94])
    short_mrr_tokens = axes[7]
    assert "tokens" in short_mrr_tokens.get_xlabel()
    # short: dense is cheaper and better than the agent, so it alone is filled
    pts = [line for line in short_mrr_tokens.lines if line.get_marker() == "o"]
    assert sum(line.get_markerfacecolor() != "white" for line in pts) == 1


def test_question_lengths_without_styles(tmp_path):
    """A user's question CSV without the optional style column still gets its length chart."""
    import pandas as pd

    from lib.report.plots import question_lengths

    qs = pd.DataFrame({"qid": ["q1", "q2", "q3"], "style": ["", "", ""], "words": [12, 30, 8]})
    fig = question_lengths(qs, tmp_path / "lengths.png")
    assert (tmp_path / "lengths.png").stat().st_size > 1000
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["(no style)\n(3 questions)"]
    mixed = pd.DataFrame({"qid": ["q1", "q2"], "style": ["vague", ""], "words": [12, 30]})
    fig = question_lengths(mixed, tmp_path / "mixed.png")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["vague\n(1 questions)", "(no style)\n(1 questions)"]
