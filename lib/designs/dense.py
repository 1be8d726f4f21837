"""The baseline: embed the question, return the nearest abstracts."""
from __future__ import annotations

import time

from .base import DEPTH, EMBEDDER_SETTINGS, Question, Result


class DenseDesign:
    name = "dense"
    uses_llm = False
    settings = EMBEDDER_SETTINGS

    def __init__(self, searcher, k: int = DEPTH, provenance: dict | None = None):
        self.searcher, self.k, self.provenance = searcher, k, provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "DenseDesign":
        return cls(parts.searcher, k=parts.profile.dense_k, provenance=provenance)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        hits = self.searcher.search(question.text, self.k)
        return Result(question.qid, self.name, run, [h.id for h in hits], 1, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)
