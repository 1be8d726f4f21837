"""Speed measurements of the heavy steps, with their ratio to the CPU's FLOP limit.

FLOPs of a BERT-style encoder per sequence of L tokens (multiply-add = 2 FLOPs), per layer:
QKV and output projections 8·L·d², feed-forward 4·L·d·d_ff, attention scores and mixing 4·L²·d.
"""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from ..search.dense import DenseIndex
from ..search import milvus_index as mi
import shutil
from ..search.bm25 import BM25Index
import re
from collections import Counter
from ..search.bm25 import SETTINGS
from ..paths import ROOT
import tempfile


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


def engine_at_scale(ids: Sequence[str], vectors: np.ndarray, queries: np.ndarray, label: str, folder, k: int = 50,
                    index_types: Sequence[str] = ("HNSW",), hnsw_m: int = 32, hnsw_ef_search: int = 64,
                    hnsw_ef_construction: int = 80, ef_sweep: Sequence[int] = (64, 256),
                    log: Callable[[str], None] = print) -> dict:
    """Dense search in Milvus (lib/search/milvus_index.py: Milvus Lite embedded, a collection in ``folder``) over
    these vectors, beside :func:`dense_at_scale`'s backends: build time (insert and index), query latency (``k``
    deep, median and p95, through the client as a design searches) and recall@10 against numpy's exact search, for
    each index type (HNSW with the same settings as faiss's, swept over ``ef_sweep``)."""
    n, d = vectors.shape
    exact = DenseIndex(ids, vectors)
    exact10 = [[h.id for h in exact.search_vector(q, 10)] for q in queries]
    exact = None
    steps: dict[str, dict] = {}
    for index_type in index_types:
        t = time.perf_counter()
        index = mi.build_collection(mi.Connection(str(Path(folder) / f"{label}-{index_type}.db"), timeout_s=600), ids,
                                    vectors, index_type=index_type, m=hnsw_m, ef_construction=hnsw_ef_construction,
                                    ef_search=hnsw_ef_search, progress=n > 100_000)
        index.search_vector(queries[0], k)  # the first search waits for the index
        build_s = time.perf_counter() - t
        found: list[list[str]] = []  # each query's list, kept from the timed searches (each query costs O(rows) here)
        lat = latencies(lambda q: found.append([h.id for h in index.search_vector(q, k)]), queries)
        row = {"rows": n, "dim": d, "k": k, "build_s": build_s, "index_type": index_type, **lat,
               "recall_at_10": recall_at(found, exact10)}
        if index_type == "HNSW":
            row.update(m=hnsw_m, ef_search=hnsw_ef_search, ef_construction=hnsw_ef_construction, sweep={})
            for ef in ef_sweep:
                index.ef_search = ef
                found = []
                swept = latencies(lambda q: found.append([h.id for h in index.search_vector(q, 10)]), queries)
                row["sweep"][str(ef)] = {**swept, "recall_at_10": recall_at(found, exact10)}
        row["summary"] = (f"{n:,} x {d}: build {build_s:.1f} s, query {lat['median_ms']:.1f} ms median / "
                          f"{lat['p95_ms']:.1f} ms p95 (top {k}), recall@10 {row['recall_at_10']:.3f}")
        steps[f"dense_scale_{label}_milvus-{index_type.lower()}"] = row
        log(f"milvus {index_type}: {row['summary']}")
        index = None
    return steps


# ------------------------------------------------------------------ BM25 at scale (`make bench ARGS="--scale ..."`)

def synthetic_chunks(n: int, vocabulary: Sequence[str], weights: Sequence[float], words: int, seed: int,
                     block: int = 100_000):
    """``n`` synthetic chunk texts of ``words`` words each, drawn independently from ``vocabulary`` with
    probabilities proportional to ``weights`` (a real collection's word frequencies: Zipf-shaped), made in
    blocks; yields lists of texts."""
    vocab = np.asarray(vocabulary, dtype=object)
    p = np.asarray(weights, dtype=np.float64)
    p = p / p.sum()
    rng = np.random.default_rng(seed)
    for a in range(0, n, block):
        draws = rng.choice(len(vocab), size=(min(block, n - a), words), p=p)
        yield [" ".join(row) for row in vocab[draws]]


def bm25_at_scale(n: int, vocabulary: Sequence[str], weights: Sequence[float], cache_dir, label: str,
                  words: int = 100, queries: int = 200, query_words: int = 12, k: int = 50,
                  log: Callable[[str], None] = print) -> dict:
    """BM25 (lib.search.bm25, bm25s) over ``n`` synthetic chunks of ``words`` words: the time to build and
    save the index, its size on disk, the resident memory added by reading it back memory-mapped, and query
    latency (``k`` deep, median and p95). Each query is ``query_words`` words taken from one chunk, so
    ``found_at_10`` (the share of queries whose chunk is in the top 10) checks that the index answers."""

    texts: list[str] = [t for part in synthetic_chunks(n, vocabulary, weights, words, seed=0) for t in part]
    papers = [{"id": f"c{i:08d}", "title": "", "abstract": t} for i, t in enumerate(texts)]
    del texts
    rng = np.random.default_rng(1)
    picked = rng.choice(n, size=min(queries, n), replace=False)
    qs = [(papers[i]["id"], " ".join(rng.choice(papers[i]["abstract"].split(), size=query_words, replace=False)))
          for i in picked]
    cache_dir = Path(cache_dir)
    shutil.rmtree(cache_dir, ignore_errors=True)
    t = time.perf_counter()
    BM25Index.build(papers, cache_dir=cache_dir)
    build_s = time.perf_counter() - t
    disk_mb = sum(f.stat().st_size for f in cache_dir.rglob("*") if f.is_file()) / 1e6
    before = rss_mb()
    t = time.perf_counter()
    index = BM25Index.build(papers, cache_dir=cache_dir)  # read back from the cache, memory-mapped
    load_s = time.perf_counter() - t
    del papers
    times, found = [], 0
    for qid, q in qs:
        t = time.perf_counter()
        hits = index.search(q, k)
        times.append(time.perf_counter() - t)
        found += qid in [h.id for h in hits[:10]]
    ms = np.asarray(times) * 1000
    row = {"rows": n, "words_per_chunk": words, "k": k, "build_s": build_s, "load_s": load_s, "disk_mb": disk_mb,
           "rss_added_mb": rss_mb() - before, "median_ms": float(np.median(ms)), "p95_ms": float(np.quantile(ms, 0.95)),
           "queries": len(qs), "found_at_10": found / len(qs)}
    row["summary"] = (f"{n:,} chunks x {words} words: build {build_s:.0f} s, {disk_mb:,.0f} MB on disk, read back "
                      f"memory-mapped in {load_s:.1f} s (+{row['rss_added_mb']:,.0f} MB resident), query "
                      f"{row['median_ms']:.0f} ms median / {row['p95_ms']:.0f} ms p95 (top {k}); "
                      f"{row['found_at_10']:.0%} of {len(qs)} queries find their chunk in the top 10")
    log(f"bm25: {row['summary']}")
    shutil.rmtree(cache_dir, ignore_errors=True)
    return {f"bm25_scale_{label}": row}


def collection_vocabulary(texts: Sequence[str], top: int = 50_000) -> tuple[list[str], list[int]]:
    """The words of these texts (lowercased, split by BM25's token pattern) and their counts, the ``top``
    most frequent, for :func:`synthetic_chunks`."""

    token = re.compile(SETTINGS["token_pattern"])
    counts = Counter(w for t in texts for w in token.findall(t.lower()))
    common = counts.most_common(top)
    return [w for w, _ in common], [c for _, c in common]


# ------------------------------------------------------------------ the local LLM (`make bench`, its --llm part)

def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def prefix_share(calls: Sequence[tuple[Sequence[int], Sequence[int]]]) -> dict:
    """Of the prompt tokens of consecutive calls of one kind (``(prompt tokens, reply tokens)`` in the
    order they were made), the share a prefix cache could skip: each prompt's longest common prefix
    with the previous call's prompt and reply (what llama.cpp holds after it), less the one token
    llama.cpp evaluates again when a whole prompt is cached."""
    total = skip = 0
    held: Sequence[int] = ()
    for prompt, reply in calls:
        total += len(prompt)
        skip += min(common_prefix(held, prompt), max(len(prompt) - 1, 0))
        held = list(prompt) + list(reply)
    return {"calls": len(calls), "prompt_tokens": total, "could_skip": skip,
            "share": skip / total if total else float("nan")}


def call_bound_s(prompt_tokens: int, output_tokens: int, pp_per_s: float, tg_per_s: float) -> float:
    """The llama.cpp bound of one call: its prompt tokens at llama.cpp's prompt speed plus its output
    tokens at its generation speed."""
    return prompt_tokens / pp_per_s + output_tokens / tg_per_s


def llm_call_figures(calls: Sequence[dict], pp_per_s: float, tg_per_s: float) -> dict:
    """Medians over one design's measured calls (each: ``wall_s``, ``prompt_tokens``, ``output_tokens``,
    ``reused``, llama.cpp's ``prompt_eval_s`` and ``gen_s``): seconds per call, the bound (all prompt
    tokens; only the tokens evaluated), the ratio of each call's time to each bound, the share of
    prompt tokens taken from the cache, and the time outside llama.cpp's own evaluation."""
    def med(xs):
        return float(np.median(xs)) if len(xs) else float("nan")

    wall = [c["wall_s"] for c in calls]
    full = [call_bound_s(c["prompt_tokens"], c["output_tokens"], pp_per_s, tg_per_s) for c in calls]
    evaluated = [call_bound_s(c["prompt_tokens"] - c["reused"], c["output_tokens"], pp_per_s, tg_per_s) for c in calls]
    outside = [c["wall_s"] - c.get("prompt_eval_s", 0.0) - c.get("gen_s", 0.0) for c in calls]
    prompt = sum(c["prompt_tokens"] for c in calls)
    return {"n": len(calls), "median_s": med(wall), "p90_s": float(np.quantile(wall, 0.9)) if wall else float("nan"),
            "median_prompt_tokens": med([c["prompt_tokens"] for c in calls]),
            "median_output_tokens": med([c["output_tokens"] for c in calls]),
            "median_bound_s": med(full), "ratio_to_bound": med([w / b for w, b in zip(wall, full)]),
            "median_bound_evaluated_s": med(evaluated),
            "ratio_to_bound_evaluated": med([w / b for w, b in zip(wall, evaluated)]),
            "reused_share": sum(c["reused"] for c in calls) / prompt if prompt else float("nan"),
            "median_outside_llama_s": med(outside)}


# ---- re-rendering the report (scripts/bench_render.py, make bench --report)
GOAL_CPU_S = 120.0  # the re-render's goal: 2 minutes of CPU


def children_cpu() -> float:
    """User + system CPU seconds of every child process this process has waited for so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def fresh_clone(dest: Path, commit: str = "HEAD") -> Path:
    """A clone of the repository at ``commit`` in ``dest`` (its objects shared, its files checked out fresh),
    with the repository's set-up .venv linked in: what a reader has after `git clone` and `make setup`."""
    sha = subprocess.run(["git", "rev-parse", commit], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(ROOT), str(dest)], check=True)
    subprocess.run(["git", "checkout", "--quiet", sha], cwd=dest, check=True)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), naming the machine a measurement came from."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    except OSError:
        return "unknown"


def rerender_in_clone(commit: str = "HEAD", log: Callable[[str], None] = print, base: str | None = None,
                      goal_ratio: float = 0.6, command: Sequence[str] = ("make", "-o", "setup", "report"),
                      rounds: int = 1) -> dict[str, dict]:
    """`make report` twice in a fresh clone of ``commit`` (:func:`fresh_clone`; `-o setup`: the venv is set up
    beforehand and not counted): ``report_rerender`` the first run, cold (the clone as checked out: notebooks
    not yet synced, the project's modules not yet compiled, no cache built on use), ``report_rerender_warm``
    the same command again. Each step says how it was measured and which files the run left different from
    the commit (``changed``: none when a fresh render reproduces every committed file byte for byte).

    With ``base``, a fresh clone of that commit is rendered the same way in the same run, each pass taking the
    two commits in turn (base cold, commit cold, base warm, commit warm), so the machine's state weighs on both
    alike; ``report_rerender_versus`` holds both commits' CPU seconds, their ratio cold and warm, the machine
    and the goal (``goal_ratio``: at most that share of the base's CPU). ``rounds``: the cold pass taken that many
    times, each in new fresh clones of both commits, the versus step holding each round and the medians (the
    CPU time of one render varies by a tenth from one run to the next on a shared machine; the median of
    rounds taken in turn less so); the warm pass runs once, in the last round's clones. ``command``: what is
    measured in each clone (`make report` unless given)."""
    out: dict[str, dict] = {}
    roles = ((("base", base),) if base else ()) + (("commit", commit),)
    cold, warm = "cold: the first make report of a fresh clone", "warm: the same make report run again in that clone"
    with tempfile.TemporaryDirectory(prefix="rerender-") as tmp:

        def run(role: str, clone: Path, sha: str, when: str) -> dict:
            log(f"make report in a fresh clone of {sha} ({when.split(':')[0]})")
            step = measure(list(command), cwd=clone)
            changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", ".", ":!.venv"],
                                     cwd=clone, check=True, capture_output=True, text=True).stdout.splitlines()
            step.update(commit=sha, changed=changed, loadavg=[round(x, 2) for x in os.getloadavg()],
                        how=f"{when} of commit {sha}, its .venv set up beforehand (make setup, not counted); CPU "
                            "time of every process make report started (the kernel, papermill, the render), "
                            "user + system")
            return step

        colds: list[dict[str, dict]] = []
        for n in range(max(1, rounds)):
            clones = {}
            for role, rev in roles:
                clone = fresh_clone(Path(tmp) / f"{role}-{n + 1}", rev)
                clones[role] = (clone, subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, check=True,
                                                      capture_output=True, text=True).stdout.strip())
            colds.append({role: run(role, clone, sha, cold) for role, (clone, sha) in clones.items()})
        warms = {role: run(role, clone, sha, warm) for role, (clone, sha) in clones.items()}
        middle = {role: sorted((c[role] for c in colds), key=lambda st: st["cpu_s"])[(len(colds) - 1) // 2]
                  for role, _ in roles}  # the median round's step (the lower middle of an even count)
        out["report_rerender"], out["report_rerender_warm"] = middle["commit"], warms["commit"]
        if base:
            base_sha, sha, machine = clones["base"][1], clones["commit"][1], cpu_model()
            row = {"base": base_sha, "commit": sha, "machine": machine, "threads": os.cpu_count(),
                   "goal_ratio": goal_ratio, "rounds": len(colds)}
            b_cold = float(statistics.median(c["base"]["cpu_s"] for c in colds))
            c_cold = float(statistics.median(c["commit"]["cpu_s"] for c in colds))
            row["cold"] = {"base_cpu_s": b_cold, "commit_cpu_s": c_cold, "ratio": c_cold / b_cold,
                           "base_wall_s": float(statistics.median(c["base"]["wall_s"] for c in colds)),
                           "commit_wall_s": float(statistics.median(c["commit"]["wall_s"] for c in colds)),
                           "base_changed": sorted({f for c in colds for f in c["base"]["changed"]}),
                           "each_round": [{"base_cpu_s": c["base"]["cpu_s"], "commit_cpu_s": c["commit"]["cpu_s"],
                                           "ratio": c["commit"]["cpu_s"] / c["base"]["cpu_s"]} for c in colds]}
            b, c = warms["base"], warms["commit"]
            row["warm"] = {"base_cpu_s": b["cpu_s"], "commit_cpu_s": c["cpu_s"], "ratio": c["cpu_s"] / b["cpu_s"],
                           "base_wall_s": b["wall_s"], "commit_wall_s": c["wall_s"], "base_changed": b["changed"]}
            worst = max(row["cold"]["ratio"], row["warm"]["ratio"])
            row["within_goal"] = worst <= goal_ratio
            each = [r["ratio"] for r in row["cold"]["each_round"]]
            spread = (f" (the median of {len(each)} rounds taken in turn, each {min(each):.2f}x to {max(each):.2f}x)"
                      if len(each) > 1 else "")
            row["summary"] = (f"{row['cold']['ratio']:.2f}x the CPU of {base_sha} cold ({c_cold:.0f} s against "
                              f"{b_cold:.0f} s){spread}, {row['warm']['ratio']:.2f}x warm "
                              f"({row['warm']['commit_cpu_s']:.0f} s against {row['warm']['base_cpu_s']:.0f} s); "
                              f"{'within' if row['within_goal'] else 'over'} the goal of {goal_ratio:.1f}x; both "
                              f"commits in fresh clones, side by side in one run on {machine}, {os.cpu_count()} threads")
            out["report_rerender_versus"] = row
    return out


def measure(command: list[str], cwd: Path | None = None) -> dict:
    """Run ``command`` to completion and return its CPU seconds (user + system, every process it
    started), wall seconds and a summary in words; a command that fails raises CalledProcessError.
    ``cwd``: the repository unless given."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    subprocess.run(command, cwd=ROOT if cwd is None else cwd, check=True, stdout=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    verdict = "within" if cpu <= GOAL_CPU_S else "over"
    return {"cpu_s": cpu, "wall_s": wall, "threads": os.cpu_count(), "command": " ".join(command),
            "summary": f"{cpu:.0f} s of CPU (user + system, every process it started; {verdict} the 2-minute goal), "
                       f"{wall:.0f} s wall on {os.cpu_count()} threads"}
