"""Dense top ``k`` reordered by a cross-encoder reading question and abstract together (Nogueira &
Cho 2019, "Passage Re-ranking with BERT"), its score fused with the dense and BM25 scores by the
profile's ``rerank_weights`` (chosen on the dev set; ``{cross_encoder: 1}`` is the plain reranker)."""
from __future__ import annotations

import time

from ..search.fusion import order_by_score
from .base import EMBEDDER_SETTINGS, Question, Result


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
        ids = [h.id for h in hits]
        scores = self.reranker.scores(question.text, ids, [h.score for h in hits], [self.texts[i] for i in ids])
        return Result(question.qid, self.name, run, order_by_score(ids, scores), 1, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)
