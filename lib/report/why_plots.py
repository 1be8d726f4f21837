"""Page 12's charts, drawn from the saved tables only: stop judges over the agent's real decision trees
(``lib.evaluation.judges``: ``judges_grid.csv`` for the curves, ``judges.csv`` for the models' accuracies) and
the query side's bound (``lib.evaluation.query_bound``: ``query_bound_grid.csv`` and ``query_bound.csv``)."""
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


APART = "#969696"  # a point measured under another prompt or no constraint: drawn in grey, its panel says so


def apart_words(row: pd.Series) -> str:
    """A point's label when it is not comparable with the shipped points (``comparable`` false in judges.csv,
    lib.llm.contract), e.g. "not comparable: the article's prompt, no constraint"; "" otherwise (and for a
    table saved before the column)."""
    value = row["comparable"] if "comparable" in row.index else None
    if value is None or pd.isna(value) or (str(value).strip().lower() != "false" if isinstance(value, str) else bool(value)):
        return ""
    return f"not comparable: {row.get('measured_under') or 'another prompt or no constraint'}"


def judges_chart(grid: pd.DataFrame, judges: pd.DataFrame, path: Path, metric: str = "mrr_at_10",
                 label: Callable[[str], str] = lambda m: m):
    """One panel per condition and model with a tree: the judge's difference from dense against its stop
    accuracy (the same at every decision), one line per search accuracy (0, 0.5, 1); the model at its measured
    accuracies, a bar from its stop accuracy at the first decision to that at the last (open ends: the judge's
    prediction there, with its range; filled: the agent's runs); the dotted line, the best leaf per question in
    hindsight (it knows the answer: not a judge)."""
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
        apart = ""
        if not r.empty:
            r = r.iloc[0]
            apart = apart_words(r)
            colour = APART if apart else "#d95f02"
            stops = [r[c] for c in sorted(k for k in r.index if str(k).startswith("p_stop_")) if pd.notna(r[c])]
            xs = [min(stops), max(stops)] if stops else []
            if xs:
                ax.plot(xs, [r.predicted] * 2, "-", color=colour, lw=1.2)
                ax.errorbar(xs, [r.predicted] * 2, yerr=[[r.predicted - r.predicted_low] * 2,
                                                          [r.predicted_high - r.predicted] * 2],
                            fmt="o", mfc="white", color=colour, ms=7, mew=1.5, capsize=3)
                ax.plot(xs, [r.actual] * 2, "o-", color=colour, ms=7, lw=1.2)
            ax.axhline(r.hindsight, ls=":", color="#1b9e77", lw=1.4)
        ax.axhline(0, ls="--", color="grey", lw=1)
        ax.set_title(f"{condition}\n{label(model)}" + (f"\n{apart}" if apart else ""), fontsize=SMALL,
                     color=APART if apart else "black")
        ax.set_xlabel(f"{ACCURACY_WORDS['p_stop'][0]} (every decision)", fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"agent − dense, {METRIC_WORDS[metric]}", fontsize=SMALL)
    handles = [Line2D([], [], color=shades[v], lw=1.6, label=f"{ACCURACY_WORDS['p_search'][0]} {v:.0%}")
               for v in SEARCH_LEVELS]
    handles += [Line2D([], [], marker="o", color="#d95f02", mfc="white", lw=1.2,
                       label="predicted at the model's accuracies (bar: its stop accuracy, first to second decision)"),
                Line2D([], [], marker="o", color="#d95f02", lw=1.2, label="the agent's runs"),
                Line2D([], [], ls=":", color="#1b9e77", label="best leaf per question, in hindsight (not a judge)")]
    fig.legend(handles=handles, loc="lower center", ncol=2, frameon=False, fontsize=SMALL,
               title="above the dashed line: better than dense", title_fontsize=SMALL)
    return _save(fig, path, rect=(0, 0.24, 1, 1))


BOUND_STYLES = {"the model's": ("-", "the model's own accuracies"), "perfect": ("--", "a perfect judge")}


def bound_chart(grid: pd.DataFrame, bound: pd.DataFrame, path: Path, metric: str = "mrr_at_10",
                label: Callable[[str], str] = lambda m: m):
    """One panel per condition: the agent minus dense against the share of the model's new queries given the
    best list a query can give (the source first), an upper bound; one colour per model, solid at its own
    accuracies and dashed with a perfect judge; each model's measured share of strictly better queries, a
    vertical line of its colour."""
    conditions = list(dict.fromkeys(bound.condition)) if not bound.empty else []
    n = max(1, len(conditions))
    fig, axes = plt.subplots(1, n, figsize=(min(4.6 * n, 13.6), 4.0), squeeze=False, sharey=True)
    colours = ["#d95f02", "#7570b3", "#1b9e77", "#e7298a"]
    models = list(dict.fromkeys(bound.model)) if not bound.empty else []
    for ax, condition in zip(axes[0], conditions):
        for i, model in enumerate(models):
            colour = colours[i % len(colours)]
            b = bound[(bound.condition == condition) & (bound.model == model) & (bound.metric == metric)]
            if b.empty:
                continue
            for acc, (ls, _) in BOUND_STYLES.items():
                line = grid[(grid.condition == condition) & (grid.model == model) & (grid.metric == metric)
                            & (grid.accuracies == acc)].sort_values("share")
                ax.plot(line.share, line.difference, ls, color=colour, lw=1.6)
                at = b[b.accuracies == acc].least_share
                if not at.empty and pd.notna(at.iloc[0]):  # where the bound reaches dense
                    ax.plot([at.iloc[0]], [0.0], "o", color=colour, ms=5)
            ax.axvline(b.better_rate.iloc[0], color=colour, lw=1.0, alpha=0.8)
        ax.axhline(0, ls=":", color="grey", lw=1)
        ax.set_title(condition, fontsize=SMALL)
        ax.set_xlabel("share of new queries given the source first", fontsize=SMALL)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"agent − dense, {METRIC_WORDS[metric]} (upper bound)", fontsize=SMALL)
    handles = [Line2D([], [], color=colours[i % len(colours)], lw=1.6, label=label(m)) for i, m in enumerate(models)]
    handles += [Line2D([], [], color="black", ls=ls, lw=1.6, label=words) for ls, words in BOUND_STYLES.values()]
    handles += [Line2D([], [], color="black", lw=1.0, label="measured: share strictly better than the decision's list")]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, fontsize=SMALL,
               title="above the dotted line: better than dense", title_fontsize=SMALL)
    return _save(fig, path, rect=(0, 0.2, 1, 1))
