"""Page 12's tables over every condition and local model, from the saved records (no model call):
the decision paths of every LLM design with saved runs (:mod:`lib.evaluation.why_paths`), the judges over the
agent's decision trees and their grid (:mod:`lib.evaluation.judges`), the quality of the designs' and the
trees' queries (:mod:`lib.evaluation.query_quality`) and the query side's bound
(:mod:`lib.evaluation.query_bound`). Written beside the profile's results as ``why_paths.csv``,
``judges.csv``, ``judges_grid.csv``, ``query_quality.csv``, ``query_bound.csv`` and ``query_bound_grid.csv``."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..config import load_profile
from ..errors import DataError, ProfileError
from ..llm import contract
from ..llm.local_backend import LOCAL_MODELS
from ..llm.records import RECORDS_DIR, decoding_of, read_records
from ..evaluation import judges, query_bound, query_quality, why_paths
from ..evaluation.loss import SHOWN, ConditionRecords
from ..runs import read_results, run_files
from .queries import condition_records

TREE = "agent_tree"


@dataclass
class WhyTables:
    paths: pd.DataFrame
    judges: pd.DataFrame
    grid: pd.DataFrame
    quality: pd.DataFrame
    bound: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=query_bound.BOUND_COLUMNS))
    bound_grid: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=query_bound.GRID_COLUMNS))
    trees: dict = field(default_factory=dict)  # (condition, model) -> questions with a tree

    def frames(self) -> dict[str, pd.DataFrame]:
        return {"paths": self.paths, "judges": self.judges, "grid": self.grid, "quality": self.quality,
                "bound": self.bound, "bound_grid": self.bound_grid}


# the designs page 12 takes apart: every LLM design of a known kind (lib.evaluation.why_paths.PATH_KINDS)
DESIGNS = why_paths.PATH_DESIGNS


def model_records(records: ConditionRecords, designs: Sequence[str] = DESIGNS) -> dict[str, ConditionRecords]:
    """The profile model's records (``records``, as they are) and every other local model's saved records in
    the same condition; a model with no saved run of ``designs`` and no tree, or whose profile or records
    cannot be read, is left out."""
    cp = records.profile
    own = cp.settings["llm_model"]
    out = {own: records}
    for model in LOCAL_MODELS:
        if model == own:
            continue
        try:
            rec = condition_records(load_profile(cp.name, **{**cp.overrides, "llm_model": model}), designs)
        except (DataError, ProfileError):
            continue
        if any(res for res, _ in rec.runs.values()) or tree_results(rec):
            out[model] = rec
    return out


def tree_results(rec: ConditionRecords) -> list:
    """The saved decision-tree results of a condition's model (its first run file; none when not run)."""
    files = run_files(rec.profile.results_dir, TREE) if rec.profile is not None else []
    return read_results(files[0]) if files else []


def agent_runs(rec: ConditionRecords) -> dict[int, dict[str, list[str]]]:
    """The agent's complete saved runs of a condition's model: run -> question -> its saved list."""
    out: dict[int, dict[str, list[str]]] = {}
    for r in rec.runs.get("agent", ([], []))[0]:
        out.setdefault(r.run, {})[r.qid] = list(r.ranked_ids)
    return out


def condition_tables(condition: str, records: ConditionRecords) -> WhyTables:
    """One condition's tables over every local model with saved runs or trees."""
    models = model_records(records)
    dense = next((r.dense for r in models.values() if r.dense), None)
    paths = why_paths.condition_paths(condition, models)
    jrows, grows, brows, bgrid, saved, trees = [], [], [], [], {}, {}
    for model, rec in models.items():
        tree = tree_results(rec)
        if not tree or not dense:
            continue
        saved[model] = tree
        cap, rrf_k = rec.profile.agent_max_searches, rec.profile.rrf_k
        chains = judges.condition_chains(tree, rec.questions, dense, rrf_k, cap, SHOWN)
        if not chains:
            continue
        trees[(condition, model)] = len(chains)
        measured = contract.route_fields(contract.route_of_results(tree))  # the prompt and constraint it ran under
        jrows += [{**row, **measured} for row in judges.judge_rows(
            chains, condition, model, rec.profile.bootstrap_resamples, rec.profile.bootstrap_seed,
            runs=agent_runs(rec), tree_run=tree[0].run)]
        grows += judges.grid_rows(chains, condition, model)
        b, bg = query_bound.bound_tables(chains, condition, model, rrf_k, SHOWN)
        brows, bgrid = brows + b, bgrid + bg
    bound, bound_grid = query_bound.frames(brows, bgrid)
    return WhyTables(paths, judges.frame(jrows), pd.DataFrame(grows),
                     query_quality.condition_quality(condition, models, saved), bound, bound_grid, trees)


def conditions_tables(records: dict[str, "ConditionRecords | str"]) -> WhyTables:
    """:func:`condition_tables` over every condition read (``lib.report.queries.conditions_records``)."""
    parts = [condition_tables(c, rec) for c, rec in records.items() if not isinstance(rec, str)]
    def cat(name, cols=None):
        frames = [getattr(p, name) for p in parts if not getattr(p, name).empty]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
    trees = {k: v for p in parts for k, v in p.trees.items()}
    return WhyTables(cat("paths", why_paths.COLUMNS), cat("judges", judges.JUDGE_COLUMNS), cat("grid"),
                     cat("quality", query_quality.QUALITY_COLUMNS), cat("bound", query_bound.BOUND_COLUMNS),
                     cat("bound_grid", query_bound.GRID_COLUMNS), trees)


def records_root(profile) -> Path:
    """Where the model records of a profile's runs are: a study's own (``llm_records`` in its results folder:
    its page never counts the shipped study's replies), else the shipped records."""
    return profile.own_dir / "llm_records" if profile.study_dir is not None else RECORDS_DIR


# the record kinds each LLM design's replies are saved under (lib.designs: its requests' ``kind``)
DESIGN_KINDS = {"agent": ("agent",), "agent_rerank": ("agent",), "multiquery": ("rewrite",), "loop": ("loop",),
                 "loop_question_first": ("loop_question_first",), "escalate": ("escalate", "agent"),
                 "decompose": ("decompose",), "hyde": ("hyde",)}


def _asked(rec: dict) -> set[str]:
    """The questions a record's request asks (each user turn's ``Question: ...`` line)."""
    out = set()
    for role, text in rec.get("request", {}).get("messages", []):
        if role == "user" and isinstance(text, str) and text.startswith("Question: "):
            out.add(text[len("Question: "):].split("\n", 1)[0])
    return out


# the saved runs that are no condition's: the dev set's choices and the pilot
NOT_A_CONDITION = ("dev", "pilot", "variants")


def run_decoding(results_root: Path, records_dirs: Sequence[Path] = (RECORDS_DIR,),
                 skip: Sequence[str] = NOT_A_CONDITION) -> pd.DataFrame:
    """Which decoding path made each saved run of an LLM design under ``results_root`` (every condition and model
    folder in it): its questions' replies are looked up among the records (in ``records_dirs``) of its model, kinds
    and run number by the question each request asks (``lib.llm.records.decoding_of``). One row per run file: the
    paths found, with how many of its questions each made; "no model call" for a question answered without one (an
    escalate that did not escalate), "no record found" where none was found. Run files in a folder named in ``skip``
    are left out."""
    index: dict[tuple, dict[tuple[int, str], set[str]]] = {}

    def paths(folder: str, kind: str) -> dict[tuple[int, str], set[str]]:
        if (folder, kind) not in index:
            found: dict[tuple[int, str], set[str]] = {}
            for root in records_dirs:
                for rec in read_records(Path(root) / folder / f"{kind}.jsonl"):
                    for q in _asked(rec):
                        found.setdefault((rec.get("run"), q), set()).add(decoding_of(rec))
            index[(folder, kind)] = found
        return index[(folder, kind)]

    rows = []
    for design, kinds in DESIGN_KINDS.items():
        for path in sorted(Path(results_root).rglob(f"{design}/run*.jsonl")):
            if set(path.relative_to(results_root).parts) & set(skip):
                continue
            results = read_results(path)
            if not results:
                continue
            prov = results[0].provenance
            folder = f"{prov.get('llm_record_backend') or prov.get('llm_backend')}__{prov.get('llm_model')}"
            counts: dict[str, int] = {}
            for r in results:
                made = {"no model call"} if not r.llm_calls else set().union(
                    *(paths(folder, k).get((r.run, r.queries[0]), set()) for k in kinds)) if r.queries else set()
                for how in made or {"no record found"}:
                    counts[how] = counts.get(how, 0) + 1
            rows.append({"run file": path.relative_to(results_root).as_posix(), "model": prov.get("llm_model"),
                         "questions": len(results),
                         "decoding": ", ".join(f"{k} ({v})" for k, v in sorted(counts.items()))})
    return pd.DataFrame(rows, columns=["run file", "model", "questions", "decoding"])


def decoding_table(records_dir=RECORDS_DIR) -> pd.DataFrame:
    """How every saved reply was decoded, per model, record kind and run (``lib.llm.records.decoding_of``):
    the table that says which saved run was made with which decoding path."""
    rows = []
    for folder in sorted(p for p in records_dir.iterdir() if p.is_dir()) if records_dir.exists() else []:
        for f in sorted(folder.glob("*.jsonl")):
            for rec in read_records(f):
                rows.append({"model": folder.name.split("__", 1)[-1], "kind": rec.get("kind", f.stem),
                             "run": rec.get("run"), "decoding": decoding_of(rec)})
    if not rows:
        return pd.DataFrame(columns=["model", "kind", "run", "decoding", "replies"])
    df = pd.DataFrame(rows)
    return df.groupby(["model", "kind", "run", "decoding"]).size().rename("replies").reset_index()
