"""Dense top ``k`` reordered by a cross-encoder reading question and abstract together (Nogueira &
Cho 2019, "Passage Re-ranking with BERT"), its score fused with the dense and BM25 scores by the
profile's ``rerank_weights`` (chosen on the dev set; ``{cross_encoder: 1}`` is the plain reranker)."""
from __future__ import annotations

import time

from ..search.fusion import order_by_score
from .base import EMBEDDER_SETTINGS, Question, Result


def rerank_scored(reranker, question: str, ids: list[str], dense_scores: list[float],
                  texts: dict[str, str]) -> tuple[list[str], list[float]]:
    """Candidates reordered by the rerank step, with their fused scores in that order."""
    fused = dict(zip(ids, (float(s) for s in reranker.scores(question, ids, dense_scores, [texts[i] for i in ids]))))
    order = order_by_score(ids, [fused[i] for i in ids])
    return order, [fused[i] for i in order]


def rerank(reranker, question: str, ids: list[str], dense_scores: list[float], texts: dict[str, str]) -> list[str]:
    """Candidates reordered by the rerank step (the one reordering rerank, hybrid_rerank,
    agent_rerank and escalate share)."""
    return rerank_scored(reranker, question, ids, dense_scores, texts)[0]


class RerankDesign:
    name = "rerank"
    uses_llm = False
    settings = EMBEDDER_SETTINGS + ("reranker", "reranker_backend", "reranker_max_length", "reranker_int8", "rerank_k",
                                    "rerank_weights")

    def __init__(self, searcher, reranker, texts: dict[str, str], k: int = 50, provenance: dict | None = None):
        self.searcher, self.reranker, self.texts, self.k = searcher, reranker, texts, k
        self.provenance = provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "RerankDesign":
        return cls(parts.searcher, parts.reranker(), parts.texts(), k=parts.profile.rerank_k, provenance=provenance)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        hits = self.searcher.search(question.text, self.k)
        ranked = rerank(self.reranker, question.text, [h.id for h in hits], [h.score for h in hits], self.texts)
        return Result(question.qid, self.name, run, ranked, 1, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)
