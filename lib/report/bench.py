"""Speed measurements of the heavy steps, with their ratio to the CPU's FLOP limit.

FLOPs of a BERT-style encoder per sequence of L tokens (multiply-add = 2 FLOPs), per layer:
QKV and output projections 8·L·d², feed-forward 4·L·d·d_ff, attention scores and mixing 4·L²·d.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Sequence

import numpy as np


def encoder_flops(lengths: Sequence[int], d: int, d_ff: int, layers: int) -> float:
    """Forward FLOPs of an encoder over sequences with the given token counts."""
    L = np.asarray(lengths, dtype=np.float64)
    per_layer = 8 * L * d * d + 4 * L * d * d_ff + 4 * L * L * d
    return float(layers * per_layer.sum())


def padded_flops(lengths: Sequence[int], batch_size: int, d: int, d_ff: int, layers: int) -> float:
    """FLOPs actually computed when sequences (in the given order) are padded per batch."""
    out = []
    for b in range(0, len(lengths), batch_size):
        chunk = lengths[b:b + batch_size]
        out.extend([max(chunk)] * len(chunk))
    return encoder_flops(out, d, d_ff, layers)


def timed(fn: Callable[[], object], repeats: int = 3) -> dict:
    """Median and spread of ``repeats`` timings of ``fn``."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": repeats}


def peak_gflops(cores: int = 2, ghz: float | None = None, flops_per_cycle: int = 32) -> float:
    """fp32 FMA peak: cores x GHz x 32 (two AVX2 FMA units, 8 lanes, 2 FLOPs each).

    The clock comes from /proc/cpuinfo when not given."""
    if ghz is None:
        try:
            mhz = [float(line.split(":")[1]) for line in open("/proc/cpuinfo") if line.startswith("cpu MHz")]
            ghz = max(mhz) / 1000 if mhz else 2.5
        except OSError:
            ghz = 2.5
    return cores * ghz * flops_per_cycle


# ------------------------------------------------------------------ dense search at scale (`make bench ARGS="--scale ..."`)

SCALE_BACKENDS = ("numpy", "faiss-flat", "faiss-hnsw")


def unit_vectors(n: int, d: int, seed: int, block: int = 100_000) -> np.ndarray:
    """``n`` float32 vectors drawn uniformly on the unit sphere (normal draws, L2-normalised), made in
    blocks so no float64 copy of the whole matrix is held. No structure: the hardest case for HNSW."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, d), dtype=np.float32)
    for a in range(0, n, block):
        x = rng.standard_normal((min(block, n - a), d), dtype=np.float32)
        out[a:a + len(x)] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def like_vectors(n: int, sample: np.ndarray, seed: int, block: int = 100_000) -> np.ndarray:
    """``n`` float32 unit vectors drawn from the Gaussian with the mean and covariance of ``sample``'s
    rows, then L2-normalised: synthetic vectors spread over directions as real embeddings are (their
    covariance spectrum), without their topic clusters. Made in blocks."""
    sample = np.asarray(sample, dtype=np.float64)
    mean = sample.mean(axis=0)
    lam, vecs = np.linalg.eigh(np.cov(sample - mean, rowvar=False))
    lift = (vecs * np.sqrt(np.clip(lam, 0, None))).T.astype(np.float32)  # z @ lift has the sample's covariance
    rng = np.random.default_rng(seed)
    out = np.empty((n, sample.shape[1]), dtype=np.float32)
    for a in range(0, n, block):
        y = mean.astype(np.float32) + rng.standard_normal((min(block, n - a), sample.shape[1]), dtype=np.float32) @ lift
        out[a:a + len(y)] = y / np.linalg.norm(y, axis=1, keepdims=True)
    return out


def rss_mb() -> float:
    """This process's resident memory now (Linux /proc/self/statm), in MB."""
    import os

    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def latencies(fn: Callable[[np.ndarray], object], queries: np.ndarray) -> dict:
    """Median and 95th percentile of one call of ``fn`` per query, in ms."""
    times = []
    for q in queries:
        t = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - t)
    ms = np.asarray(times) * 1000
    return {"median_ms": float(np.median(ms)), "p95_ms": float(np.quantile(ms, 0.95)), "queries": len(ms)}


def recall_at(found: Sequence[Sequence[str]], exact: Sequence[Sequence[str]], k: int = 10) -> float:
    """Mean share of each exact top ``k`` that the approximate top ``k`` holds (recall@k against exact)."""
    return float(np.mean([len(set(f[:k]) & set(e[:k])) / k for f, e in zip(found, exact)]))


def dense_at_scale(ids: Sequence[str], vectors: np.ndarray, queries: np.ndarray, label: str, k: int = 50,
                   hnsw_m: int = 32, hnsw_ef_search: int = 64, hnsw_ef_construction: int = 80,
                   ef_sweep: Sequence[int] = (32, 64, 128, 256, 512), log: Callable[[str], None] = print) -> dict:
    """Build time, memory and query latency (``k`` deep, median and p95) of each DenseIndex backend over
    these vectors, and HNSW recall@10 against the exact search, at ``hnsw_ef_search`` and each of ``ef_sweep``.
    Memory: the index's own bytes (the float32 rows, for HNSW plus its graph) and the process's resident
    memory it added. One backend is held at a time."""
    from ..search.dense import DenseIndex

    n, d = vectors.shape
    steps: dict[str, dict] = {}
    exact10: list[list[str]] = []
    for backend in SCALE_BACKENDS:
        before = rss_mb()
        t = time.perf_counter()
        index = DenseIndex(ids, vectors, backend=backend, hnsw_m=hnsw_m, hnsw_ef_search=hnsw_ef_search,
                           hnsw_ef_construction=hnsw_ef_construction)
        build_s = time.perf_counter() - t
        index_mb = (index.faiss.memory_bytes() if index.faiss is not None else index.vectors.nbytes) / 1e6
        lat = latencies(lambda q: index.search_vector(q, k), queries)
        row = {"rows": n, "dim": d, "k": k, "build_s": build_s, "index_mb": index_mb,
               "rss_added_mb": rss_mb() - before, **lat}
        top10 = [[h.id for h in index.search_vector(q, 10)] for q in queries]
        if backend == "numpy":
            exact10 = top10
        else:
            row["recall_at_10"] = recall_at(top10, exact10)
        if backend == "faiss-hnsw":
            row.update(m=hnsw_m, ef_search=hnsw_ef_search, ef_construction=hnsw_ef_construction, sweep={})
            for ef in ef_sweep:
                index.faiss.ef_search = ef
                swept = latencies(lambda q: index.search_vector(q, 10), queries)
                row["sweep"][str(ef)] = {**swept, "recall_at_10": recall_at(
                    [[h.id for h in index.search_vector(q, 10)] for q in queries], exact10)}
        row["summary"] = (f"{n:,} x {d}: build {build_s:.1f} s, {index_mb:,.0f} MB, query {lat['median_ms']:.1f} ms "
                          f"median / {lat['p95_ms']:.1f} ms p95 (top {k})"
                          + (f", recall@10 {row['recall_at_10']:.3f}" if "recall_at_10" in row else ""))
        steps[f"dense_scale_{label}_{backend}"] = row
        log(f"{backend}: {row['summary']}")
        index = None  # free it before the next backend is built
    return steps
