"""Dense top ``k`` reordered by a cross-encoder reading question and abstract together
(Nogueira & Cho 2019, "Passage Re-ranking with BERT")."""
from __future__ import annotations

import time

from ..search.fusion import order_by_score
from .base import EMBEDDER_SETTINGS, Question, Result


class RerankDesign:
    name = "rerank"
    uses_llm = False
    settings = EMBEDDER_SETTINGS + ("reranker", "reranker_backend", "reranker_max_length", "reranker_int8", "rerank_k")

    def __init__(self, searcher, scorer, texts: dict[str, str], k: int = 50, provenance: dict | None = None):
        self.searcher, self.scorer, self.texts, self.k = searcher, scorer, texts, k
        self.provenance = provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "RerankDesign":
        return cls(parts.searcher, parts.scorer(), parts.texts(), k=parts.profile.rerank_k, provenance=provenance)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        ids = [h.id for h in self.searcher.search(question.text, self.k)]
        scores = self.scorer.score(question.text, ids, [self.texts[i] for i in ids])
        return Result(question.qid, self.name, run, order_by_score(ids, scores), 1, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)
