"""Dense search: exact cosine search over the embedded collection, ties broken by paper id."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..data.papers import paper_text
from .embedder import Embedder


@dataclass
class Hit:
    id: str
    score: float


class DenseIndex:
    """Exact cosine search over L2-normalised vectors, ties broken by id (ascending)."""

    def __init__(self, ids: Sequence[str], vectors: np.ndarray, allowed: set[str] | None = None):
        order = np.argsort(np.asarray(ids))
        self.ids = np.asarray(ids)[order]
        self.vectors = np.asarray(vectors, dtype=np.float32)[order]
        self.pos = {str(d): i for i, d in enumerate(self.ids)}
        self.restrict(allowed)

    def restrict(self, allowed: set[str] | None) -> None:
        """A metadata filter applied inside every search: only these papers can be returned (None: all)."""
        self.mask = None if allowed is None else np.isin(self.ids, sorted(allowed))

    @classmethod
    def build(cls, papers: Sequence[dict], embedder: Embedder, progress: bool = True) -> "DenseIndex":
        texts = [paper_text(p) for p in papers]
        return cls([p["id"] for p in papers], embedder.embed(texts, desc="embedding collection", progress=progress))

    def scores_for(self, qvec: np.ndarray, ids: Sequence[str]) -> list[float]:
        """Cosine of the query vector with the given papers."""
        return [float(self.vectors[self.pos[i]] @ np.asarray(qvec, dtype=np.float32)) for i in ids]

    def search_vector(self, qvec: np.ndarray, k: int) -> list[Hit]:
        scores = self.vectors @ np.asarray(qvec, dtype=np.float32)
        if self.mask is not None:  # filtered-out papers rank below every allowed one, and are cut
            scores = np.where(self.mask, scores, -np.inf)
            k = min(k, int(self.mask.sum()))
        if k <= 0:
            return []
        # only the papers scoring at least the k-th best (ties at the cut included) need sorting
        cand = np.arange(len(scores))
        if k < len(scores):
            cand = np.flatnonzero(scores >= np.partition(scores, len(scores) - k)[len(scores) - k])
        # lexsort: last key is primary -> by descending score, then ascending id (ids are sorted already)
        order = cand[np.lexsort((cand, -scores[cand]))][:k]
        return [Hit(str(self.ids[i]), float(scores[i])) for i in order]


class DenseSearcher:
    """Question text -> ranked hits: the dense design's search, shared by every design.

    Queries are embedded by the model, never read from the embedding cache, so a design's latency
    includes embedding its own queries. Within one question a query is embedded once (a design that
    searches and then scores with the same text pays once); :meth:`forget_queries` drops those vectors,
    and the runner calls it before each design answers, so no design is timed on another's work."""

    def __init__(self, index: DenseIndex, embedder: Embedder):
        self.index, self.embedder = index, embedder
        self._queries: dict[str, np.ndarray] = {}

    def query_vectors(self, queries: Sequence[str]) -> np.ndarray:
        """The queries' vectors; the ones not embedded since :meth:`forget_queries` in one batch,
        longest first (as the embedder batches)."""
        todo = sorted((q for q in dict.fromkeys(queries) if q not in self._queries), key=len, reverse=True)
        if todo:
            self._queries.update(zip(todo, self.embedder.encode_raw(todo)))
        return np.stack([self._queries[q] for q in queries])

    def forget_queries(self) -> None:
        self._queries.clear()

    def search(self, query: str, k: int) -> list[Hit]:
        return self.index.search_vector(self.query_vectors([query])[0], k)

    def scores_for(self, query: str, ids: Sequence[str]) -> list[float]:
        """The dense score (cosine) of the query with the given papers."""
        return self.index.scores_for(self.query_vectors([query])[0], ids)

    def search_many(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.index.search_vector(v, k) for v in self.query_vectors(list(queries))]
