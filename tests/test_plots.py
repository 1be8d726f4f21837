import matplotlib
import pandas as pd
import pytest
from matplotlib.text import Text

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


def _row(condition, design, r5, mrr, lat, tokens, lo=None, hi=None, calls=0.0):
    return {"condition": condition, "design": design, "recall_at_5": r5, "mrr_at_10": mrr, "latency_mean_s": lat,
            "latency_median_s": lat, "tokens": tokens, "cost_usd_per_q": 0.0, "llm_calls": calls,
            "recall_at_5_min": r5, "recall_at_5_max": r5,
            "mrr_at_10_min": lo if lo is not None else mrr, "mrr_at_10_max": hi if hi is not None else mrr}


def _points(ax):
    return [line for line in ax.lines if line.get_marker() == "o"]


def test_frontier_chart_one_panel_per_condition_fills_frontier_points_and_draws_run_ranges(tmp_path):
    t = pd.DataFrame([_row("full", "dense", 0.90, 0.80, 0.04, 0), _row("full", "bm25", 0.95, 0.90, 0.001, 0),
                      _row("full", "agent", 0.97, 0.92, 6.0, 2400, lo=0.90, hi=0.94, calls=1.7),
                      _row("short", "dense", 0.70, 0.60, 0.04, 0), _row("short", "agent", 0.60, 0.50, 6.0, 2400, calls=1.7)])
    fig = plots.frontier_chart(t, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 0
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["full", "short"]  # one panel per condition
    full, short = panels
    assert "median latency" in full.get_xlabel()
    filled = {round(line.get_ydata()[0], 3) for line in _points(full) if line.get_markerfacecolor() != "white"}
    assert filled == {0.90, 0.92}  # bm25 (fastest, better than dense) and agent (best); dense is beaten
    ranges = [line for line in full.lines if line.get_marker() != "o"]
    assert len(ranges) == 1 and list(ranges[0].get_ydata()) == pytest.approx([0.90, 0.94])
    # short: dense is faster and better than the agent, so it alone is filled
    assert sum(line.get_markerfacecolor() != "white" for line in _points(short)) == 1
    labels = [t.get_text() for t in full.texts]
    assert "agent, 2,400 tokens" in labels and "dense" in labels


def test_frontier_chart_spreads_designs_at_the_same_point_and_labels_never_overlap(tmp_path):
    """Five designs with no model cost at the same latency and nearly the same score: every point
    and every label is visible (at most two columns of panels)."""
    rows = [_row(c, d, 0.99, 0.95 + i * 0.001, 0.11, 0) for c in ("a", "b", "c") for i, d in
            enumerate(["dense", "rerank", "hybrid", "hybrid_rerank", "escalate"])]
    rows += [_row(c, "agent", 0.9, 0.8, 6.0, 900, calls=1.6) for c in ("a", "b", "c")]
    fig = plots.frontier_chart(pd.DataFrame(rows), tmp_path / "f.png")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len({round(ax.get_position().x0, 3) for ax in panels}) <= 2
    renderer = plots._renderer(fig)
    for ax in panels:
        xs = [ax.transData.transform((line.get_xdata()[0], line.get_ydata()[0]))[0] for line in _points(ax)]
        assert len(xs) == 6 and min(b - a for a, b in zip(sorted(xs), sorted(xs)[1:])) >= 4  # nudged apart
        boxes = [Text.get_window_extent(t, renderer) for t in ax.texts]  # the words, not their leader lines
        assert len(boxes) == 6
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_every_chart_writes_no_text_under_9_points(tmp_path):
    t = pd.DataFrame([_row("full questions", "dense", 0.90, 0.80, 0.04, 0),
                      _row("full questions", "agent", 0.97, 0.92, 6.0, 2400, calls=1.7)])
    t["recall_at_5_delta"], t["recall_at_5_low"], t["recall_at_5_high"] = [None, 0.07], [None, 0.01], [None, 0.1]
    t["mrr_at_10_delta"], t["mrr_at_10_low"], t["mrr_at_10_high"] = [None, 0.12], [None, 0.05], [None, 0.2]
    t["questions"], t["runs"] = [100, 100], [1, 3]
    rs = pd.DataFrame([{"design": "dense", "run": 1, "recall_at_5": 0.9, "mrr_at_10": 0.8},
                       {"design": "agent", "run": 1, "recall_at_5": 0.95, "mrr_at_10": 0.9},
                       {"design": "agent", "run": 2, "recall_at_5": 0.97, "mrr_at_10": 0.92}])
    deltas = pd.DataFrame([{"design": "agent", "metric": m, "delta": 0.05, "low": 0.01, "high": 0.1}
                           for m in ("recall_at_5", "mrr_at_10")])
    figs = [plots.frontier_chart(t, tmp_path / "a.png"), plots.headline_chart(t, tmp_path / "b.png"),
            plots.conditions_chart(t, tmp_path / "c.png"), plots.scores_chart(rs, tmp_path / "d.png"),
            plots.deltas_chart(deltas, tmp_path / "e.png")]
    for fig in figs:
        assert fig.get_figwidth() <= 12.6
        for text in fig.findobj(matplotlib.text.Text):
            if text.get_text().strip():
                assert text.get_fontsize() >= 9, (text.get_text(), text.get_fontsize())


def test_scores_chart_writes_each_value_on_its_own_row(tmp_path):
    rs = pd.DataFrame([{"design": d, "run": 1, "recall_at_5": v, "mrr_at_10": v} for d, v in
                       (("dense", 0.9), ("rerank", 0.95), ("loop", 0.2))])
    fig = plots.scores_chart(rs, tmp_path / "s.png", names=lambda d: d.upper())
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["DENSE", "RERANK", "LOOP"]
    rows = {round(p.get_ydata()[0], 6) for p in _points(ax)}
    assert {round(t.xy[1], 6) for t in ax.texts} == rows  # beside its point, not between two rows
    assert all(t.get_va() == "center" for t in ax.texts)


def test_headline_chart_a_column_per_condition_one_x_scale_per_measure_with_the_article_beside_ours(tmp_path):
    from lib.report.article import article_figures

    rows = []
    for c, scale in (("full questions", 1), ("short questions", 4)):
        rows.append({"condition": c, "design": "dense", "runs": 1, "questions": 297, "llm_calls": 0.0})
        rows.append({"condition": c, "design": "rerank", "runs": 1, "questions": 297, "llm_calls": 0.0,
                     "recall_at_5_delta": 0.01 * scale, "recall_at_5_low": 0.0, "recall_at_5_high": 0.02 * scale,
                     "mrr_at_10_delta": 0.05 * scale, "mrr_at_10_low": 0.03 * scale, "mrr_at_10_high": 0.07 * scale})
    rows.append({"condition": "full questions", "design": "agent", "runs": 0, "questions": 0,
                 "not_scored": "run 1 stopped part-way"})
    fig = plots.headline_chart(pd.DataFrame(rows), tmp_path / "h.png", names=lambda d: f"<{d}>",
                               article=article_figures())
    full5, short5, full10, short10 = [ax for ax in fig.axes if ax.get_xlabel()]
    # the condition over its column, the measure under each panel
    assert [full5.get_title(), short5.get_title()] == ["full questions\n(297 questions)", "short questions\n(297 questions)"]
    assert [ax.get_xlabel() for ax in (full5, short5, full10, short10)] == [
        "recall@5 − dense", "recall@5 − dense", "MRR@10 − dense", "MRR@10 − dense"]
    # one x-scale per measure: every condition's panel of a measure has the same limits, wide enough for
    # the largest range of any condition (short questions' MRR@10 reaches 0.28)
    assert full5.get_xlim() == short5.get_xlim() and full10.get_xlim() == short10.get_xlim()
    assert full10.get_xlim()[1] >= 0.28 and full5.get_xlim() != full10.get_xlim()
    # the same design rows in every panel (the article's rows drawn in its own condition only)
    assert [t.get_text() for t in full5.get_yticklabels()] == ["<rerank>", "the article's rerank", "<agent>",
                                                              "the article's agent"]
    assert short5.get_ylim() == full5.get_ylim()
    assert "no complete run yet" in [t.get_text() for t in full5.texts]
    assert not any(line.get_color() == plots.ARTICLE_COLOUR for line in short10.lines)
    colours = {line.get_color() for line in full10.lines if line.get_marker() == "o"}
    assert plots.ARTICLE_COLOUR in colours and plots.PLAIN_COLOUR in colours
    legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "called a language model" in legend and "called no language model" in legend
    # small enough to sit whole on the index's first screen: under 6.5 in (650 px at the charts' 100 dpi)
    assert fig.get_figheight() < 6.5
    empty = plots.headline_chart(pd.DataFrame(), tmp_path / "e.png")
    assert "No design has a complete run yet" in empty.axes[0].texts[0].get_text()


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


def test_the_index_places_a_chart_a_page_drew_from_the_same_inputs_in_one_make_report(tmp_path, monkeypatch):
    """Within one `make report` (its folder of drawings named in REPORT_DRAWN_CHARTS), a chart asked with
    reuse=True from the same table, names and options is the PNG drawn before, not drawn again; another table,
    or no such folder (outside `make report`), draws it."""
    from lib.report import chart_files

    t = pd.DataFrame([_row("full questions", "dense", 0.5, 0.4, 0.1, 0),
                      _row("full questions", "agent", 0.6, 0.5, 3.0, 900, calls=1.0)])
    assert plots.frontier_chart(t, tmp_path / "none.png", reuse=True) is not None  # no folder: drawn
    monkeypatch.setenv(chart_files.DRAWN_DIR, str(tmp_path / "drawn"))
    assert plots.frontier_chart(t, tmp_path / "page.png") is not None  # the page draws it, and it is kept
    assert plots.frontier_chart(t, tmp_path / "index.png", reuse=True) is None  # the index places it
    assert (tmp_path / "index.png").read_bytes() == (tmp_path / "page.png").read_bytes()
    assert plots.frontier_chart(t, tmp_path / "named.png", names=str.upper, reuse=True) is not None  # other names
    other = t.assign(mrr_at_10=[0.4, 0.7])
    assert plots.frontier_chart(other, tmp_path / "other.png", reuse=True) is not None  # another table: drawn
    assert (tmp_path / "other.png").read_bytes() != (tmp_path / "page.png").read_bytes()
    assert plots.conditions_chart(t, tmp_path / "c.png", reuse=True) is not None  # another chart of the same table
