"""BM25 keyword search alone (``lib.search.bm25``: bm25s, Lucene variant, k1 1.5, b 0.75, English
stop words, Snowball stemming; or the engine's full-text search, ``lib.search.milvus_keyword``): the sparse
half of the hybrid pipeline."""
from __future__ import annotations

import time

from .base import DEPTH, Question, Result
from ..search.bm25 import SETTINGS


def bm25_settings(index) -> dict:
    """What a keyword index's scores depend on, for provenance: bm25s's settings in process, the analyzer and
    index in the engine (an index that names none is bm25s's)."""
    return getattr(index, "settings", SETTINGS)


class BM25Design:
    name = "bm25"
    uses_llm = False
    uses_bm25 = True
    settings = ("dense_k",)  # the BM25 settings are the index's (lib.search.bm25.SETTINGS) and go into provenance

    def __init__(self, index, k: int = DEPTH, provenance: dict | None = None):
        self.index, self.k, self.provenance = index, k, provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "BM25Design":
        return cls(parts.bm25, k=parts.profile.dense_k, provenance={**provenance, "bm25": bm25_settings(parts.bm25)})

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        hits = self.index.search(question.text, self.k)
        return Result(question.qid, self.name, run, [h.id for h in hits], 1, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)
