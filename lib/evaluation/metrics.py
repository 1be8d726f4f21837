"""Scores: recall@5 and MRR@10 per question (one relevant paper each), per-design summaries,
and paired bootstrap ranges of each design minus dense (Efron & Tibshirani 1993; scipy's
``stats.bootstrap`` with paired resampling, percentile method)."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats


def recall_at_k(ranked: Sequence[str], relevant: str, k: int = 5) -> float:
    """1 if the source paper is in the top ``k``, else 0 (one relevant paper per question)."""
    return float(relevant in list(ranked[:k]))


def mrr_at_k(ranked: Sequence[str], relevant: str, k: int = 10) -> float:
    """1 / rank of the source paper if within the top ``k``, else 0."""
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc == relevant:
            return 1.0 / rank
    return 0.0


def rank_of(ranked: Sequence[str], relevant: str) -> int | None:
    try:
        return list(ranked).index(relevant) + 1
    except ValueError:
        return None


def twopart_scores(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    """A question answered by two papers together: per-paper recall@5 averaged (as recall_at_5),
    1 / rank of the second-found paper if both are within 10, else 0 (as mrr_at_10), and whether
    both are in the top 10 (both_found_at_10)."""
    ranks = [rank_of(ranked, p) for p in relevant]
    second = None if None in ranks else max(ranks)
    return {"recall_at_5": sum(r is not None and r <= 5 for r in ranks) / len(ranks),
            "mrr_at_10": 1.0 / second if second is not None and second <= 10 else 0.0,
            "both_found_at_10": float(second is not None and second <= 10), "rank": second}


def scores_of(ranked: Sequence[str], source: str) -> dict:
    """recall@5, MRR@10 and rank of one ranked list; a source given as two ids joined by ";" is a
    two-part question (:func:`twopart_scores`)."""
    if ";" in source:
        return twopart_scores(ranked, source.split(";"))
    return {"recall_at_5": recall_at_k(ranked, source, 5), "mrr_at_10": mrr_at_k(ranked, source, 10),
            "rank": rank_of(ranked, source)}


def per_question(results: Iterable, sources: dict[str, str]) -> pd.DataFrame:
    """One row per (design, run, question) with both scores, the source's rank and usage. A source
    given as two ids joined by ";" is a two-part question (:func:`twopart_scores`)."""
    rows = []
    for r in results:
        if r.qid not in sources:
            continue
        found = scores_of(r.ranked_ids, sources[r.qid])
        rows.append({"design": r.design, "run": r.run, "qid": r.qid, **found, "searches": r.searches,
                     "latency_s": r.latency_s, "llm_calls": r.llm_calls, "tokens_in": r.tokens_in,
                     "tokens_out": r.tokens_out, "cost_usd": r.cost_usd, "stop_reason": r.stop_reason})
    return pd.DataFrame(rows)


def paired_bootstrap(a: np.ndarray, b: np.ndarray, n_resamples: int = 2000, seed: int = 7,
                     confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of a - b over questions and its percentile bootstrap range, resampling questions
    (pairs) with replacement."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired bootstrap needs the same questions on both sides")
    delta = float(np.mean(a - b))
    if np.all(a - b == a[0] - b[0]):  # no spread: the range is the point
        return delta, delta, delta
    res = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True,
                          n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                          random_state=np.random.default_rng(seed), vectorized=True)
    return delta, float(res.confidence_interval.low), float(res.confidence_interval.high)
