"""Page 12's charts: the break-even curves (``lib.evaluation.breakeven``) and the attribution's shares
(``lib.evaluation.attribution``), drawn from the computed tables only."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D

from .plots import SMALL, _save
from .why import DESIGN_WORDS, FACTOR_WORDS, METRIC_WORDS

MARKERS = "os^Dv"


def break_even_chart(items: Sequence, path: Path, metric: str = "mrr_at_10",
                     label: Callable[[str], str] = lambda m: m):
    """Two panels, one line per condition: the agent minus dense against a simulated stop judge's accuracy
    (left; ``p_stop = p_search`` on the curve; each local model at its measured ``p_stop``: open, a judge of its
    measured (p_stop, p_search) erring at random over the profile model's queries; filled, its own run), and
    against the share of its new queries that rank the source better than the question (right; each model at
    its share and its own run's difference)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.6, 4.4))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    models: list[str] = []
    for i, b in enumerate(items):
        col = cycle[i % len(cycle)]
        if not b.stop_curve.empty:
            left.plot(b.stop_curve.accuracy, b.stop_curve[metric], "-", color=col, lw=1.6, label=b.condition)
            for name, p in b.stop_points.items():
                models += [name] if name not in models else []
                mk = MARKERS[models.index(name) % len(MARKERS)]
                left.plot([p["p_stop"]] * 2, [p[metric], p[f"{metric}_as_run"]], ":", color=col, lw=1)
                left.plot(p["p_stop"], p[metric], mk, color=col, ms=7, mfc="white", mew=1.5)
                left.plot(p["p_stop"], p[f"{metric}_as_run"], mk, color=col, ms=7)
        curve = b.query_curves.get("agent")
        if curve is not None:
            right.plot(curve.share_better, curve[metric], "-", color=col, lw=1.6, label=b.condition)
            for name, p in b.query_points.get("agent", {}).items():
                models += [name] if name not in models else []
                right.plot(p["share_better"], p[metric], MARKERS[models.index(name) % len(MARKERS)], color=col, ms=7)
    for ax, xlabel in ((left, "stop judge accuracy: stops when the source is shown (models: at their share)"),
                       (right, "share of the agent's new queries ranking the source better than the question")):
        ax.axhline(0, ls="--", color="grey", lw=1)
        ax.set_xlabel(xlabel, fontsize=SMALL)
        ax.set_ylabel(f"agent − dense, {METRIC_WORDS[metric]}", fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
    left.set_title("the stop judgement (queries as saved)", fontsize=10)
    right.set_title("the queries (stops as run)", fontsize=10)
    handles = [Line2D([], [], color=cycle[i % len(cycle)], lw=1.6, label=b.condition) for i, b in enumerate(items)]
    handles += [Line2D([], [], marker=MARKERS[i % len(MARKERS)], ls="", color="black", label=f"{label(m)}: as run")
                for i, m in enumerate(models)]
    handles += [Line2D([], [], marker=MARKERS[i % len(MARKERS)], ls="", color="black", mfc="white",
                       label=f"{label(m)}: simulated, its accuracy at random") for i, m in enumerate(models)]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 4), frameon=False, fontsize=SMALL,
               title="above the dashed line: better than dense", title_fontsize=SMALL)
    return _save(fig, path, rect=(0, 0.21, 1, 1))


def shares_chart(table: pd.DataFrame, path: Path, metric: str = "mrr_at_10",
                 names: Callable[[str], str] | None = None):
    """Stacked bars, one per condition and design: each factor's Shapley share of the loss against dense
    (``metric``; a negative share, a gain, below the axis)."""
    sub = table[table.metric == metric]
    factors = [f for f in ("stop", "queries", "merge", "citations", "start") if f in sub and sub[f].fillna(0).abs().sum() > 0]
    fig, ax = plt.subplots(figsize=(12.6, 3.2 + 0.28 * len(sub)))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    labels = [f"{r.condition} · {(names or DESIGN_WORDS.get)(r.design) or r.design}" for r in sub.itertuples()]
    pos, neg = [0.0] * len(sub), [0.0] * len(sub)
    for j, f in enumerate(factors):
        vals = sub[f].fillna(0).tolist()
        lefts = [pos[i] if v >= 0 else neg[i] for i, v in enumerate(vals)]
        ax.barh(range(len(sub)), vals, left=lefts, color=cycle[j % len(cycle)], label=FACTOR_WORDS[f])
        for i, v in enumerate(vals):
            if v >= 0:
                pos[i] += v
            else:
                neg[i] += v
    ax.plot(sub["loss"], range(len(sub)), "k|", ms=14, mew=2, label="the loss (dense − design)")
    ax.set_yticks(range(len(sub)), labels, fontsize=SMALL)
    ax.invert_yaxis()
    ax.axvline(0, color="grey", lw=1)
    ax.set_xlabel(f"share of the {METRIC_WORDS[metric]} loss against dense (points)", fontsize=SMALL)
    ax.tick_params(axis="x", labelsize=SMALL)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=SMALL, frameon=False)
    return _save(fig, path)
