"""`make bench`: speed of every heavy step on the default collection and questions.

Prints the figures and writes them to build/bench.json (git-ignored); only with --save (`make bench
ARGS=--save` or `make bench SAVE=1`) does it write the committed results/bench.json, the figures the
report's speed table shows. Each figure is a median over repeated runs with its spread; variants
compared with each other are measured in the same run. Usage: python scripts/bench.py [--save] [--report]
(--report also times `make report` re-rendering from saved results, twice: cold and warm;
--search-only, --snapshot-only, --llm-only and --report-only time one part again and keep the rest, taken
from the file it writes to when that exists, else from results/bench.json).

The local model (--llm, part of the full run when `make local-llm` installed it): llama.cpp's own prompt
and generation speed, and each LLM design's last BENCH_LLM_CALLS (default 8) recorded requests through the
project's call path with prefix reuse and without, their ratio to the llama.cpp bound, and whether each
reply is the recorded one (llm_bench). The machine's load average is written beside each figure.
--agent-run (or --agent-run-only; about 15 minutes) runs the agent over the 297 test questions live, with a
record store of its own, and compares its time and scores with the saved runs (llm_agent_run).
--llm-server (or --llm-server-only) also measures the shipped model served by llama-cpp-python's
OpenAI-compatible server on loopback (scripts/bench_served.py): each constraint route's time a call beside the
local fast path over BENCH_SERVED_CALLS (4) agent decisions, and calls per second at 1, 4 and 8 in flight.

Dense search at scale runs only when asked, and alone (the rest kept as with --*-only):
``--scale 100000,1000000`` times numpy exact, faiss-flat and faiss-hnsw over that many synthetic 384-d
unit vectors (uniform on the sphere, seeded; 200 queries drawn the same way): build time, memory, query
latency (median, p95) and HNSW recall@10 against exact; ``snapshot`` in the list does the same over the
shipped snapshot's real vectors, 200 of its papers held out as the queries. ``--vectors spectrum`` draws the
synthetic vectors instead from a Gaussian with the snapshot embeddings' mean and covariance (normalised):
uniform vectors have no structure and are HNSW's hardest case, real embeddings are far easier.
With each synthetic size it also times BM25 (lib.search.bm25) over that many synthetic chunks of 100
words drawn from the snapshot abstracts' word frequencies: build, size on disk, memory added when read
back memory-mapped, query latency, and whether a query made of one chunk's words finds it.
``make bench ARGS="--scale 100000"``; ``--no-bm25`` leaves BM25 out. Each part's figures are also written as
they come to build/bench-scale-partial.json.

Dense search in a search engine (``retriever: milvus``, docs/engine.md), when asked: ``--engine`` alone compares
Milvus (Milvus Lite embedded, an exact collection) with the in-process exact search on the bundled example's and
the 2,000-paper study's real questions (recall of the exact top 10, identical lists, latency: engine_agreement);
with ``--scale`` it also builds a Milvus HNSW collection over the same synthetic vectors beside faiss's
(``make bench ARGS="--scale 1000000 --engine"``: build, latency and recall@10 against exact, both in one run).

Recall against speed, when asked and alone: ``--ann real,1000000`` sweeps every engine's settings (numpy exact,
faiss HNSW over ef_search, faiss IVF-flat and IVF-PQ over nprobe, Milvus Lite's HNSW over ef) over the snapshot's
real vectors (``real``) and over a real-shaped set of that size grown from them (lib/report/bench_ann.py), with the
study's questions as queries: recall@10 and @50 against exact search, query time, build time, memory
(``ann_real``, ``ann_1000000``). Each part is kept in build/bench-ann/ as it is measured, so a long run resumes;
Milvus at 1M only with ``--ann-milvus``. With --save it also draws figures/bench_ann.png and writes docs/engine.md's
tables from the figures; the defaults in lib/config.py are the cheapest HNSW setting with recall@10 >= 0.95 at 1M.
"""
import importlib.util
import json
import multiprocessing
import os
import platform
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# OpenMP threads sleep rather than spin between computations (lib.llm.local_backend.passive_omp_threads): read
# once by the first OpenMP runtime loaded (torch's, which llama.cpp then shares), so set before any import
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import ROOT  # noqa: E402

COMMITTED = ROOT / "results" / "bench.json"  # the shipped figures: written only with --save
SCRATCH = ROOT / "build" / "bench.json"  # this machine's figures otherwise (git-ignored)


def output_path(argv: list[str]) -> Path:
    """Where this run's figures are written: the committed results/bench.json only when asked
    (``--save``), else build/bench.json."""
    return COMMITTED if "--save" in argv else SCRATCH


def kept_from(argv: list[str]) -> Path:
    """The figures a --*-only run keeps: those of the file it writes to when it exists, else the committed ones."""
    out = output_path(argv)
    return out if out.exists() else COMMITTED


def scale_sizes(argv: list[str]) -> list[str]:
    """The corpus sizes of ``--scale N,M`` (or ``--scale=N,M``): whole numbers, or ``snapshot``; [] when not asked."""
    for i, a in enumerate(argv):
        if a == "--scale" or a.startswith("--scale="):
            value = a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
            sizes = [v.strip().replace("_", "") for v in value.split(",") if v.strip()]
            bad = [v for v in sizes if not (v.isdigit() and int(v) > 0) and v != "snapshot"]
            if not sizes or bad:
                raise SystemExit(f"--scale takes corpus sizes separated by commas (or 'snapshot'), got {value!r}")
            return sizes
    return []


def vector_kind(argv: list[str]) -> str:
    """``--vectors uniform`` (the default) or ``--vectors spectrum``: how the --scale vectors are drawn."""
    for i, a in enumerate(argv):
        if a == "--vectors" or a.startswith("--vectors="):
            kind = a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
            if kind not in ("uniform", "spectrum"):
                raise SystemExit(f"--vectors takes uniform or spectrum, got {kind!r}")
            return kind
    return "uniform"


def snapshot_vectors():
    """The shipped snapshot's paper ids and real vectors (float32, normalised)."""
    import numpy as np

    from lib import pipeline
    from lib.config import load_profile
    from lib.search.snapshot import load_matrix

    scfg = load_profile("offline", collection_scope="snapshot")
    ids, vecs = load_matrix(pipeline.search_papers(scfg), scfg.embedder)
    vecs = np.asarray(vecs, dtype=np.float32)
    return list(ids), vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


PARTIAL = ROOT / "build" / "bench-scale-partial.json"  # the --scale steps measured so far (a long run's checkpoint)


def dense_scale(sizes: list[str], threads: int, kind: str = "uniform", engine: bool = False,
                bm25: bool = True) -> dict:
    """The ``--scale`` figures (lib/report/bench.py dense_at_scale), one size after another; with ``engine``
    (``--engine``) Milvus's too (engine_at_scale); without ``bm25`` (``--no-bm25``) no BM25 at scale. Each
    part's figures are written to build/bench-scale-partial.json as they come (a 1M run takes hours)."""
    import tempfile

    import faiss
    import numpy as np

    from lib.report.bench import bm25_at_scale, dense_at_scale, engine_at_scale, like_vectors, unit_vectors

    faiss.omp_set_num_threads(threads)
    steps: dict = {}

    def keep(new: dict) -> None:
        steps.update(new)
        PARTIAL.parent.mkdir(parents=True, exist_ok=True)
        PARTIAL.write_text(json.dumps(steps, indent=1))
    real = snapshot_vectors() if "snapshot" in sizes or kind == "spectrum" else None
    vocabulary = snapshot_vocabulary() if bm25 and any(s != "snapshot" for s in sizes) else None  # once, for every size
    for size in sizes:
        label = size
        if size == "snapshot":
            ids, vecs = real
            held = np.zeros(len(ids), dtype=bool)
            held[np.random.default_rng(0).choice(len(ids), 200, replace=False)] = True
            queries, ids, vecs = vecs[held], [i for i, h in zip(ids, held) if not h], vecs[~held]
        elif kind == "spectrum":
            n, label = int(size), f"{size}_spectrum"
            vecs, queries = like_vectors(n, real[1], seed=0), like_vectors(200, real[1], seed=1)
            ids = [f"v{i:08d}" for i in range(n)]
        else:
            n = int(size)
            vecs, queries = unit_vectors(n, 384, seed=0), unit_vectors(200, 384, seed=1)
            ids = [f"v{i:08d}" for i in range(n)]
        print(f"dense search over {len(ids):,} vectors ({label})", flush=True)
        if engine:  # Milvus beside faiss, over the same vectors and queries
            with tempfile.TemporaryDirectory(dir=ROOT / "build") as folder:
                keep(engine_at_scale(ids, vecs, queries, label, folder, log=lambda m: print("  " + m, flush=True)))
        keep(dense_at_scale(ids, vecs, queries, label=label, log=lambda m: print("  " + m, flush=True)))
        del vecs
        if size != "snapshot" and bm25:
            print(f"BM25 over {int(size):,} synthetic chunks", flush=True)
            keep(bm25_at_scale(int(size), *vocabulary, ROOT / "build" / "bench-bm25-scale", label=size,
                               log=lambda m: print("  " + m, flush=True)))
    return steps


def engine_agreement(profiles: tuple[str, ...] = ("dev", "offline"), k: int = 50) -> dict:
    """``--engine``: dense search in Milvus (Milvus Lite embedded, the study's own exact collection) against the
    in-process exact search on real collections and questions: the bundled example's (the dev profile's 2,000
    papers, exported as examples/beir-dev) and the 2,000-paper study's. Per profile: recall of the exact top 10,
    the questions whose top ``k`` lists are identical, build time and query latency of both (median, p95)."""
    import tempfile
    import time

    from lib import pipeline
    from lib.config import load_profile
    from lib.report.bench import latencies, recall_at
    from lib.search import milvus_index as mi
    from lib.search.dense import DenseIndex, embedded_rows

    steps = {}
    for name in profiles:
        cfg = load_profile(name)
        papers = pipeline.collection(cfg)
        emb = pipeline.embedder(cfg)
        qs = pipeline.question_set(cfg, papers)
        ids, vecs, positions = embedded_rows(papers, emb, progress=False)
        queries = emb.encode_raw([q.text for q in qs])
        exact = DenseIndex(ids, vecs)
        with tempfile.TemporaryDirectory(dir=ROOT / "build") as folder:
            t = time.perf_counter()
            engine = mi.build_collection(mi.Connection(str(Path(folder) / "milvus.db")), ids, vecs, positions,
                                         progress=False)
            build_s = time.perf_counter() - t
            a = [[h.id for h in exact.search_vector(q, k)] for q in queries]
            b = [[h.id for h in engine.search_vector(q, k)] for q in queries]
            row = {"papers": len(ids), "questions": len(qs), "k": k, "recall_at_10_of_exact": recall_at(b, a),
                   "identical_lists": sum(x == y for x, y in zip(a, b)), "build_s": build_s,
                   "engine": latencies(lambda q: engine.search_vector(q, k), queries),
                   "exact": latencies(lambda q: exact.search_vector(q, k), queries)}
            engine = None
        row["summary"] = (f"{name}: {len(ids):,} papers, {len(qs)} questions: recall of the exact top 10 "
                          f"{row['recall_at_10_of_exact']:.3f}, {row['identical_lists']} of {len(qs)} top-{k} lists "
                          f"identical; query {row['engine']['median_ms']:.1f} ms median in Milvus Lite, "
                          f"{row['exact']['median_ms']:.1f} ms in process")
        print(row["summary"], flush=True)
        steps[f"engine_agreement_{name}"] = row
    return steps


ANN = ROOT / "build" / "bench-ann"  # the --ann sweep's vectors, exact neighbours, indexes and parts (it resumes)
ANN_HNSW = ((16, 80), (32, 80), (16, 200), (32, 200))  # the faiss HNSW graphs swept: (m, ef_construction)


def ann_sizes(argv: list[str]) -> list[str]:
    """The sets of ``--ann real,1000000`` (or ``--ann=...``): ``real`` (the snapshot's own vectors) and sizes of
    real-shaped sets grown from them; [] when not asked."""
    for i, a in enumerate(argv):
        if a == "--ann" or a.startswith("--ann="):
            value = a.split("=", 1)[1] if "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
            sizes = [v.strip().replace("_", "") for v in value.split(",") if v.strip()]
            if not sizes or any(v != "real" and not (v.isdigit() and int(v) > 0) for v in sizes):
                raise SystemExit(f"--ann takes 'real' and set sizes separated by commas, got {value!r}")
            return sizes
    return []


def ann_queries():
    """The --ann queries: the study's scored questions, full and short forms, embedded by the snapshot's model
    (from the shipped embedding cache; what it lacks is embedded and kept in build/, not in the shipped cache)."""
    from lib import pipeline
    from lib.config import load_profile
    from lib.search.embedder import CACHE_DIR, Embedder

    texts = []
    for form in ("full", "short"):
        texts += [q.text for q in pipeline.question_set(load_profile("offline", question_form=form))]
    cfg = load_profile("offline")
    emb = Embedder(cfg.embedder, cfg.embedder_backend, cache_dir=ANN / "embeddings", base_dirs=(CACHE_DIR,))
    return emb.embed(texts, desc="embedding the questions"), (
        f"the study's {len(texts) // 2} scored questions (data/questions.csv), full and short forms, "
        f"embedded by {cfg.embedder}")


def ann_bench(sizes: list[str], threads: int, milvus_at_scale: bool = False, log=print) -> dict:
    """``--ann``: recall against speed per engine and setting (lib/report/bench_ann.py) over the snapshot's
    real vectors (``real``) and over real-shaped sets of each size grown from them, with the study's questions
    as queries; Milvus Lite's HNSW over the real set always, over a grown set with ``--ann-milvus`` (about
    half an hour to build at 1M here). Each part is kept in build/bench-ann/ as it is measured."""
    import faiss
    import numpy as np

    from lib.report import bench_ann as ba

    faiss.omp_set_num_threads(threads)
    _, real = snapshot_vectors()
    queries, queries_from = ann_queries()
    steps = {}
    for size in sizes:
        if size == "real":
            folder, vectors, grown = ANN / "real", real, None
            nlist, milvus = 256, True
        else:
            n = int(size)
            folder = ANN / f"grown-{n}"
            real_nn = ba.real_nn_distances(real, ANN / "real-nn.npy", log=log)
            vectors = ba.grown_set(real, real_nn, n, folder, seed=0)
            check = ba.Checkpoint(folder / "parts.json")
            if "distances" not in check:
                check.put("distances", ba.grown_distances(vectors, len(real), real_nn, log=log))
            grown = check.parts["distances"]
            nlist, milvus = 1024 if n >= 500_000 else 256, milvus_at_scale
        log(f"recall against speed over {len(vectors):,} rows ({size}), {len(queries)} queries")
        check = ba.Checkpoint(folder / "parts.json")
        parts = ba.sweep(vectors, queries, folder, check, hnsw_settings=ANN_HNSW, nlist=nlist, milvus=milvus,
                         milvus_queries=None if size == "real" else 200, log=lambda m: log("  " + m))
        engines = {k: v for k, v in parts.items() if k != "distances"}
        hnsw = [{"engine": name, **p} for name, part in engines.items() if name.startswith("faiss-hnsw")
                for p in part["points"]]
        chosen = ba.cheapest(hnsw)
        row = {"rows": len(vectors), "dim": int(vectors.shape[1]), "queries": len(queries), "queries_from": queries_from,
               "threads": threads, "faiss": faiss.__version__, "engines": engines, "goal_recall_at_10": ba.RECALL_GOAL,
               "chosen_hnsw": chosen}
        row["query_nn"] = ba.query_distances(vectors, queries, np.load(folder / "exact.npy"),
                                             f"the questions, nearest row of the {len(vectors):,}")
        if grown is not None:
            row.update(distances=grown, real_rows=len(real), seed=0, method=ba.GROW_METHOD)
        row["summary"] = ba.sweep_summary(row)
        log(row["summary"])
        steps[f"ann_{'real' if size == 'real' else size}"] = row
    return steps


def save_ann(steps: dict, dest: Path, fresh: dict) -> None:
    """The --ann figures merged into ``dest`` as it is now (read when the sweep is done, so that other parts
    written meanwhile are kept; ``fresh`` when there is none), in the file's own layout; into the committed
    results/bench.json also the chart and the docs' tables written from them."""
    from lib.config import load_profile
    from lib.io import write_text
    from lib.report.bench_ann_chart import chart
    from lib.report.bench_docs import ANN_CHART, write_ann_docs, write_throughput_docs
    from lib.report.bench_study import refreshed

    out = json.loads(dest.read_text()) if dest.exists() else fresh
    out["steps"].update(steps)
    out["steps"] = refreshed(out["steps"])  # the study's throughput projected with these figures at 1M
    write_text(dest, json.dumps(out, indent=1, ensure_ascii=False) + "\n")  # the file's order kept
    print(f"written to {dest.relative_to(ROOT)}")
    if dest == COMMITTED:
        chart(out["steps"], ROOT / ANN_CHART)
        cfg = load_profile("offline")
        print("written:", ", ".join([ANN_CHART] + write_ann_docs(out["steps"], cfg)
                                    + write_throughput_docs(out["steps"], cfg)))


def snapshot_vocabulary():
    """The words of the shipped snapshot's titles and abstracts with their counts (lib/report/bench.py)."""
    from lib.config import load_profile
    from lib.data.papers import paper_text
    from lib.report.bench import collection_vocabulary

    from lib import pipeline

    papers = pipeline.search_papers(load_profile("offline", collection_scope="snapshot"))
    return collection_vocabulary([paper_text(p) for p in papers])


# the designs whose model calls `make bench` measures, and the record kind each makes
LLM_DESIGNS = {"agent": "agent", "multiquery": "rewrite", "loop": "loop_question_first"}
# the call paths measured, side by side (lib.llm.local_backend DECODERS): the default (prefix reuse and the fast
# path of lib.llm.speculative), a token at a time with prefix reuse and with every prompt evaluated whole, and the
# maintained variants over llama-cpp-python's public API alone (lib.llm.guided): llguidance's masks and forced
# tokens, its masks alone, and llama-cpp-python's LlamaPromptLookupDecoding; (name, prefix reuse, decoder)
CALL_MODES = (("fast", True, "fast"), ("prefix", True, "token"), ("no_prefix", False, "token"),
              ("llguidance", True, "llguidance"), ("llguidance_masks", True, "llguidance_masks"),
              ("lookup", True, "lookup"))
BOUND_GOAL = 1.2  # a call path is kept only within this ratio to the llama.cpp bound (agent and loop calls)


def measure_mode(kind: str, n_calls: int, cache: bool, decoder: str) -> tuple[list[dict], list[str]]:
    """One call path over a kind's last ``n_calls`` recorded requests (the one before them sent first, untimed,
    with prefix reuse): each call's figures (``LocalBackend.last_call``) and reply. Run in a process of its own
    (:func:`llm_bench`), so that no path's memory (llguidance's, a draft model's every-token logits) or state
    reaches the next one's."""
    from lib.llm import RecordStore
    from lib.llm.base import LLMRequest
    from lib.llm.local_backend import DEFAULT_LOCAL_MODEL, LocalBackend, local_model
    from lib.llm.records import records_dir

    store = RecordStore(records_dir("local", local_model(DEFAULT_LOCAL_MODEL).name))
    requests = [LLMRequest.from_record(r) for r in list(store.records(kind).values())[-(n_calls + 1):]]
    b = LocalBackend(DEFAULT_LOCAL_MODEL, prefix_cache=cache, decoder=decoder)
    if cache:
        b.complete(requests[0])  # untimed: llama.cpp holds what it held before these calls
    calls, texts = [], []
    for req in requests[1:]:
        r = b.complete(req)
        calls.append(dict(b.last_call))
        texts.append(r.text)
    return calls, texts


def llm_bench(n_calls: int, log=print) -> dict:
    """The local model on this machine (docs/speed.md, "LLM calls"), in one run so the ratios are
    meaningful on a shared machine, with the load average beside each figure:

    * llama.cpp's own prompt-processing and generation speed (``llama_perf_context``) on a real agent
      prompt, before and after the calls;
    * for each design, its last ``n_calls`` recorded requests (in the order they were made, the one
      before them sent first, untimed, so llama.cpp holds what it held then) through the project's
      call path (``LocalBackend.complete``), with prefix reuse and again without: seconds per call,
      the ratio to the llama.cpp bound, the share of prompt tokens taken from the cache, and whether
      each reply is the recorded one and the same with and without prefix reuse;
    * the share of prompt tokens a prefix cache could skip over every recorded call of each kind.
    """
    import gc

    from lib.llm.local_backend import passive_omp_threads

    wait_policy = passive_omp_threads()  # before llama_cpp is imported (its libgomp reads it once)
    import numpy as np
    from llama_cpp import Llama

    from lib.llm import RecordStore
    from lib.llm.base import LLMRequest
    from lib.llm.local_backend import DEFAULT_LOCAL_MODEL, LocalBackend, llama_speed, local_model, prompt_tokens
    from lib.llm.records import decoding_of, records_dir
    from lib.report.bench import llm_call_figures, prefix_share
    from lib.report.bench_docs import decoder_choice

    model = local_model(DEFAULT_LOCAL_MODEL)
    store = RecordStore(records_dir("local", model.name))
    records = {kind: list(store.records(kind).values()) for kind in LLM_DESIGNS.values()}
    steps: dict = {}

    def load() -> list[float]:
        return [round(x, 2) for x in os.getloadavg()]

    # --- the share of prompt tokens a prefix cache could skip, over every recorded call
    vocab = Llama(model_path=str(model.file), vocab_only=True, verbose=False)
    for design, kind in LLM_DESIGNS.items():
        seq = [(prompt_tokens(vocab, LLMRequest.from_record(r)),
                vocab.tokenize(r["response"]["text"].encode("utf-8"), add_bos=False, special=True)) for r in records[kind]]
        share = prefix_share(seq)
        steps[f"llm_prefix_{design}"] = {**share, "kind": kind, "summary": (
            f"{share['share']:.0%} of the prompt tokens of {share['calls']:,} recorded {kind} calls could be taken "
            f"from a prefix cache (each call's common prefix with the one before)")}
        log(f"prefix {design}: {steps[f'llm_prefix_{design}']['summary']}")
    del vocab

    # --- llama.cpp's own speed, on the prompt of the last recorded agent call
    backend = LocalBackend(model.name, draft=False)  # llama.cpp's own speed: a token at a time, no guess
    probe = LLMRequest.from_record(records["agent"][-1])
    tokens = prompt_tokens(backend._llm("speed"), probe)
    speeds = []
    for when in ("before", "after"):
        if when == "after":
            backend = LocalBackend(model.name, draft=False)
        llm = backend._llm("speed")
        at = load()
        sp = llama_speed(llm, tokens, n_gen=32, repeats=2)
        speeds.append({**sp, "when": when, "loadavg": at})
        log(f"llama.cpp speed ({when}): prompt {sp['pp_tokens_per_s']:.1f} tok/s, generation {sp['tg_tokens_per_s']:.1f} "
            f"tok/s (load {at})")
        if when == "before":
            # --- the call path, design by design, with prefix reuse and without
            for design, kind in LLM_DESIGNS.items():
                recs = records[kind][-(n_calls + 1):]
                row: dict = {"kind": kind, "loadavg_before": load(),
                             "recorded_decoding": dict(Counter(decoding_of(r) for r in recs[1:]))}
                replies = {}
                for mode, cache, decoder in CALL_MODES:
                    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                        try:
                            calls, texts = pool.submit(measure_mode, kind, n_calls, cache, decoder).result()
                        except Exception as exc:  # a path that fails (or takes its process down) is named, not kept
                            row[mode] = {"calls": [], "error": f"{type(exc).__name__}: {exc}"}
                            replies[mode] = []
                            log(f"{design}, {mode}: failed: {row[mode]['error']}")
                            continue
                    replies[mode] = texts
                    row[mode] = {"calls": calls, "loadavg_after": load()}
                row["loadavg_after"] = load()
                recorded = [r["response"]["text"] for r in recs[1:]]
                row["replies"] = {"n": len(recorded), **{
                    f"{mode}_equals_recorded": sum(a == b for a, b in zip(replies[mode], recorded)) for mode, *_ in CALL_MODES},
                    "prefix_equals_no_prefix": sum(a == b for a, b in zip(replies["prefix"], replies["no_prefix"])),
                    "fast_equals_prefix": sum(a == b for a, b in zip(replies["fast"], replies["prefix"]))}
                steps[f"llm_call_{design}"] = row
                log(f"{design}: {len(recorded)} calls measured (load {row['loadavg_before']} -> {row['loadavg_after']}); "
                    f"replies {row['replies']}")
        del llm
        gc.collect()
    pp = float(np.median([s["pp_tokens_per_s"] for s in speeds]))
    tg = float(np.median([s["tg_tokens_per_s"] for s in speeds]))
    steps["llm_llama_speed"] = {
        "pp_tokens_per_s": pp, "tg_tokens_per_s": tg, "runs": speeds, "threads": backend.n_threads,
        "omp_wait_policy": wait_policy,
        "summary": f"prompt {pp:.1f} tok/s, generation {tg:.1f} tok/s (llama.cpp's own timings, {backend.n_threads} "
                   f"threads, median of before and after the calls; load average "
                   f"{speeds[0]['loadavg'][0]:.1f} and {speeds[-1]['loadavg'][0]:.1f})"}
    for design in LLM_DESIGNS:
        row = steps[f"llm_call_{design}"]
        for mode, *_ in CALL_MODES:
            if row[mode]["calls"]:
                row[mode].update(llm_call_figures(row[mode]["calls"], pp, tg))
        row["fast"].update(draft_figures(row["fast"]["calls"]))
        f, p_, g, rep = row["fast"], row["prefix"], row["no_prefix"], row["replies"]
        row["summary"] = (
            f"{f['median_s']:.1f} s per call ({f['median_prompt_tokens']:.0f} prompt / {f['median_output_tokens']:.0f} "
            f"output tokens), {f['ratio_to_bound_evaluated']:.2f}x the llama.cpp bound of the tokens in the reply and "
            f"the prompt's new part ({f['median_bound_evaluated_s']:.1f} s); {f['steps_per_output_token']:.2f} model "
            f"steps per reply token, {f['grammar_checked_per_draw']:.0f} tokens checked against the grammar per token "
            f"drawn; a token at a time {p_['median_s']:.1f} s "
            f"({p_['ratio_to_bound_evaluated']:.2f}x), without prefix reuse too {g['median_s']:.1f} s; the same reply as "
            f"a token at a time {rep['fast_equals_prefix']}/{rep['n']}; load {row['loadavg_before'][0]:.1f}-"
            f"{row['loadavg_after'][0]:.1f}")
    steps["llm_decoders"] = decoder_choice(steps, [m for m, *_ in CALL_MODES if m != "no_prefix"], BOUND_GOAL)
    log(steps["llm_decoders"]["summary"])
    return steps


def draft_figures(calls: list[dict]) -> dict:
    """The fast path's own counts over a design's measured calls (lib.llm.speculative): model steps
    after the prompt per reply token, tokens guessed, tokens of a fixed ending not evaluated, and the
    tokens checked against the grammar per token drawn (lib.llm.grammar_sampler)."""
    out = sum(c["output_tokens"] for c in calls)
    draws = sum(c.get("draws", 0) for c in calls)
    return {"steps_per_output_token": sum(c.get("steps", 0) for c in calls) / out if out else float("nan"),
            "grammar_checked_per_draw": sum(c.get("grammar_checked", 0) for c in calls) / draws if draws else float("nan"),
            "guessed_tokens": sum(c.get("drafted", 0) + c.get("prompt_guess", 0) for c in calls),
            "skipped_tokens": sum(c.get("skipped", 0) for c in calls), "output_tokens": out}


def llm_agent_run(log=print) -> dict:
    """The agent over the 297 test questions, live (no record replayed: a store of its own under
    build/), one uninterrupted pass with the backend's defaults (prefix reuse and the fast path):
    the run's time, its decisions' median and mean, and its recall@5 and MRR@10 beside the saved
    runs'. Resumable: a stopped pass replays what it recorded, and only questions answered live
    count towards the times."""
    import numpy as np

    from lib import pipeline
    from lib.config import load_profile
    from lib.evaluation.metrics import mrr_at_k, recall_at_k
    from lib.llm import RecordedLLM, RecordStore
    from lib.llm.local_backend import DEFAULT_LOCAL_MODEL, LocalBackend
    from lib.runs import read_results

    cfg = load_profile("offline", llm_backend="local")
    parts = pipeline.ProfileParts(cfg, progress=False)
    qs = pipeline.scored_questions(cfg, parts.papers)
    design = pipeline.make_design("agent", cfg, parts)
    folder = ROOT / "build" / "bench" / "agent_run"
    folder.mkdir(parents=True, exist_ok=True)
    backend = LocalBackend(DEFAULT_LOCAL_MODEL)
    design.llm = RecordedLLM(backend, RecordStore(folder / "llm_records"), backend_name="local",
                             model=DEFAULT_LOCAL_MODEL)
    rows_path = folder / "questions.jsonl"
    done = {}
    if rows_path.exists():
        done = {r["qid"]: r for r in map(json.loads, rows_path.read_text().splitlines())}
    start_load = [round(x, 2) for x in os.getloadavg()]
    with open(rows_path, "a") as fh:
        for i, q in enumerate(qs, 1):
            if q.qid in done:
                continue
            parts.forget_queries()
            t = time.perf_counter()
            res = design.retrieve(q, run=1)
            wall = time.perf_counter() - t
            row = {"qid": q.qid, "wall_s": wall, "llm_calls": res.llm_calls, "llm_s": res.llm_latency_s,
                   "queries": res.queries, "ranked_ids": res.ranked_ids}
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            done[q.qid] = row
            if i % 25 == 0:
                log(f"agent run: {i}/{len(qs)} questions, {sum(r['wall_s'] for r in done.values()):.0f} s so far")
    rows = [done[q.qid] for q in qs]
    rel = {q.qid: q.source_id for q in qs}

    def scores(ranked: dict[str, list[str]]) -> dict:
        return {"recall_at_5": float(np.mean([recall_at_k(ranked[q], rel[q], 5) for q in rel])),
                "mrr_at_10": float(np.mean([mrr_at_k(ranked[q], rel[q], 10) for q in rel]))}
    this = scores({r["qid"]: r["ranked_ids"] for r in rows})
    saved = {}
    for k in (1, 2, 3):
        res = read_results(pipeline.results_dir(cfg) / "agent" / f"run{k}.jsonl")
        saved[k] = {**scores({r.qid: r.ranked_ids for r in res}),
                    "same_queries": sum(r.queries == done[r.qid]["queries"] for r in res)}
    durations = decision_times(folder / "llm_records")
    total = sum(r["wall_s"] for r in rows)
    step = {"questions": len(rows), "wall_s": total, "llm_calls": sum(r["llm_calls"] for r in rows),
            "decision_median_s": float(np.median(durations)) if durations else float("nan"),
            "decision_mean_s": float(np.mean(durations)) if durations else float("nan"),
            "decisions": len(durations), "scores": this, "saved_runs": saved,
            "loadavg_before": start_load, "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    step["summary"] = (
        f"{len(rows)} questions in {total / 60:.1f} min ({step['llm_calls']} decisions, median "
        f"{step['decision_median_s']:.2f} s, mean {step['decision_mean_s']:.2f} s); recall@5 {this['recall_at_5']:.3f}, "
        f"MRR@10 {this['mrr_at_10']:.3f} against the saved runs' "
        + ", ".join(f"{v['mrr_at_10']:.3f}" for v in saved.values())
        + f"; the same queries as saved run 1 for {saved[1]['same_queries']} of {len(rows)} questions")
    return {"llm_agent_run": step}


def decision_times(records: Path) -> list[float]:
    """Seconds of every decision the pass recorded (its records' latencies)."""
    path = records / "agent.jsonl"
    if not path.exists():
        return []
    return [json.loads(line)["response"]["latency_s"] for line in path.read_text().splitlines() if line.strip()]


def llm_server_bench(n_calls: int, log=print) -> dict:
    """The shipped model served by llama-cpp-python's server on loopback: each constraint route's time a call
    beside the local fast path, and calls per second at 1, 4 and 8 in flight (scripts/bench_served.py)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_served import served_bench  # a script beside this one (sys.path above)

    return served_bench(n_calls, log=log)


def main(argv: list[str]) -> None:
    import numpy as np
    import torch

    from lib import pipeline
    from lib.config import load_profile
    from lib.data.papers import paper_text
    from lib.evaluation.metrics import mrr_at_k
    from lib.io import write_json
    from lib.llm import RecordStore
    from lib.report.bench import encoder_flops, padded_flops, peak_gflops, timed
    from lib.search.fusion import order_by_score
    from lib.search.rerank import CrossEncoderScorer

    argv = list(argv)
    THREADS = int(os.environ.get("BENCH_THREADS", "2"))
    torch.set_num_threads(THREADS)
    cfg = load_profile("offline")
    papers = pipeline.collection(cfg)
    qs = pipeline.scored_questions(cfg)
    peak = peak_gflops(cores=THREADS) * 1e9
    out = {"machine": {"cpu": platform.processor() or platform.machine(), "threads": THREADS,
                       "peak_gflops_fp32": peak / 1e9, "torch": torch.__version__}, "steps": {}}
    BENCH = kept_from(argv)
    scale = scale_sizes(argv)
    if scale:  # dense search at scale alone; the rest kept from the file, when there is one
        if BENCH.exists():
            out = json.loads(BENCH.read_text())
        import faiss

        out["steps"].update(dense_scale(scale, THREADS, vector_kind(argv), engine="--engine" in argv,
                                         bm25="--no-bm25" not in argv))
        out["machine"]["faiss"] = faiss.__version__
    elif ann_sizes(argv):  # recall against speed per engine, merged into the file as it is when done
        save_ann(ann_bench(ann_sizes(argv), THREADS, "--ann-milvus" in argv, log=lambda m: print(m, flush=True)),
                 output_path(argv), out)
        return
    elif "--engine" in argv:  # Milvus against exact search on the real collections; the rest kept from the file
        if BENCH.exists():
            out = json.loads(BENCH.read_text())
        out["steps"].update(engine_agreement())
    elif "--report-only" in argv and BENCH.exists():  # keep the model measurements, time the report again
        out = json.loads(BENCH.read_text())
        argv.append("--report")
    elif "--search-only" in argv and BENCH.exists():  # keep the model measurements, time BM25 and fusion again
        out = json.loads(BENCH.read_text())
        argv.append("--search")
    elif "--snapshot-only" in argv and BENCH.exists():  # keep the rest, time the whole-snapshot steps again
        out = json.loads(BENCH.read_text())
        argv.append("--snapshot")
    elif "--llm-only" in argv and BENCH.exists():  # keep the rest, measure the local model again
        out = json.loads(BENCH.read_text())
        argv.append("--llm")
    elif "--agent-run-only" in argv and BENCH.exists():  # keep the rest, run the agent over every question again
        out = json.loads(BENCH.read_text())
        argv.append("--agent-run")
    elif "--llm-server-only" in argv and BENCH.exists():  # keep the rest, measure the server's throughput again
        out = json.loads(BENCH.read_text())
        argv.append("--llm-server")
    else:
        argv += ["--models", "--search", "--snapshot", "--llm"]

    # the local model: llama.cpp's own speed against the call path
    if "--llm" in argv or "--llm-server" in argv or "--agent-run" in argv:
        from lib.llm.local_backend import LOCAL_MODEL_FILE

        if importlib.util.find_spec("llama_cpp") is None or not LOCAL_MODEL_FILE.exists():
            print("local model not installed (make local-llm): its speed is not measured")
        else:
            if "--llm" in argv:
                out["steps"].update(llm_bench(int(os.environ.get("BENCH_LLM_CALLS", "8")),
                                              log=lambda m: print("  " + m, flush=True)))
            if "--agent-run" in argv:  # the agent over every test question, live: the run's time and its scores
                out["steps"].update(llm_agent_run(log=lambda m: print("  " + m, flush=True)))
            if "--llm-server" in argv:  # llama-cpp-python's server: one request in flight against several
                out["steps"].update(llm_server_bench(int(os.environ.get("BENCH_SERVED_CALLS", "4")),
                                                     log=lambda m: print("  " + m, flush=True)))

    if "--models" in argv:  # embedding, dense search and rerank variants, measured in one run
        # --- embedding throughput
        search = pipeline.searcher(cfg, papers, progress=False)
        model = search.embedder.model
        texts = [paper_text(p) for p in papers[:96]]
        tok = model.tokenizer
        lengths = [min(len(tok(t)["input_ids"]), model.max_seq_length) for t in texts]
        hf = model[0].auto_model.config
        flops = encoder_flops(lengths, hf.hidden_size, hf.intermediate_size, hf.num_hidden_layers)
        for bs in (16, 32):
            t = timed(lambda: model.encode(texts, batch_size=bs, show_progress_bar=False), repeats=3)
            out["steps"][f"embed_batch{bs}"] = {
                **t, "texts": len(texts), "texts_per_s": len(texts) / t["median_s"], "tokens_per_s": sum(lengths) / t["median_s"],
                "flop_limit_s": flops / peak, "ratio_to_flop_limit": t["median_s"] / (flops / peak),
                "summary": f"{len(texts) / t['median_s']:.1f} abstracts/s, {t['median_s'] / (flops / peak):.2f}x the FLOP limit"}

        # --- dense search latency per question (embed the question + exact search), no cache
        def dense_once():
            for q in qs[:20]:
                v = model.encode([q.text], normalize_embeddings=True, show_progress_bar=False)[0]
                search.index.search_vector(v, 50)
        t = timed(dense_once, repeats=3)
        out["steps"]["dense_query"] = {"median_s_per_q": t["median_s"] / 20, "min_s_per_q": t["min_s"] / 20,
                                       "max_s_per_q": t["max_s"] / 20,
                                       "summary": f"{t['median_s'] / 20 * 1000:.0f} ms per question"}

        # --- rerank: 50 candidates per question, variants compared in the same run
        by_id = {p["id"]: paper_text(p) for p in papers}
        bench_qs = qs[:8]
        cands = {q.qid: [h.id for h in search.search(q.text, 50)] for q in bench_qs}


        def rerank_variant(max_length, batch_size, quantize=False):
            sc = CrossEncoderScorer(cfg.reranker, cfg.reranker_backend, cache_dir=ROOT / "build" / "bench-cache",
                                    batch_size=batch_size, max_length=max_length, int8=quantize)
            m = sc.model
            times, orders = [], {}
            for q in bench_qs:
                pairs = [(q.text, by_id[c]) for c in cands[q.qid]]
                t0 = time.perf_counter()
                s = sc.predict(pairs)
                times.append(time.perf_counter() - t0)
                orders[q.qid] = order_by_score(cands[q.qid], s)
            ctok = m.tokenizer
            lens = sorted(min(len(ctok(q.text, by_id[c])["input_ids"]), max_length) for q in bench_qs for c in cands[q.qid])
            cfgm = m.config
            fl = padded_flops(lens, batch_size, cfgm.hidden_size, cfgm.intermediate_size, cfgm.num_hidden_layers) / len(bench_qs)
            return times, orders, fl


        variants = {"fp32_len256_b16": (256, 16, False), "fp32_len256_b50": (256, 50, False),
                    "fp32_len128_b16": (128, 16, False), "int8dyn_len256_b16": (256, 16, True),
                    "int8dyn_len128_b16": (128, 16, True)}
        ref_orders = None
        for name, (ml, bs, qz) in variants.items():
            times, orders, fl = rerank_variant(ml, bs, qz)
            ref_orders = ref_orders or orders
            same_top10 = np.mean([orders[q][:10] == ref_orders[q][:10] for q in orders])
            src = {q.qid: q.source_id for q in bench_qs}
            med = float(np.median(times))
            out["steps"][f"rerank_{name}"] = {
                "median_s_per_q": med, "min_s_per_q": min(times), "max_s_per_q": max(times), "questions": len(times),
                "flop_limit_s": fl / peak, "ratio_to_flop_limit": med / (fl / peak),
                "same_top10_as_fp32_len256": float(same_top10),
                "mrr_at_10": float(np.mean([mrr_at_k(orders[q], src[q]) for q in orders])),
                "summary": f"{med:.2f} s per question (50 candidates), {med / (fl / peak):.2f}x the FLOP limit, "
                           f"top-10 same as fp32/256 for {same_top10:.0%}"}

    if "--search" in argv:  # BM25 indexing and query, the hybrid query, the fused rerank step
        import shutil

        from lib.search.bm25 import BM25Index
        from lib.search.fusion import rrf
        from lib.search.rerank import FusedReranker

        cache = ROOT / "build" / "bench-bm25"

        def build_bm25():
            shutil.rmtree(cache, ignore_errors=True)
            return BM25Index.build(papers, cache_dir=cache)

        t = timed(build_bm25, repeats=3)
        out["steps"]["bm25_index"] = {**t, "papers": len(papers),
                                      "summary": f"{t['median_s']:.2f} s to index {len(papers):,} papers"}
        bm25 = BM25Index.build(papers, cache_dir=cache)
        search = pipeline.searcher(cfg, papers, progress=False)
        qtexts = [q.text for q in qs[:50]]
        from lib.search.embedder import text_key

        def forget_queries():  # every repeat embeds its questions again, as a live query would
            for q in qtexts:
                search.embedder.cache.vectors.pop(text_key(q), None)
        t = timed(lambda: [bm25.search(q, 50) for q in qtexts], repeats=3)
        out["steps"]["bm25_query"] = {"median_s_per_q": t["median_s"] / len(qtexts),
                                      "summary": f"{t['median_s'] / len(qtexts) * 1000:.1f} ms per question"}
        t = timed(lambda: forget_queries() or [rrf([[h.id for h in bm25.search(q, 50)], [h.id for h in search.search(q, 50)]], 60)
                                               for q in qtexts], repeats=3)
        out["steps"]["hybrid_query"] = {
            "median_s_per_q": t["median_s"] / len(qtexts),
            "summary": f"{t['median_s'] / len(qtexts) * 1000:.1f} ms per question (BM25 + dense + RRF)"}
        texts = {p["id"]: paper_text(p) for p in papers}
        ce = None
        if cfg.rerank_weights.get("cross_encoder"):
            ce = CrossEncoderScorer(cfg.reranker, cfg.reranker_backend, cache_dir=ROOT / "build" / "bench-cache",
                                    max_length=cfg.reranker_max_length)
        fused = FusedReranker(cfg.rerank_weights, bm25=bm25, cross_encoder=ce)

        def rerank_step():
            forget_queries()
            for q in qtexts[:20]:
                hits = search.search(q, 50)
                ids = [h.id for h in hits]
                fused.scores(q, ids, [h.score for h in hits], [texts[i] for i in ids])

        t = timed(rerank_step, repeats=3)
        out["steps"]["rerank_offline_step"] = {
            "median_s_per_q": t["median_s"] / 20, "weights": cfg.rerank_weights,
            "summary": f"{t['median_s'] / 20:.3f} s per question (50 candidates, weights {cfg.rerank_weights}, "
                       "dense search included)"}

    if "--snapshot" in argv:  # the whole-snapshot condition: embedding all papers, one exact query
        import resource

        from lib.search.dense import DenseIndex
        from lib.search.snapshot import load_matrix, matrix_paths

        scfg = load_profile("offline", collection_scope="snapshot")
        spapers = pipeline.search_papers(scfg)
        emb = pipeline.embedder(scfg)
        sample = [paper_text(spapers[i]) for i in np.random.default_rng(0).choice(len(spapers), 256, replace=False)]
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = timed(lambda: emb.encode_raw(sample), repeats=2)
        per_s = len(sample) / t["median_s"]
        out["steps"]["snapshot_embed"] = {
            **t, "papers_timed": len(sample), "papers_per_s": per_s, "papers": len(spapers),
            "projected_s": len(spapers) / per_s, "matrix_mb_float32": len(spapers) * 384 * 4 / 1e6,
            "matrix_mb_float16": len(spapers) * 384 * 2 / 1e6,
            "peak_rss_mb": max(rss0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 1024,
            "summary": f"{per_s:.1f} papers/s: {len(spapers) / per_s / 60:.0f} min for all {len(spapers):,} papers "
                       f"({len(spapers) * 384 * 2 / 1e6:.0f} MB at float16)"}
        if matrix_paths(scfg.embedder)[0].exists():
            ids, vecs = load_matrix(spapers, scfg.embedder)
            index = DenseIndex(ids, vecs)
            qv = emb.encode_raw([q.text for q in qs[:50]])
            t = timed(lambda: [index.search_vector(v, 50) for v in qv], repeats=3)
            ms = t["median_s"] / len(qv) * 1000
            out["steps"]["snapshot_dense_query"] = {
                "median_s_per_q": t["median_s"] / len(qv), "papers": len(ids), "exact": True,
                "index_mb": index.vectors.nbytes / 1e6,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "summary": f"{ms:.1f} ms per question (exact search over {len(ids):,} papers, question embedding apart; "
                           f"the index holds {index.vectors.nbytes / 1e6:.0f} MB at float32)"
                           + ("" if ms <= 50 else ": over 50 ms, use faiss-cpu's exact index")}

    # --- LLM seconds per call, from the recorded calls of the saved runs (measured when made)
    for kind in ("rewrite", "agent", "escalate", "loop"):
        lat = []
        for folder in (ROOT / "data" / "llm_records").glob("*/"):
            lat += [rec["response"]["latency_s"] for rec in RecordStore(folder).records(kind).values()]
        if lat:
            out["steps"][f"llm_{kind}_call"] = {"median_s": float(np.median(lat)), "p10_s": float(np.quantile(lat, 0.1)),
                                                 "p90_s": float(np.quantile(lat, 0.9)), "calls": len(lat),
                                                 "summary": f"{np.median(lat):.1f} s per call (median of {len(lat)} recorded)"}

    # --- make report: re-render from saved results, then again with every cache warm
    # (scripts/bench_render.py: the CPU time of every process it started, user + system, beside the wall time;
    # CPU time, unlike wall time, does not grow when other jobs share the cores)
    if "--report" in argv:  # in a fresh clone of the commit, cold then warm (lib/report/bench.py rerender_in_clone)
        from lib.report.bench import rerender_in_clone

        out["steps"].update(rerender_in_clone())

    print(json.dumps({k: v["summary"] for k, v in out["steps"].items()}, indent=1))
    dest = output_path(argv)
    write_json(dest, out)
    print(f"written to {dest.relative_to(ROOT)}" + ("" if dest == COMMITTED else
          " (the report shows results/bench.json: make bench ARGS=--save to write that instead)"))
    if dest == COMMITTED and "llm_decoders" in out["steps"]:  # docs/speed.md's decoding paths, from these figures
        from lib.report.bench_docs import decoder_block, with_decoder_block

        doc = ROOT / "docs" / "speed.md"
        doc.write_text(with_decoder_block(doc.read_text(encoding="utf-8"), decoder_block(out["steps"])), encoding="utf-8")
        print("docs/speed.md's decoding paths written")
    if dest == COMMITTED and "llm_served_routes" in out["steps"]:  # and its served routes' figures
        from lib.report.served_docs import write_served_docs

        print("written: " + ", ".join(write_served_docs(out["steps"])))


def command_line(argv, environ):
    """The bench's arguments: its own, then `make bench ARGS=... SAVE=1` as handed over in the environment
    (ARGS split as a shell would split it, never run by one)."""
    import shlex

    return (list(argv) + shlex.split(environ.get("BENCH_ARGS", ""))
            + (["--save"] if environ.get("BENCH_SAVE") == "1" else []))


if __name__ == "__main__":
    main(command_line(sys.argv[1:], os.environ))
