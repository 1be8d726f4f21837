"""Wiring: a profile's collection, questions, searcher and designs, as the notebooks use them."""
from __future__ import annotations

from pathlib import Path

from .collection import DataError, read_collection
from .config import Profile
from .designs import AgentDesign, DenseDesign, MultiQueryDesign, Question, RerankDesign, run_design, write_trec
from .index import DenseIndex, DenseSearcher, Embedder, paper_text
from .llm import make_llm
from .questions import read_questions

DESIGNS = ("dense", "rerank", "multiquery", "agent")
LLM_DESIGNS = ("multiquery", "agent")


def collection(profile: Profile) -> list[dict]:
    path = profile.data_dir / "collection.jsonl"
    if not path.exists():
        raise DataError(f"{path}: no collection yet; run notebook 01 (make notebook NB=01)")
    return read_collection(path)


def questions_path(profile: Profile) -> Path:
    if profile.questions_source == "user":
        if not profile.user_questions_path:
            raise DataError(f"profiles/{profile.name}.yaml: questions_source 'user' needs user_questions_path")
        return profile.path("user_questions_path")
    return profile.path("questions_path")


def all_questions(profile: Profile, papers: list[dict] | None = None) -> list[dict]:
    """Every question row (reviewed or not), checked against the collection's ids."""
    papers = papers if papers is not None else collection(profile)
    return read_questions(questions_path(profile), known_ids={p["id"] for p in papers})


def scored_questions(profile: Profile, papers: list[dict] | None = None) -> list[Question]:
    """The questions that are scored: review ok = 1, in the profile's form (full or short)."""
    out = []
    for row in all_questions(profile, papers):
        if not row["ok"]:
            continue
        text = row["question"]
        if profile.question_form == "short":
            if not row.get("short"):
                raise DataError(f"{questions_path(profile)}: qid {row['qid']}: field 'short' is empty "
                                "but question_form is 'short'")
            text = row["short"]
        out.append(Question(row["qid"], text, row["source_id"], row.get("style", "")))
    limit = profile.question_limit
    return out[:limit] if limit else out


def embedder(profile: Profile) -> Embedder:
    return Embedder(profile.embedder, profile.embedder_backend)


def searcher(profile: Profile, papers: list[dict] | None = None, progress: bool = True) -> DenseSearcher:
    papers = papers if papers is not None else collection(profile)
    emb = embedder(profile)
    return DenseSearcher(DenseIndex.build(papers, emb, progress=progress), emb)


def results_dir(profile: Profile) -> Path:
    """Runs of the short-question form are kept apart from the full questions' runs."""
    base = profile.results_dir
    return base / "short" if profile.question_form == "short" else base


def make_design(name: str, profile: Profile, search: DenseSearcher, papers: list[dict]):
    prov = profile.provenance()
    if name == "dense":
        prov = {k: prov[k] for k in ("profile", "embedder", "embedder_backend")}
        return DenseDesign(search, k=profile.dense_k, provenance=prov)
    if name == "rerank":
        from .rerank import CrossEncoderScorer

        prov = {**{k: prov[k] for k in ("profile", "embedder", "embedder_backend", "reranker", "reranker_backend")},
                "reranker_max_length": profile.reranker_max_length, "reranker_int8": profile.reranker_int8}
        scorer = CrossEncoderScorer(profile.reranker, profile.reranker_backend, max_length=profile.reranker_max_length,
                                    int8=profile.reranker_int8)
        return RerankDesign(search, scorer,
                            {p["id"]: paper_text(p) for p in papers}, k=profile.rerank_k, provenance=prov)
    llm = make_llm(profile.llm_backend, profile.llm_model, profile.llm_record_backend)
    style = "anthropic" if (profile.llm_backend == "anthropic" or profile.llm_record_backend == "anthropic") else "local"
    prov = {**{k: prov[k] for k in ("profile", "embedder", "embedder_backend", "llm_model")},
            "llm_backend": llm.name, "prompt_style": style, "temperature": profile.llm_temperature}
    if name == "multiquery":
        return MultiQueryDesign(search, llm, style, k=profile.dense_k, rrf_k=profile.rrf_k,
                                temperature=profile.llm_temperature, provenance=prov)
    if name == "agent":
        return AgentDesign(search, llm, {p["id"]: p["title"] for p in papers}, style, k=profile.dense_k,
                           rrf_k=profile.rrf_k, max_searches=profile.agent_max_searches,
                           temperature=profile.llm_temperature, provenance=prov)
    raise ValueError(f"unknown design {name!r}; one of {DESIGNS}")


RECORD_KIND = {"multiquery": "rewrite", "agent": "agent"}


def recorded_runs(profile: Profile, name: str) -> list[int]:
    """Runs of an LLM design that the replayed record holds calls for."""
    llm = make_llm("replay", profile.llm_model, profile.llm_record_backend)
    kind = RECORD_KIND[name]
    return sorted({rec["run"] for rec in llm.store._load(kind).values()})


def run(profile: Profile, name: str, runs: list[int] | None = None, progress: bool = True):
    """Run (or resume) one design for the given runs; writes JSON-lines and TREC files.

    With the replay backend, the default runs are those the record holds, and a run whose record
    stops part-way (a recording that was interrupted) is replayed up to that point and reported.
    """
    from .llm import ReplayMiss

    if isinstance(runs, str):  # papermill -p passes "[2]" as text
        import yaml

        runs = yaml.safe_load(runs)
    if isinstance(runs, int):
        runs = [runs]
    papers = collection(profile)
    qs = scored_questions(profile, papers)
    replay = name in LLM_DESIGNS and profile.llm_backend == "replay"
    if runs is None:
        runs = [1] if name not in LLM_DESIGNS else (
            [r for r in recorded_runs(profile, name) if r <= profile.n_runs] if replay
            else list(range(1, profile.n_runs + 1)))
    design = make_design(name, profile, searcher(profile, papers, progress), papers)
    out = {}
    for k in runs:
        try:
            res = run_design(design, qs, k, results_dir(profile), progress=progress)
        except ReplayMiss:
            if not replay:
                raise
            from .designs import read_results, run_path

            res = read_results(run_path(results_dir(profile), name, k))
            print(f"{name} run {k}: the record stops after {len(res)} of {len(qs)} questions; "
                  "the rest were never run (scores use the questions every design answered)")
        write_trec(res, results_dir(profile) / name / f"run{k}.trec", f"{name}-run{k}")
        out[k] = res
    return out


def design_summary(profile: Profile, name: str):
    """A design's short summary from its saved runs (recall@5, MRR@10, searches, latency, cost)."""
    from .designs import read_results
    from .metrics import per_question
    from .scores import design_summary as summarise

    sources = {q.qid: q.source_id for q in scored_questions(profile)}
    res = [r for p in sorted((results_dir(profile) / name).glob("run*.jsonl")) for r in read_results(p)]
    pq = per_question(res, sources)
    if pq.empty:
        return pq
    cols = ["design", "runs", "questions", "recall_at_5", "mrr_at_10", "searches", "latency_median_s",
            "llm_calls", "cost_usd_per_q", "cost_total_usd"]
    return summarise(pq)[cols]


def provenance_table(profile: Profile, name: str):
    """Which profile, models and backend produced each saved run of a design."""
    import json

    import pandas as pd

    rows = []
    for p in sorted((results_dir(profile) / name).glob("run*.jsonl")):
        with open(p) as fh:
            first = fh.readline()
            n = 1 + sum(1 for _ in fh) if first else 0
        if first:
            prov = json.loads(first)["provenance"]
            rows.append({"run file": str(p.relative_to(profile.results_dir.parent)), "questions": n, **prov})
    return pd.DataFrame(rows)
