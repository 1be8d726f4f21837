"""Dense search at scale with faiss-cpu (Douze et al. 2024, "The Faiss library"), behind DenseIndex's
``backend`` switch: ``IndexFlatIP`` (exact inner product, so cosine over normalised vectors) or
``IndexHNSWFlat`` (Malkov & Yashunin 2018, hierarchical navigable small-world graphs: approximate;
``m`` links per node, ``ef_construction`` and ``ef_search`` the candidate lists when building and
searching, larger is slower and finds more of the exact neighbours).

At document level like the numpy search: faiss returns the best rows (chunks); a document scores
its best returned row and appears once. The search asks for more rows than documents wanted
(k + 1, or 2k + 1 when documents have several chunks) and doubles the depth until it holds k
documents and the k-th document's score is above the lowest row returned, so no row left out could
tie or beat it (exact for the flat index; the graph search is approximate anyway). Ties are then
broken by document id. Metadata filters are applied during the search by an ``IDSelectorBitmap``
over the allowed documents' rows (faiss skips the others), not by searching deeper and filtering.

An HNSW graph takes long to build (35 minutes for 1M rows on 2 cores, `make bench`), so with a
``cache_dir`` it is written there once (``faiss.write_index``) keyed by a digest of its rows' vectors,
its settings and the faiss version, sealed by a digest of the file, and read back on the next build of
the same index; a file whose bytes do not match its seal is named and rebuilt.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from .chunking import DocRows
from ..progress import bar as tqdm
from ..io import verified
from ..io import seal


class _Storage:
    """A numpy view of a faiss index's own float32 rows that keeps the index alive while it is used."""

    def __init__(self, index, flat, n: int, d: int):
        self.index = index
        self.__array_interface__ = {"shape": (n, d), "typestr": "<f4", "data": (int(flat.get_xb()), True), "version": 3}


class FaissIndex:
    """A faiss index over rows in :class:`DocRows` order, answering with documents."""

    def __init__(self, vectors: np.ndarray, rows: DocRows, hnsw: bool = False, m: int = 32, ef_search: int = 64,
                 ef_construction: int = 80, cache_dir: Path | None = None):
        import faiss  # faiss is optional (only the faiss backends need it)

        for name, value in (("hnsw_m", m), ("hnsw_ef_search", ef_search), ("hnsw_ef_construction", ef_construction)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} should be a positive whole number, got {value!r}")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        n, d = vectors.shape
        self.rows, self.hnsw, self.ef_search = rows, hnsw, ef_search
        self.cache_path = None
        if hnsw:
            self.index = None
            if cache_dir is not None:
                self.cache_path = Path(cache_dir) / f"hnsw-{hnsw_key(vectors, m, ef_construction)}.faiss"
                self.index = _read_cached(self.cache_path, n, d)
            if self.index is None:
                self.index = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
                self.index.hnsw.efConstruction = ef_construction
                _add_with_progress(self.index, vectors)
                if self.cache_path is not None:
                    _write_cached(self.index, self.cache_path)
        else:
            self.index = faiss.IndexFlatIP(d)
            self.index.add(vectors)
        flat = faiss.downcast_index(self.index.storage) if hnsw else self.index
        self.vectors = np.asarray(_Storage(self.index, flat, n, d))  # faiss's copy, read only: one matrix in memory
        self.restrict(None)

    def restrict(self, doc_mask: np.ndarray | None) -> None:
        """Only the rows of these documents (a mask over ``rows.ids``; None: all) can be returned."""
        import faiss  # faiss is optional (only the faiss backends need it)

        self.params = faiss.SearchParametersHNSW() if self.hnsw else faiss.SearchParameters()
        if doc_mask is None:
            self._bitmap = self._selector = None
            self.allowed_docs, self.allowed_rows = len(self.rows.ids), len(self.rows.row_ids)
            return
        row_mask = np.asarray(doc_mask, dtype=bool)[self.rows.row_doc]
        self._bitmap = np.packbits(row_mask, bitorder="little")  # faiss reads bit i of byte i >> 3
        self._selector = faiss.IDSelectorBitmap(len(row_mask), faiss.swig_ptr(self._bitmap))
        self.params.sel = self._selector  # both kept on self: faiss holds only pointers
        self.allowed_docs, self.allowed_rows = int(np.sum(doc_mask)), int(row_mask.sum())

    def memory_bytes(self) -> int:
        """The index's memory: the stored rows, plus for HNSW the graph (links, offsets, levels)."""
        out = self.vectors.nbytes
        if self.hnsw:
            h = self.index.hnsw
            out += h.neighbors.size() * 4 + h.offsets.size() * 8 + h.levels.size() * 4
        return int(out)

    def search(self, qvec: np.ndarray, k: int) -> tuple[list[int], list[float], list[int]]:
        """The top ``k`` documents (indices into ``rows.ids``), their scores and best rows."""
        k = min(k, self.allowed_docs)
        if k <= 0:
            return [], [], []
        q = np.ascontiguousarray(np.asarray(qvec, dtype=np.float32).reshape(1, -1))
        depth = min(self.allowed_rows, k + 1 if self.rows.single else 2 * k + 1)
        while True:
            if self.hnsw:
                self.params.efSearch = max(self.ef_search, depth)
            dist, rows = self.index.search(q, depth, params=self.params)
            keep = rows[0] >= 0
            scores, found = dist[0][keep], rows[0][keep]
            order = np.lexsort((found, -scores))  # by score, then row (a document's first chunk first)
            docs, first = np.unique(self.rows.row_doc[found[order]], return_index=True)
            doc_scores, doc_rows = scores[order][first], found[order][first]
            rank = np.lexsort((docs, -doc_scores))[:k]  # by score, then document id
            exhausted = depth >= self.allowed_rows or len(found) < depth
            if exhausted or (len(rank) == k and doc_scores[rank[-1]] > scores.min()):
                return docs[rank].tolist(), doc_scores[rank].tolist(), doc_rows[rank].tolist()
            depth = min(self.allowed_rows, 2 * depth)


BUILD_BATCH = 16_384  # rows added to an HNSW graph at a time, so its long build shows progress


def _add_with_progress(index, vectors: np.ndarray) -> None:
    """Add the rows to a graph in batches (HNSW inserts incrementally: the same graph as one add, up to
    faiss's own thread order), with a progress bar when there is more than one batch."""
    n = len(vectors)
    with tqdm(total=n, desc="HNSW graph", unit="rows", disable=n <= BUILD_BATCH) as bar:
        for start in range(0, n, BUILD_BATCH):
            index.add(vectors[start:start + BUILD_BATCH])
            bar.update(min(BUILD_BATCH, n - start))


def hnsw_key(vectors: np.ndarray, m: int, ef_construction: int) -> str:
    """What an HNSW graph is built from: the rows' vectors (in order), its settings, the faiss version."""
    import faiss  # faiss is optional (only the faiss backends need it)

    h = hashlib.sha256(f"{vectors.shape}|m={m}|efc={ef_construction}|faiss={faiss.__version__}".encode())
    h.update(np.ascontiguousarray(vectors, dtype=np.float32).data)
    return h.hexdigest()[:20]


def _read_cached(path: Path, n: int, d: int):
    """The cached graph at ``path``, or None (none there, or its bytes do not match their seal: named)."""
    import faiss  # faiss is optional (only the faiss backends need it)


    if not path.exists():
        return None
    if not verified(path):
        print(f"{path}: HNSW cache does not match its recorded digest (changed or damaged); rebuilding it")
        return None
    index = faiss.read_index(str(path))
    if index.ntotal != n or index.d != d:
        print(f"{path}: HNSW cache holds {index.ntotal} x {index.d}, not {n} x {d}; rebuilding it")
        return None
    return index


def _write_cached(index, path: Path) -> None:
    """Write the graph beside its seal, atomically (a killed write leaves no file that looks complete)."""
    import faiss  # faiss is optional (only the faiss backends need it)


    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(tmp))
    tmp.replace(path)
    seal(path)
