"""Dense search: cosine search over the embedded collection, ties broken by paper id.

An index holds one row per document, or one per chunk (:mod:`lib.search.chunking`); either way
every method answers at document level: a document scores its best chunk's score (max), ranks where
its best chunk ranks and appears once in a list, and ``Hit.best_chunk`` names that chunk's position.
The search is exact over numpy by default; ``backend`` "faiss-flat" (exact) or "faiss-hnsw"
(approximate) searches with faiss-cpu instead (:mod:`lib.search.faiss_index`), "auto" searches exactly
with numpy below :data:`EXACT_BELOW` rows and with faiss HNSW from there: `make bench ARGS="--scale
100000,1000000"` measured numpy's exact search at 16 ms a query over 100,000 384-d rows and 155 ms over
1,000,000 on 2 cores (linear in the rows, so past the 50 ms a query held to from about 300,000), faiss's
exact flat index slower than numpy at both sizes for one query at a time, and HNSW near 1 ms."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

from ..data.papers import paper_text
from .chunking import Chunk, DocRows
from .embedder import Embedder
from .faiss_index import FaissIndex

Backend = Literal["numpy", "faiss-flat", "faiss-hnsw", "auto"]
BACKENDS = ("numpy", "faiss-flat", "faiss-hnsw", "auto")
EXACT_BELOW = 300_000  # "auto": rows from which faiss HNSW (approximate) replaces numpy's exact search


@dataclass
class Hit:
    id: str
    score: float
    best_chunk: int = 0  # position of the document's best-scoring chunk (0 for a one-chunk document)


def resolve_backend(backend: str, rows: int) -> str:
    """The backend an index of ``rows`` rows uses ("auto" resolved by size)."""
    if backend not in BACKENDS:
        raise ValueError(f"dense_backend should be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "faiss-hnsw" if rows >= EXACT_BELOW else "numpy"
    return backend


def embedded_rows(papers: Sequence[dict], embedder: Embedder, progress: bool = True,
                  chunks: Sequence[Chunk] | None = None) -> tuple[list[str], np.ndarray, list[int] | None]:
    """The rows a dense index holds: one per paper (its ``paper_text``), or with ``chunks`` one per chunk
    (every paper must have one): their document ids, vectors and chunk positions (None: one row a paper)."""
    if chunks is None:
        texts = [paper_text(p) for p in papers]
        return [p["id"] for p in papers], embedder.embed(texts, desc="embedding collection", progress=progress), None
    DocRows.of_chunks(chunks, papers)
    vecs = embedder.embed([c.text for c in chunks], desc="embedding chunks", progress=progress)
    return [c.doc_id for c in chunks], vecs, [c.position for c in chunks]


class DenseIndex:
    """Cosine search over L2-normalised vectors, ties broken by id (ascending), at document level.

    ``ids``: each row's document id (repeated for a document's chunks); ``positions``: each row's
    chunk position (None: one row per document). ``backend`` and the HNSW settings: see the module
    docstring and :class:`lib.search.faiss_index.FaissIndex`."""

    def __init__(self, ids: Sequence[str], vectors: np.ndarray, allowed: set[str] | None = None,
                 positions: Sequence[int] | None = None, backend: Backend = "numpy", hnsw_m: int = 32,
                 hnsw_ef_search: int = 64, hnsw_ef_construction: int = 80, hnsw_cache_dir=None):
        self.rows = DocRows(ids, positions)
        self.ids = self.rows.ids  # the documents, sorted
        self.vectors = np.asarray(vectors, dtype=np.float32)[self.rows.order]
        self.pos = {str(d): i for i, d in enumerate(self.ids)}
        self.backend = resolve_backend(backend, len(self.vectors))
        self.faiss = None
        if self.backend != "numpy":
            self.faiss = FaissIndex(self.vectors, self.rows, hnsw=self.backend == "faiss-hnsw", m=hnsw_m,
                                    ef_search=hnsw_ef_search, ef_construction=hnsw_ef_construction,
                                    cache_dir=hnsw_cache_dir)
            self.vectors = self.faiss.vectors  # the index's own storage: one copy of the matrix
        self.restrict(allowed)

    def restrict(self, allowed: set[str] | None) -> None:
        """A metadata filter applied inside every search: only these papers can be returned (None: all)."""
        self.mask = None if allowed is None else np.isin(self.ids, sorted(allowed))
        if self.faiss is not None:
            self.faiss.restrict(self.mask)

    @classmethod
    def build(cls, papers: Sequence[dict], embedder: Embedder, progress: bool = True,
              chunks: Sequence[Chunk] | None = None, **options) -> "DenseIndex":
        """The index of these papers (:func:`embedded_rows`); ``options``: the constructor's backend settings."""
        ids, vecs, positions = embedded_rows(papers, embedder, progress, chunks)
        return cls(ids, vecs, positions=positions, **options)

    def _row_scores(self, qvec: np.ndarray) -> np.ndarray:
        return self.vectors @ np.asarray(qvec, dtype=np.float32)

    def scores_for(self, qvec: np.ndarray, ids: Sequence[str]) -> list[float]:
        """Cosine of the query vector with the given papers (each its best chunk's)."""
        q = np.asarray(qvec, dtype=np.float32)
        out = []
        for i in ids:
            d = self.pos[i]
            a, b = self.rows.starts[d], self.rows.ends[d]
            out.append(float(self.vectors[a] @ q) if b - a == 1 else float((self.vectors[a:b] @ q).max()))
        return out

    def search_vector(self, qvec: np.ndarray, k: int) -> list[Hit]:
        if self.faiss is not None:
            docs, scores, rows = self.faiss.search(np.asarray(qvec, dtype=np.float32), k)
            return [Hit(str(self.ids[d]), float(s), int(self.rows.positions[r])) for d, s, r in zip(docs, scores, rows)]
        row_scores = self._row_scores(qvec)
        scores = self.rows.doc_scores(row_scores)
        if self.mask is not None:  # filtered-out papers rank below every allowed one, and are cut
            scores = np.where(self.mask, scores, -np.inf)
            k = min(k, int(self.mask.sum()))
        k = min(k, len(scores))
        if k <= 0:
            return []
        # only the papers scoring at least the k-th best (ties at the cut included) need sorting
        cand = np.arange(len(scores))
        if k < len(scores):
            cand = np.flatnonzero(scores >= np.partition(scores, len(scores) - k)[len(scores) - k])
        # lexsort: last key is primary -> by descending score, then ascending id (ids are sorted already)
        order = cand[np.lexsort((cand, -scores[cand]))][:k]
        best = self.rows.best_rows(row_scores, order)
        return [Hit(str(self.ids[i]), float(scores[i]), int(self.rows.positions[r])) for i, r in zip(order, best)]


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

    def search_mean(self, texts: Sequence[str], k: int) -> list[Hit]:
        """One search with the mean of the texts' vectors (HyDE's query vector, Gao et al. 2022: the
        question's and the hypothetical documents' embeddings averaged; inner product, so the mean's
        length does not change the order)."""
        return self.index.search_vector(self.query_vectors(list(texts)).mean(axis=0), k)
