"""`make bench-study`: the study's own throughput on a corpus of the snapshot's abstracts (`make study`'s steps,
each timed, then its pages), with a projection to 1M documents from the measured rates.

Usage: python scripts/bench_study.py [--docs 20000] [--live 2000] [--llm-questions 40] [--save]

The corpus: the 2,000 papers of data/collection.jsonl (so that every scored question's source is in it) and
a seeded draw of the snapshot's other papers, --docs in all, written as a JSON-lines file of id, title and
text (the abstract); the questions: the study's 297 scored questions, each with its source as the relevant
document. The steps, in the order `make study` runs them, in a study of its own (studies/bench-<docs>/,
`chunk_documents=false`: abstracts are searched whole, as the arXiv study searches them):

* import: scripts/new_study.py, then the import itself (lib.data.study.import_study);
* chunk: the chunker over every document (lib.search.chunking, the embedder's 254 word pieces), timed apart
  since this study searches abstracts whole: how many chunks the documents would make and how long it takes;
* embed: the --live documents embedded by the model; the others' vectors are taken from the snapshot's
  shipped matrix (the same model and text, data/snapshot_embeddings/) and written into the study's
  embedding cache first, so the rate is measured without embedding every document on a shared CPU;
* index: the dense index (exact numpy below 300,000 rows) and the BM25 index (bm25s, on disk);
* each design without a language model (dense, rerank, bm25, hybrid, hybrid_rerank): pipeline.run;
* one design with the model: the agent (LLM_DESIGN) over the first --llm-questions questions, run 1, by the
  local backend (the shipped 1.5B model, `make local-llm`), its searches and calls counted; left out when the
  local model is not installed (0 leaves it out too);
* pages: scripts/run_notebooks.py over the pages that ask no model, as `make study` runs them (the designs'
  results already saved), their time per notebook read from papermill's record in each executed notebook.

Each step's wall and CPU time (user + system) and the peak resident memory are written to
build/bench-study.json, and with --save into results/bench.json (``study_throughput``; the rest kept), with
docs/your-data.md's and the README's throughput tables written from it (lib.report.bench_docs). Run one model
job at a time: the agent's step is the local model's.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import ROOT  # noqa: E402

DESIGNS = ("dense", "rerank", "bm25", "hybrid", "hybrid_rerank")  # the designs that ask no model
PAGES = ("01_collection", "02_questions", "03_dense", "04_rerank", "07_keyword_hybrid", "10_scores", "11_failures",
         "12_why")  # the pages of those designs and the pages that ask no model
SCRATCH = ROOT / "build" / "bench-study"
LLM_DESIGN = "agent"  # the article's agent: the model design measured on the corpus


def cpu_s(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


class Steps:
    """Each step's wall and CPU seconds (this process's and its children's) and the peak memory after it,
    written to ``path`` after each step; a rerun (the study resumes from what it saved) keeps the steps
    recorded there."""

    def __init__(self, path: Path):
        self.path = path
        self.rows: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}

    def put(self, name: str, row: dict) -> None:
        self.rows[name] = row
        self.path.write_text(json.dumps(self.rows, indent=1))

    def time(self, name: str, fn, needed: bool = False, **extra):
        """``fn()`` timed and recorded; when recorded already, run again unrecorded only when what it returns is
        ``needed``."""
        if name in self.rows:
            return fn() if needed else None
        c0 = cpu_s(resource.RUSAGE_SELF) + cpu_s(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = fn()
        wall = time.perf_counter() - t0
        cpu = cpu_s(resource.RUSAGE_SELF) + cpu_s(resource.RUSAGE_CHILDREN) - c0
        self.put(name, {"wall_s": wall, "cpu_s": cpu, "loadavg": round(os.getloadavg()[0], 2),
                        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **extra})
        print(f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
        return out


def write_corpus(n: int, folder: Path) -> tuple[Path, Path]:
    """The corpus and questions files (module docstring)."""
    import numpy as np

    from lib import pipeline
    from lib.config import load_profile
    from lib.io import write_jsonl

    cfg = load_profile("offline")
    collection = pipeline.collection(cfg)
    every = pipeline.search_papers(load_profile("offline", collection_scope="snapshot"))
    have = {p["id"] for p in collection}
    others = [p for p in every if p["id"] not in have]
    drawn = sorted(np.random.default_rng(0).choice(len(others), n - len(collection), replace=False))
    rows = [{"id": p["id"], "title": p["title"], "text": p["abstract"]}
            for p in sorted(collection + [others[i] for i in drawn], key=lambda p: p["id"])]
    folder.mkdir(parents=True, exist_ok=True)
    docs, questions = folder / f"docs-{n}.jsonl", folder / "questions.csv"
    write_jsonl(docs, rows)
    with open(questions, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["qid", "question", "relevant"])
        for q in pipeline.question_set(cfg):
            w.writerow([q.qid, q.text, q.source_id])
    return docs, questions


def seed_embeddings(emb, papers: list[dict], live: int) -> int:
    """Write the snapshot's shipped vectors of all but ``live`` of the documents (a seeded draw left out) into the
    study's embedding cache (``emb``'s); returns how many were written."""
    import numpy as np

    from lib import pipeline
    from lib.config import load_profile
    from lib.data.papers import paper_text
    from lib.search.snapshot import load_matrix

    snap = load_profile("offline", collection_scope="snapshot")
    ids, vecs = load_matrix(pipeline.search_papers(snap), snap.embedder)
    row = {i: k for k, i in enumerate(ids)}
    left = set(np.random.default_rng(1).choice(len(papers), live, replace=False).tolist())
    todo = [p for k, p in enumerate(papers) if k not in left and p["id"] in row]
    emb.cache.add([paper_text(p) for p in todo], np.asarray([vecs[row[p["id"]]] for p in todo], dtype=np.float32))
    emb.cache.save()
    return len(todo)


def median_ms(fn, items) -> float:
    """The median CPU time of ``fn`` over the items, one at a time, in ms (this process's, every thread: on a
    shared machine steadier than the wall clock)."""
    import statistics

    times = []
    for x in items:
        t = time.process_time()
        fn(x)
        times.append((time.process_time() - t) * 1000)
    return statistics.median(times)


def notebook_times(report_dir: Path, names) -> dict[str, float]:
    """Each executed notebook's run time as papermill recorded it (its metadata's duration)."""
    out = {}
    for name in names:
        path = report_dir / f"{name}.ipynb"
        if path.exists():
            out[name] = float(json.loads(path.read_text(encoding="utf-8"))["metadata"]["papermill"]["duration"])
    return out


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--live", type=int, default=2_000)
    ap.add_argument("--llm-questions", type=int, default=40)
    ap.add_argument("--save", action="store_true")
    args = ap.parse_args(argv)

    import torch

    from lib import pipeline
    from lib.config import load_profile
    from lib.data.papers import paper_text
    from lib.data.study import import_study
    from lib.preflight import local_model_missing
    from lib.report.bench_study import throughput_row
    from lib.search.chunking import chunk_for_embedder

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    name = f"bench-{args.docs}"
    docs, questions = write_corpus(args.docs, SCRATCH)
    partial = SCRATCH / f"steps-{args.docs}.json"
    if not (ROOT / "studies" / name).exists():
        partial.unlink(missing_ok=True)  # a fresh study: every step measured again
    steps = Steps(partial)
    steps.time("new_study", lambda: subprocess.run(
        [sys.executable, "scripts/new_study.py", "--docs", str(docs), "--questions", str(questions), "--name", name,
         "--question-fields", "id=qid,question=question,relevant=relevant",
         "--set", "chunk_documents=false", "--set", "corpus_description=arxiv"], cwd=ROOT, check=True))
    profile = load_profile(name)
    papers, _ = steps.time("import", lambda: import_study(profile), needed=True)
    emb = pipeline.embedder(profile)
    chunks = steps.time("chunk", lambda: chunk_for_embedder(papers, emb, profile.chunk_tokens, profile.chunk_overlap))
    if chunks is not None:
        steps.put("chunk", {**steps.rows["chunk"], "chunks": len(chunks), "documents": len(papers),
                            "measured_apart": True})
    texts = [paper_text(p) for p in papers]
    if "embed" not in steps.rows:
        seeded = seed_embeddings(emb, papers, args.live)
        steps.time("embed", lambda: emb.embed(texts, desc="embedding the documents"), texts=len(emb.cache.missing(texts)),
                   from_snapshot=seeded)
    parts = pipeline.ProfileParts(profile)
    steps.time("dense_index", lambda: parts.searcher, rows=len(papers))
    steps.time("bm25_index", lambda: parts.bm25, rows=len(papers))
    qs = pipeline.scored_questions(profile)
    if "search" not in steps.rows:  # one top-50 search's time at this size, for the projection to 1M
        vecs = emb.embed([q.text for q in qs], progress=False, persist=False)  # cached: the shipped questions
        steps.put("search", {"dense_ms": median_ms(lambda v: parts.searcher.index.search_vector(v, 50), vecs),
                             "bm25_ms": median_ms(lambda t: parts.bm25.search(t, 50), [q.text for q in qs])})
    for design in DESIGNS:
        steps.time(f"design_{design}", lambda: pipeline.run(profile, design, progress=False), questions=len(qs))
    missing = local_model_missing() if args.llm_questions else None
    if missing:
        print(f"design_{LLM_DESIGN}: left out, the local backend cannot run here: {missing}", flush=True)
    elif args.llm_questions:
        llm = load_profile(name, question_limit=args.llm_questions, llm_backend="local")
        key = f"design_{LLM_DESIGN}"
        done = steps.time(key, lambda: pipeline.run(llm, LLM_DESIGN, runs=[1], progress=True)[1],
                          questions=args.llm_questions, model=llm.llm_model, backend="local")
        if done is not None:
            steps.put(key, {**steps.rows[key], "searches": sum(r.searches for r in done),
                            "llm_calls": sum(r.llm_calls for r in done),
                            "llm_s": sum(r.llm_latency_s for r in done)})
    env = {**os.environ, "RUN_PROFILE": name, "RUN_NOTEBOOK_NAMES": " ".join(PAGES)}
    steps.time("pages", lambda: subprocess.run([sys.executable, "scripts/run_notebooks.py", "--from-env"], cwd=ROOT,
                                               env=env, check=False))
    if "notebooks" not in steps.rows["pages"]:
        steps.put("pages", {**steps.rows["pages"], "notebooks": notebook_times(profile.report_dir, PAGES),
                            "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024})
    bench = json.loads((ROOT / "results" / "bench.json").read_text())["steps"]
    row = throughput_row(steps.rows, len(papers), len(qs), bench)
    live = args.docs - steps.rows["embed"].get("from_snapshot", args.docs - args.live)  # as the embed step ran
    row["method"] = (f"scripts/bench_study.py --docs {args.docs} --live {live}: {live:,} documents embedded "
                     f"live, the other vectors from the snapshot's shipped matrix; chunk_documents=false")
    print(row["summary"])
    scratch = ROOT / "build" / "bench-study.json"
    scratch.write_text(json.dumps({"study_throughput": row}, indent=1))
    if args.save:
        from lib.io import write_text
        from lib.report.bench_docs import write_throughput_docs

        path = ROOT / "results" / "bench.json"
        out = json.loads(path.read_text())  # read now: other parts of the file may have changed meanwhile
        out["steps"]["study_throughput"] = row
        write_text(path, json.dumps(out, indent=1, ensure_ascii=False) + "\n")  # the file's layout and order kept
        print("written: results/bench.json, " + ", ".join(write_throughput_docs(out["steps"], load_profile("offline"))))


if __name__ == "__main__":
    main(sys.argv[1:])
