"""Cross-encoder scoring of (question, paper) pairs (Nogueira & Cho 2019, "Passage Re-ranking
with BERT") with a score cache keyed by model, length and both texts. The offline profile's
cross-encoder is trained in this project (``lib.search.reranker_training``); it is *not* the
article's MS MARCO reranker, which cannot be installed offline."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import ROOT
from ..errors import DataError, ModelUnavailable
from ..io import Appender, locked, read_cache, read_jsonl, repair_torn_tail, seal, verified
from .embedder import slug

SCORE_CACHE_DIR = ROOT / "data" / "cache" / "rerank"


def load_cross_encoder(name: str, backend: str, max_length: int = 256):
    """The profile's cross-encoder: a hub model (needs network) or the folder trained here."""
    from sentence_transformers import CrossEncoder  # heavy (it loads torch): only a model in use needs it

    if backend == "huggingface-hub":
        try:
            return CrossEncoder(name, device="cpu", max_length=max_length)
        except Exception as exc:
            raise ModelUnavailable(f"cannot load {name} from the Hugging Face Hub ({type(exc).__name__}: {exc}). "
                                   "The 'article' profile needs network access.") from exc
    if backend == "trained-in-project":
        path = ROOT / name
        if not (path / "config.json").exists():
            raise ModelUnavailable(f"{name}: the offline reranker is not built; run `make reranker`")
        import torch  # torch is heavy and only the reranker needs it

        # the weights are shipped in fp16 (half the size); compute in fp32 on the CPU
        return CrossEncoder(str(path), device="cpu", max_length=max_length, model_kwargs={"dtype": torch.float32})
    raise ModelUnavailable(f"unknown reranker backend {backend!r}")


class CrossEncoderScorer:
    """Scores (question, paper) pairs; cached per model keyed by question and paper text, so a
    rerun costs nothing. Pairs are sorted by length so batches carry little padding."""

    def __init__(self, name: str, backend: str, cache_dir: Path = SCORE_CACHE_DIR, batch_size: int = 16,
                 max_length: int = 256, int8: bool = False, base_dirs: Sequence[Path] = ()):
        self.name, self.backend, self.batch_size, self.max_length = name, backend, batch_size, max_length
        self.int8 = int8
        # scores depend on the model, the truncation length and the quantisation: all in the key
        self.variant = f"len{max_length}" + ("-int8" if int8 else "")
        self.path = Path(cache_dir) / f"{slug(name)}__{self.variant}.jsonl"
        self.cache: dict[str, float] = {}
        self._model = None
        for path in [Path(d) / self.path.name for d in base_dirs] + [self.path]:  # the base files are read only
            self.cache.update(self._load(path))

    @staticmethod
    def _load(path: Path) -> dict[str, float]:
        """A score file's scores (:func:`lib.io.read_cache`: a damaged one is named, not used)."""
        return read_cache(path, lambda p: {k: float(v) for k, v in read_jsonl(p, torn_tail_ok=True)}, "scores",
                          (DataError, ValueError, TypeError)) or {}

    @property
    def model(self):
        if self._model is None:
            self._model = load_cross_encoder(self.name, self.backend, self.max_length)
            if self.int8:
                import torch  # torch is heavy and only the reranker needs it

                # dynamic int8 quantisation of the linear layers (weights int8, activations quantised per batch)
                torch.ao.quantization.quantize_dynamic(self._model.model, {torch.nn.Linear}, dtype=torch.qint8,
                                                       inplace=True)
        return self._model

    @staticmethod
    def key(question: str, text: str) -> str:
        return hashlib.sha1(f"{question}\x00{text}".encode("utf-8")).hexdigest()

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        scores = self.model.predict([pairs[i] for i in order], batch_size=self.batch_size,
                                    show_progress_bar=False, convert_to_numpy=True, activation_fn=None)
        out = np.empty(len(pairs), dtype=np.float64)
        out[order] = np.asarray(scores, dtype=np.float64).ravel()
        return out

    def score(self, question: str, ids: Sequence[str], texts: Sequence[str]) -> list[float]:
        keys = [self.key(question, t) for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in self.cache]
        if todo:
            new = self.predict([(question, texts[i]) for i in todo])
            with locked(self.path, wait=True):
                if self.path.exists() and not verified(self.path):  # damaged since it was read: start it again
                    self.path.unlink()
                repair_torn_tail(self.path)
                for i, s in zip(todo, new):
                    self.cache[keys[i]] = float(s)
                with Appender(self.path) as out:
                    out.write_all([keys[i], self.cache[keys[i]]] for i in todo)
                seal(self.path)
        return [self.cache[k] for k in keys]


# --------------------------------------------------------------------------- score fusion
SIGNALS = ("cross_encoder", "dense", "bm25")


def zscores(values: Sequence[float]) -> np.ndarray:
    """Scores standardised over one question's candidates (all zero when they are all equal)."""
    x = np.asarray(values, dtype=np.float64)
    sd = x.std()
    return np.zeros_like(x) if sd == 0 else (x - x.mean()) / sd


def fuse_scores(signals: dict[str, Sequence[float]], weights: dict[str, float]) -> np.ndarray:
    """Weighted sum of z-scored signals over the candidates (CombSUM of standardised scores, Fox &
    Shaw 1994; z-normalisation as in Montague & Aslam 2001). A weight of 0 drops a signal, so
    ``{"dense": 1}`` keeps the dense order and ``{"cross_encoder": 1}`` is the plain cross-encoder."""
    unknown = set(weights) - set(SIGNALS)
    if unknown:
        raise ValueError(f"rerank_weights: unknown signal(s) {sorted(unknown)}; known: {SIGNALS}")
    n = len(next(iter(signals.values()))) if signals else 0
    total = np.zeros(n)
    for name, w in weights.items():
        if w:
            total += w * zscores(signals[name])
    return total


class FusedReranker:
    """Reorders dense candidates by :func:`fuse_scores` of the cross-encoder's score, the dense
    cosine and the BM25 score; only the signals with a non-zero weight are computed."""

    def __init__(self, weights: dict[str, float], cross_encoder: "CrossEncoderScorer | None" = None, bm25=None):
        self.weights = {k: float(v) for k, v in weights.items() if v}
        if not self.weights:
            raise ValueError("rerank_weights: at least one signal needs a non-zero weight")
        if "cross_encoder" in self.weights and cross_encoder is None:
            raise ValueError("rerank_weights uses cross_encoder but no cross-encoder was given")
        if "bm25" in self.weights and bm25 is None:
            raise ValueError("rerank_weights uses bm25 but no BM25 index was given")
        self.cross_encoder, self.bm25 = cross_encoder, bm25

    def signals(self, question: str, ids: Sequence[str], dense_scores: Sequence[float],
                texts: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {"dense": list(dense_scores)}
        if "cross_encoder" in self.weights:
            out["cross_encoder"] = self.cross_encoder.score(question, ids, texts)
        if "bm25" in self.weights:
            out["bm25"] = self.bm25.scores_for(question, ids)
        return out

    def scores(self, question: str, ids: Sequence[str], dense_scores: Sequence[float],
               texts: Sequence[str]) -> np.ndarray:
        return fuse_scores(self.signals(question, ids, dense_scores, texts), self.weights)
