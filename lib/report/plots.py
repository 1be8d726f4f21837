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


def _save(fig, path: Path):
    """Save the figure and close it, so a notebook shows it once (as the returned value)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
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
    styles = [s for s in ("specific", "problem", "vague") if s in set(questions["style"])]
    ax.boxplot([questions.loc[questions["style"] == s, "words"] for s in styles],
               tick_labels=[f"{s}\n({(questions['style'] == s).sum()} questions)" for s in styles])
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
    colours = dict(zip(designs, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
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
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return fig


def pareto(points: list[tuple[str, float, float]]) -> set[str]:
    """Names on the cost-quality frontier: no other point has lower-or-equal cost and higher-or-equal
    score with one of them strictly better."""
    out = set()
    for n, c, s in points:
        if not any((c2 <= c and s2 >= s) and (c2 < c or s2 > s) for n2, c2, s2 in points if n2 != n):
            out.add(n)
    return out


def frontier_chart(table: pd.DataFrame, path: Path, metric: str = "mrr_at_10"):
    """Per condition: each design's score against its median latency per question and its LLM calls
    per question (the offline cost axis: the local model has no fee); designs on the frontier are
    filled, the others hollow."""
    t = table.dropna(subset=[metric])
    conditions = list(dict.fromkeys(t["condition"]))
    fig, axes = plt.subplots(len(conditions), 2, figsize=(11, 2.8 * len(conditions)), squeeze=False)
    for row, c in zip(axes, conditions):
        sub = t[t.condition == c]
        for ax, (x, xlabel) in zip(row, (("latency_median_s", "median latency per question (s, log scale)"),
                                         ("llm_calls", "LLM calls per question"))):
            xs = sub[x].clip(lower=1e-3) if x == "latency_median_s" else sub[x]
            front = pareto(list(zip(sub.design, xs, sub[metric])))
            for d, xv, yv in zip(sub.design, xs, sub[metric]):
                ax.plot(xv, yv, "o", color="#4c72b0", mfc="#4c72b0" if d in front else "white")
                ax.annotate(d, (xv, yv), xytext=(4, 4), textcoords="offset points", fontsize=8)
            if x == "latency_median_s":
                ax.set_xscale("log")
            else:
                ax.set_xlim(-0.1, max(1.0, float(xs.max()) * 1.15))
            ax.set_ylim(0, 1.05)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(f"{LABELS[metric]} ({c})")
            ax.grid(alpha=0.3)
    fig.suptitle(f"Cost and quality: {LABELS[metric]} against latency and LLM calls (filled: on the frontier)",
                 fontsize=10)
    return _save(fig, path)
