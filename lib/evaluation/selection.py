"""Choosing a setting on the dev set: score every candidate setting on the same saved signals and
keep the best by a named metric (never on the questions the report scores)."""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from ..designs import Question
from ..search.fusion import order_by_score
from .metrics import mrr_at_k, recall_at_k


def score_variant(questions: Sequence[Question], candidates: dict[str, list[str]],
                  rescore: Callable[[Question], np.ndarray]) -> pd.DataFrame:
    """Per question: recall@5 and MRR@10 of the candidates reordered by ``rescore(question)``."""
    rows = []
    for q in questions:
        ranked = order_by_score(candidates[q.qid], rescore(q))
        rows.append({"qid": q.qid, "style": q.style, "recall_at_5": recall_at_k(ranked, q.source_id, 5),
                     "mrr_at_10": mrr_at_k(ranked, q.source_id, 10)})
    return pd.DataFrame(rows)


def compare(variants: Iterable[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """One row per variant: both metrics overall and per style, and the number of questions."""
    rows = []
    for name, pq in variants:
        row = {"variant": name, "questions": len(pq), "recall_at_5": pq.recall_at_5.mean(),
               "mrr_at_10": pq.mrr_at_10.mean()}
        for style, g in pq.groupby("style"):
            row[f"mrr_at_10 {style}"] = g.mrr_at_10.mean()
            row[f"recall_at_5 {style}"] = g.recall_at_5.mean()
        rows.append(row)
    return pd.DataFrame(rows)


def best(table: pd.DataFrame, metric: str = "mrr_at_10", floor: tuple[str, float] | None = None) -> pd.Series:
    """The variant with the highest ``metric`` (the first listed on a tie, so list simpler variants
    first); with ``floor=(metric2, value)`` only variants at or above it on ``metric2`` qualify."""
    pool = table if floor is None else table[table[floor[0]] >= floor[1]]
    return pool.loc[pool[metric].idxmax()]
