"""The snapshot condition's dense index: every paper of the bundled snapshot embedded once.

Embedding is done in chunks of ``CHUNK`` papers in a fixed order (by id); each chunk is saved as
its own file named by the model and a hash of its texts, so an interrupted run resumes at the next
missing chunk and a changed paper recomputes only its chunk. The assembled matrix is shipped at
float16 (``data/snapshot_embeddings/<model>.f16.npy``) with a provenance file (model, backend, the
ids' and texts' hashes, dtype, date) and checked against the model: a sample of papers is
re-embedded and must match the shipped vectors (cosine >= ``MATCH_COSINE``)."""
from __future__ import annotations

import hashlib
import io
import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np
from ..progress import bar as tqdm  # progress in the terminal, never in a page

from ..config import ROOT
from ..errors import DataError
from ..io import write_bytes, write_json
from .embedder import Embedder, slug
from ..data.papers import paper_text

CHUNK = 1024
SHIPPED_DIR = ROOT / "data" / "snapshot_embeddings"
CHUNK_DIR = ROOT / "data" / "cache" / "snapshot_chunks"
BM25_DIR = ROOT / "data" / "cache" / "snapshot_bm25"  # built on first use (55 MB), never shipped
MATCH_COSINE = 0.999  # float16 storage keeps cosine to the float32 vector above 0.9999


def digest(items: Sequence[str]) -> str:
    h = hashlib.sha256()
    for s in items:
        h.update(s.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def matrix_paths(model: str, directory: Path = SHIPPED_DIR) -> tuple[Path, Path]:
    return directory / f"{slug(model)}.f16.npy", directory / f"{slug(model)}.json"


def embed_chunks(ids: Sequence[str], texts: Sequence[str], embedder: Embedder, chunk_dir: Path = CHUNK_DIR,
                 progress: bool = True) -> np.ndarray:
    """float32 vectors of ``texts`` (in the given order), computed chunk by chunk and resumable."""
    out_dir = Path(chunk_dir) / slug(embedder.name)
    starts = range(0, len(texts), CHUNK)
    bar = tqdm(total=len(texts), desc=f"embedding the snapshot ({embedder.name})", unit="paper", disable=not progress)
    parts = []
    for s in starts:
        chunk = list(texts[s:s + CHUNK])
        path = out_dir / f"{digest([embedder.name, *chunk])[:20]}.npy"
        vecs = None
        if path.exists():
            try:
                vecs = np.load(path)
                if vecs.shape[0] != len(chunk):
                    raise ValueError(f"{vecs.shape[0]} rows for {len(chunk)} texts")
            except (OSError, ValueError) as exc:  # a torn chunk is named and recomputed
                print(f"{path}: unreadable chunk ({exc}); recomputing it")
                vecs = None
        if vecs is None:
            vecs = embedder.encode_raw(chunk)
            buf = io.BytesIO()
            np.save(buf, vecs.astype(np.float32))
            write_bytes(path, buf.getvalue())
        parts.append(vecs.astype(np.float32))
        bar.update(len(chunk))
    bar.close()
    return np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)


def build_matrix(papers: Sequence[dict], embedder: Embedder, directory: Path = SHIPPED_DIR,
                 chunk_dir: Path = CHUNK_DIR, progress: bool = True) -> Path:
    """Embed every paper (by id) and write the float16 matrix and its provenance."""
    rows = sorted(papers, key=lambda p: p["id"])
    ids, texts = [p["id"] for p in rows], [paper_text(p) for p in rows]
    t0 = time.perf_counter()
    vecs = embed_chunks(ids, texts, embedder, chunk_dir, progress)
    matrix, meta = matrix_paths(embedder.name, directory)
    buf = io.BytesIO()
    np.save(buf, vecs.astype(np.float16))
    write_bytes(matrix, buf.getvalue())
    write_json(meta, {"model": embedder.name, "backend": embedder.backend, "papers": len(ids), "dim": int(vecs.shape[1]),
                      "dtype": "float16", "order": "by paper id", "ids_sha256": digest(ids),
                      "texts_sha256": digest(texts), "text": "title + '. ' + abstract (lib.data.papers.paper_text)",
                      "matrix_sha256": hashlib.sha256(matrix.read_bytes()).hexdigest(),
                      "built_at": time.strftime("%Y-%m-%d", time.gmtime()),
                      "embed_seconds_this_build": round(time.perf_counter() - t0, 1)})
    return matrix


def load_matrix(papers: Sequence[dict], model: str, directory: Path = SHIPPED_DIR) -> tuple[list[str], np.ndarray]:
    """The shipped matrix for exactly these papers (ids and texts must match its provenance)."""
    matrix, meta_path = matrix_paths(model, directory)
    if not matrix.exists() or not meta_path.exists():
        raise DataError(f"{matrix}: no snapshot embeddings for {model}; build them with `make snapshot-embeddings`")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    rows = sorted(papers, key=lambda p: p["id"])
    ids = [p["id"] for p in rows]
    if meta["ids_sha256"] != digest(ids) or meta["texts_sha256"] != digest([paper_text(p) for p in rows]):
        raise DataError(f"{meta_path}: the shipped embeddings are of other papers or texts than the snapshot's; "
                        "rebuild them with `make snapshot-embeddings`")
    vecs = np.load(matrix)
    if vecs.shape != (len(ids), meta["dim"]):
        raise DataError(f"{matrix}: shape {vecs.shape}, expected ({len(ids)}, {meta['dim']})")
    return ids, vecs.astype(np.float32)


def check_matrix(papers: Sequence[dict], embedder: Embedder, sample: int = 32, seed: int = 0,
                 directory: Path = SHIPPED_DIR) -> dict:
    """Re-embed a seeded sample of papers and compare with the shipped vectors."""
    ids, vecs = load_matrix(papers, embedder.name, directory)
    by_id = {p["id"]: p for p in papers}
    pick = np.random.default_rng(seed).choice(len(ids), size=min(sample, len(ids)), replace=False)
    fresh = embedder.encode_raw([paper_text(by_id[ids[i]]) for i in pick])
    cos = np.sum(fresh * vecs[pick], axis=1) / np.linalg.norm(vecs[pick], axis=1)
    return {"sample": len(pick), "min_cosine": float(cos.min()), "ok": bool(cos.min() >= MATCH_COSINE)}
