"""The recall-against-speed chart of `make bench ARGS="--ann ..."` (lib/report/bench_ann.py), as ann-benchmarks
draws it: recall@10 on x, queries per second on a log y, a line per engine over its sweep."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from .bench_ann import ordered
from .plots import SMALL, _save


def series(row: dict) -> dict[str, list[tuple[float, float, str]]]:
    """A sweep's chart data: per engine, (recall@10, queries per CPU second, setting) at each setting swept, in
    the order swept (a top-10 search, one query at a time; queries per wall second where no CPU time was
    measured)."""
    out = {}
    for name, part in ordered(row["engines"]):
        out[name] = [(p["k10"]["recall"], p["k10"].get("cpu_qps", p["k10"]["qps"]),
                      next((f"{k} {p[k]}" for k in ("ef_search", "nprobe") if k in p), "exact")) for p in part["points"]]
    return out


ANN_SETS = (("ann_real", "the snapshot's real vectors"), ("ann_1000000", "real-shaped, grown to 1M"))


def chart(steps: dict, path: Path):
    """Recall@10 against queries per CPU second (log scale), a line per engine over its sweep, as ann-benchmarks
    draws it; a panel per set measured (:data:`ANN_SETS`); the goal's recall dashed, the cheapest HNSW setting
    reaching it circled. Returns the figure (saved to ``path``)."""
    sets = [(key, words) for key, words in ANN_SETS if key in steps]
    fig, axes = plt.subplots(1, max(1, len(sets)), figsize=(6.6 * max(1, len(sets)), 6.0), squeeze=False)
    for ax, (key, words) in zip(axes[0], sets):
        row = steps[key]
        c = row.get("chosen_hnsw")
        for name, pts in series(row).items():
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            ax.plot(xs, ys, marker="o" if len(pts) > 1 else "s", ms=4, lw=1.2, label=name)
            if len(pts) > 1 and (not name.startswith("faiss-hnsw") or (c and name == c["engine"])):
                for x, y, s in pts[::2]:  # the setting beside every other point (of one HNSW graph only)
                    ax.annotate(s.split()[-1], (x, y), fontsize=SMALL, xytext=(2, 2), textcoords="offset points")
        if c:
            ax.scatter([c["k10"]["recall"]], [c["k10"].get("cpu_qps", c["k10"]["qps"])], s=160, facecolors="none",
                       edgecolors="black",
                       zorder=3, label=f"cheapest HNSW reaching {row['goal_recall_at_10']}")
        ax.axvline(row["goal_recall_at_10"], color="grey", lw=0.8, ls="--")
        ax.set_yscale("log")
        lowest = min(p[0] for pts in series(row).values() for p in pts)
        ax.set_xlim(max(0.0, np.floor(lowest * 10) / 10 - 0.05), 1.01)
        ax.set_xlabel("recall@10 against exact search", fontsize=SMALL)
        ax.set_ylabel("queries per CPU second, one at a time (log)", fontsize=SMALL)
        ax.set_title(f"{words}: {row['rows']:,} x {row['dim']}, {row['queries']} questions"
                     + (f"\ncircled: {c['engine']}, ef_search {c['ef_search']}" if c else ""), fontsize=10)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=SMALL, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    return _save(fig, path)
