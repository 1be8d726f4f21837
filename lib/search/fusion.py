"""Fusing and ordering ranked lists: reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009)
and ordering candidates by a score.

score(d) = sum over lists of 1 / (k + rank(d)), ranks from 1; k = 60 as in the paper, untuned.
Ties keep the order of first appearance, as the article's fusion does (a stable sort by descending
score over the papers in the order they were first met: the first list, then each later list's
newcomers). No rule on ids: sources are in-window papers with the newest ids, so an id rule would
decide every tie for or against them.
"""
from __future__ import annotations

from typing import Sequence

# which tie rule the fused designs' results were computed with (it enters their inputs key)
RRF_TIES = "first-appearance"


def rrf(lists: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Fuse ranked id lists; returns (id, fused score) best first, ties in order of first appearance."""
    scores: dict[str, float] = {}  # dicts keep insertion order: the order of first appearance
    for ranked in lists:
        for rank, doc in enumerate(ranked, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])  # sorted() is stable


def order_by_score(ids: Sequence[str], scores: Sequence[float]) -> list[str]:
    """Ids sorted by score, highest first; ties keep the incoming (candidate) order (the one
    candidate order every reordering step uses)."""
    return [ids[i] for i in sorted(range(len(ids)), key=lambda i: -scores[i])]
