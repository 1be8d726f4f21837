"""Fusing and ordering ranked lists: reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009)
and ordering candidates by a score.

score(d) = sum over lists of 1 / (k + rank(d)), ranks from 1; k = 60 as in the paper, untuned.
Ties are broken by id so fused lists are deterministic.
"""
from __future__ import annotations

from typing import Sequence


def rrf(lists: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Fuse ranked id lists; returns (id, fused score) best first, ties by ascending id."""
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, doc in enumerate(ranked, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def order_by_score(ids: Sequence[str], scores: Sequence[float]) -> list[str]:
    """Ids sorted by score, highest first, ties by ascending id (the one candidate order every
    reordering step uses)."""
    return [i for _, i in sorted(zip(scores, ids), key=lambda t: (-t[0], t[1]))]
