"""Fusing and ordering ranked lists: reciprocal rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009)
and ordering candidates by a score; other merges of one question's lists for comparison
(docs/merge.md): best score (CombMAX, Fox & Shaw 1994), the question's list first, weighted RRF.

score(d) = sum over lists of 1 / (k + rank(d)), ranks from 1; k = 60 as in the paper, untuned.
Ties keep the order of first appearance, as the article's fusion does (a stable sort by descending
score over the papers in the order they were first met: the first list, then each later list's
newcomers). No rule on ids: sources are in-window papers with the newest ids, so an id rule would
decide every tie for or against them.
"""
from __future__ import annotations

import math
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


# --------------------------------------------------------------------------- other merges (docs/merge.md)
MERGE_RULES = ("rrf", "question_first", "best_score", "weighted_rrf")


def weighted_rrf(lists: Sequence[Sequence[str]], weights: Sequence[float], k: int = 60) -> list[tuple[str, float]]:
    """RRF with a weight per list: score(d) = sum of weight / (k + rank); ties by first appearance.
    Equal weights rank as :func:`rrf` does."""
    if len(weights) != len(lists):
        raise ValueError(f"weighted_rrf: {len(weights)} weights for {len(lists)} lists")
    scores: dict[str, float] = {}
    for ranked, w in zip(lists, weights):
        for rank, doc in enumerate(ranked, start=1):
            scores[doc] = scores.get(doc, 0.0) + w / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def best_score(lists: Sequence[Sequence[tuple[str, float]]]) -> list[tuple[str, float]]:
    """Each paper's highest score over the lists it is in (CombMAX), best first, ties by first
    appearance. Lists hold (id, score); a score that is missing or not a finite number is refused,
    naming the list and rank."""
    scores: dict[str, float] = {}
    for i, ranked in enumerate(lists, start=1):
        for rank, item in enumerate(ranked, start=1):
            doc, score = item
            if score is None or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise ValueError(f"best_score: list {i}, rank {rank} ({doc}): score {score!r} is not a number")
            scores[doc] = max(scores.get(doc, -math.inf), float(score))
    return sorted(scores.items(), key=lambda item: -item[1])


def question_first(lists: Sequence[Sequence[str]]) -> list[str]:
    """The first (the question's) list as it is, then each later list's new papers in its order."""
    return list(dict.fromkeys(d for ranked in lists for d in ranked))


def merge(rule: str, lists: Sequence[Sequence[tuple[str, float]]], depth: int, k: int = 60,
          weight: float = 1.0) -> list[str]:
    """One question's lists (each (id, score) pairs, best first, the question's list first) merged by
    ``rule`` (one of ``MERGE_RULES``; ``weight``: the question list's weight in weighted_rrf) and cut
    at ``depth``. Only best_score reads the scores."""
    ids = [[d for d, _ in ranked] for ranked in lists]
    if rule == "rrf":
        out = [d for d, _ in rrf(ids, k)]
    elif rule == "weighted_rrf":
        out = [d for d, _ in weighted_rrf(ids, [weight] + [1.0] * (len(ids) - 1), k)]
    elif rule == "best_score":
        out = [d for d, _ in best_score(lists)]
    elif rule == "question_first":
        out = question_first(ids)
    else:
        raise ValueError(f"unknown merge rule {rule!r}; the rules are {', '.join(MERGE_RULES)}")
    return out[:depth]
