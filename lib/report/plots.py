"""Charts of the report, drawn from saved data, saved as PNG and returned for inline display.

Score axes start at zero, except the charts of differences (design minus dense, around a dashed
zero line) and the frontier, which zooms to the scores it shows (its axis says where it starts). A
design with one run is drawn as a point, a design with several runs as its mean with a line from
its lowest to its highest run. Charts are at most 12.6 in wide and saved at 100 dpi, so a page 1400
px wide shows them unscaled and no text is under 9 pt. Designs are named by ``names`` (the report
passes :func:`lib.report.display.design_namer`, which names the offline rerank step by what it
fuses); in the headline and the frontier, designs that call a language model are orange and those
that do not blue. The index's three charts are drawn once a `make report` (``chart_files.drawn_once``)."""
from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Callable

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib import font_manager
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from . import chart_files
from .display import calls_a_model
from ..designs import design_names

# What could make a chart's PNG differ from one machine to the next, pinned here, where every chart module
# gets its _save: the PNG is written by Agg (savefig's PNG path, whatever backend shows the figure);
# matplotlib's own default style, not a user's matplotlibrc; the font matplotlib itself ships, DejaVu
# Sans, by its file (a system font of the same name is not used), with matplotlib's default hinting; the
# library versions are pinned in requirements.txt. What is left is the CPU: another kind rounds a few edge
# pixels differently (the frontier differed by 5 pixels). So a chart is held to its data and to an image
# tolerance, not to its bytes (lib/report/chart_files.py): its PNG carries the digest of what it shows, and a
# chart drawn again with the same digest within tolerance of the file already there keeps that file, so the
# file and the page that shows it stay byte for byte. tests/test_figures_reproduce.py redraws the committed
# charts from their saved table and compares them so.
BUNDLED_FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
STYLE = {"font.family": ["sans-serif"], "font.sans-serif": ["DejaVu Sans"], "text.hinting": "default",
         "text.hinting_factor": None, "text.antialiased": True, "savefig.format": "png"}


def pin_style() -> None:
    """matplotlib's default style with :data:`STYLE`, and DejaVu Sans found as the file matplotlib ships."""
    import matplotlib.style  # matplotlib is heavy and only a chart needs it

    matplotlib.style.use("default")  # its defaults; the backend and other process settings are left alone
    plt.rcParams.update(STYLE)
    if Path(font_manager.findfont("DejaVu Sans")) != BUNDLED_FONT:
        manager = font_manager.fontManager
        manager.ttflist = [f for f in manager.ttflist
                           if not f.name.startswith("DejaVu Sans") or Path(f.fname).parent == BUNDLED_FONT.parent]
        manager.addfont(str(BUNDLED_FONT))  # (clears the font lookup's cache)


pin_style()

LABELS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}
MODEL_COLOUR, PLAIN_COLOUR, ARTICLE_COLOUR = "#dd8452", "#4c72b0", "black"
SMALL = 9  # the smallest text on any chart, in points


def _same(name: str) -> str:
    return name


def design_colour(design: str, llm_calls=None) -> str:
    """Orange for a design that called a language model (``llm_calls`` per question, where the table
    has it: escalate calls one only when it escalates), blue for one that did not."""
    called = calls_a_model(design) if llm_calls is None or pd.isna(llm_calls) else llm_calls > 0
    return MODEL_COLOUR if called else PLAIN_COLOUR


def _save(fig, path: Path, rect: tuple = (0, 0, 1, 1), dpi: int = 100, layout: bool = True, data=None):
    """Save the figure and close it, so a notebook shows it once (as the returned value, shown as the file
    saved); ``rect`` keeps room for a legend below the axes; ``layout=False`` keeps a layout already fixed
    (labels placed by pixel position); ``data``: what the chart was drawn from, for a chart whose points are
    placed by pixel (:func:`lib.report.chart_files.drawn_data`). The PNG is placed by
    :func:`lib.report.chart_files.place_png`, and a notebook shows the file placed."""
    path = Path(path)
    _renderer(fig)  # the layout measured by Agg, the renderer that writes the PNG, whatever the backend
    if layout:
        fig.tight_layout(rect=rect)
    png = io.BytesIO()
    fig.savefig(png, dpi=dpi, format="png")  # written by Agg
    chart_files.place_png(chart_files.with_digest(png.getvalue(), chart_files.drawn_data(fig, data)), path)
    chart_files.shown_as_file(fig, path)
    plt.close(fig)
    return fig


def _renderer(fig):
    """The figure's Agg renderer (its canvas made an Agg one first where the backend's is not)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # matplotlib is heavy and only a chart needs it

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def _empty(path: Path, text: str, size=(8, 1.6)):
    fig, ax = plt.subplots(figsize=size)
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=11, color="grey", transform=ax.transAxes)
    return _save(fig, path)


def collection_chart(manifest: dict, path: Path):
    """Papers by role and by category in the collection."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    roles = manifest["by_role"]
    axes[0].bar(list(roles), list(roles.values()), color=["#4c72b0", "#dd8452", "#8c8c8c"][: len(roles)])
    axes[0].set_title(f"the {manifest['n_papers']:,} papers by role")
    axes[0].set_ylabel("papers")
    cats = dict(sorted(manifest["by_category"].items()))
    axes[1].bar(list(cats), list(cats.values()), color="#55a868")
    axes[1].set_title("papers per category (a paper can have several)")
    axes[1].set_ylabel("papers")
    for ax in axes:
        for c in ax.containers:
            ax.bar_label(c, fontsize=SMALL)
        ax.margins(y=0.12)
    return _save(fig, path)


def question_lengths(questions: pd.DataFrame, path: Path):
    """Question length in words, by style."""
    fig, ax = plt.subplots(figsize=(7, 3.2))
    style = questions["style"].fillna("").replace("", "(no style)") if "style" in questions else \
        pd.Series("(no style)", index=questions.index)
    styles = [s for s in ("specific", "problem", "vague") if s in set(style)] + \
        sorted(set(style) - {"specific", "problem", "vague"})
    ax.boxplot([questions.loc[style == s, "words"] for s in styles],
               tick_labels=[f"{s}\n({(style == s).sum()} questions)" for s in styles])
    ax.set_ylabel("words per question")
    ax.set_ylim(bottom=0)
    ax.set_title("question length by style (box: middle half; line: median)")
    return _save(fig, path)


def scores_chart(run_scores: pd.DataFrame, path: Path, names: Callable[[str], str] = _same):
    """Each design's recall@5 and MRR@10 from 0 to 1: a point per design (the mean over its runs),
    with a line from its lowest to its highest run where it has several runs; each value is written
    on its own row, beside the point."""
    designs = list(dict.fromkeys(run_scores["design"]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 1.0 + 0.36 * max(len(designs), 1)))
    for ax, m in zip(axes, ("recall_at_5", "mrr_at_10")):
        g = run_scores.groupby("design", sort=False)[m]
        mean, lo, hi, n = g.mean(), g.min(), g.max(), g.count()
        y = np.arange(len(designs))
        for yi, d in zip(y, designs):
            if n[d] > 1:
                ax.hlines(yi, lo[d], hi[d], color=PLAIN_COLOUR, lw=3, alpha=0.5)
            ax.plot(mean[d], yi, "o", color=PLAIN_COLOUR)
            text = f"{mean[d]:.3f}" + (f" ({n[d]} runs)" if n[d] > 1 else "")
            left = mean[d] > 0.35  # beside the point, on the side with room, on the point's own row
            ax.annotate(text, (min(lo[d], mean[d]) if left else max(hi[d], mean[d]), yi),
                        xytext=(-7 if left else 7, 0), textcoords="offset points", ha="right" if left else "left",
                        va="center", fontsize=SMALL)
        ax.set_yticks(y, [names(d) for d in designs])
        ax.set_xlim(0, 1.05)
        ax.set_ylim(len(designs) - 0.5, -0.5)
        ax.set_xlabel(f"{LABELS[m]} (mean over questions; 0 to 1)")
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("Scores per design (line: lowest to highest run)", fontsize=10)
    return _save(fig, path)


def deltas_chart(deltas: pd.DataFrame, path: Path, names: Callable[[str], str] = _same):
    """Each design minus dense with its 95% paired bootstrap range; dashed line at zero (no difference)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 1.0 + 0.36 * max(deltas.design.nunique(), 1)))
    for ax, m in zip(axes, ("recall_at_5", "mrr_at_10")):
        d = deltas[deltas.metric == m]
        y = np.arange(len(d))
        ax.errorbar(d["delta"], y, xerr=[d["delta"] - d["low"], d["high"] - d["delta"]], fmt="o", capsize=3,
                    color=PLAIN_COLOUR)
        ax.axvline(0, ls="--", color="gray")
        ax.set_yticks(y, [names(x) for x in d["design"]])
        ax.set_ylim(len(d) - 0.5, -0.5)
        ax.set_xlabel(f"{LABELS[m]}: design minus dense (points; line: 95% range)")
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("Each design against dense, on the same questions", fontsize=10)
    return _save(fig, path)


@chart_files.drawn_once
def conditions_chart(table: pd.DataFrame, path: Path, names: Callable[[str], str] = _same):
    """recall@5 and MRR@10 of every design in every condition (0 to 1): small multiples, one panel per
    condition with the designs named on its rows, recall@5 a hollow circle and MRR@10 a filled one
    joined by a line, orange for designs that call a language model and blue for those that do not;
    every panel on the same 0-to-1 scale."""
    t = table.dropna(subset=["recall_at_5"]) if "recall_at_5" in table else table.iloc[0:0]
    if t.empty:
        return _empty(path, "No condition has a scored run yet.")
    conditions = list(dict.fromkeys(t["condition"]))
    designs = _in_order(list(dict.fromkeys(t["design"])))
    fig, panels, legend_ax, rect = _grid(len(conditions), 3, 12.6, 0.9 + 0.22 * len(designs), 0.4, legend_height=0.6)
    for ax, c in zip(panels, conditions):
        sub = t[t.condition == c].drop_duplicates("design").set_index("design")
        for i, d in enumerate(designs):
            if d not in sub.index:
                ax.text(0.02, i, "not scored here", transform=ax.get_yaxis_transform(), va="center", ha="left",
                        fontsize=SMALL, color="grey", style="italic")
                continue
            r = sub.loc[d]
            col = design_colour(d, r.get("llm_calls"))
            ax.plot([r.recall_at_5, r.mrr_at_10], [i, i], "-", color=col, lw=1, alpha=0.6)
            ax.plot(r.recall_at_5, i, "o", color=col, mfc="white", ms=6, mew=1.4)
            ax.plot(r.mrr_at_10, i, "o", color=col, ms=6)
        ax.set_yticks(range(len(designs)), [names(d) for d in designs], fontsize=SMALL)
        ax.set_ylim(len(designs) - 0.5, -0.5)
        ax.set_xlim(0, 1.02)
        n = sub["questions"].max() if "questions" in sub and sub["questions"].notna().any() else 0
        ax.set_title(f"{c} ({int(n)} questions)" if n else c, fontsize=10)
        ax.set_xlabel("score, 0 to 1", fontsize=SMALL)
        ax.tick_params(axis="x", labelsize=SMALL)
        ax.grid(axis="x", alpha=0.3)
    handles = [Line2D([], [], marker="o", ls="", color="grey", mfc="white", ms=6, mew=1.4, label="recall@5"),
               Line2D([], [], marker="o", ls="", color="grey", ms=6, label="MRR@10"),
               Line2D([], [], marker="o", ls="", color=PLAIN_COLOUR, ms=6, label="called no language model"),
               Line2D([], [], marker="o", ls="", color=MODEL_COLOUR, ms=6, label="called a language model")]
    _legend(fig, legend_ax, handles, 4, fontsize=SMALL)
    fig.suptitle("Every design in every condition: recall@5 and MRR@10 (mean over questions; one scale, 0 to 1)",
                 fontsize=10)
    return _save(fig, path, rect=(rect[0], rect[1], 1, 0.97))


def pareto(points: list[tuple[str, float, float]]) -> set[str]:
    """Names on the cost-quality frontier: no other point has lower-or-equal cost and higher-or-equal
    score with one of them strictly better."""
    out = set()
    for n, c, s in points:
        if not any((c2 <= c and s2 >= s) and (c2 < c or s2 > s) for n2, c2, s2 in points if n2 != n):
            out.add(n)
    return out


def cost_axis(table: pd.DataFrame) -> tuple[str, str]:
    """The cost column of the frontier: list-price USD per question where any design has a fee (the
    article profile), otherwise LLM tokens per question, input + output (offline: the local model
    has no fee, so tokens stand for what an API would bill)."""
    if "cost_usd_per_q" in table and (table["cost_usd_per_q"].fillna(0) > 0).any():
        return "cost_usd_per_q", "USD per question, list price"
    return "tokens", "LLM tokens per question, in + out"


def design_colours(designs) -> dict[str, str]:
    """One colour per design, in the order given (the conditions chart and the frontier agree)."""
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {d: cycle[i % len(cycle)] for i, d in enumerate(designs)}


def _in_order(designs: list[str]) -> list[str]:
    """Designs in the registry's order (a design with only a partial run comes at its place, not last)."""
    try:
        order = {d: i for i, d in enumerate(design_names())}
    except Exception:
        order = {}
    return sorted(designs, key=lambda d: (order.get(d, len(order)), designs.index(d)))


def _grid(n_panels: int, ncols: int, width: float, panel_height: float, extra: float = 0.6,
          legend_height: float = 0.9):
    """A figure of ``n_panels`` panels in at most ``ncols`` columns, and where its legend goes: the first
    slot the panels leave free, or (when they fill every row) a strip under them. Returns the figure,
    the panels, the legend's axes (None for the strip) and the figure's layout rectangle."""
    ncols = max(1, min(ncols, n_panels))
    nrows = math.ceil(n_panels / ncols)
    strip = n_panels % ncols == 0
    height = extra + panel_height * nrows + (legend_height if strip else 0)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[n_panels + (0 if strip else 1):]:
        fig.delaxes(ax)
    legend_ax = None if strip else flat[n_panels]
    if legend_ax is not None:
        legend_ax.axis("off")
    return fig, flat[:n_panels], legend_ax, (0, (legend_height / height) if strip else 0, 1, 1)


def _legend(fig, legend_ax, handles, ncol: int, **kwargs):
    """The legend in its free slot, or in the strip under the panels."""
    if legend_ax is not None:
        return legend_ax.legend(handles=handles, loc="center", frameon=False, **kwargs)
    return fig.legend(handles=handles, loc="lower center", ncol=ncol, frameon=False, **kwargs)


def _nudge(ax, xs, ys, min_px: float = 11.0) -> list[float]:
    """x positions (data units, log axis) moved sideways just enough that no two points drawn at
    these positions are closer than ``min_px`` pixels; the first point of a cluster stays put."""
    pts = ax.transData.transform(np.c_[xs, ys])
    order = sorted(range(len(xs)), key=lambda i: (pts[i][0], -pts[i][1]))
    placed: list[np.ndarray] = []
    out = list(xs)
    for i in order:
        p = pts[i].copy()
        while any(np.hypot(*(p - q)) < min_px for q in placed):
            p[0] += min_px / 2
        placed.append(p)
        out[i] = ax.transData.inverted().transform(p)[0]
    return out


def _offsets():
    """Where a label may go, nearest first: rings of 12 directions, 7 to 80 points from its point; a
    label not straight beside its point gets a leader line to it."""
    out = []
    for radius in (7, 13, 20, 30, 42, 58, 80):
        for k in (0, 6, 3, 9, 2, 4, 8, 10, 1, 5, 7, 11):  # right, left, up, down, then the diagonals
            a = math.radians(30 * k)
            dx, dy = radius * math.cos(a), radius * math.sin(a)
            ha = "left" if dx > 1 else ("right" if dx < -1 else "center")
            va = "bottom" if dy > 1 else ("top" if dy < -1 else "center")
            out.append((round(dx, 1), round(dy, 1), ha, va, radius > 7 or abs(dy) > 1))
    return out


_OFFSETS = _offsets()


def _place_labels(ax, xs, ys, texts, renderer, fontsize: int = SMALL) -> list:
    """Each point's label beside it, at the first position (nearest first, farther ones with a leader
    line) where it overlaps no other label, no point and stays inside the panel."""
    pts = ax.transData.transform(np.c_[xs, ys])
    dots = [Bbox.from_bounds(x - 5, y - 5, 10, 10) for x, y in pts]
    frame = ax.get_window_extent(renderer)
    placed: list[Bbox] = []
    anns = []
    for i in sorted(range(len(xs)), key=lambda k: -pts[k][1]):
        ann = ax.annotate(texts[i], (xs[i], ys[i]), xytext=(7, 0), textcoords="offset points", ha="left",
                          va="center", fontsize=fontsize)
        best = None
        for dx, dy, ha, va, far in _OFFSETS:
            ann.xyann = (dx, dy)
            ann.set_ha(ha)
            ann.set_va(va)
            box = ann.get_window_extent(renderer).expanded(1.04, 1.15)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(b) for b in placed) and \
                    not any(box.overlaps(d) for j, d in enumerate(dots) if j != i):
                best = (dx, dy, ha, va, far, box)
                break
        if best is None:  # nowhere free: beside the point, so the label is still there
            best = (7, 0, "left", "center", False, None)
        dx, dy, ha, va, far, box = best
        ann.remove()
        ann = ax.annotate(texts[i], (xs[i], ys[i]), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                          fontsize=fontsize,
                          arrowprops=dict(arrowstyle="-", color="grey", lw=0.6, shrinkA=1, shrinkB=5) if far else None)
        placed.append(box if box is not None else ann.get_window_extent(renderer))
        anns.append(ann)
    return anns


@chart_files.drawn_once
def frontier_chart(table: pd.DataFrame, path: Path, names: Callable[[str], str] = _same, metric: str = "mrr_at_10"):
    """Per condition (one panel each, in two columns), a score (MRR@10 by default) against the median
    latency per question (the tables' latency), each design labelled beside its point with its LLM
    cost per question (:func:`cost_axis`: tokens offline, list-price USD where there is a fee). A
    point is a design's mean over its runs, with a line from its lowest to its highest run; filled
    points are on the panel's frontier (:func:`pareto`: no other design is at least as good for at
    most the same latency), hollow ones are not. Points that would cover each other are moved
    sideways just enough to show each one."""
    t = table.dropna(subset=[metric]) if metric in table else table.iloc[0:0]
    if t.empty:
        return _empty(path, "No condition has a scored run yet.")
    conditions = list(dict.fromkeys(t["condition"]))
    cost, _ = cost_axis(t)
    fig, panels, legend_ax, rect = _grid(len(conditions), 2, 12.4, 3.9, 0.7, legend_height=0.8)
    for ax, c in zip(panels, conditions):
        sub = t[t.condition == c].reset_index(drop=True)
        xs = sub["latency_median_s"].astype(float).clip(lower=1e-3).tolist()
        ys = sub[metric].astype(float).tolist()
        lows = [float(v) if pd.notna(v) else y for v, y in zip(sub.get(f"{metric}_min", sub[metric]), ys)]
        ax.set_xscale("log")
        ax.set_xlim(min(xs) / 3, max(xs) * 4)
        bottom = max(0.0, math.floor((min(lows) - 0.03) * 20) / 20)
        ax.set_ylim(bottom, 1.0 + (1.0 - bottom) * 0.06)
        ax.set_title(c, fontsize=10)
        ax.set_xlabel("median latency per question (s, log scale)", fontsize=SMALL)
        ax.set_ylabel(f"{LABELS[metric]} (axis from {bottom:g})", fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
    fig.suptitle(f"Quality against latency, per condition: {LABELS[metric]} and median latency per question; filled: "
                 "on the frontier (no design as good for less time)", fontsize=10)
    renderer = _renderer(fig)  # (Agg's, before the layout is measured)
    fig.tight_layout(rect=(0, rect[1], 1, 0.975))
    for ax, c in zip(panels, conditions):
        sub = t[t.condition == c].reset_index(drop=True)
        xs = sub["latency_median_s"].astype(float).clip(lower=1e-3).tolist()
        ys = sub[metric].astype(float).tolist()
        front = pareto(list(zip(sub.design, xs, ys)))
        shown = _nudge(ax, xs, ys)
        texts = []
        for i, r in sub.iterrows():
            col = design_colour(r.design, r.get("llm_calls"))
            lo, hi = r.get(f"{metric}_min"), r.get(f"{metric}_max")
            if pd.notna(lo) and pd.notna(hi) and hi > lo:
                ax.plot([shown[i], shown[i]], [lo, hi], "-", color=col, lw=1.5)
            ax.plot(shown[i], ys[i], "o", ms=7, color=col, mfc=col if r.design in front else "white", mew=1.5)
            fee = r.get(cost)
            extra = ""
            if pd.notna(fee) and fee > 0:
                extra = f", {fee:.4f} USD" if cost == "cost_usd_per_q" else f", {fee:,.0f} tokens"
            texts.append(names(r.design) + extra)
        _place_labels(ax, shown, ys, texts, renderer)
    handles = [Line2D([], [], marker="o", ls="", color=PLAIN_COLOUR, ms=7, label="called no language model"),
               Line2D([], [], marker="o", ls="", color=MODEL_COLOUR, ms=7, label="called a language model"),
               Line2D([], [], marker="o", ls="", color="grey", ms=7, label="filled: on the frontier"),
               Line2D([], [], marker="o", ls="", color="grey", mfc="white", ms=7, mew=1.5, label="hollow: not"),
               Line2D([], [], ls="-", color="grey", lw=1.5, label="line: lowest to highest run")]
    _legend(fig, legend_ax, handles, 5, fontsize=10, title_fontsize=10,
            title=("labels: the design, and its LLM " + ("cost (USD)" if cost == "cost_usd_per_q" else "tokens")
                   + " per question"))
    used = ["condition", "design", "latency_median_s", metric, f"{metric}_min", f"{metric}_max", "llm_calls", cost]
    return _save(fig, path, layout=False, data=t[[c for c in dict.fromkeys(used) if c in t]])


@chart_files.drawn_once
def headline_chart(table: pd.DataFrame, path: Path, names: Callable[[str], str] = _same, article: dict | None = None,
                   default: str = "full questions"):
    """The report's one headline figure, small enough to sit whole, legend included, on the index's first
    screen (1,400 x 900): a column of panels per condition, a row per measure (recall@5, then MRR@10),
    every design minus dense in that condition with its 95% paired bootstrap range; every panel of a row
    on the same x-scale and every panel on the same design rows, so conditions compare by eye. Orange for
    designs that call a language model, blue for those that do not; in the ``default`` condition the
    article's published differences (``article``: data/article_figures.json) in black on their own rows
    beneath ours. A design without a complete run in a condition says so."""
    t = table if "condition" in table else pd.DataFrame(columns=["condition", "design"])
    if t.empty:
        return _empty(path, "No design has a complete run yet, so nothing is compared with dense yet.", (12.6, 2))
    conditions = list(dict.fromkeys(t["condition"]))
    designs = _in_order([d for d in dict.fromkeys(t["design"]) if d != "dense"])
    published = (article or {}).get("results", {})
    metrics = ("recall_at_5", "mrr_at_10")
    rows = []  # (label, kind, design), the same in every panel
    for d in designs:
        rows.append((names(d), "ours", d))
        if default in conditions and any(f"delta_{m}" in published.get(d, {}) for m in metrics):
            rows.append((f"the article's {d}", "article", d))
    row_in = 0.16  # inches per design row
    panel_h = len(rows) * row_in + 0.2
    legend_h = 0.55
    height = 2 * panel_h + 1.45 + legend_h
    fig, axes = plt.subplots(2, len(conditions), figsize=(12.6, height), squeeze=False, sharex="row", sharey=True)
    spans = {m: [0.0] for m in metrics}
    for col, c in enumerate(conditions):
        sub = t[t.condition == c].drop_duplicates("design").set_index("design")
        n = sub["questions"].max() if "questions" in sub and sub["questions"].notna().any() else 0
        for ax, m in zip(axes[:, col], metrics):
            for i, (_, kind, d) in enumerate(rows):
                if kind == "article":
                    value = published[d].get(f"delta_{m}") if c == default else None
                    if not value:
                        continue
                    (delta, lo, hi), colour, face = value, ARTICLE_COLOUR, "white"
                else:
                    r = sub.loc[d] if d in sub.index else None
                    scored = r is not None and pd.notna(r.get("questions")) and r.get("questions", 0) > 0 \
                        and pd.notna(r.get(f"{m}_delta"))
                    if not scored:
                        note = "not run here yet" if r is None else "no complete run yet"
                        ax.text(0.02, i, note, transform=ax.get_yaxis_transform(), va="center", ha="left",
                                fontsize=SMALL, color="grey", style="italic")
                        continue
                    delta, lo, hi = r[f"{m}_delta"], r[f"{m}_low"], r[f"{m}_high"]
                    colour = face = design_colour(d, r.get("llm_calls"))
                ax.plot([lo, hi], [i, i], "-", color=colour, lw=1.8, solid_capstyle="butt")
                ax.plot(delta, i, "o", color=colour, mfc=face, ms=5, mew=1.2)
                spans[m] += [lo, hi]
            ax.axvline(0, ls="--", color="grey", lw=1)
            if m == metrics[0]:  # the condition over its column, the measure under each panel
                ax.set_title(f"{c}\n({int(n)} questions)" if n else c, fontsize=SMALL)
            ax.set_xlabel(f"{LABELS[m]} − dense", fontsize=SMALL)
            ax.tick_params(axis="both", labelsize=SMALL, labelbottom=True)
            ax.grid(axis="x", alpha=0.3)
    first = axes[0, 0]
    first.set_yticks(range(len(rows)), [label for label, _, _ in rows], fontsize=SMALL)
    for ax in axes[:, 0]:
        for tick, (_, kind, _) in zip(ax.get_yticklabels(), rows):
            if kind == "article":
                tick.set_color("#444444")
                tick.set_fontstyle("italic")
    first.set_ylim(len(rows) - 0.5, -0.5)
    for row_axes, m in zip(axes, metrics):
        lo, hi = min(min(spans[m]), 0), max(max(spans[m]), 0)
        pad = 0.06 * max(hi - lo, 0.02)
        row_axes[0].set_xlim(lo - pad, hi + pad)  # shared by every panel of the row
        row_axes[0].xaxis.set_major_locator(plt.MaxNLocator(4))
    handles = [Line2D([], [], marker="o", ls="-", color=PLAIN_COLOUR, ms=6, label="called no language model"),
               Line2D([], [], marker="o", ls="-", color=MODEL_COLOUR, ms=6, label="called a language model")]
    if published:  # the article's points are drawn only where its figures are given
        handles.append(Line2D([], [], marker="o", ls="-", color=ARTICLE_COLOUR, mfc="white", ms=6,
                              label="the article, as published (its own models and questions)"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False, fontsize=SMALL,
               title="design − dense with its 95% range, one scale per measure; right of the dashed line: better "
                     "than dense", title_fontsize=SMALL)
    return _save(fig, path, rect=(0, legend_h / height, 1, 1))
