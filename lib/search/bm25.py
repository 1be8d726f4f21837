"""BM25 over title + abstract (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework:
BM25 and Beyond"), with the bm25s library: Lucene's BM25 variant, k1 = 1.5, b = 0.75; tokens are
lowercased runs of 2+ word characters (bm25s' default pattern), English stop words removed
(bm25s' list), Snowball English stemming (PyStemmer). The index is cached on disk keyed by a hash
of its texts and settings, so a rerun builds nothing."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import ROOT
from ..data.papers import paper_text
from ..io import seal, verified
from .dense import Hit

CACHE_DIR = ROOT / "data" / "cache" / "bm25"
SETTINGS = {"method": "lucene", "k1": 1.5, "b": 0.75, "stopwords": "en", "stemmer": "english",
            "token_pattern": r"(?u)\b\w\w+\b"}


def _stemmer():
    import Stemmer

    return Stemmer.Stemmer(SETTINGS["stemmer"])


def tokenize(texts: Sequence[str]):
    import bm25s

    return bm25s.tokenize(list(texts), stopwords=SETTINGS["stopwords"], stemmer=_stemmer(),
                          token_pattern=SETTINGS["token_pattern"], show_progress=False)


class BM25Index:
    """Sparse keyword search over a collection; ``scores`` gives every paper's BM25 score for a query."""

    def __init__(self, ids: Sequence[str], retriever):
        self.ids = list(ids)
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
    def build(cls, papers: Sequence[dict], cache_dir: Path = CACHE_DIR, base_dirs: Sequence[Path] = ()) -> "BM25Index":
        """The index of these papers: read from a cache folder (``base_dirs`` first, read-only, then
        ``cache_dir``) whose content matches the digest recorded when it was written, else built
        and written to ``cache_dir``. A cache whose content does not match is named and not used."""
        import bm25s

        papers = sorted(papers, key=lambda p: p["id"])
        ids, texts = [p["id"] for p in papers], [paper_text(p) for p in papers]
        key = cls.key(ids, texts)
        for folder in [Path(d) / key for d in base_dirs] + [Path(cache_dir) / key]:
            if not (folder / "ids.json").exists():
                continue
            if not verified(folder):
                print(f"{folder}: BM25 cache does not match its recorded digest (changed or damaged); not used")
                continue
            try:
                retriever = bm25s.BM25.load(str(folder))
                if json.loads((folder / "ids.json").read_text()) == ids:
                    return cls(ids, retriever)
            except Exception as exc:  # a corrupt cache is named and rebuilt
                print(f"{folder}: unreadable BM25 cache ({type(exc).__name__}); rebuilding it")
        folder = Path(cache_dir) / key
        retriever = bm25s.BM25(method=SETTINGS["method"], k1=SETTINGS["k1"], b=SETTINGS["b"])
        retriever.index(tokenize(texts), show_progress=False)
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        retriever.save(str(tmp))
        (tmp / "ids.json").write_text(json.dumps(ids))
        seal(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        return cls(ids, retriever)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every paper (in ``self.ids`` order) for the query."""
        tokens = tokenize([query])
        vocab_inv = {v: k for k, v in tokens.vocab.items()}
        words = [vocab_inv[i] for i in tokens.ids[0]]
        return np.asarray(self.retriever.get_scores(words), dtype=np.float32)

    def scores_for(self, query: str, ids: Sequence[str]) -> list[float]:
        s = self.scores(query)
        return [float(s[self.pos[i]]) for i in ids]

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` papers by BM25 score, ties broken by id."""
        s = self.scores(query)
        if self.mask is not None:  # filtered-out papers rank below every allowed one, and are cut
            s = np.where(self.mask, s, -np.inf)
            k = min(k, int(self.mask.sum()))
        order = np.lexsort((np.arange(len(s)), -s))[:k]
        return [Hit(self.ids[i], float(s[i])) for i in order]
