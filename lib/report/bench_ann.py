"""Recall against speed of dense search, per engine and setting, as ann-benchmarks measures it (Aumüller,
Bernhardsson & Faithfull 2020): every index answers the same queries one at a time; recall@k is the share of
the exact top k it returns; queries per second is one over the mean time of one query. ``make bench
ARGS="--ann real,1000000"`` (scripts/bench.py) runs it over the snapshot's real vectors and over a
real-shaped set grown from them (:func:`grow`), with real questions as the queries.

Growing the set (:func:`grow`): the real rows come first; each synthetic row picks a real parent (uniformly,
seeded) and lies on the unit sphere at exactly its parent's own nearest-neighbour distance (chord, measured
over the real rows), in a direction drawn from the Gaussian with the real rows' covariance and made
orthogonal to the parent. So every synthetic row sits inside its parent's topic cluster, as close to it as
the parent's nearest real paper, and moves along the directions real embeddings vary in.
:func:`distance_table` says how close the synthetic rows' nearest-neighbour distances are to the real ones.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from scipy.stats import ks_2samp

from ..search import milvus_index as mi
from ..search.dense import DenseIndex

QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
RECALL_GOAL = 0.95  # the project's index defaults are the cheapest settings reaching this recall@10
DEPTHS = (10, 50)  # recall@10 (ann-benchmarks' figure) and recall@50 (the designs' dense_k)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """float32 rows scaled to length 1."""
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def exact_neighbours(base: np.ndarray, queries: np.ndarray, k: int, exclude: np.ndarray | None = None,
                     qblock: int = 2048, bblock: int = 65536, log: Callable[[str], None] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The exact top ``k`` rows of ``base`` by inner product for each query (blocked, so neither the score
    matrix nor a float64 copy is held): their indices and scores, best first, ties by lower index.
    ``exclude``: for each query, a base row it may not return (its own row), or -1."""
    nq = len(queries)
    best_i = np.full((nq, k), -1, dtype=np.int64)
    best_s = np.full((nq, k), -np.inf, dtype=np.float32)
    for a in range(0, nq, qblock):
        q = np.ascontiguousarray(queries[a:a + qblock], dtype=np.float32)
        bi, bs = best_i[a:a + len(q)], best_s[a:a + len(q)]
        for b in range(0, len(base), bblock):
            s = q @ np.asarray(base[b:b + bblock], dtype=np.float32).T
            if exclude is not None:
                own = exclude[a:a + len(q)] - b
                hit = (own >= 0) & (own < s.shape[1])
                s[np.flatnonzero(hit), own[hit]] = -np.inf
            kk = min(k, s.shape[1])
            part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
            cand_s = np.concatenate([bs, np.take_along_axis(s, part, 1)], axis=1)
            cand_i = np.concatenate([bi, part + b], axis=1)
            order = np.lexsort((cand_i, -cand_s), axis=1)[:, :k]
            bs[:], bi[:] = np.take_along_axis(cand_s, order, 1), np.take_along_axis(cand_i, order, 1)
        if log:
            log(f"exact neighbours: {min(a + qblock, nq):,} of {nq:,} queries")
    return best_i, best_s


def chord(similarity: np.ndarray) -> np.ndarray:
    """The distance between unit vectors of this inner product, sqrt(2 - 2s)."""
    return np.sqrt(np.clip(2 - 2 * np.asarray(similarity, dtype=np.float64), 0, None))


def covariance_lift(real: np.ndarray) -> np.ndarray:
    """A matrix L with z @ L ~ N(0, cov(real)) for standard normal z (eigen-decomposition of the covariance)."""
    x = np.asarray(real, dtype=np.float64)
    lam, vecs = np.linalg.eigh(np.cov(x - x.mean(axis=0), rowvar=False))
    return (vecs * np.sqrt(np.clip(lam, 0, None))).T.astype(np.float32)


def grow(real: np.ndarray, nn_distance: np.ndarray, n: int, seed: int, out: np.ndarray | None = None,
         block: int = 100_000) -> np.ndarray:
    """``n`` unit rows: the ``real`` rows, then ``n - len(real)`` synthetic ones (module docstring): a parent
    drawn uniformly, a direction z ~ N(0, cov(real)) less its component along the parent, and the point at
    chord distance ``nn_distance[parent]`` from the parent on the great circle towards z. Made in seeded
    blocks into ``out`` (e.g. a memory-mapped file) when given."""
    real = unit_rows(real)
    m, d = real.shape
    if n < m:
        raise ValueError(f"grow: asked for {n:,} rows, fewer than the {m:,} real ones")
    out = np.empty((n, d), dtype=np.float32) if out is None else out
    out[:m] = real
    lift = covariance_lift(real)
    rng = np.random.default_rng(seed)
    dist = np.asarray(nn_distance, dtype=np.float64)
    for a in range(m, n, block):
        b = min(block, n - a)
        parent = rng.integers(m, size=b)
        p = real[parent]
        z = rng.standard_normal((b, d), dtype=np.float32) @ lift
        z -= np.sum(z * p, axis=1, keepdims=True) * p
        z /= np.linalg.norm(z, axis=1, keepdims=True)
        theta = (2 * np.arcsin(np.clip(dist[parent] / 2, 0, 1)))[:, None].astype(np.float32)
        out[a:a + b] = unit_rows(np.cos(theta) * p + np.sin(theta) * z)
    return out


def quantile_row(values: np.ndarray, what: str) -> dict:
    """The quantiles (:data:`QUANTILES`) and mean of a sample of distances."""
    v = np.asarray(values, dtype=np.float64)
    return {"what": what, "n": int(len(v)), "mean": float(v.mean()),
            **{f"q{int(q * 100):02d}": float(np.quantile(v, q)) for q in QUANTILES}}


def distance_table(real_nn: np.ndarray, synthetic_nn: np.ndarray, real_in_grown_nn: np.ndarray, rows: int) -> dict:
    """How close the grown set's nearest-neighbour distances are to the real set's: the quantiles of each
    real row's distance to its nearest other real row, of a sample of synthetic rows' distance to their
    nearest other row of the grown set, and of a sample of real rows' in the grown set, with the
    two-sample Kolmogorov-Smirnov distance of the synthetic sample to the real distribution
    (scipy.stats.ks_2samp)."""
    ks = ks_2samp(synthetic_nn, real_nn)
    return {"rows": rows, "real": quantile_row(real_nn, f"real rows, nearest other real row ({len(real_nn):,})"),
            "synthetic": quantile_row(synthetic_nn, f"synthetic rows, nearest other row of the {rows:,}"),
            "real_in_grown": quantile_row(real_in_grown_nn, f"real rows, nearest other row of the {rows:,}"),
            "ks_synthetic_vs_real": float(ks.statistic), "ks_p": float(ks.pvalue)}


def recall(found: np.ndarray, exact: np.ndarray, k: int) -> float:
    """Mean share of each query's exact top ``k`` (row indices) that its returned top ``k`` holds."""
    return float(np.mean([len(set(f[:k].tolist()) & set(e[:k].tolist())) / k for f, e in zip(found, exact)]))


def measure(search: Callable[[np.ndarray, int], Sequence[int]], queries: np.ndarray, exact: np.ndarray) -> dict:
    """Every query once at each depth of :data:`DEPTHS`, one at a time: recall@k against ``exact`` (row
    indices, best first; for the deeper search its top 10's recall@10 too), the median and 95th-percentile wall
    time of one query (ms) and queries per second (one over the mean time), and the same by this process's CPU
    time (every thread; on a shared machine the steadier figure: a query waiting for a core counts no CPU), per
    depth; the machine's load average before and after."""
    out: dict = {"queries": len(queries), "loadavg": [round(os.getloadavg()[0], 2)]}
    for k in DEPTHS:
        found, times, cpu = [], [], []
        for q in queries:
            c, t = time.process_time(), time.perf_counter()
            rows = search(q, k)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            found.append(np.asarray(rows[:k], dtype=np.int64))
        ms, cpu_ms = np.asarray(times) * 1000, np.asarray(cpu) * 1000
        out[f"k{k}"] = {"recall": recall(found, exact, k), "median_ms": float(np.median(ms)),
                        "p95_ms": float(np.quantile(ms, 0.95)), "qps": float(1000 / ms.mean()),
                        "cpu_median_ms": float(np.median(cpu_ms)), "cpu_qps": float(1000 / max(cpu_ms.mean(), 1e-6))}
        if k > 10:  # the top 10 of a deeper search (a design's dense_k): HNSW searches at least k candidates
            out[f"k{k}"]["recall_at_10"] = recall(found, exact, 10)
    out["loadavg"].append(round(os.getloadavg()[0], 2))
    return out


class Checkpoint:
    """A JSON file of the parts measured so far (each part a key), rewritten after each part, so a long
    sweep resumes at the first part it lacks."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.parts: dict = json.loads(self.path.read_text()) if self.path.exists() else {}

    def __contains__(self, key: str) -> bool:
        return key in self.parts

    def put(self, key: str, value) -> None:
        self.parts[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(self.parts, indent=1))
        tmp.replace(self.path)


def rss_mb() -> float:
    """This process's resident memory now (Linux /proc/self/statm), in MB."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def hnsw(vectors: np.ndarray, m: int, ef_construction: int, path: Path, save_every: int = 200_000,
         log: Callable[[str], None] = print):
    """A faiss HNSW graph (inner product) over ``vectors``, built in batches and written to ``path`` every
    ``save_every`` rows with the seconds spent so far (:func:`build_record`), so an interrupted build resumes
    from the rows already added; read back when whole."""
    import faiss  # faiss is optional (only the faiss backends need it)

    path = Path(path)
    index = faiss.read_index(str(path)) if path.exists() else None
    if index is None:
        index = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
    while index.ntotal < len(vectors):
        a, t = index.ntotal, time.perf_counter()
        index.add(np.ascontiguousarray(vectors[a:a + save_every], dtype=np.float32))
        spent = build_record(path)["build_s"] + time.perf_counter() - t
        path.parent.mkdir(parents=True, exist_ok=True)
        faiss.write_index(index, str(path) + ".tmp")
        os.replace(str(path) + ".tmp", path)
        build_record(path, spent)
        log(f"HNSW m {m}, ef_construction {ef_construction}: {index.ntotal:,} of {len(vectors):,} rows, "
            f"{spent:.0f} s")
    return index


def build_record(path: Path, seconds: float | None = None) -> dict:
    """The seconds spent building the index at ``path`` (``<path>.json``, over every run that added to it);
    with ``seconds``, written there first."""
    side = Path(str(path) + ".json")
    if seconds is not None:
        side.write_text(json.dumps({"build_s": seconds}))
    return json.loads(side.read_text()) if side.exists() else {"build_s": 0.0}


def hnsw_bytes(index) -> int:
    """An HNSW index's memory: its float32 rows and its graph (links, offsets, levels)."""
    h = index.hnsw
    return int(index.ntotal * index.d * 4 + h.neighbors.size() * 4 + h.offsets.size() * 8 + h.levels.size() * 4)


def ivf(vectors: np.ndarray, nlist: int, path: Path, pq: int = 0, seed: int = 0, train_per_list: int = 64,
        add_block: int = 100_000):
    """A faiss IVF index (inner product; Jégou et al. 2011): ``nlist`` k-means lists trained on a seeded sample
    of ``train_per_list`` rows a list; each list holds its rows whole (IVF-flat) or, with ``pq`` sub-vectors,
    as product-quantised codes of ``pq`` bytes (IVF-PQ, 8 bits a sub-vector). Written to ``path`` and read
    back when there, with the seconds its build took (:func:`build_record`)."""
    import faiss  # faiss is optional (only the faiss backends need it)

    path = Path(path)
    if path.exists():
        return faiss.read_index(str(path))
    d, t = vectors.shape[1], time.perf_counter()
    quantizer = faiss.IndexFlatIP(d)
    index = (faiss.IndexIVFPQ(quantizer, d, nlist, pq, 8, faiss.METRIC_INNER_PRODUCT) if pq
             else faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT))
    want = max(nlist * train_per_list, 256 * 40 if pq else 0)  # a PQ sub-vector's 256 centroids want 39 rows each
    sample = np.sort(np.random.default_rng(seed).choice(len(vectors), min(len(vectors), want), replace=False))
    index.train(np.ascontiguousarray(vectors[sample], dtype=np.float32))
    for a in range(0, len(vectors), add_block):
        index.add(np.ascontiguousarray(vectors[a:a + add_block], dtype=np.float32))
    path.parent.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(path) + ".tmp")
    os.replace(str(path) + ".tmp", path)
    build_record(path, time.perf_counter() - t)
    return index


def ivf_bytes(index) -> int:
    """An IVF index's memory: its lists' codes and ids, and the centroids."""
    return int(index.ntotal * (index.code_size + 8) + index.nlist * index.d * 4)


def faiss_search(index, param: str | None = None, value: int | None = None) -> Callable[[np.ndarray, int], np.ndarray]:
    """One query through a faiss index: its top-k row indices; ``param`` (``efSearch`` for HNSW, ``nprobe``
    for IVF) set to ``value`` through faiss's search parameters (HNSW searches at least k candidates)."""
    import faiss  # faiss is optional (only the faiss backends need it)

    params = None
    if param == "efSearch":
        params = faiss.SearchParametersHNSW()
    elif param == "nprobe":
        params = faiss.SearchParametersIVF()
    if params is not None:
        setattr(params, param, value)

    def search(q: np.ndarray, k: int) -> np.ndarray:
        if param == "efSearch":
            params.efSearch = max(value, k)
        _, rows = index.search(np.ascontiguousarray(q.reshape(1, -1), dtype=np.float32), k, params=params)
        return rows[0]
    return search


def cost_ms(p: dict) -> float:
    """A measured setting's cost: its median CPU time of one top-10 query (its wall time where no CPU time was
    measured)."""
    return p["k10"].get("cpu_median_ms", p["k10"]["median_ms"])


def cheapest(points: Sequence[dict], goal: float = RECALL_GOAL) -> dict | None:
    """Of the measured settings (each with its ``k10`` recall and time), the cheapest one query at depth 10
    (:func:`cost_ms`) among those whose recall@10 reaches ``goal``; None when none does."""
    ok = [p for p in points if p["k10"]["recall"] >= goal]
    return min(ok, key=cost_ms) if ok else None


def row_ids(n: int) -> list[str]:
    """Row ``i``'s id, zero-padded so that sorting the ids keeps the rows' order."""
    return [f"{i:08d}" for i in range(n)]


def hit_rows(hits) -> list[int]:
    """The row indices of a list of hits whose ids are :func:`row_ids`."""
    return [int(h.id) for h in hits]


def engine_part(points: list[dict], build_s: float, index_mb: float | None, **settings) -> dict:
    """One engine's figures: how it was built, and a measured point per swept setting."""
    return {"build_s": build_s, "index_mb": index_mb, **settings, "points": points}


def sweep(vectors: np.ndarray, queries: np.ndarray, folder: Path, check: Checkpoint, *,
          hnsw_settings: Sequence[tuple[int, int]] = ((16, 80), (32, 80)),
          ef_sweep: Sequence[int] = (16, 32, 64, 128, 256, 512, 1024), nlist: int = 256,
          nprobe_sweep: Sequence[int] = (1, 2, 4, 8, 16, 32, 64, 128), pq: int = 48, milvus: bool = False,
          milvus_settings: tuple[int, int] = (32, 80), milvus_ef: Sequence[int] = (16, 64, 256),
          milvus_queries: int | None = None, log: Callable[[str], None] = print) -> dict:
    """Every engine over ``vectors`` (unit rows) with ``queries`` (unit rows, not among them), each part kept
    in ``check`` as it is measured (a rerun measures only the parts missing) and its index in ``folder``:
    numpy's exact search (lib.search.dense.DenseIndex, as the study runs it below 300,000 rows), faiss HNSW
    for each ``(m, ef_construction)`` swept over ``ef_search``, faiss IVF-flat and IVF-PQ (``pq`` bytes a
    row) with ``nlist`` lists swept over ``nprobe``, and with ``milvus`` Milvus Lite's HNSW
    (lib.search.milvus_index, through the client as a design searches; over the first ``milvus_queries``
    queries) swept over ``ef``. Returns the parts by name."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    n, d = vectors.shape
    truth = folder / "exact.npy"
    if not truth.exists():
        t = time.perf_counter()
        exact, _ = exact_neighbours(vectors, queries, max(DEPTHS))
        np.save(truth, exact)
        log(f"exact top {max(DEPTHS)} of {len(queries)} queries over {n:,} rows: {time.perf_counter() - t:.0f} s")
    exact = np.load(truth)

    if "numpy" not in check:
        before, t = rss_mb(), time.perf_counter()
        index = DenseIndex(row_ids(n), vectors)
        build_s = time.perf_counter() - t
        point = measure(lambda q, k: hit_rows(index.search_vector(q, k)), queries, exact)
        check.put("numpy", engine_part([{"setting": "exact", **point}], build_s, index.vectors.nbytes / 1e6,
                                       rss_added_mb=rss_mb() - before))
        index = None
        log(f"numpy exact: {point['k10']['median_ms']:.1f} ms, recall@10 {point['k10']['recall']:.3f}")

    for m, efc in hnsw_settings:
        name = f"faiss-hnsw m{m} efc{efc}"
        if name in check:
            continue
        path = folder / f"hnsw-m{m}-efc{efc}.faiss"
        index = hnsw(vectors, m, efc, path, log=log)
        spent = build_record(path)["build_s"]
        points = []
        for ef in ef_sweep:
            points.append({"ef_search": ef, **measure(faiss_search(index, "efSearch", ef), queries, exact)})
            log(f"{name} ef_search {ef}: recall@10 {points[-1]['k10']['recall']:.3f}, "
                f"{points[-1]['k10']['median_ms']:.2f} ms")
        check.put(name, engine_part(points, spent, hnsw_bytes(index) / 1e6, m=m, ef_construction=efc))
        index = None

    for kind, code in (("faiss-ivf-flat", 0), ("faiss-ivf-pq", pq)):
        name = f"{kind} nlist{nlist}" + (f" pq{code}" if code else "")
        if name in check:
            continue
        path = folder / (f"ivf{nlist}" + (f"-pq{code}" if code else "") + ".faiss")
        index = ivf(vectors, nlist, path, pq=code)
        build_s = build_record(path)["build_s"]
        points = []
        for nprobe in nprobe_sweep:
            if nprobe > nlist:
                continue
            points.append({"nprobe": nprobe, **measure(faiss_search(index, "nprobe", nprobe), queries, exact)})
            log(f"{name} nprobe {nprobe}: recall@10 {points[-1]['k10']['recall']:.3f}, "
                f"{points[-1]['k10']['median_ms']:.2f} ms")
        check.put(name, engine_part(points, build_s, ivf_bytes(index) / 1e6, nlist=nlist, pq_bytes=code or None))
        index = None

    if milvus:
        m, efc = milvus_settings
        name = f"milvus-hnsw m{m} efc{efc}"
        if name not in check:
            qs = queries[:milvus_queries] if milvus_queries else queries
            db, t = folder / "milvus.db", time.perf_counter()
            built = build_record(db)["build_s"]  # a collection built by an earlier run is found, not built again
            index = mi.build_collection(mi.Connection(str(db), timeout_s=600), row_ids(n), vectors,
                                        index_type="HNSW", m=m, ef_construction=efc, ef_search=64,
                                        progress=n > 100_000)
            index.search_vector(qs[0], 10)  # the first search waits for the index
            build_s = built or build_record(db, time.perf_counter() - t)["build_s"]
            points = []
            for ef in milvus_ef:
                index.ef_search = ef
                points.append({"ef_search": ef, **measure(lambda q, k: hit_rows(index.search_vector(q, k)), qs,
                                                          exact[:len(qs)])})
                log(f"{name} ef {ef}: recall@10 {points[-1]['k10']['recall']:.3f}, "
                    f"{points[-1]['k10']['median_ms']:.1f} ms")
            check.put(name, engine_part(points, build_s, None, m=m, ef_construction=efc))
            index = None
    return dict(check.parts)



def real_nn_distances(real: np.ndarray, path: Path, log: Callable[[str], None] = print) -> np.ndarray:
    """Each real row's chord distance to its nearest other real row (exact), kept at ``path``."""
    path = Path(path)
    if not path.exists():
        _, sim = exact_neighbours(real, real, 1, exclude=np.arange(len(real)), log=log)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, chord(sim[:, 0]))
    return np.load(path)


def grown_set(real: np.ndarray, nn_distance: np.ndarray, n: int, folder: Path, seed: int = 0) -> np.ndarray:
    """The real-shaped set of ``n`` rows (:func:`grow`), written once to ``folder``/vectors.npy (float32,
    memory-mapped; a file is complete only once its marker is written) and read back memory-mapped."""
    folder = Path(folder)
    path, done = folder / "vectors.npy", folder / "vectors.done"
    key = {"rows": n, "seed": seed, "real_rows": len(real), "method": "grow"}
    if not (done.exists() and json.loads(done.read_text()) == key):
        folder.mkdir(parents=True, exist_ok=True)
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, real.shape[1]))
        grow(real, nn_distance, n, seed, out=out)
        out.flush()
        del out
        done.write_text(json.dumps(key))
    return np.load(path, mmap_mode="r")


def query_distances(vectors: np.ndarray, queries: np.ndarray, exact: np.ndarray, what: str) -> dict:
    """The quantiles of each query's chord distance to its nearest row (``exact``: the rows of each query's exact
    top k, best first)."""
    nearest = np.asarray(vectors[np.sort(exact[:, 0])], dtype=np.float32)[np.argsort(np.argsort(exact[:, 0]))]
    return quantile_row(chord(np.sum(np.asarray(queries, dtype=np.float32) * nearest, axis=1)), what)


def grown_distances(vectors: np.ndarray, real_rows: int, real_nn: np.ndarray, sample: int = 2_000,
                    seed: int = 2, log: Callable[[str], None] | None = None) -> dict:
    """:func:`distance_table` for a grown set whose first ``real_rows`` rows are the real ones: ``sample``
    synthetic rows and ``sample`` real rows (seeded) searched exactly over the whole set."""
    rng = np.random.default_rng(seed)
    synth = np.sort(rng.choice(np.arange(real_rows, len(vectors)), sample, replace=False))
    real = np.sort(rng.choice(real_rows, sample, replace=False))
    rows = np.concatenate([synth, real])
    _, sim = exact_neighbours(vectors, np.asarray(vectors[rows]), 1, exclude=rows, log=log)
    d = chord(sim[:, 0])
    return distance_table(real_nn, d[:sample], d[sample:], len(vectors))


GROW_METHOD = ("the snapshot's real rows, then synthetic rows: each picks a real parent (uniformly, seeded) and lies "
               "on the unit sphere at its parent's own nearest-neighbour distance, in a direction drawn from the "
               "Gaussian with the real rows' covariance made orthogonal to the parent (lib.report.bench_ann.grow)")


def best_points(part: dict) -> dict:
    """An engine's point of highest recall@10 (exact search: its one point)."""
    return max(part["points"], key=lambda p: (p["k10"]["recall"], -cost_ms(p)))


def sweep_summary(row: dict) -> str:
    """One sentence of a sweep: the rows, exact search's time, and per engine the cheapest setting reaching
    the goal (else its best recall), and the HNSW setting chosen."""
    words = []
    for name, part in ordered(row["engines"]):
        p = cheapest(part["points"], row["goal_recall_at_10"]) or best_points(part)
        setting = ", ".join(f"{k} {p[k]}" for k in ("ef_search", "nprobe") if k in p) or "exact"
        words.append(f"{name} ({setting}): recall@10 {p['k10']['recall']:.3f}, {cost_ms(p):.2f} ms CPU")
    c = row.get("chosen_hnsw")
    chosen = (f"; cheapest faiss HNSW with recall@10 >= {row['goal_recall_at_10']}: {c['engine']}, ef_search "
              f"{c['ef_search']}" if c else f"; no faiss HNSW setting reached recall@10 {row['goal_recall_at_10']}")
    return f"{row['rows']:,} x {row['dim']}, {row['queries']} queries: " + "; ".join(words) + chosen


ENGINE_ORDER = ("numpy", "faiss-hnsw", "faiss-ivf-flat", "faiss-ivf-pq", "milvus-hnsw")


def ordered(engines: dict) -> list[tuple[str, dict]]:
    """A sweep's engines in :data:`ENGINE_ORDER` (exact first), settings within an engine by name."""
    def rank(name: str) -> tuple:
        kind = name.split(" ")[0]
        return (ENGINE_ORDER.index(kind) if kind in ENGINE_ORDER else len(ENGINE_ORDER), name)
    return sorted(engines.items(), key=lambda kv: rank(kv[0]))
