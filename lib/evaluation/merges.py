"""Other merges of the agent's lists, from the saved queries (docs/merge.md; no model call).

An arm is a merge rule of ``lib.search.fusion`` with its setting (``ARMS``: RRF, the question's list
first, best score, weighted RRF with the question's list weighted 2, 4 or 8). Each saved result's
queries (the question first, then the model's) are searched again with the condition's dense search,
50 deep, keeping each paper's similarity (best score needs it), and merged by every arm; each merged
list is scored as the design's would be. :func:`merge_scores` is pure (the search is given);
:func:`merge_table` compares each arm with dense on the same questions; ``lib.report.queries.condition_merges``
reads one condition's saved runs.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..designs import Result
from ..search.fusion import merge
from .metrics import paired_bootstrap, paired_permutation, scores_of

DEPTH = 50
RRF_K = 60
# (arm, rule, weight of the question's list): the order is the rule's tie order (docs/merge.md)
ARMS = (("rrf", "rrf", 1.0), ("question_first", "question_first", 1.0), ("best_score", "best_score", 1.0),
        ("weighted_rrf_w2", "weighted_rrf", 2.0), ("weighted_rrf_w4", "weighted_rrf", 4.0),
        ("weighted_rrf_w8", "weighted_rrf", 8.0))
ARM_NAMES = tuple(a for a, _, _ in ARMS)
MERGE_DESIGNS = ("agent", "multiquery")
METRICS = ("recall_at_5", "mrr_at_10")

ScoredSearch = Callable[[str], Sequence[tuple[str, float]]]


def scored_search(searcher, texts: Sequence[str], k: int = DEPTH, chunk: int = 512) -> ScoredSearch:
    """The dense search as a function of the text returning (id, similarity) best first, every given
    text embedded in batches first (as ``loss.batched_search``, keeping the scores)."""
    lists: dict[str, list[tuple[str, float]]] = {}
    todo = list(dict.fromkeys(texts))
    for i in range(0, len(todo), chunk):
        part = todo[i:i + chunk]
        for t, v in zip(part, searcher.query_vectors(part)):
            lists[t] = [(h.id, float(h.score)) for h in searcher.index.search_vector(v, k)]
        searcher.forget_queries()

    def search(text: str) -> list[tuple[str, float]]:
        if text not in lists:
            lists[text] = [(h.id, float(h.score)) for h in searcher.search(text, k)]
        return lists[text]

    return search


def merged(queries: Sequence[str], search: ScoredSearch, arm: str, depth: int = DEPTH, k: int = RRF_K) -> list[str]:
    """The lists of ``queries`` (the question first) merged by one arm of ``ARMS``."""
    rule, weight = _arm(arm)
    return merge(rule, [list(search(q)) for q in queries], depth, k, weight)


def _arm(arm: str) -> tuple[str, float]:
    for name, rule, weight in ARMS:
        if name == arm:
            return rule, weight
    raise ValueError(f"unknown merge arm {arm!r}; the arms are {', '.join(ARM_NAMES)}")


def merge_scores(results: Sequence[Result], sources: Mapping[str, str], search: ScoredSearch,
                 arms: Sequence[str] = ARM_NAMES, depth: int = DEPTH, k: int = RRF_K) -> pd.DataFrame:
    """One row per (design, run, question, arm): recall@5, MRR@10 and rank of the merged list, the
    number of lists merged, and whether the merge reproduces the saved list (``as_saved``; the
    design's own rule, RRF, should)."""
    rows = []
    for r in results:
        if r.qid not in sources:
            continue
        for a in arms:
            ids = merged(r.queries, search, a, depth, k)
            rows.append({"design": r.design, "run": r.run, "qid": r.qid, "arm": a, "lists": len(r.queries),
                         **scores_of(ids, sources[r.qid]), "as_saved": ids == list(r.ranked_ids[:depth])})
    return pd.DataFrame(rows)


def merge_table(rows: pd.DataFrame, dense: Mapping[str, Mapping[str, float]], chosen: str | None = None,
                n_resamples: int = 2000, seed: int = 7, n_permutations: int = 10_000) -> pd.DataFrame:
    """Per design, arm and run (and ``mean``: each question's mean over runs, as the scores pair them):
    recall@5 and MRR@10, each minus dense on the same questions with the paired bootstrap range and
    the paired randomization test's p-value (uncorrected), whether the arm is the dev choice.
    ``dense``: qid -> {metric: dense's score}."""
    out = []
    for (design, arm), g in rows.groupby(["design", "arm"], sort=False):
        runs = [(str(run), gr.groupby("qid")[list(METRICS)].mean()) for run, gr in g.groupby("run")]
        runs.append(("mean", g.groupby("qid")[list(METRICS)].mean()))
        for run, per_q in runs:
            qids = [q for q in per_q.index if q in dense]
            row = {"design": design, "merge_rule": arm, "run": run, "questions": len(qids),
                   "chosen_on_dev": arm == chosen}
            for m in METRICS:
                a = per_q.loc[qids, m].to_numpy(dtype=float)
                b = np.array([dense[q][m] for q in qids], dtype=float)
                delta, lo, hi = paired_bootstrap(a, b, n_resamples, seed)
                row.update({m: float(a.mean()), f"{m}_dense": float(b.mean()), f"{m}_delta": delta, f"{m}_low": lo,
                            f"{m}_high": hi, f"{m}_p_value": paired_permutation(a, b, n_permutations, seed)})
            row["as_saved"] = float(g[g.run.astype(str) == run].as_saved.mean()) if run != "mean" else float(
                g.as_saved.mean())
            out.append(row)
    return pd.DataFrame(out)


def merge_findings(table: pd.DataFrame, design: str = "agent", metric: str = "mrr_at_10") -> list[dict]:
    """Per condition, from :func:`merge_table`'s rows over the runs' mean (``run`` "mean"): the
    questions, RRF's difference from dense (with range and p-value), the dev choice's, the best rule
    in that condition, the best of the rules other than RRF that let a new query's papers move above
    the question's (``best_other``), and the rules whose range lies above or below dense (numbers; the
    report words them)."""
    out = []
    if table.empty:
        return out
    rows = table[(table.design == design) & (table.run.astype(str) == "mean")]
    for cond, g in rows.groupby("condition", sort=False):
        g = g.set_index("merge_rule")

        def part(arm):
            r = g.loc[arm]
            return {"arm": arm, "delta": float(r[f"{metric}_delta"]), "low": float(r[f"{metric}_low"]),
                    "high": float(r[f"{metric}_high"]), "p_value": float(r[f"{metric}_p_value"]),
                    "mean": float(r[metric])}

        chosen = [a for a in g.index if bool(g.loc[a, "chosen_on_dev"])]

        def best_of(arms):
            return max(arms, key=lambda a: (round(g.loc[a, metric], 12), -ARM_NAMES.index(a) if a in ARM_NAMES else 0))

        best = best_of(list(g.index))
        moving = [a for a in g.index if a not in ("rrf", "question_first")]  # rules that let new finds move up
        out.append({"condition": cond, "design": design, "metric": metric, "questions": int(g["questions"].iloc[0]),
                    "dense": float(g[f"{metric}_dense"].iloc[0]), "rrf": part("rrf") if "rrf" in g.index else None,
                    "chosen": part(chosen[0]) if chosen else None, "best": part(best),
                    "best_other": part(best_of(moving)) if moving else None,
                    "above_dense": [a for a in g.index if g.loc[a, f"{metric}_low"] > 0],
                    "below_dense": [a for a in g.index if g.loc[a, f"{metric}_high"] < 0]})
    return out
