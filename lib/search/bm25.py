"""BM25 over title + abstract (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework:
BM25 and Beyond"), with the bm25s library: Lucene's BM25 variant, k1 = 1.5, b = 0.75; tokens are
lowercased runs of 2+ word characters (bm25s' default pattern), English stop words removed
(bm25s' list), Snowball English stemming (PyStemmer). The index is cached on disk keyed by a hash
of its rows' ids and texts and the settings, so a rerun builds nothing.

With chunks (:mod:`lib.search.chunking`) the index holds one row per chunk (its statistics, document
lengths and frequencies, are the chunks'), and answers at document level: a document scores its best
chunk's BM25 score (max), appears once, and ``Hit.best_chunk`` names that chunk. The cache key hashes
every row's text, so a chunked index never reuses an unchunked one's cache (an index of one chunk per
document, each the paper's own text, is the unchunked index and shares its cache)."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import progress
from ..config import ROOT
from ..data.papers import paper_text
from ..io import seal, verified
from .chunking import Chunk, DocRows
from .dense import Hit

CACHE_DIR = ROOT / "data" / "cache" / "bm25"
SETTINGS = {"method": "lucene", "k1": 1.5, "b": 0.75, "stopwords": "en", "stemmer": "english",
            "token_pattern": r"(?u)\b\w\w+\b"}


def _stemmer():
    import Stemmer  # PyStemmer is only needed when a keyword index is built

    return Stemmer.Stemmer(SETTINGS["stemmer"])


def tokenize(texts: Sequence[str], show_progress: bool = False):
    import bm25s  # bm25s is heavy (loads scipy) and only a keyword index needs it

    return bm25s.tokenize(list(texts), stopwords=SETTINGS["stopwords"], stemmer=_stemmer(),
                          token_pattern=SETTINGS["token_pattern"], show_progress=show_progress)


SHOW_PROGRESS_FROM = 20_000  # rows: a build this large takes seconds, and shows its progress in the terminal


class BM25Index:
    """Sparse keyword search over a collection; ``scores`` gives every paper's BM25 score for a query.

    ``ids``: each retriever row's document id, rows in (id, position) order (``build`` sorts them);
    ``positions``: each row's chunk position (None: one row per document)."""

    settings = SETTINGS  # what its scores depend on, for a result's provenance (as the engine's keyword index has)

    def __init__(self, ids: Sequence[str], retriever, positions: Sequence[int] | None = None):
        self.rows = DocRows(ids, positions)
        if not np.array_equal(self.rows.order, np.arange(len(self.rows.order))):
            raise ValueError("BM25Index rows must be in (document id, chunk position) order")
        self.ids = self.rows.ids.tolist()  # the documents, sorted
        self.pos = {d: i for i, d in enumerate(self.ids)}
        self.retriever = retriever
        self.mask = None

    def restrict(self, allowed: set[str] | None) -> "BM25Index":
        """A metadata filter applied inside every search: only these papers can be returned (None: all)."""
        self.mask = None if allowed is None else np.array([d in allowed for d in self.ids])
        return self

    @staticmethod
    def key(ids: Sequence[str], texts: Sequence[str]) -> str:
        h = hashlib.sha256(json.dumps(SETTINGS, sort_keys=True).encode())
        for i, t in zip(ids, texts):
            h.update(f"{i}\x00{t}\x01".encode("utf-8"))
        return h.hexdigest()[:20]

    @classmethod
    def build(cls, papers: Sequence[dict], cache_dir: Path = CACHE_DIR, base_dirs: Sequence[Path] = (),
              chunks: Sequence[Chunk] | None = None) -> "BM25Index":
        """The index of these papers, one row per paper (its ``paper_text``), or with ``chunks`` one
        row per chunk (every paper must have one): read from a cache folder (``base_dirs`` first,
        read-only, then ``cache_dir``) whose content matches the digest recorded when it was written,
        else built and written to ``cache_dir``. A cache whose content does not match is named and not used."""
        import bm25s  # bm25s is heavy (loads scipy) and only a keyword index needs it

        if chunks is None:
            papers = sorted(papers, key=lambda p: p["id"])
            ids, texts, positions = [p["id"] for p in papers], [paper_text(p) for p in papers], None
        else:
            DocRows.of_chunks(chunks, papers)
            chunks = sorted(chunks, key=lambda c: (c.doc_id, c.position))
            ids, texts, positions = [c.doc_id for c in chunks], [c.text for c in chunks], [c.position for c in chunks]
        key = cls.key(ids, texts)
        for folder in [Path(d) / key for d in base_dirs] + [Path(cache_dir) / key]:
            if not (folder / "ids.json").exists():
                continue
            if not verified(folder):
                print(f"{folder}: BM25 cache does not match its recorded digest (changed or damaged); not used")
                continue
            try:
                retriever = bm25s.BM25.load(str(folder), mmap=True)  # memory-mapped: a large index is read on use
                if json.loads((folder / "ids.json").read_text()) == ids:
                    return cls(ids, retriever, positions)
            except Exception as exc:  # a corrupt cache is named and rebuilt
                print(f"{folder}: unreadable BM25 cache ({type(exc).__name__}); rebuilding it")
        folder = Path(cache_dir) / key
        retriever = bm25s.BM25(method=SETTINGS["method"], k1=SETTINGS["k1"], b=SETTINGS["b"])
        with progress.to_terminal() as shown:  # bm25s' own bars, in the terminal (lib/progress.py)
            shown = shown and len(texts) >= SHOW_PROGRESS_FROM
            retriever.index(tokenize(texts, show_progress=shown), show_progress=shown)
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        retriever.save(str(tmp))
        (tmp / "ids.json").write_text(json.dumps(ids))
        seal(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        return cls(ids, retriever, positions)

    def _row_scores(self, query: str) -> np.ndarray:
        tokens = tokenize([query])
        vocab_inv = {v: k for k, v in tokens.vocab.items()}
        words = [vocab_inv[i] for i in tokens.ids[0]]
        return np.asarray(self.retriever.get_scores(words), dtype=np.float32)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every paper (in ``self.ids`` order) for the query: its best chunk's."""
        return self.rows.doc_scores(self._row_scores(query))

    def scores_for(self, query: str, ids: Sequence[str]) -> list[float]:
        s = self.scores(query)
        return [float(s[self.pos[i]]) for i in ids]

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` papers by BM25 score, ties broken by id."""
        rs = self._row_scores(query)
        s = self.rows.doc_scores(rs)
        if self.mask is not None:  # filtered-out papers rank below every allowed one, and are cut
            s = np.where(self.mask, s, -np.inf)
            k = min(k, int(self.mask.sum()))
        order = np.lexsort((np.arange(len(s)), -s))[:k]
        best = self.rows.best_rows(rs, order)
        return [Hit(self.ids[i], float(s[i]), int(self.rows.positions[r])) for i, r in zip(order, best)]
