"""Charts of the report, drawn from saved data, saved as PNG and returned for inline display.

Score axes start at zero; a design with one run is drawn as a point, a design with several runs
as its mean with a line from its lowest to its highest run.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

LABELS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}


def _save(fig, path: Path, rect: tuple = (0, 0, 1, 1), dpi: int = 110):
    """Save the figure and close it, so a notebook shows it once (as the returned value); ``rect``
    keeps room for a legend below the axes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return fig


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
            ax.bar_label(c, fontsize=8)
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


def scores_chart(run_scores: pd.DataFrame, path: Path):
    """Each design's recall@5 and MRR@10 from 0 to 1: a point per design (the mean over its runs),
    with a line from its lowest to its highest run where it has several runs."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, m in zip(axes, ("recall_at_5", "mrr_at_10")):
        g = run_scores.groupby("design", sort=False)[m]
        designs = list(g.groups)
        mean, lo, hi, n = g.mean(), g.min(), g.max(), g.count()
        y = np.arange(len(designs))
        for yi, d in zip(y, designs):
            if n[d] > 1:
                ax.hlines(yi, lo[d], hi[d], color="#4c72b0", lw=3, alpha=0.5)
            ax.plot(mean[d], yi, "o", color="#4c72b0")
            ax.annotate(f"{mean[d]:.3f}" + (f" ({n[d]} runs)" if n[d] > 1 else ""), (mean[d], yi),
                        xytext=(0, 7), textcoords="offset points", ha="center", fontsize=8)
        ax.set_yticks(y, designs)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.05)
        ax.set_ylim(len(designs) - 0.4, -0.8)
        ax.set_xlabel(f"{LABELS[m]} (mean over questions; 0 to 1)")
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("Scores per design (line: lowest to highest run)", fontsize=10)
    return _save(fig, path)


def deltas_chart(deltas: pd.DataFrame, path: Path):
    """Each design minus dense with its 95% paired bootstrap range; dashed line at zero (no difference)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, m in zip(axes, ("recall_at_5", "mrr_at_10")):
        d = deltas[deltas.metric == m]
        y = np.arange(len(d))
        ax.errorbar(d["delta"], y, xerr=[d["delta"] - d["low"], d["high"] - d["delta"]], fmt="o", capsize=3,
                    color="#4c72b0")
        ax.axvline(0, ls="--", color="gray")
        ax.set_yticks(y, d["design"])
        ax.invert_yaxis()
        ax.set_xlabel(f"{LABELS[m]}: design minus dense (points; line: 95% range)")
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("Each design against dense, on the same questions", fontsize=10)
    return _save(fig, path)


def conditions_chart(table: pd.DataFrame, path: Path):
    """recall@5 and MRR@10 of every design in every condition (0 to 1), one row of points per condition."""
    t = table.dropna(subset=["recall_at_5"])
    conditions = list(dict.fromkeys(t["condition"]))
    designs = list(dict.fromkeys(t["design"]))
    colours = design_colours(designs)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.9 + 0.75 * len(conditions)))
    for ax, m in zip(axes, ("recall_at_5", "mrr_at_10")):
        for ci, c in enumerate(conditions):
            sub = t[t.condition == c]
            for k, (_, r) in enumerate(sub.iterrows()):
                y = ci + (k - (len(sub) - 1) / 2) * 0.12
                ax.plot(r[m], y, "o", color=colours[r.design], label=r.design if ci == 0 or r.design not in
                        set(t[t.condition.isin(conditions[:ci])].design) else None)
        ax.set_yticks(range(len(conditions)), conditions)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.05)
        ax.set_xlabel(f"{LABELS[m]} (mean over questions; 0 to 1)")
        ax.grid(axis="x", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(designs), fontsize=8, frameon=False)
    fig.suptitle("Every design in every condition", fontsize=10)
    return _save(fig, path, rect=(0, 0.08, 1, 1))


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


def frontier_chart(table: pd.DataFrame, path: Path):
    """Per condition (a row), recall@5 and MRR@10 against mean latency per question and against cost
    per question (:func:`cost_axis`). A point is a design's mean over its runs, with a line from its
    lowest to its highest run; filled points are on that panel's frontier (:func:`pareto`: no other
    design is at least as good for at most the same), hollow ones are not."""
    t = table.dropna(subset=["mrr_at_10"])
    conditions = list(dict.fromkeys(t["condition"]))
    colours = design_colours(dict.fromkeys(t["design"]))
    cost, cost_label = cost_axis(t)
    panels = [(m, x) for m in ("recall_at_5", "mrr_at_10") for x in ("latency_mean_s", cost)]
    fig, axes = plt.subplots(len(conditions), 4, figsize=(16, 0.6 + 2.6 * len(conditions)), squeeze=False)
    for row, c in zip(axes, conditions):
        sub = t[t.condition == c]
        for ax, (m, x) in zip(row, panels):
            xs = sub[x].astype(float).clip(lower=1e-3) if x == "latency_mean_s" else sub[x].astype(float)
            front = pareto(list(zip(sub.design, xs, sub[m])))
            for (_, r), xv in zip(sub.iterrows(), xs):
                col = colours[r.design]
                lo, hi = r.get(f"{m}_min"), r.get(f"{m}_max")
                if pd.notna(lo) and pd.notna(hi) and hi > lo:
                    ax.plot([xv, xv], [lo, hi], "-", color=col, lw=1.5)
                ax.plot(xv, r[m], "o", ms=7, color=col, mfc=col if r.design in front else "white", mew=1.5)
            if x == "latency_mean_s":
                ax.set_xscale("log")
                ax.set_xlabel("mean latency per question (s, log scale)")
            else:
                ax.set_xscale("symlog", linthresh=100 if x == "tokens" else 1e-4)
                ax.set_xlim(left=0)
                ax.set_xlabel(f"{cost_label} (0, then log)")
            ax.set_ylim(0, 1.05)
            ax.set_ylabel(f"{LABELS[m]}\n{c}", fontsize=8)
            ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], marker="o", ls="", color=col, label=d) for d, col in colours.items()]
    fig.legend(handles=handles, loc="lower center", ncol=len(colours), fontsize=9, frameon=False)
    fig.suptitle("Cost and quality per condition: filled points are on the frontier (no design is at least as good "
                 "for less); lines span a design's lowest to highest run", fontsize=10)
    return _save(fig, path, rect=(0, 0.5 / (0.6 + 2.6 * len(conditions)), 1, 1), dpi=100)
