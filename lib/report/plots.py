"""Charts of the report, each saved under figures/ from data the pipeline saved."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

LABELS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def collection_chart(manifest: dict, path: Path):
    """Papers by role and by category in the collection."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    roles = manifest["by_role"]
    axes[0].bar(list(roles), list(roles.values()), color=["#4c72b0", "#dd8452", "#8c8c8c"][: len(roles)])
    axes[0].set_title(f"{manifest['n_papers']} papers by role")
    cats = dict(sorted(manifest["by_category"].items()))
    axes[1].bar(list(cats), list(cats.values()), color="#55a868")
    axes[1].set_title("papers per category (a paper can have several)")
    for ax in axes:
        for c in ax.containers:
            ax.bar_label(c, fontsize=8)
    _save(fig, path)
    return fig


def question_lengths(questions: pd.DataFrame, path: Path):
    """Question length in words, by style."""
    fig, ax = plt.subplots(figsize=(6, 3))
    styles = [s for s in ("specific", "problem", "vague") if s in set(questions["style"])]
    ax.boxplot([questions.loc[questions["style"] == s, "words"] for s in styles], tick_labels=styles)
    ax.set_ylabel("words")
    ax.set_title("question length by style")
    _save(fig, path)
    return fig


def scores_chart(run_scores: pd.DataFrame, path: Path):
    """Each design's recall@5 and MRR@10: mean over runs, with a bar from the lowest to the highest run."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, m in zip(axes, ("recall_at_5", "mrr_at_10")):
        g = run_scores.groupby("design", sort=False)[m]
        designs = list(g.groups)
        mean, lo, hi = g.mean(), g.min(), g.max()
        x = np.arange(len(designs))
        ax.bar(x, mean[designs], color="#4c72b0")
        ax.errorbar(x, mean[designs], yerr=[mean[designs] - lo[designs], hi[designs] - mean[designs]], fmt="none",
                    color="black", capsize=4)
        ax.set_xticks(x, designs)
        low = max(0.0, float(lo.min()) - 0.1)
        ax.set_ylim(low, 1.0)
        ax.set_title(f"{LABELS[m]} (bars: lowest to highest run)")
        for xi, d in zip(x, designs):
            ax.text(xi, mean[d] + 0.005, f"{mean[d]:.3f}", ha="center", fontsize=8)
    _save(fig, path)
    return fig


def deltas_chart(deltas: pd.DataFrame, path: Path):
    """Each design minus dense with its 95% paired bootstrap range; dashed line at zero."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=False)
    for ax, m in zip(axes, ("recall_at_5", "mrr_at_10")):
        d = deltas[deltas.metric == m]
        y = np.arange(len(d))
        ax.errorbar(d["delta"], y, xerr=[d["delta"] - d["low"], d["high"] - d["delta"]], fmt="o", capsize=4)
        ax.axvline(0, ls="--", color="gray")
        ax.set_yticks(y, d["design"])
        ax.invert_yaxis()
        ax.set_title(f"{LABELS[m]}: design minus dense (95% range)")
    _save(fig, path)
    return fig


def bench_chart(rows: pd.DataFrame, path: Path):
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.barh(rows["step"], rows["ratio_to_flop_limit"])
    ax.axvline(1.5, ls="--", color="gray")
    ax.set_xlabel("measured time / FLOP-limit time")
    _save(fig, path)
    return fig
