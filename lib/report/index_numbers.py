"""The index's numbers: the condition table's rows computed from the saved results (the scores
notebook's summary and differences from dense), which rows are scored, the verdict of each
comparison with dense (Holm-corrected paired randomization test where the saved differences carry
it, else the 95% paired bootstrap range), the saved loss account, and how each run was produced.
No sentences and no HTML here (``index_words`` and ``index_html``)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..config import ROOT
from .display import DASH, design_namer
from . import queries
from ..config import load_profile
from ..designs import design_names
from ..evaluation.scores import ALPHA


NOTEBOOK_LIST = ROOT / "notebooks" / "index.tsv"

DEFAULT_CONDITION = "full questions"

METRICS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}


def _notebook_rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def notebook_titles(path: Path = NOTEBOOK_LIST) -> dict[str, str]:
    """The report's notebooks in order, name -> title: the one list the Makefile runs and the index links."""
    return {row[0]: row[1] for row in _notebook_rows(path)}


def notebook_designs(path: Path = NOTEBOOK_LIST) -> dict[str, tuple[str, ...]]:
    """The designs each notebook runs, from the list's third column (names joined by ','; none for a page
    that only reads what the others saved, as pages 10 to 12 do: page 12 reads the saved runs and decision
    trees and asks no model): the pages left out by name when the model those designs ask cannot answer
    (lib/preflight.py pages_to_run)."""
    return {row[0]: tuple(d for d in (row[2] if len(row) > 2 else "").split(",") if d) for row in _notebook_rows(path)}


def _profile(profile):
    return load_profile(profile) if isinstance(profile, str) else profile

# --------------------------------------------------------------------------- the numbers
def conditions_from(designs: list[dict], deltas: pd.DataFrame, headroom: dict | None = None,
                    condition: str = DEFAULT_CONDITION) -> pd.DataFrame:
    """Per-design summaries (``scores.design_summary`` records) and their differences from dense
    (``scores.deltas``) in the condition table's columns (one condition)."""
    head = headroom or {}
    rows = []
    for d in designs:
        row = {"condition": condition, **{k: d.get(k) for k in (
            "design", "runs", "questions", "recall_at_5", "mrr_at_10", "cited", "searches", "latency_median_s", "latency_mean_s",
            "llm_calls", "cost_usd_per_q", "recall_at_5_min", "recall_at_5_max", "mrr_at_10_min", "mrr_at_10_max")},
               "tokens": (d.get("tokens_in") or 0) + (d.get("tokens_out") or 0),
               "dense_misses_at_5": head.get("dense_misses_at_5"), "max_recall_gain": head.get("max_recall_gain"),
               "not_scored": ""}
        for m in METRICS:
            dl = deltas[(deltas.design == d["design"]) & (deltas.metric == m)] if not deltas.empty else deltas
            row.update(delta_columns(dl, m))
        rows.append(row)
    return pd.DataFrame(rows)


def delta_columns(dl: pd.DataFrame, metric: str) -> dict:
    """One design's difference from dense on one measure (its row of ``scores.deltas``, or none) as the
    condition table's columns: ``<metric>_delta``, ``_low``, ``_high``, and where the saved differences
    carry the paired randomization test, ``_p_value`` and ``_p_holm`` (as the condition table names them), and
    where they say how it was computed, ``_test`` and ``_resamples``."""
    def first(col):
        return dl[col].iloc[0] if len(dl) and col in dl else None

    out = {f"{metric}_delta": first("delta"), f"{metric}_low": first("low"), f"{metric}_high": first("high")}
    if "p_holm" in dl:
        out.update({f"{metric}_p_value": first("p_value"), f"{metric}_p_holm": first("p_holm")})
    out.update({f"{metric}_{c}": first(c) for c in ("test", "resamples") if c in dl})  # how they were computed
    return out


def conditions_from_summary(results_dir: Path, condition: str = DEFAULT_CONDITION) -> pd.DataFrame:
    """The scores notebook's saved summary (``summary.json``, ``deltas.csv``) in the condition table's
    columns, for an index built without the table (one condition)."""
    path = Path(results_dir) / "summary.json"
    if not path.exists():
        return pd.DataFrame()
    summary = json.loads(path.read_text())
    dpath = Path(results_dir) / "deltas.csv"
    deltas = pd.read_csv(dpath) if dpath.exists() else pd.DataFrame(columns=["design", "metric"])
    return conditions_from(summary.get("designs", []), deltas, summary.get("headroom"), condition)


def _scored(table: pd.DataFrame) -> pd.DataFrame:
    """The rows with a complete, scored run."""
    if table.empty or "questions" not in table:
        return table.iloc[0:0]
    return table[table.questions.fillna(0) > 0]


def _registry_order(g: pd.DataFrame) -> pd.DataFrame:
    """A condition's rows in the designs' registry order (a design with only a partial run at its place)."""
    order = {d: i for i, d in enumerate(design_names())}
    return g.sort_values("design", key=lambda s: s.map(lambda d: order.get(d, len(order))), kind="stable")


def verdict(row, metric: str, alpha: float | None = None) -> str | None:
    """better / worse / same against dense, or None where not compared: the report's one rule for these
    words, on every page and the index. Where the row carries the Holm-corrected p-value of the paired
    randomization test (``<metric>_p_holm``, from the saved differences), the difference is measurable
    when it is below ``alpha`` (lib.evaluation.scores.ALPHA, 0.05) and its sign says which way; otherwise,
    when the 95% paired bootstrap range excludes 0. (:func:`verdict_words` puts it in words.)"""
    alpha = ALPHA if alpha is None else alpha
    p = row.get(f"{metric}_p_holm")
    delta = row.get(f"{metric}_delta")
    if p is not None and not pd.isna(p) and delta is not None and not pd.isna(delta):
        return ("better" if delta > 0 else "worse") if p < alpha and delta != 0 else "same"
    low, high = (None if v is None or pd.isna(v) else v for v in (row.get(f"{metric}_low"), row.get(f"{metric}_high")))
    if low is not None and low > 0:
        return "better"
    if high is not None and high < 0:
        return "worse"
    return None if low is None or high is None else "same"


def verdict_words(row, metric: str) -> str | None:
    """:func:`verdict` in words, the same on every page: "measurably better" / "measurably worse"; for a
    difference the corrected test does not call measurable, whether its 95% range still excludes 0 (then
    both are said: the range alone would call it, the whole family's correction does not)."""
    word = verdict(row, metric)
    if word in ("better", "worse"):
        return f"measurably {word}"
    if word is None:
        return None
    low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
    if (low is not None and not pd.isna(low) and low > 0) or (high is not None and not pd.isna(high) and high < 0):
        return ("not measurable: its 95% range excludes 0, but its Holm-corrected p is 0.05 or more once every "
                "comparison of the family is counted")
    return "no difference the questions can tell from zero"


def overall(row) -> str | None:
    """One word for both measures: better (one better, none worse), worse, mixed, same."""
    vs = {verdict(row, m) for m in METRICS} - {None}
    if not vs:
        return None
    if "better" in vs and "worse" in vs:
        return "mixed"
    return "better" if "better" in vs else ("worse" if "worse" in vs else "same")

ESCALATION_CHOICE = ROOT / "results" / "dev" / "escalation_selection.json"

def runs_table(profile, table: pd.DataFrame) -> pd.DataFrame:
    """How each run was produced, compactly: per design, the conditions with the same runs, models,
    backend and profile; a run stopped part-way is named with its question count (saved, not scored)."""
    cfg = _profile(profile)
    name = design_namer(cfg)
    rows = []
    for cname, cp in queries.condition_profiles(cfg).items():
        scored = _scored(table[table.condition == cname]) if not table.empty else table
        n = int(scored.questions.max()) if not scored.empty else None
        for d in design_names():
            prov = queries.provenance_table(cp, d)
            if prov.empty:
                continue
            runs, partial = [], []
            for f, q in zip(prov["run file"], prov["questions"]):
                k = int(Path(f).stem[3:])
                (runs if n is None or q >= n else partial).append(k if n is None or q >= n else f"run {k}: {q} of {n}")
            text = ", ".join(map(str, runs)) if runs else "none complete"
            if partial:
                text += f" ({'; '.join(partial)} questions, saved, not scored)"
            first = prov.iloc[0]
            models = []
            if pd.notna(first.get("embedder", None)):
                models.append(str(first["embedder"]))
            if isinstance(first.get("rerank_weights", None), dict):
                w = first["rerank_weights"]
                models.append("rerank " + " + ".join(f"{v:g}·{k}" for k, v in w.items() if v)
                              + (f" ({first['reranker']})" if w.get("cross_encoder") else ""))
            if "bm25" in prov and isinstance(first.get("bm25", None), dict):
                models.append("BM25")
            if pd.notna(first.get("llm_model", None)) and "llm_backend" in prov:
                models.append(str(first["llm_model"]))
            backend = ", ".join(sorted({str(b) for b in prov.get("llm_backend", pd.Series(dtype=str)).dropna()})) or DASH
            rows.append({"design": name(d), "condition": cname, "runs": text, "models": "; ".join(models) or DASH,
                         "backend": backend, "profile": ", ".join(sorted(set(prov.profile.astype(str))))})
    if not rows:
        return pd.DataFrame(columns=["design", "conditions", "runs", "models", "backend", "profile"])
    df = pd.DataFrame(rows)
    keys = ["design", "runs", "models", "backend", "profile"]
    grouped = df.groupby(keys, sort=False).condition.apply(lambda s: "; ".join(s)).reset_index()
    order = {n: i for i, n in enumerate(dict.fromkeys(df.design))}
    grouped = grouped.sort_values("design", key=lambda s: s.map(order), kind="stable")
    return grouped.rename(columns={"condition": "conditions"})[["design", "conditions", "runs", "models", "backend",
                                                                "profile"]]

BENCH_STEPS = {  # key in results/bench.json -> (step, what was measured, limit it is held to)
    "dense_query": ("dense search", "embed one question and search the collection exactly", "50 ms per query"),
    "embed_batch16": ("embedding the collection", "abstracts embedded per second, batches of 16", "1.5x the FLOP limit"),
    "rerank_offline_step": ("rerank, as the offline profile runs it", "dense top 50 reordered by the profile's weights",
                            "1.5 s per question"),
    "rerank_fp32_len128_b16": ("the cross-encoder alone", "cross-encoder over 50 candidates, 128 tokens",
                               "1.5 s per question"),
    "bm25_index": ("BM25 index", "bm25s over the collection's title + abstract", "none"),
    "bm25_query": ("BM25 query", "one question, top 50", "none"),
    "hybrid_query": ("hybrid query", "BM25 + dense (question embedded) + RRF, top 50", "none"),
    "snapshot_embed": ("embedding the whole snapshot", "papers embedded per second, projected to all papers",
                       "resumable; done once, shipped at float16"),
    "snapshot_dense_query": ("dense search over the whole snapshot", "exact search, one question",
                             "50 ms per query, else faiss-cpu"),
    "rerank_fp32_len256_b16": ("rerank at 256 tokens (not used)", "the same at 256 tokens", "1.5 s per question"),
    "llm_rewrite_call": ("multi-query rewrite (local LLM)", "median of the recorded calls", "none (recorded when run)"),
    "llm_agent_call": ("agent decision (local LLM)", "median of the recorded calls", "none (recorded when run)"),
    "llm_escalate_call": ("escalation decision (local LLM)", "median of the recorded calls", "none (recorded when run)"),
    "llm_loop_call": ("one tool-calling loop turn (local LLM)", "median of the recorded turns, prefix reuse on",
                      "none (recorded when run)"),
    "llm_llama_speed": ("llama.cpp's own speed (local LLM)", "prompt and generation tokens per second, llama_perf_context",
                        "the bound the calls are held to"),
    "llm_call_agent": ("agent decision through the call path", "the last recorded requests, replayed live in order",
                       "1.2x the llama.cpp bound"),
    "llm_agent_run": ("the agent over the test questions, live (local LLM)", "one pass over every question with a "
                      "record store of its own: its time, its decisions, its scores beside the saved runs'",
                      "15 min per run; decision median 2.0 s"),
    "llm_call_multiquery": ("multi-query rewrite through the call path", "the last recorded requests, replayed live in order",
                            "1.2x the llama.cpp bound"),
    "llm_call_loop": ("loop turn through the call path", "the last recorded requests, replayed live in order",
                      "1.2x the llama.cpp bound"),
    "llm_decoders": ("decoding paths side by side (local LLM)", "the fast path, a token at a time, llguidance's masks "
                     "with and without forced tokens and LlamaPromptLookupDecoding, over the last recorded requests, "
                     "in one run (docs/speed.md)", "1.2x the llama.cpp bound on agent and loop calls"),
    "llm_prefix_agent": ("prefix reuse, agent", "share of recorded prompt tokens a prefix cache could skip", "none"),
    "llm_prefix_multiquery": ("prefix reuse, multi-query", "share of recorded prompt tokens a prefix cache could skip",
                              "none"),
    "llm_prefix_loop": ("prefix reuse, loop", "share of recorded prompt tokens a prefix cache could skip", "none"),
    "llm_server_throughput": ("llama-cpp-python's server", "multi-query questions per minute, one request in flight "
                              "and openai_concurrency at once", "none"),
    "llm_server_calls_per_s": ("llama-cpp-python's server, requests in flight", "calls per second at 1, 4 and 8 "
                               "requests in flight (openai_concurrency), multi-query rewrites by the json_object route",
                               "none"),
    "llm_served_routes": ("the shipped model served (llama-cpp-python's server)", "an agent decision's time by each "
                          "constraint route (grammar, json_object; none: the same prompt unconstrained) beside the local "
                          "fast path, and how many replies are the local backend's", "none"),
    "report_rerender": ("re-rendering the report", "make report from the saved runs (scripts/bench_render.py)",
                        "2 minutes of CPU"),
    "report_rerender_warm": ("re-rendering the report again", "make report from the saved runs (scripts/bench_render.py)",
                             "2 minutes of CPU"),
    "report_rerender_versus": ("re-rendering the report against an earlier commit", "make report in fresh clones of "
                               "this commit and an earlier one, side by side in one run, each cold and warm: the "
                               "ratio of their CPU time (scripts/bench_render.py --clone --base)",
                               "0.6x the earlier commit's CPU"),
    "make_test": ("the tests, as a newcomer runs them", "make test in a fresh clone, the install included: its wall "
                  "time and the CPU time of every process it started, with the load on the cores (scripts/bench_tests.py)",
                  "6 min wall on 2 quiet cores, 600 s of CPU"),
}

SCALE_BACKEND_WORDS = {"numpy": "exact (numpy)", "faiss-flat": "exact (faiss flat)", "faiss-hnsw": "approximate (faiss HNSW)",
                       "milvus-hnsw": "approximate (Milvus Lite HNSW, embedded; docs/engine.md)"}


def scale_rows(steps: dict) -> list[tuple[str, str, str, str]]:
    """The ``make bench ARGS="--scale ..."`` figures, smallest collection first: dense search by backend
    over synthetic (or the snapshot's) vectors, and BM25 over synthetic chunks; and the ``--ann`` sweeps."""
    rows = []
    for key, row in steps.items():
        if key.startswith("dense_scale_"):
            label, backend = key[len("dense_scale_"):].rsplit("_", 1)
            kind = "the snapshot's own vectors" if label == "snapshot" else (
                "synthetic vectors like the snapshot's" if label.endswith("_spectrum") else
                "synthetic uniform vectors (HNSW's worst case, a bound: no embedder makes them; the real-shaped "
                "sweep is the figure to act on)")
            what = f"{SCALE_BACKEND_WORDS.get(backend, backend)} search, {row['rows']:,} x {row['dim']} {kind}"
            summary = row.get("summary", "")
            if row.get("sweep"):
                summary += "; recall@10 / ms at ef_search " + ", ".join(
                    f"{ef}: {v['recall_at_10']:.3f} / {v['median_ms']:.1f}"
                    for ef, v in sorted(row["sweep"].items(), key=lambda kv: int(kv[0])))
            order = list(SCALE_BACKEND_WORDS).index(backend) if backend in SCALE_BACKEND_WORDS else len(SCALE_BACKEND_WORDS)
            rows.append((row["rows"], label, order, ("dense search at scale", what, summary,
                                                     "50 ms per query exact, else faiss")))
        elif key.startswith("ann_"):  # make bench ARGS="--ann ...": every engine's recall against speed (docs/engine.md)
            kind = "the snapshot's real vectors" if key == "ann_real" else "real-shaped vectors grown from them"
            what = (f"recall@10 and @50 against exact search and query time per engine and setting, {row['rows']:,} x "
                    f"{row['dim']} {kind}, the study's questions as queries")
            rows.append((row["rows"], "~", -1, ("recall against speed", what, row.get("summary", ""),
                                                f"recall@10 >= {row.get('goal_recall_at_10', 0.95)} at the defaults")))
        elif key.startswith("bm25_scale_"):
            what = f"bm25s over {row['rows']:,} synthetic chunks, read back memory-mapped"
            rows.append((row["rows"], "~", 0, ("BM25 at scale", what, row.get("summary", ""), "none")))
    return [r[-1] for r in sorted(rows, key=lambda r: r[:3])]
