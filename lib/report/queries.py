"""What the pages read from the saved runs (reading only, no model call): the conditions of the grid, the
condition and design tables, a design page, the escalation outcomes, the provenance of each run, and one
condition's saved records as the loss, merge and page-12 measurements take them (:func:`condition_records`,
:func:`condition_merges`). ``lib.pipeline`` makes the parts and runs; the measurements in
``lib.evaluation`` take what is read here as arguments."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..config import Profile, load_profile
from ..designs import BASELINE, Result, design_names
from ..designs.loop import LOOP_DESIGNS
from ..errors import DataError
from ..evaluation import power, scores
from ..evaluation.escalation import outcomes
from ..evaluation.loss import LOSS_DESIGNS, SHOWN, ConditionRecords, cached_search, complete_runs, search_texts
from ..evaluation.merges import ARM_NAMES, DEPTH, MERGE_DESIGNS, merge_scores, merge_table, scored_search
from ..evaluation.metrics import per_question, scores_of
from ..io import read_cache, seal, write_bytes
from ..paths import ROOT, shown_path
from .inputs import code_digest
from ..pipeline import ProfileParts, cache_dirs, record_check, results_dir, run, scored_questions
from ..runs import read_checked, read_results, run_files


# --------------------------------------------------------------------------- the grid and its tables
def load_scored(profile: Profile, results: bool = True) -> scores.Scored:
    """The profile's saved runs, each record checked (:func:`record_check`), restricted the one way
    every table of the report uses. Kept in this process by what they are read from (:func:`_table_key`: the
    settings and every run file of the grid), so the pages of one `make report` read each condition once; each
    call gets its own copies of the tables. Their tables are also kept on disk (:func:`stored_table`, without the
    results themselves), so a caller that needs only the tables (``results=False``: the index, rendered in
    another process than the pages) reads them instead of reading and checking every run file again (its
    ``results`` then empty)."""
    key = _table_key(profile)
    if key not in _SCORED and not results:
        kept = _read_stored("scores", key)
        if kept is not None:
            return _copied(kept)
    if key not in _SCORED:
        if len(_SCORED) >= 8:
            _SCORED.pop(next(iter(_SCORED)))
        parts = ProfileParts(profile, progress=False)
        _SCORED[key] = scores.load_scored(scored_questions(profile, parts.papers), results_dir(profile),
                                          record_check(profile, parts))
        _write_stored("scores", key, dataclasses.replace(_SCORED[key], results=[]))
    return _copied(_SCORED[key])


def _copied(sc: scores.Scored) -> scores.Scored:
    return scores.Scored(sc.questions, sc.pq_all.copy(), list(sc.partial), list(sc.common), sc.pq.copy(),
                         list(sc.results))


_SCORED: dict[str, scores.Scored] = {}  # load_scored's last few, by what they were read from


def summary_for_profile(profile: Profile) -> pd.DataFrame:
    """The per-design summary over the questions every scored run answered (as the scores notebook)."""
    pq = load_scored(profile).pq
    return pd.DataFrame() if pq.empty else scores.design_summary(pq)


# the conditions of the grid: overrides of the profile, each with its own results folder
CONDITIONS = {
    "full questions": {},
    "short questions": {"question_form": "short"},
    "two-part questions": {"question_set": "twopart"},
    "full questions, whole snapshot": {"collection_scope": "snapshot"},
    "short questions, whole snapshot": {"collection_scope": "snapshot", "question_form": "short"},
}


def condition_profiles(profile: Profile) -> dict[str, Profile]:
    """The profile in each condition of the grid (two-part only where the profile has that set; a study of
    your own data has one condition, its own questions over its own documents)."""
    out = {}
    for name, over in CONDITIONS.items():
        if over.get("question_set") == "twopart" and not profile.twopart_questions_path:
            continue
        if profile.collection_source == "documents" and over:  # your own data: its questions as given, its documents
            continue
        out[name] = load_profile(profile.name, **{**profile.overrides, **over})
    return out


def condition_of(profile: Profile) -> tuple[str | None, Profile]:
    """The condition a profile runs in (its name in ``CONDITIONS``; None where its results folder is
    none of the grid's) and the profile of the grid it belongs to: the same profile with every
    condition setting at its default, whose results folder holds the grid's files (comparisons.csv)."""
    settings = {k for over in CONDITIONS.values() for k in over}
    base = load_profile(profile.name, **{k: v for k, v in profile.overrides.items() if k not in settings})
    here = results_dir(profile)
    return next((c for c, cp in condition_profiles(base).items() if results_dir(cp) == here), None), base


def saved_runs_state(profile: Profile) -> tuple[tuple[str, int], ...]:
    """What the pages' comparisons are computed from, cheaply: every run file of every design in every
    condition of the profile's grid (``condition_of``), by path and size (a run grows as it is saved).
    ``lib.report.execute.run_notebooks`` executes a page again when this changed after it ran."""
    _, base = condition_of(profile)
    files = {p for cp in condition_profiles(base).values() for d in design_names() for p in run_files(results_dir(cp), d)}
    return tuple(sorted((str(p), p.stat().st_size) for p in files if p.exists()))


_TABLES: dict[str, pd.DataFrame] = {}  # condition_table's last few results, by what they were computed from


def _table_key(profile: Profile) -> str:
    """What a condition table is computed from, cheaply: the profile's settings and overrides, every run file
    of its grid by path and size (:func:`saved_runs_state`) and every file a setting names, by size and time."""
    files = sorted({str(v) for v in profile.settings.values() if isinstance(v, str) and v and Path(v).is_file()})
    state = {"settings": profile.settings, "overrides": profile.overrides, "runs": saved_runs_state(profile),
             "files": [(f, Path(f).stat().st_size, Path(f).stat().st_mtime_ns) for f in files]}
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()


TABLE_CACHE = ROOT / "build" / "cache" / "tables"  # tables kept between processes (the kernel, the index's render)
_UNREADABLE = (OSError, ValueError, EOFError, AttributeError, ImportError, TypeError, pickle.UnpicklingError)


def stored_table(name: str, key: str, compute) -> pd.DataFrame:
    """``compute()``'s table, kept in build/cache/tables/ by ``key`` (what it is computed from) and the code
    (:func:`code_digest`), its digest sealed (:func:`lib.io.read_cache`: a damaged file is named and computed
    again): `make report` computes a table once for its pages and its index, which render in two processes, and
    a rerun with nothing changed reads it."""
    table = _read_stored(name, key)
    if table is None:
        table = compute()
        _write_stored(name, key, table)
    return table


def _stored_path(name: str, key: str) -> Path:
    return TABLE_CACHE / f"{name}-{hashlib.sha256((key + code_digest()).encode()).hexdigest()[:32]}.pkl"


def _read_stored(name: str, key: str):
    """What :func:`_write_stored` kept under ``name`` and ``key`` with this code, or None."""
    return read_cache(_stored_path(name, key), pd.read_pickle, f"{name} table", _UNREADABLE)


def _write_stored(name: str, key: str, value) -> None:
    path = _stored_path(name, key)
    write_bytes(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    seal(path)


def condition_table(profile: Profile) -> pd.DataFrame:
    """Condition x design: recall@5 and MRR@10 with their paired ranges against dense in that
    condition and the paired randomization test's p-values, Holm-corrected over the whole table
    (``<metric>_p_value``, ``<metric>_p_holm``, ``<metric>_measurable``, ``holm_family``), the
    citation hit rate of the designs that cite papers, dense's headroom, searches and
    latency, computed from the saved runs (reading only).
    Runs stopped part-way are left out and named. Kept in this process by what it was computed from
    (:func:`_table_key`), so the pages of one ``make report`` compute it once; a run saved since, a changed
    setting or a changed file named by a setting computes it again; kept on disk too (:func:`stored_table`), so
    the index's render (another process) and a rerun read it."""
    key = _table_key(profile)
    if key not in _TABLES:
        if len(_TABLES) >= 4:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[key] = stored_table("conditions", key, lambda: _condition_table(profile))
    return _TABLES[key].copy()


def _condition_table(profile: Profile) -> pd.DataFrame:
    rows = []
    for cname, cp in condition_profiles(profile).items():
        sc = load_scored(cp)
        if sc.pq.empty:
            continue
        summary = scores.design_summary(sc.pq).set_index("design")
        deltas = scores.deltas(sc.pq, n_resamples=cp.bootstrap_resamples, seed=cp.bootstrap_seed)
        head = scores.headroom(sc.pq)
        both = sc.pq.groupby("design")["both_found_at_10"].mean() if "both_found_at_10" in sc.pq else {}
        for d, r in summary.iterrows():
            row = {"condition": cname, "design": d, "runs": int(r.runs), "questions": int(r.questions),
                   "both_found_at_10": both.get(d) if len(both) else None,
                   "recall_at_5": r.recall_at_5, "mrr_at_10": r.mrr_at_10, "cited": r.get("cited"), "searches": r.searches,
                   **{f"{m}_{e}": r[f"{m}_{e}"] for m in scores.METRICS for e in ("min", "max")},
                   "latency_median_s": r.latency_median_s, "latency_mean_s": r.latency_mean_s,
                   "llm_calls": r.llm_calls, "tokens": r.tokens_in + r.tokens_out,
                   "cost_usd_per_q": r.cost_usd_per_q, "dense_misses_at_5": head["dense_misses_at_5"],
                   "max_recall_gain": head["max_recall_gain"],
                   "not_scored": ", ".join(f"run {k}" for dd, k in sc.partial if dd == d)}
            for m in scores.METRICS:
                dl = deltas[(deltas.design == d) & (deltas.metric == m)]
                row.update({f"{m}_delta": None, f"{m}_low": None, f"{m}_high": None, f"{m}_p_value": None,
                            f"{m}_test": None, f"{m}_resamples": None}
                           if dl.empty else
                           {f"{m}_delta": dl.delta.iloc[0], f"{m}_low": dl.low.iloc[0], f"{m}_high": dl.high.iloc[0],
                            f"{m}_p_value": dl.p_value.iloc[0], f"{m}_test": dl.test.iloc[0],
                            f"{m}_resamples": dl.resamples.iloc[0]})
            rows.append(row)
        for d, k in sc.partial:
            if d not in summary.index:
                rows.append({"condition": cname, "design": d, "runs": 0, "questions": 0,
                             "not_scored": f"run {k} stopped part-way"})
    # Holm's correction over every comparison the table (and so the index) makes; an escalate that called no
    # model anywhere (its threshold chosen on dev never escalates) repeats hybrid_rerank's rows, which the
    # tables leave out, and so leaves the family
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    idle = table.design.eq("escalate") & bool((table.loc[table.design.eq("escalate"), "llm_calls"].fillna(0) == 0).all())
    return scores.holm_wide(table, left_out=idle)


def condition_breakdowns(profile: Profile) -> dict[str, pd.DataFrame]:
    """Per condition (reading only), over the questions its table scores: each design against dense by
    question style and by question length (terciles of words), each group with its question count and
    paired bootstrap range, and the power of the paired comparison (``lib.evaluation.power``). Every
    row names its condition."""
    out: dict[str, list[pd.DataFrame]] = {"by_style": [], "by_length": [], "power": []}
    for cname, cp in condition_profiles(profile).items():
        sc = load_scored(cp)
        if sc.pq.empty:
            continue
        keep = set(sc.common)
        qs = [q for q in sc.questions if q.qid in keep]
        n, seed = cp.bootstrap_resamples, cp.bootstrap_seed
        parts = {"by_style": scores.breakdown(sc.pq, {q.qid: q.style or "(none)" for q in qs}, n, seed),
                 "by_length": scores.breakdown(sc.pq, scores.length_bins(qs), n, seed),
                 "power": power.power_table(sc.pq)}
        for k, df in parts.items():
            out[k].append(df.assign(condition=cname)[["condition", *df.columns]])
    return {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in out.items()}


SUMMARY_COLUMNS = ["design", "runs", "questions", "recall_at_5", "mrr_at_10", "searches", "latency_median_s",
                   "llm_calls", "cost_usd_per_q", "cost_total_usd"]


def saved_design_summary(profile: Profile, name: str) -> pd.DataFrame:
    """One design's summary from its saved complete runs (the partial-run rule of the scores notebook),
    every record checked first."""
    parts = ProfileParts(profile, progress=False)
    sources = {q.qid: q.source_id for q in scored_questions(profile, parts.papers)}
    check = record_check(profile, parts)
    res = [r for p in run_files(results_dir(profile), name) for r in read_checked(p, name, check)]
    if not any(r.qid in sources for r in res):  # no run saved yet
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    pq = scores.scored_runs(per_question(res, sources), len(sources))
    return pq if pq.empty else scores.design_summary(pq)[SUMMARY_COLUMNS]


def provenance_table(profile: Profile, name: str) -> pd.DataFrame:
    """Which profile, models and backend produced each saved run of a design."""
    rows = []
    for p in run_files(results_dir(profile), name):
        res = read_results(p)
        if res:
            rows.append({"run file": str(p.relative_to(profile.results_dir.parent)), "questions": len(res),
                         **res[0].provenance})
    return pd.DataFrame(rows)


def escalation_outcomes(profile: Profile) -> pd.DataFrame:
    """Per condition and run of escalate (reading only): how often it escalated, how often that
    helped or hurt MRR@10 against its own first pass, and its LLM use against always running the
    agent (the agent design's saved runs in the same condition)."""
    rows = []
    for cname, cp in condition_profiles(profile).items():
        qs = scored_questions(cp)
        sources, rdir = {q.qid: q.source_id for q in qs}, results_dir(cp)
        agent = [r for path in run_files(rdir, "agent") for r in read_results(path) if r.qid in sources]
        agent_calls = sum(r.llm_calls for r in agent) / len(agent) if agent else None
        agent_tokens = sum(r.tokens_in + r.tokens_out for r in agent) / len(agent) if agent else None
        for path in run_files(rdir, "escalate"):
            res = [r for r in read_results(path) if r.qid in sources]
            if len(res) < len(qs):  # a run stopped part-way is left out
                continue
            o = outcomes(res, sources)
            calls, tokens = o["llm_calls"] / o["questions"], o["tokens"] / o["questions"]
            rows.append({"condition": cname, "run": int(path.stem[3:]), "questions": o["questions"],
                         "escalated": o["escalated"], "escalated_share": o["rate"], "helped": o["helped"],
                         "hurt": o["hurt"], "unchanged": o["unchanged"], "llm_calls_per_q": calls,
                         "agent_llm_calls_per_q": agent_calls, "tokens_per_q": tokens, "agent_tokens_per_q": agent_tokens,
                         "calls_saved_vs_agent": (1 - calls / agent_calls) if agent_calls else None,
                         "cost_usd_per_q": o["cost_usd"] / o["questions"]})
    return pd.DataFrame(rows)


def design_page(profile: Profile, name: str, runs=None) -> dict:
    """What a design notebook shows: run (or resume) the design, then its summary and provenance."""
    out = run(profile, name, runs=runs)
    return {"runs": out, "summary": saved_design_summary(profile, name),
            "provenance": provenance_table(profile, name)}


# --------------------------------------------------------------------------- one condition's records
def condition_records(profile, designs: Sequence[str] = LOSS_DESIGNS, folder: Path | None = None) -> ConditionRecords:
    """A condition's saved records (``profile``: that condition's profile), every record checked as the scorer
    checks it; a run stopped part-way or whose records fail the check is named as not scored. Reads only;
    every text is searched with the condition's dense searcher (lists cached on disk: :func:`cached_search`)."""
    rdir = results_dir(profile)
    files = {d: run_files(rdir, d) for d in designs}
    if not any(files.values()):
        return ConditionRecords([], {d: ([], []) for d in designs}, profile=profile)
    parts = ProfileParts(profile, progress=False)
    qs = scored_questions(profile, parts.papers)
    qids = {q.qid for q in qs}
    check = record_check(profile, parts)
    chosen: dict[str, tuple[list[Result], list[str]]] = {}
    for d in designs:
        runs: dict[int, list[Result] | str] = {}
        for path in files[d]:
            try:
                runs[int(path.stem[3:])] = read_checked(path, d, check)
            except DataError as exc:
                runs[int(path.stem[3:])] = f"its records fail the check ({exc})"
        chosen[d] = complete_runs(runs, qids)
    texts = search_texts([r for res, _ in chosen.values() for r in res], qs)
    search = None
    if any(res for res, _ in chosen.values()):
        bases: tuple[Path, ...] = ()
        if folder is None:  # the profile's own cache of page 12's lists, then the shipped one
            folder, bases = cache_dirs(profile, "why")
        search = cached_search(profile, parts, texts, folder, bases=bases)
    dense = None
    if run_files(rdir, "dense"):
        try:
            dense = {r.qid: list(r.ranked_ids) for r in read_checked(run_files(rdir, "dense")[0], "dense", check)}
        except DataError:
            dense = None
    shown = {d: profile.loop_search_k if d in LOOP_DESIGNS else SHOWN for d in designs}
    return ConditionRecords(qs, chosen, search, dense, shown, profile)


def conditions_records(profile, designs: Sequence[str] = LOSS_DESIGNS) -> dict[str, "ConditionRecords | str"]:
    """:func:`condition_records` in every condition of the grid (``condition_profiles``), each
    with its profile (``records[c].profile``); a condition whose saved records cannot be read: why, in words."""
    out: dict[str, ConditionRecords | str] = {}
    for cname, cp in condition_profiles(profile).items():
        try:
            out[cname] = condition_records(cp, designs)
            out[cname].profile = cp
        except DataError as exc:
            out[cname] = f"not read: {exc}"
    return out


def condition_merges(profile, condition: str, designs: Sequence[str] = MERGE_DESIGNS, arms=ARM_NAMES,
                     chosen: str | None = None) -> pd.DataFrame:
    """Every arm over the complete saved runs of ``designs`` in one condition (``profile``: its
    profile), each record checked as the scorer checks it, the queries searched again with the
    condition's dense search; compared with the condition's saved dense run. Empty when nothing is
    saved; the ``provenance`` column names the runs and the search."""
    rdir = results_dir(profile)
    files = {d: run_files(rdir, d) for d in designs}
    if not any(files.values()) or not run_files(rdir, BASELINE):
        return pd.DataFrame()
    parts = ProfileParts(profile, progress=False)
    qs = scored_questions(profile, parts.papers)
    sources = {q.qid: q.source_id for q in qs}
    check = record_check(profile, parts)
    dense_res = [r for r in read_checked(run_files(rdir, BASELINE)[0], BASELINE, check) if r.qid in sources]
    dense = {r.qid: scores_of(r.ranked_ids, sources[r.qid]) for r in dense_res}
    results, used = [], {}
    for d in designs:
        runs = {int(p.stem[3:]): read_checked(p, d, check) for p in files[d]}
        complete, _ = complete_runs(runs, set(sources))
        results += complete
        used[d] = sorted({r.run for r in complete})
    if not results:
        return pd.DataFrame()
    search = scored_search(parts.searcher, list(dict.fromkeys(t for r in results for t in r.queries)), DEPTH)
    rows = merge_scores(results, sources, search, arms, DEPTH, profile.rrf_k)
    table = merge_table(rows, dense, chosen, profile.bootstrap_resamples, profile.bootstrap_seed)
    where = shown_path(rdir)
    table["provenance"] = [f"{where}/{d}/run{{{','.join(map(str, used[d]))}}}.jsonl: saved queries searched again "
                           f"with {profile.embedder} dense, depth {DEPTH}, rrf_k {profile.rrf_k}; "
                           f"dense: {where}/{BASELINE}/run1.jsonl" for d in table.design]
    return table.assign(condition=condition)[["condition", *table.columns]]


def conditions_merges(profile, chosen: str | None = None, designs: Sequence[str] = MERGE_DESIGNS) -> pd.DataFrame:
    """:func:`condition_merges` in every condition of the grid (``condition_profiles``)."""
    frames = [condition_merges(cp, cname, designs, chosen=chosen)
              for cname, cp in condition_profiles(profile).items()]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
