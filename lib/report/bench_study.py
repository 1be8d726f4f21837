"""The study's own throughput (scripts/bench_study.py): each step of `make study` timed on a corpus of the
snapshot's abstracts, and projected to 1M documents from the measured rates and the bench's figures at 1M.

How each step is projected (:data:`SCALING`): import, chunking and embedding grow with the documents (their
measured rate); the dense index at 1M is faiss HNSW (the study's ``auto`` backend from 300,000 rows) with the
build time measured at 1M (``ann_1000000``, the chosen setting; else the uniform-vector run); the BM25 index
at 1M is the bench's 1M-chunk build (``bm25_scale_1000000``); a design's time grows by each question's
searches (:data:`SEARCHES`; a model design's searches as it made them, its model's time unchanged) times the
difference between a search's time at 1M (the bench's medians) and at the corpus's size (its CPU time, measured
by scripts/bench_study.py); the pages depend on the questions, not the documents, and are kept as measured.
"""
from __future__ import annotations

from typing import Sequence

TARGET = 1_000_000
# dense and BM25 searches of top-50 depth each design without a model makes per question (a model design's step
# records the searches it made)
SEARCHES = {"dense": (1, 0), "rerank": (1, 0), "bm25": (0, 1), "hybrid": (1, 1), "hybrid_rerank": (1, 1)}
SCALING = {"new_study": "none", "import": "documents", "chunk": "documents", "embed": "documents",
           "dense_index": "HNSW build at 1M", "bm25_index": "BM25 build at 1M", "pages": "none"}
STEP_WORDS = {"new_study": "scripts/new_study.py (the study's profile)", "import": "import (read, check, write)",
              "chunk": "chunk (measured apart)", "embed": "embed (all-MiniLM-L6-v2)",
              "dense_index": "dense index", "bm25_index": "BM25 index (bm25s, on disk)",
              "pages": "pages (the notebooks and the render)"}


def hnsw_build_at_scale(bench: dict) -> tuple[float | None, str]:
    """The HNSW build time at 1M and where it comes from: the real-shaped sweep's chosen setting, else the
    uniform-vector run's."""
    grown = bench.get("ann_1000000")
    if grown and grown.get("chosen_hnsw"):
        part = grown["engines"][grown["chosen_hnsw"]["engine"]]
        return part["build_s"], f"{grown['chosen_hnsw']['engine']}, real-shaped 1M (ann_1000000)"
    uniform = bench.get("dense_scale_1000000_faiss-hnsw")
    return (uniform["build_s"], "faiss HNSW over 1M uniform vectors") if uniform else (None, "not measured")


def dense_query_at_scale(bench: dict) -> float | None:
    """One top-50 dense query at 1M in ms: the chosen HNSW setting on the real-shaped set."""
    grown = bench.get("ann_1000000")
    if grown and grown.get("chosen_hnsw"):
        return grown["chosen_hnsw"]["k50"]["median_ms"]
    uniform = bench.get("dense_scale_1000000_faiss-hnsw")
    return uniform["median_ms"] if uniform else None


def projected(steps: dict, docs: int, questions: int, bench: dict, search: dict,
              target: int = TARGET) -> dict[str, dict]:
    """Each step's projected seconds at ``target`` documents and how (module docstring): ``s`` from its wall
    time, ``cpu_s`` from its CPU time (user + system; on a shared machine the steadier of the two; the figures at
    1M taken from the bench are wall times and count in both). ``search``: one top-50 search's median time at
    this size (``dense_ms``, ``bm25_ms``)."""
    out = {name: one for name, one in _projected(steps, docs, questions, bench, search, target, "wall_s").items()}
    for name, one in _projected(steps, docs, questions, bench, search, target, "cpu_s").items():
        out[name]["cpu_s"] = one["s"]
    return out


def _projected(steps: dict, docs: int, questions: int, bench: dict, search: dict, target: int,
               clock: str) -> dict[str, dict]:
    """:func:`projected` by one clock (``wall_s`` or ``cpu_s``)."""
    grow = target / docs
    out = {}
    for name, row in steps.items():
        how = SCALING.get(name, "searches")
        if name == "embed":
            rate = row["texts"] / row[clock] if row.get("texts") else None
            out[name] = {"s": target / rate if rate else None, "how": f"{row['texts'] / row['wall_s']:.1f} documents/s "
                         f"measured ({row['texts'] / row['cpu_s']:.1f} a CPU second)" if rate else "no document embedded live"}
        elif how == "documents":
            out[name] = {"s": row[clock] * grow, "how": f"x {grow:.0f} (documents)"}
        elif how == "HNSW build at 1M":
            s, where = hnsw_build_at_scale(bench)
            out[name] = {"s": s, "how": f"measured: {where}"}
        elif how == "BM25 build at 1M":
            b = bench.get("bm25_scale_1000000")
            out[name] = {"s": b["build_s"] if b else row[clock] * grow,
                         "how": "measured: 1M chunks of 100 words (bm25_scale_1000000)" if b else f"x {grow:.0f}"}
        elif name.startswith("design_"):
            if "searches" in row:  # a model design: the dense searches it made; the model's time does not grow
                n_dense, n_bm25 = row["searches"], 0
            else:
                n_dense, n_bm25 = (n * questions for n in SEARCHES[name[len("design_"):]])
            dense_1m, bm25 = dense_query_at_scale(bench), bench.get("bm25_scale_1000000")
            extra = (n_dense * max(0.0, (dense_1m or 0) - search["dense_ms"]) +
                     n_bm25 * max(0.0, (bm25["median_ms"] if bm25 else 0) - search["bm25_ms"])) / 1000
            out[name] = {"s": row[clock] + extra, "how": f"+ {extra:.0f} s: each question's searches at 1M"
                         + (f" ({row['searches']} searches; the model's time as measured)" if "searches" in row else "")}
        elif name == "pages":
            out[name] = {"s": row[clock], "how": "as measured (grows with questions, not documents)"}
        elif how == "none":
            out[name] = {"s": row[clock], "how": "as measured (does not grow)"}
    return out


def throughput_row(steps: dict, docs: int, questions: int, bench: dict, target: int = TARGET) -> dict:
    """The ``study_throughput`` figures: each step as measured, the whole, and the projection to ``target``
    documents, with the step that takes longest there (the first to move to a GPU or a server)."""
    timed = {k: v for k, v in steps.items() if k != "search"}
    proj = projected(timed, docs, questions, bench, steps["search"], target)
    counted = [k for k in timed if not timed[k].get("measured_apart")]
    total = sum(timed[k]["wall_s"] for k in counted)
    total_1m = sum(proj[k]["s"] or 0 for k in counted)
    cpu_1m = sum(proj[k]["cpu_s"] or 0 for k in counted)
    first = max(counted, key=lambda k: proj[k]["cpu_s"] or 0)  # by CPU time: the shared machine's wall time varies
    peak = max(v.get("peak_rss_mb", 0) for v in timed.values())
    row = {"documents": docs, "questions": questions, "target": target, "steps": steps, "projected": proj,
           "total_wall_s": total, "total_cpu_s": sum(timed[k]["cpu_s"] for k in counted),
           "projected_total_s": total_1m, "projected_total_cpu_s": cpu_1m, "peak_rss_mb": peak, "first_to_move": first}
    model = [k for k in model_steps(timed) if k in counted]  # the model designs, on their own questions
    with_model = "".join(f" and {k[len('design_'):]} with the {timed[k].get('backend', 'local')} model over "
                         f"{timed[k]['questions']} questions" for k in model)
    row["summary"] = (f"make study's steps over {docs:,} abstracts and {questions} questions, the designs without a "
                      f"model{with_model}: {total / 60:.0f} min wall ({row['total_cpu_s'] / 60:.0f} min CPU), peak "
                      f"{peak:,.0f} MB; projected at {target:,} documents: {total_1m / 3600:.1f} h wall, "
                      f"{cpu_1m / 3600:.1f} h CPU, {(proj[first]['cpu_s'] or 0) / cpu_1m:.0%} of it {first}")
    return row


def model_steps(steps: dict) -> list[str]:
    """The steps of designs that asked a model, in the order they ran: those that record the searches they made
    (scripts/bench_study.py)."""
    return [k for k in step_order(steps) if "searches" in steps[k]]


def step_order(steps: dict) -> Sequence[str]:
    """The steps in the order they ran, the searches' latencies left out."""
    return [k for k in steps if k != "search"]


def refreshed(bench: dict) -> dict:
    """``bench`` (a bench.json's steps) with its ``study_throughput`` projected again from the figures at 1M it
    holds now (they may have been measured after the throughput was)."""
    t = bench.get("study_throughput")
    if not t:
        return bench
    again = throughput_row(t["steps"], t["documents"], t["questions"], bench, t["target"])
    return {**bench, "study_throughput": {**again, "method": t["method"]}}
