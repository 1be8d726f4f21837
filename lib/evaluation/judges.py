"""Stop judges over the agent's real decision trees, read by the agent's own rules (results/judges.csv,
results/judges_grid.csv).

The tree (:mod:`lib.designs.agent_tree`) holds, per question, one chain of the model's own searches to the
cap: leaf k is the RRF fusion of the chain's first k lists (k = 1: the question's own list). It is read as
the agent runs (:func:`lib.designs.agent.next_query`): a query equal to the one just searched (whitespace
stripped) ends the search, so a chain ends at its first repeated query and no leaf fuses a repeated
query's list; a decision the model made by repeating the query is a stop (the agent's search ends there).

A judge has a **stop accuracy** and a **search accuracy** at each decision (the first: after the question's
search; the second: after one more; ...): at decision k it stops when the source is among the titles shown
(the top 5 of every search so far) with probability p_stop[k], and searches on when it is not with
probability p_search[k], erring at random otherwise; at the cap, or where the chain ends, it stops. Its
expected score is exact: the sum over the leaves of the chance of stopping there times the leaf's score.
Against dense (the saved dense run), per question, then a mean with a bootstrap range over questions
(:func:`lib.evaluation.metrics.paired_bootstrap`).

The model's own accuracies are measured per decision over every decision it made in the tree (on the
agent's path and after a search it was asked for), each with its count, never pooled across decisions.
The judge at those values *predicts* a difference from dense; the test of that prediction is not circular:
it is compared with the agent's runs outside the tree (the tree extends one run, whose decisions are among
those measured), paired over questions (``gap``); with no such run there is no test. ``actual`` is the agent's
difference from dense over all its runs, as the scores table has it.

**Break-even** is searched exactly over the real leaves: a question's expectation reads one accuracy per
decision (the stop accuracy where the source was shown, the search accuracy where it was not), so the mean
is multilinear in the per-decision accuracies and its maximum over every judge is at a corner of the box
(:func:`best_judge`, all 4^decisions corners). Along a line (one accuracy, or one accuracy at every
decision, the rest perfect) the mean is a polynomial, solved exactly (:func:`breakeven`). The best leaf
per question is hindsight (it knows the answer), not a judge."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..designs import Result
from .loss import SHOWN
from .metrics import ZERO, paired_bootstrap, scores_of
from .why_paths import fused, source_rank

METRICS = ("mrr_at_10", "recall_at_5")
GRID = np.round(np.linspace(0.0, 1.0, 11), 2)
POINTS = {"model": None, "perfect judge": (1.0, 1.0), "always stop": (1.0, 0.0), "always search": (0.0, 1.0)}
REPEATED = "repeated query"  # the agent's stop reason for a query equal to the one just searched


def decision_columns(decisions: int = 2) -> list[str]:
    """Per decision k: the accuracies and the decisions they are measured on (source shown / not shown)."""
    return [c for k in range(1, decisions + 1) for c in (f"p_stop_{k}", f"shown_{k}", f"p_search_{k}", f"not_shown_{k}")]


def breakeven_columns(decisions: int = 2) -> list[str]:
    return (["beats_dense", "best_judge", "best_judge_low", "best_judge_high", "best_judge_at", "breakeven_stop",
             "breakeven_search"]
            + [c for k in range(1, decisions + 1) for c in (f"breakeven_stop_{k}", f"breakeven_search_{k}")])


def judge_columns(decisions: int = 2) -> list[str]:
    return (["condition", "design", "model", "point"] + decision_columns(decisions)
            + ["repeat_stops", "chains_cut", "questions", "metric", "predicted", "predicted_low", "predicted_high",
               "runs", "actual", "actual_low", "actual_high", "tested_runs", "gap", "gap_low", "gap_high", "agrees",
               "hindsight", "hindsight_low", "hindsight_high"] + breakeven_columns(decisions)
            # the prompt and constraint the model's replies were measured under (lib.llm.contract.route_fields)
            + ["measured_under", "comparable"])


JUDGE_COLUMNS = judge_columns()


@dataclass
class Chain:
    """One question's tree read by the agent's rules: its leaves' scores, whether the source was shown at each
    state, the model's decision at each state ("stop" / "search"), the searches on the agent's own path, dense's
    scores, the cap; the chain's lists and the source (for :mod:`lib.evaluation.query_bound`), whether the chain
    was cut at a repeated query, and how many of its decisions were stops by repeating the query."""

    qid: str
    leaves: list[dict]
    shown: list[bool]
    decisions: list[str]
    path: int
    dense: dict
    cap: int
    lists: tuple = ()
    source: str = ""
    cut: bool = False
    repeat_stops: int = 0


def agent_end(queries: Sequence[str]) -> int:
    """How many of a chain's searches the agent's rules reach: up to (not including) the first query equal
    to the one searched just before it (``lib.designs.agent.next_query``: whitespace stripped)."""
    return next((i for i in range(1, len(queries)) if queries[i].strip() == queries[i - 1].strip()), len(queries))


def chain_of(result: Result, source: str, dense: Sequence[str], rrf_k: int = 60, cap: int = 3,
             shown: int = SHOWN) -> Chain:
    lists = [list(x) for x in result.details["chain_lists"]]
    n = min(len(lists), agent_end(result.details.get("chain_queries") or []) or len(lists))
    lists = lists[:n]
    leaves = [scores_of(fused(lists[:k], rrf_k), source) for k in range(1, n + 1)]
    seen = [min(source_rank(x[:shown], source) for x in lists[:k]) < float("inf") for k in range(1, n + 1)]
    states = [d for i, d in enumerate(result.details.get("decisions", [])) if d.get("searches", i + 1) <= n]
    decisions = ["stop" if d["decision"] == "stop" else "search" for d in states]
    return Chain(result.qid, leaves, seen, decisions, min(int(result.details.get("path_searches", result.searches)), n),
                 scores_of(list(dense), source), cap, tuple(lists), source, n < len(result.details["chain_lists"]),
                 sum(d.get("why") == REPEATED for d in states))


def _at(p, k: int) -> float:
    """An accuracy at decision k (0-based): one value for every decision, or one per decision."""
    return float(p[k]) if isinstance(p, (list, tuple, np.ndarray)) else float(p)


def expected(chain: Chain, p_stop, p_search, metric: str, leaves: Sequence[dict] | None = None,
             shown: Sequence[bool] | None = None) -> float:
    """The judge's exact expected score on one chain (``p_stop``/``p_search``: one value, or one per decision;
    ``leaves``/``shown``: other leaves over the same states, for the query-side bound)."""
    leaves, shown = leaves or chain.leaves, shown or chain.shown
    total, reach = 0.0, 1.0
    n = len(leaves)
    for k in range(n):
        last = k == n - 1  # the cap, or the end of the chain
        stop = 1.0 if last else (_at(p_stop, k) if shown[k] else 1.0 - _at(p_search, k))
        total += reach * stop * leaves[k][metric]
        reach *= 1.0 - stop
    return total


def decisions_of(chains: Sequence[Chain]) -> int:
    """The decisions a chain can hold: one after every search before the cap."""
    return max((c.cap - 1 for c in chains), default=2)


def accuracy(chains: Sequence[Chain]) -> list[dict]:
    """The model's measured stop and search accuracy at each decision (k = 1, 2, ...), each with its counts:
    ``shown``/``stops`` (decisions made with the source shown / those that stopped), ``not_shown``/``searches``."""
    out = [{"shown": 0, "stops": 0, "not_shown": 0, "searches": 0} for _ in range(decisions_of(chains))]
    for c in chains:
        for k, d in enumerate(c.decisions[:len(out)]):
            if k >= len(c.shown):
                break
            if c.shown[k]:
                out[k]["shown"] += 1
                out[k]["stops"] += d == "stop"
            else:
                out[k]["not_shown"] += 1
                out[k]["searches"] += d == "search"
    for a in out:
        a["p_stop"] = a["stops"] / a["shown"] if a["shown"] else np.nan
        a["p_search"] = a["searches"] / a["not_shown"] if a["not_shown"] else np.nan
    return out


def filled_accuracies(acc: list[dict]) -> tuple[list[float], list[float]]:
    """The model's accuracies for the judge: one with no decision to measure it on acts on no state, so any
    value predicts the same (1 for a stop accuracy, 0 for a search accuracy)."""
    return ([1.0 if np.isnan(a["p_stop"]) else a["p_stop"] for a in acc],
            [0.0 if np.isnan(a["p_search"]) else a["p_search"] for a in acc])


def values(chains: Sequence[Chain], p_stop, p_search, metric: str) -> np.ndarray:
    return np.array([expected(c, p_stop, p_search, metric) for c in chains])


def corners(decisions: int):
    """Every corner of the box of per-decision accuracies: (stop accuracies, search accuracies)."""
    for bits in itertools.product((0.0, 1.0), repeat=2 * decisions):
        yield bits[:decisions], bits[decisions:]


def best_judge(chains: Sequence[Chain], metric: str) -> tuple[tuple, tuple, float]:
    """The best any judge can do over these leaves (exact: the mean is multilinear in the per-decision
    accuracies, so its maximum is at a corner): (stop accuracies, search accuracies, mean minus dense).
    Ties go to the first corner found, so always stopping (dense itself) wins a tie with any other."""
    base = float(np.mean([c.dense[metric] for c in chains]))
    d = decisions_of(chains)
    order = sorted(corners(d), key=lambda sq: (sq[0] != (1.0,) * d or sq[1] != (0.0,) * d))
    best = None
    for ps, pq in order:
        diff = float(np.mean(values(chains, ps, pq, metric))) - base
        if best is None or diff > best[2] + ZERO:
            best = (ps, pq, diff)
    return best


def breakeven(chains: Sequence[Chain], metric: str, which: str, decision: int | None = None) -> float:
    """The least accuracy at which a judge beats dense over these leaves, every other accuracy perfect:
    ``which`` "stop" or "search"; at one decision (1-based ``decision``) or, with None, the same at every
    decision. The mean is a polynomial in it of degree at most the number of decisions, found exactly from
    that many + 1 points; the answer is the lowest t with the judge above dense on all of [t, 1] (NaN: not
    even at 1)."""
    d = decisions_of(chains)
    base = float(np.mean([c.dense[metric] for c in chains]))

    def at(t: float) -> float:
        ps, pq = [1.0] * d, [1.0] * d
        target = ps if which == "stop" else pq
        for k in (range(d) if decision is None else [decision - 1]):
            target[k] = t
        return float(np.mean(values(chains, ps, pq, metric))) - base

    xs = np.linspace(0.0, 1.0, d + 1)
    poly = np.polynomial.Polynomial.fit(xs, [at(x) for x in xs], d, domain=[0, 1], window=[0, 1])
    if at(1.0) <= ZERO:
        return float("nan")
    roots = [r.real for r in poly.roots() if abs(r.imag) < 1e-9 and -1e-9 <= r.real < 1.0]
    # where it crosses up to above dense (a root it only touches is no crossing), the last one below 1
    crossings = [r for r in roots if r <= 1e-9 or poly(r - 1e-6) <= ZERO]
    return float(min(max(max(crossings, default=0.0), 0.0), 1.0))


def _words(ps: Sequence[float], pq: Sequence[float]) -> str:
    """Per-decision accuracies in words: "stop 100% then 0%, search 100% then 100%"."""
    return (f"stop {' then '.join(f'{x:.0%}' for x in ps)}, search {' then '.join(f'{x:.0%}' for x in pq)}")


def breakeven_row(chains: Sequence[Chain], metric: str, n_resamples: int = 2000, seed: int = 7) -> dict:
    """The break-even columns of one (condition, model, measure): whether any judge beats dense, the best one
    (its accuracies and its range), and the least accuracies that beat dense (:func:`breakeven`)."""
    ps, pq, diff = best_judge(chains, metric)
    base = np.array([c.dense[metric] for c in chains])
    b = paired_bootstrap(values(chains, ps, pq, metric), base, n_resamples, seed)
    row = {"beats_dense": bool(diff > ZERO), "best_judge": b[0], "best_judge_low": b[1], "best_judge_high": b[2],
           "best_judge_at": _words(ps, pq), "breakeven_stop": breakeven(chains, metric, "stop"),
           "breakeven_search": breakeven(chains, metric, "search")}
    for k in range(1, decisions_of(chains) + 1):
        row[f"breakeven_stop_{k}"] = breakeven(chains, metric, "stop", k)
        row[f"breakeven_search_{k}"] = breakeven(chains, metric, "search", k)
    return row


def _run_scores(chains: Sequence[Chain], runs: dict[int, dict[str, list[str]]], metric: str) -> np.ndarray:
    """Per question, the mean over ``runs`` of the run's score (its saved list)."""
    return np.array([np.mean([scores_of(r[c.qid], c.source)[metric] for r in runs.values()]) for c in chains])


def judge_rows(chains: Sequence[Chain], condition: str, model: str, n_resamples: int = 2000, seed: int = 7,
               design: str = "agent", runs: dict[int, dict[str, list[str]]] | None = None,
               tree_run: int = 1) -> list[dict]:
    """judges.csv rows of one model in one condition: the judge at the model's per-decision accuracies and at
    the reference points, per measure, with ranges; the agent's runs (``runs``: run -> qid -> saved list; by
    default the tree's own path, run ``tree_run``) as actual; the test of the prediction against the runs
    outside the tree; the best leaf (hindsight); the break-even columns."""
    acc = accuracy(chains)
    d = len(acc)
    runs = {r: lists for r, lists in (runs or {}).items() if all(c.qid in lists for c in chains)}
    counts = {c: v for k, a in enumerate(acc, start=1)
              for c, v in ((f"shown_{k}", a["shown"]), (f"not_shown_{k}", a["not_shown"]))}
    tested = {r: lists for r, lists in runs.items() if r != tree_run}
    rows = []
    for metric in METRICS:
        base = np.array([c.dense[metric] for c in chains])
        actual = (_run_scores(chains, runs, metric) if runs else np.array([c.leaves[c.path - 1][metric] for c in chains]))
        a = paired_bootstrap(actual, base, n_resamples, seed)
        best = np.array([max(x[metric] for x in c.leaves) for c in chains])
        hind = paired_bootstrap(best, base, n_resamples, seed)
        even = breakeven_row(chains, metric, n_resamples, seed)
        for point, at in POINTS.items():
            ps, pq = filled_accuracies(acc) if at is None else ([at[0]] * d, [at[1]] * d)
            shown_ps = [a_["p_stop"] for a_ in acc] if at is None else ps
            shown_pq = [a_["p_search"] for a_ in acc] if at is None else pq
            vals = values(chains, ps, pq, metric)
            pred = paired_bootstrap(vals, base, n_resamples, seed)
            model_row = point == "model"
            # the runs outside the tree minus the prediction, paired over questions: do the model's errors
            # cost what random errors at its accuracies would?
            gap = (paired_bootstrap(_run_scores(chains, tested, metric), vals, n_resamples, seed)
                   if model_row and tested else (np.nan,) * 3)
            rows.append({"condition": condition, "design": design, "model": model, "point": point,
                         **{f"p_stop_{k}": v for k, v in enumerate(shown_ps, start=1)},
                         **{f"p_search_{k}": v for k, v in enumerate(shown_pq, start=1)}, **counts,
                         "repeat_stops": sum(c.repeat_stops for c in chains), "chains_cut": sum(c.cut for c in chains),
                         "questions": len(chains), "metric": metric,
                         "predicted": pred[0], "predicted_low": pred[1], "predicted_high": pred[2],
                         "runs": ", ".join(map(str, sorted(runs))) if runs else str(tree_run),
                         "actual": a[0] if model_row else np.nan, "actual_low": a[1] if model_row else np.nan,
                         "actual_high": a[2] if model_row else np.nan,
                         "tested_runs": ", ".join(map(str, sorted(tested))) if model_row else "",
                         "gap": gap[0], "gap_low": gap[1], "gap_high": gap[2],
                         "agrees": bool(gap[1] <= 0 <= gap[2]) if model_row and tested else None,
                         "hindsight": hind[0], "hindsight_low": hind[1], "hindsight_high": hind[2], **even})
    return rows


def frame(rows: list[dict]) -> pd.DataFrame:
    """judges.csv's rows as a table, its columns in order (decisions as many as the rows have)."""
    d = max((int(c.rsplit("_", 1)[1]) for r in rows for c in r if c.startswith("p_stop_")), default=2)
    return pd.DataFrame(rows, columns=judge_columns(d))


def grid_rows(chains: Sequence[Chain], condition: str, model: str, grid: Sequence[float] = GRID,
              metric: str = "mrr_at_10") -> list[dict]:
    """The judge's difference from dense over a grid of (p_stop, p_search), each the same at every decision, no
    ranges (the chart)."""
    base = np.mean([c.dense[metric] for c in chains])
    return [{"condition": condition, "model": model, "metric": metric, "p_stop": ps, "p_search": pq,
             "difference": float(np.mean(values(chains, ps, pq, metric)) - base)}
            for ps in grid for pq in grid]


def condition_chains(results: Sequence[Result], questions, dense: dict[str, list[str]],
                     rrf_k: int = 60, cap: int = 3, shown: int = SHOWN) -> list[Chain]:
    """The chains of the questions that have a tree and a dense list."""
    by_q = {q.qid: q for q in questions}
    return [chain_of(r, by_q[r.qid].source_id, dense[r.qid], rrf_k, cap, shown)
            for r in results if r.qid in by_q and r.qid in dense and r.details.get("chain_lists")]
