"""Reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009).

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
