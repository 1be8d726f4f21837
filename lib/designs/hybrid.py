"""The production pipeline's first stages: hybrid retrieval (the BM25 and dense lists fused by
reciprocal rank fusion, k = 60; Cormack et al. 2009), and the hybrid list's top ``rerank_k``
reordered by the profile's rerank step (``lib.search.rerank.FusedReranker``)."""
from __future__ import annotations

import time

from ..search.fusion import rrf
from .base import DEPTH, EMBEDDER_SETTINGS, Question, Result
from .rerank import RerankDesign, rerank_scored
from .bm25 import bm25_settings


def hybrid_ids(searcher, bm25, query: str, depth: int, rrf_k: int) -> list[str]:
    """BM25 top ``depth`` and dense top ``depth`` fused by RRF."""
    return [d for d, _ in rrf([[h.id for h in bm25.search(query, depth)],
                               [h.id for h in searcher.search(query, depth)]], rrf_k)]


class HybridDesign:
    name = "hybrid"
    uses_llm = False
    uses_bm25 = True
    settings = EMBEDDER_SETTINGS + ("hybrid_depth", "rrf_k")

    def __init__(self, searcher, bm25, depth: int = 50, rrf_k: int = 60, provenance: dict | None = None):
        self.searcher, self.bm25, self.depth, self.rrf_k = searcher, bm25, depth, rrf_k
        self.provenance = provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "HybridDesign":
        p = parts.profile
        return cls(parts.searcher, parts.bm25, p.hybrid_depth, p.rrf_k, {**provenance, "bm25": bm25_settings(parts.bm25)})

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        ranked = hybrid_ids(self.searcher, self.bm25, question.text, self.depth, self.rrf_k)[:DEPTH]
        return Result(question.qid, self.name, run, ranked, 2, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)


class HybridRerankDesign:
    name = "hybrid_rerank"
    uses_llm = False
    uses_bm25 = True
    settings = HybridDesign.settings + tuple(s for s in RerankDesign.settings if s not in EMBEDDER_SETTINGS)

    def __init__(self, searcher, bm25, reranker, texts: dict[str, str], depth: int = 50, rrf_k: int = 60,
                 k: int = 50, provenance: dict | None = None):
        self.searcher, self.bm25, self.reranker, self.texts = searcher, bm25, reranker, texts
        self.depth, self.rrf_k, self.k, self.provenance = depth, rrf_k, k, provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "HybridRerankDesign":
        p = parts.profile
        return cls(parts.searcher, parts.bm25, parts.reranker(), parts.texts(), p.hybrid_depth, p.rrf_k, p.rerank_k,
                   {**provenance, "bm25": bm25_settings(parts.bm25)})

    def search(self, query: str) -> tuple[list[str], list[float]]:
        """The hybrid top ``k`` for a query, reordered by the rerank step, with the fused scores."""
        ids = hybrid_ids(self.searcher, self.bm25, query, self.depth, self.rrf_k)[: self.k]
        return rerank_scored(self.reranker, query, ids, self.searcher.scores_for(query, ids), self.texts)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        ranked = self.search(question.text)[0]
        return Result(question.qid, self.name, run, ranked, 2, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)
