"""What it would take to beat dense: simulated stop judges and query writers over the saved records (no model
call).

**The stop judge** (the agent). Each saved result's searches are replayed in their order with a judge of
given accuracy in place of the model: after each search but the last allowed, when the source is among the
titles shown so far (the top 5 of every search) it stops with probability ``p_stop``, otherwise it searches
on with probability ``p_search``, using the next query the model wrote; where the model wrote none (it
stopped there), the judge must stop too (the queries are as saved). The expected score is exact: a sum over
the stopping points, each the RRF of the searches up to it, weighted by its probability. ``p_stop = p_search
= 1`` is the oracle stop over the same queries: the ceiling of any judge with these queries.

**The query writer** (the agent and multi-query). Each model-written query that does not already rank the
source better than the question (or first, where the question ranks it first: :func:`is_good`) is, with
probability ``g``, replaced by a better one: its own list with each
relevant paper moved to one rank above its rank under the question (first where the question ranks it
first); the stops and the merge are as run. The share of better queries is then ``b0 + g (1 - b0)``
(``b0``: today's share); the expected score is exact (a sum over which queries were replaced).

Each curve is the design minus dense (MRR@10 and recall@5, means over questions, runs averaged first) against
the accuracy; the break-even is where the curve first reaches 0 (linear between grid points), or none when
even the top of the curve stays below (the ceiling).
"""
from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from .attribution import Case, METRICS
from .loss import _covered, _shown
from .metrics import scores_of
from .relevance import relevant_ids
from ..search.fusion import rrf

GRID = np.round(np.linspace(0.0, 1.0, 21), 2)


def _score(lists: Sequence[Sequence[str]], source: str, rrf_k: int, depth: int) -> dict:
    return scores_of([d for d, _ in rrf(lists, rrf_k)][:depth], source)


# --------------------------------------------------------------------------- the stop judge
@dataclass
class StopPath:
    """One result's stopping points: after each search, the score of the fusion so far and whether the
    source was among the titles shown so far; ``decisions``: searches after which a decision is asked."""

    scores: list[dict]
    shown: list[bool]
    decisions: int
    dense: dict


def stop_path(case: Case, max_searches: int = 3) -> StopPath:
    """The stopping points of one agent result (``case``: :class:`lib.evaluation.attribution.Case`)."""
    n = len(case.lists)
    return StopPath([_score(case.lists[:i], case.source, case.rrf_k, case.depth) for i in range(1, n + 1)],
                    [_covered(_shown(case.lists, i, case.shown), case.source) for i in range(1, n + 1)],
                    min(n, max_searches - 1), scores_of(case.question[:case.depth], case.source))


def expected_stop(path: StopPath, p_stop: float, p_search: float, metric: str) -> float:
    """The expected score of a judge over one result's saved queries (exact)."""
    reach, total, n = 1.0, 0.0, len(path.scores)
    for i in range(n):
        last = i == n - 1 or i >= path.decisions  # no further query saved, or no decision asked
        go = 0.0 if last else ((1 - p_stop) if path.shown[i] else p_search)
        total += reach * (1 - go) * path.scores[i][metric]
        reach *= go
    return total


def judge_accuracy(paths: Sequence[StopPath], searched: Sequence[int]) -> dict:
    """A model's measured accuracy from its saved decisions (``searched[j]``: how many searches result j
    made): ``p_stop`` = share of decisions with the source shown where it stopped, ``p_search`` = share of
    those without it where it searched again; with the counts."""
    shown_stop = shown_n = hidden_go = hidden_n = 0
    for path, n in zip(paths, searched):
        for i in range(path.decisions):
            again = i + 1 < n
            if path.shown[i]:
                shown_n += 1
                shown_stop += not again
            else:
                hidden_n += 1
                hidden_go += again
    return {"p_stop": shown_stop / shown_n if shown_n else np.nan, "p_search": hidden_go / hidden_n if hidden_n else np.nan,
            "shown_decisions": shown_n, "hidden_decisions": hidden_n}


# --------------------------------------------------------------------------- the query writer
def better_list(ids: Sequence[str], question: Sequence[str], source: str) -> list[str]:
    """A query's list made better than the question for the source: each relevant paper moved to one rank
    above its rank under the question (first where the question ranks it first); one the question misses
    stays where the query has it."""
    rel = relevant_ids(source)
    qrank = {d: i for i, d in enumerate(question)}
    out = [d for d in ids if d not in rel or d not in qrank]
    for d in sorted((d for d in rel if d in qrank), key=lambda d: qrank[d]):
        have = list(ids).index(d) if d in ids else np.inf
        out.insert(min(max(qrank[d] - 1, 0), have), d)
    return out


def is_good(ids: Sequence[str], question: Sequence[str], source: str) -> bool:
    """A query ranks every relevant paper better than the question does, or first where the question does
    too (a "better" query; where the question ranks it first no query can do better)."""
    q, x = list(question), list(ids)

    def rank(lst, d):
        return lst.index(d) if d in lst else np.inf

    return all(rank(x, d) < rank(q, d) or rank(x, d) == rank(q, d) == 0 for d in relevant_ids(source))


@dataclass
class QueryMix:
    """One result's outcomes over which of its model queries are replaced by better ones: ``combos`` maps a
    tuple of replaced flags (one per replaceable query) to the score; ``better``: queries already better."""

    combos: dict[tuple, dict]
    replaceable: int
    better: int
    dense: dict


def query_mix(case: Case) -> QueryMix:
    """Every way of replacing one result's not-yet-better model queries by better ones, scored."""
    model = list(range(case.first_model, len(case.lists)))
    todo = [i for i in model if not is_good(case.lists[i], case.question, case.source)]
    combos = {}
    for flags in itertools.product((False, True), repeat=len(todo)):
        lists = [list(x) for x in case.lists]
        for i, f in zip(todo, flags):
            if f:
                lists[i] = better_list(lists[i], case.question, case.source)
        combos[flags] = _score(lists, case.source, case.rrf_k, case.depth)
    return QueryMix(combos, len(todo), len(model) - len(todo), scores_of(case.question[:case.depth], case.source))


def expected_mix(mix: QueryMix, g: float, metric: str) -> float:
    """The expected score when each replaceable query is replaced with probability ``g`` (exact)."""
    return sum(g ** sum(f) * (1 - g) ** (len(f) - sum(f)) * s[metric] for f, s in mix.combos.items())


# --------------------------------------------------------------------------- curves
def _per_question(qids: Sequence[str], values: Sequence[float]) -> float:
    return float(pd.Series(values, index=list(qids)).groupby(level=0, sort=False).mean().mean())


def stop_curve(cases: Sequence[Case], max_searches: int = 3, grid: Sequence[float] = GRID) -> pd.DataFrame:
    """The agent minus dense against judge accuracy (``p_stop = p_search = accuracy``), per measure."""
    paths = [stop_path(c, max_searches) for c in cases]
    qids = [c.qid for c in cases]
    rows = []
    for a in grid:
        row = {"accuracy": float(a)}
        for m in METRICS:
            row[m] = _per_question(qids, [expected_stop(p, a, a, m) - p.dense[m] for p in paths])
        rows.append(row)
    return pd.DataFrame(rows)


def stop_point(cases: Sequence[Case], max_searches: int = 3, searched: Sequence[int] | None = None,
               accuracy: dict | None = None) -> dict:
    """A model placed on the judge curve: its measured accuracy (from ``searched``, the searches each case's
    run made, over these cases' lists; or ``accuracy`` given), the balanced accuracy (their mean) and the
    agent minus dense a judge of that (p_stop, p_search) gets over ``cases``' queries."""
    paths = [stop_path(c, max_searches) for c in cases]
    acc = accuracy or judge_accuracy(paths, searched if searched is not None else [len(c.lists) for c in cases])
    out = {**acc, "accuracy": float(np.nanmean([acc["p_stop"], acc["p_search"]]))}
    for m in METRICS:
        out[m] = _per_question([c.qid for c in cases],
                               [expected_stop(p, acc["p_stop"], acc["p_search"], m) - p.dense[m] for p in paths])
    return out


def query_curve(cases: Sequence[Case], grid: Sequence[float] = GRID) -> tuple[pd.DataFrame, float]:
    """The design minus dense against the share of its new queries that rank the source better than the
    question (from today's share ``b0`` up to all), per measure; and ``b0``."""
    mixes = [query_mix(c) for c in cases]
    qids = [c.qid for c in cases]
    total = sum(m.replaceable + m.better for m in mixes)
    b0 = sum(m.better for m in mixes) / total if total else np.nan
    rows = []
    for g in grid:
        row = {"replaced": float(g), "share_better": float(b0 + g * (1 - b0)) if total else np.nan}
        for m in METRICS:
            row[m] = _per_question(qids, [expected_mix(x, g, m) - x.dense[m] for x in mixes])
        rows.append(row)
    return pd.DataFrame(rows), b0


def break_even(curve: pd.DataFrame, x: str, metric: str = "mrr_at_10") -> float:
    """Where the curve (design − dense against ``x``) first reaches 0, linear between grid points; NaN
    when it never does (the ceiling: even the top of the curve stays below dense)."""
    xs, ys = curve[x].to_numpy(float), curve[metric].to_numpy(float)
    if len(ys) and ys[0] >= 0:
        return float(xs[0])
    for i in range(1, len(ys)):
        if ys[i] >= 0 > ys[i - 1]:
            return float(xs[i - 1] + (xs[i] - xs[i - 1]) * (0 - ys[i - 1]) / (ys[i] - ys[i - 1]))
    return float("nan")


@dataclass
class BreakEven:
    """One condition's break-even: the judge curve (the agent), the query curves (per design), today's
    models placed on them, the break-evens and the ceilings (the curves' top)."""

    condition: str
    stop_curve: pd.DataFrame
    stop_points: dict[str, dict]
    query_curves: dict[str, pd.DataFrame]
    query_points: dict[str, dict[str, dict]]

    def stop_break_even(self, metric: str = "mrr_at_10") -> float:
        return break_even(self.stop_curve, "accuracy", metric) if not self.stop_curve.empty else float("nan")

    def query_break_even(self, design: str, metric: str = "mrr_at_10") -> float:
        return break_even(self.query_curves[design], "share_better", metric)

    def stop_ceiling(self, metric: str = "mrr_at_10") -> float:
        return float(self.stop_curve[metric].iloc[-1]) if not self.stop_curve.empty else float("nan")


def summary_table(items: Sequence[BreakEven], metric: str = "mrr_at_10") -> pd.DataFrame:
    """Per condition and curve: the break-even, the ceiling (top of the curve), and each model's measured
    accuracy and simulated difference."""
    rows = []
    for b in items:
        if not b.stop_curve.empty:
            row = {"condition": b.condition, "design": "agent", "axis": "stop judge accuracy",
                   "break_even": b.stop_break_even(metric), "ceiling": b.stop_ceiling(metric),
                   "at_zero": float(b.stop_curve[metric].iloc[0])}
            for label, p in b.stop_points.items():
                row[f"{label}_accuracy"], row[f"{label}_{metric}"] = p["accuracy"], p[metric]
                row[f"{label}_p_stop"], row[f"{label}_p_search"] = p["p_stop"], p["p_search"]
                row[f"{label}_{metric}_as_run"] = p[f"{metric}_as_run"]
            rows.append(row)
        for d, curve in b.query_curves.items():
            row = {"condition": b.condition, "design": d, "axis": "share of better queries",
                   "break_even": b.query_break_even(d, metric), "ceiling": float(curve[metric].iloc[-1]),
                   "at_zero": float(curve[metric].iloc[0])}
            for label, p in b.query_points.get(d, {}).items():
                row[f"{label}_accuracy"], row[f"{label}_{metric}"] = p["share_better"], p[metric]
                row[f"{label}_{metric}_as_run"] = p[metric]
            rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- from the saved records
def _cases(records, design: str) -> list[Case]:
    from .attribution import case_of
    from .loss import with_questions

    complete, _ = records.runs.get(design, ([], []))
    if not complete or records.search is None:
        return []
    return [case_of(r, q, records.search, records.profile.rrf_k, records.shown.get(design, 5))
            for r, q in with_questions(complete, records.questions)]


def _as_run(cases: Sequence[Case]) -> dict:
    """The design minus dense as run (the saved lists), per measure."""
    return {m: _per_question([c.qid for c in cases], [scores_of(c.saved, c.source)[m] - scores_of(
        c.question[:c.depth], c.source)[m] for c in cases]) for m in METRICS}


def condition_break_even(condition: str, records, models: dict[str, object] | None = None,
                         designs: Sequence[str] = ("agent", "multiquery"), grid: Sequence[float] = GRID) -> BreakEven:
    """One condition's curves from the profile model's saved records (``records``: ``loss.ConditionRecords``),
    with each model of ``models`` (name -> its ConditionRecords, the profile's own model among them) placed
    on them: on the judge curve by its measured accuracy over its own searches (the difference a judge of
    that accuracy gets over the profile model's queries, and its own run's), on a query curve by its share
    of better queries (and its own run's difference)."""
    max_searches = records.profile.agent_max_searches
    agent = _cases(records, "agent")
    curve = stop_curve(agent, max_searches, grid) if agent else pd.DataFrame()
    points, qcurves, qpoints = {}, {}, {}
    for name, rec in (models or {}).items():
        own = _cases(rec, "agent")
        if agent and own:
            paths = [stop_path(c, max_searches) for c in own]
            acc = judge_accuracy(paths, [len(c.lists) for c in own])
            points[name] = {**stop_point(agent, max_searches, accuracy=acc),
                            **{f"{m}_as_run": v for m, v in _as_run(own).items()}}
    for d in designs:
        cases = _cases(records, d)
        if not cases:
            continue
        qcurves[d], _ = query_curve(cases, grid)
        for name, rec in (models or {}).items():
            own = _cases(rec, d)
            if own:
                mixes = [query_mix(c) for c in own]
                total = sum(x.replaceable + x.better for x in mixes)
                qpoints.setdefault(d, {})[name] = {"share_better": sum(x.better for x in mixes) / total if total else np.nan,
                                                   "queries": total, **_as_run(own)}
    return BreakEven(condition, curve, points, qcurves, qpoints)


def model_records(records, designs: Sequence[str] = ("agent", "multiquery")) -> dict[str, object]:
    """The profile model's records (``records``, as they are) and every other local model's saved records in
    the same condition, each read as :func:`lib.evaluation.loss.condition_records` reads them; a model with
    no saved run of ``designs``, or whose profile or records cannot be read, is left out."""
    from ..config import load_profile
    from ..errors import DataError, ProfileError
    from ..llm.local_backend import LOCAL_MODELS
    from .loss import condition_records

    cp = records.profile
    own = cp.settings["llm_model"]
    out = {own: records}
    for model in LOCAL_MODELS:
        if model == own:
            continue
        try:
            rec = condition_records(load_profile(cp.name, **{**cp.overrides, "llm_model": model}), designs)
        except (DataError, ProfileError):  # a profile that cannot take the model, or records that cannot be read
            continue
        if any(res for res, _ in rec.runs.values()):
            out[model] = rec
    return out


def conditions_break_even(records: dict[str, object], designs: Sequence[str] = ("agent", "multiquery")) -> list[BreakEven]:
    """:func:`condition_break_even` in every condition read (``records``: ``loss.conditions_records``; a
    condition not read is left out), every local model placed where it has saved runs."""
    import sys

    from . import attribution, loss

    version = loss.code_version(sys.modules[__name__], attribution, loss)
    out = []
    for c, rec in records.items():
        if isinstance(rec, str):
            continue
        models = model_records(rec, designs)
        key = "-".join([loss.records_digest(r) for r in models.values()] + [version, ",".join(designs)])
        out.append(loss.cached("breakeven", hashlib.sha256(key.encode()).hexdigest()[:20],
                               lambda c=c, rec=rec, models=models: condition_break_even(c, rec, models, designs)))
    return out
