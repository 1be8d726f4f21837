"""Page 12's chart: stop judges over the agent's real decision trees (``lib.evaluation.judges``), drawn
from the saved tables only (``judges_grid.csv`` for the curves, ``judges.csv`` for the models' points)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D

from .plots import SMALL, _save
from .why import ACCURACY_WORDS, METRIC_WORDS

MARKERS = "os^Dv"
SEARCH_LEVELS = (0.0, 0.5, 1.0)


def judges_chart(grid: pd.DataFrame, judges: pd.DataFrame, path: Path, metric: str = "mrr_at_10",
                 label: Callable[[str], str] = lambda m: m):
    """One panel per condition and model with a tree: the judge's difference from dense against its stop
    accuracy, one line per search accuracy (0, 0.5, 1); the model at its measured accuracies: open, the
    judge's prediction there; filled, the agent's own run; the dotted line, the best leaf per question."""
    keys = list(dict.fromkeys(zip(judges.condition, judges.model))) if not judges.empty else []
    n = max(1, len(keys))
    fig, axes = plt.subplots(1, n, figsize=(min(4.6 * n, 13.6), 4.0), squeeze=False, sharey=True)
    shades = {0.0: "#9ecae1", 0.5: "#4292c6", 1.0: "#08306b"}
    for ax, (condition, model) in zip(axes[0], keys):
        g = grid[(grid.condition == condition) & (grid.model == model) & (grid.metric == metric)]
        for level in SEARCH_LEVELS:
            line = g[(g.p_search - level).abs() < 1e-9].sort_values("p_stop")
            ax.plot(line.p_stop, line.difference, "-", color=shades[level], lw=1.6)
        r = judges[(judges.condition == condition) & (judges.model == model) & (judges.metric == metric)
                   & (judges.point == "model")]
        if not r.empty:
            r = r.iloc[0]
            ax.errorbar([r.p_stop], [r.predicted], yerr=[[r.predicted - r.predicted_low], [r.predicted_high - r.predicted]],
                        fmt="o", mfc="white", color="#d95f02", ms=7, mew=1.5, capsize=3)
            ax.plot([r.p_stop], [r.actual], "o", color="#d95f02", ms=7)
            ax.axhline(r.ceiling, ls=":", color="#1b9e77", lw=1.4)
        ax.axhline(0, ls="--", color="grey", lw=1)
        ax.set_title(f"{condition}\n{label(model)}", fontsize=SMALL)
        ax.set_xlabel(ACCURACY_WORDS["p_stop"][0], fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"agent − dense, {METRIC_WORDS[metric]}", fontsize=SMALL)
    handles = [Line2D([], [], color=shades[v], lw=1.6, label=f"{ACCURACY_WORDS['p_search'][0]} {v:.0%}")
               for v in SEARCH_LEVELS]
    handles += [Line2D([], [], marker="o", ls="", color="#d95f02", mfc="white",
                       label="the model's accuracies: predicted, 95% range"),
                Line2D([], [], marker="o", ls="", color="#d95f02", label="the agent's run"),
                Line2D([], [], ls=":", color="#1b9e77", label="best leaf per question (ceiling)")]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, fontsize=SMALL,
               title="above the dashed line: better than dense", title_fontsize=SMALL)
    return _save(fig, path, rect=(0, 0.2, 1, 1))
