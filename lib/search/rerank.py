"""Cross-encoder scoring of (question, paper) pairs (Nogueira & Cho 2019, "Passage Re-ranking
with BERT") with a score cache keyed by model, length and both texts. The offline profile's
cross-encoder is trained in this project (``lib.search.reranker_training``); it is *not* the
article's MS MARCO reranker, which cannot be installed offline."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from ..config import ROOT
from ..errors import ModelUnavailable
from .embedder import slug

SCORE_CACHE_DIR = ROOT / "data" / "cache" / "rerank"


def load_cross_encoder(name: str, backend: str, max_length: int = 256):
    """The profile's cross-encoder: a hub model (needs network) or the folder trained here."""
    from sentence_transformers import CrossEncoder

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
        import torch

        # the weights are shipped in fp16 (half the size); compute in fp32 on the CPU
        return CrossEncoder(str(path), device="cpu", max_length=max_length, model_kwargs={"dtype": torch.float32})
    raise ModelUnavailable(f"unknown reranker backend {backend!r}")


class CrossEncoderScorer:
    """Scores (question, paper) pairs; cached per model keyed by question and paper text, so a
    rerun costs nothing. Pairs are sorted by length so batches carry little padding."""

    def __init__(self, name: str, backend: str, cache_dir: Path = SCORE_CACHE_DIR, batch_size: int = 16,
                 max_length: int = 256, int8: bool = False):
        self.name, self.backend, self.batch_size, self.max_length = name, backend, batch_size, max_length
        self.int8 = int8
        # scores depend on the model, the truncation length and the quantisation: all in the key
        self.variant = f"len{max_length}" + ("-int8" if int8 else "")
        self.path = Path(cache_dir) / f"{slug(name)}__{self.variant}.jsonl"
        self.cache: dict[str, float] = {}
        self._model = None
        if self.path.exists():
            with open(self.path) as fh:
                for line in fh:
                    try:
                        k, v = json.loads(line)
                    except (json.JSONDecodeError, ValueError):
                        continue
                    self.cache[k] = v

    @property
    def model(self):
        if self._model is None:
            self._model = load_cross_encoder(self.name, self.backend, self.max_length)
            if self.int8:
                import torch

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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as fh:
                for i, s in zip(todo, new):
                    self.cache[keys[i]] = float(s)
                    fh.write(json.dumps([keys[i], float(s)]) + "\n")
        return [self.cache[k] for k in keys]
