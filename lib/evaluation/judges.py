"""Stop judges over the agent's real decision trees, and the quality of the model's real queries
(results/judges.csv, results/judges_grid.csv, results/query_quality.csv).

The tree (:mod:`lib.designs.agent_tree`) holds, per question, one chain of the model's own searches to
the cap: leaf k is the RRF fusion of the chain's first k lists (k = 1: the question's own list). A judge
with **stop accuracy** ``p_stop`` stops when the source is among the titles shown (the top 5 of every
search so far) with probability p_stop, and with **search accuracy** ``p_search`` searches on when it is
not with probability p_search, erring at random otherwise; at the cap, or where the chain ends, it stops.
Its expected score is exact: the sum over the leaves of the chance of stopping there times the leaf's
score. Against dense (the saved dense run), per question, then a mean with a bootstrap range over
questions (:func:`lib.evaluation.metrics.paired_bootstrap`).

The model's own accuracies are measured the same way, over every decision it made in the tree (on the
agent's path and after a search it was asked for): p_stop = its stops among decisions where the source was
shown, p_search = its searches among those where it was not. The judge at those values *predicts* a
difference from dense; the agent's run that the tree extends is the *actual* one, and the two agree when the
range of their paired difference over questions (``gap``) includes 0. The ceiling is the best leaf per
question (a judge that knew the answer)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..designs import Question, Result
from .loss import SHOWN
from .metrics import paired_bootstrap, scores_of
from .why_paths import fused, query_effect, source_rank

METRICS = ("mrr_at_10", "recall_at_5")
GRID = np.round(np.linspace(0.0, 1.0, 11), 2)
POINTS = {"model": None, "oracle judge": (1.0, 1.0), "always stop": (1.0, 0.0), "always search": (0.0, 1.0)}
JUDGE_COLUMNS = ["condition", "design", "model", "point", "p_stop", "p_search", "decisions_shown", "decisions_not_shown",
                 "questions", "metric", "predicted", "predicted_low", "predicted_high", "actual", "actual_low",
                 "actual_high", "gap", "gap_low", "gap_high", "agrees", "ceiling", "ceiling_low", "ceiling_high"]
QUALITY_COLUMNS = ["condition", "model", "asked", "shown", "queries", "better", "same", "worse", "lost"]


@dataclass
class Chain:
    """One question's tree: its leaves' scores, whether the source was shown at each state, the model's
    own decision at each state ("stop" / "search"), the searches on the agent's own path, dense's scores."""

    qid: str
    leaves: list[dict]
    shown: list[bool]
    decisions: list[str]
    path: int
    dense: dict
    cap: int


def chain_of(result: Result, source: str, dense: Sequence[str], rrf_k: int = 60, cap: int = 3,
             shown: int = SHOWN) -> Chain:
    lists = [list(x) for x in result.details["chain_lists"]]
    leaves = [scores_of(fused(lists[:k], rrf_k), source) for k in range(1, len(lists) + 1)]
    seen = [min((source_rank(x[:shown], source) for x in lists[:k]), default=float("inf")) < float("inf")
            for k in range(1, len(lists) + 1)]
    decisions = [d["decision"] for d in result.details.get("decisions", [])]
    return Chain(result.qid, leaves, seen, decisions, int(result.details.get("path_searches", result.searches)),
                 scores_of(list(dense), source), cap)


def expected(chain: Chain, p_stop: float, p_search: float, metric: str) -> float:
    """The judge's exact expected score on one chain."""
    total, reach = 0.0, 1.0
    n = len(chain.leaves)
    for k in range(n):
        last = k == n - 1  # the cap, or the end of the chain
        stop = 1.0 if last else (p_stop if chain.shown[k] else 1.0 - p_search)
        total += reach * stop * chain.leaves[k][metric]
        reach *= 1.0 - stop
    return total


def accuracy(chains: Sequence[Chain]) -> dict:
    """The model's measured stop and search accuracy over every decision in its trees."""
    stop_shown = shown = search_unshown = unshown = 0
    for c in chains:
        for k, d in enumerate(c.decisions):
            if k >= len(c.shown):
                break
            if c.shown[k]:
                shown += 1
                stop_shown += d == "stop"
            else:
                unshown += 1
                search_unshown += d == "search"
    return {"p_stop": stop_shown / shown if shown else np.nan, "p_search": search_unshown / unshown if unshown else np.nan,
            "decisions_shown": shown, "decisions_not_shown": unshown}


def judge_rows(chains: Sequence[Chain], condition: str, model: str, n_resamples: int = 2000, seed: int = 7,
               design: str = "agent") -> list[dict]:
    """judges.csv rows of one model in one condition: the judge at the model's measured accuracies and at
    the reference points, per measure, predicted and actual with their ranges, and the ceiling."""
    acc = accuracy(chains)
    rows = []
    for metric in METRICS:
        base = np.array([c.dense[metric] for c in chains])
        actual = np.array([c.leaves[c.path - 1][metric] for c in chains])
        best = np.array([max(x[metric] for x in c.leaves) for c in chains])
        a = paired_bootstrap(actual, base, n_resamples, seed)
        ceil = paired_bootstrap(best, base, n_resamples, seed)
        for point, at in POINTS.items():
            ps, pq = (acc["p_stop"], acc["p_search"]) if at is None else at
            # an accuracy with no decision to measure it on acts on no state: any value predicts the same
            values = np.array([expected(c, 1.0 if np.isnan(ps) else ps, 0.0 if np.isnan(pq) else pq, metric)
                               for c in chains])
            pred = paired_bootstrap(values, base, n_resamples, seed)
            # actual minus predicted, paired over questions: does the model's run cost what random errors would?
            gap = paired_bootstrap(actual, values, n_resamples, seed) if at is None else (np.nan,) * 3
            rows.append({"condition": condition, "design": design, "model": model, "point": point, "p_stop": ps,
                         "p_search": pq, "decisions_shown": acc["decisions_shown"],
                         "decisions_not_shown": acc["decisions_not_shown"], "questions": len(chains), "metric": metric,
                         "predicted": pred[0], "predicted_low": pred[1], "predicted_high": pred[2],
                         "actual": a[0] if point == "model" else np.nan,
                         "actual_low": a[1] if point == "model" else np.nan,
                         "actual_high": a[2] if point == "model" else np.nan,
                         "gap": gap[0], "gap_low": gap[1], "gap_high": gap[2],
                         "agrees": bool(gap[1] <= 0 <= gap[2]) if point == "model" else None,
                         "ceiling": ceil[0], "ceiling_low": ceil[1], "ceiling_high": ceil[2]})
    return rows


def grid_rows(chains: Sequence[Chain], condition: str, model: str, grid: Sequence[float] = GRID,
              metric: str = "mrr_at_10") -> list[dict]:
    """The judge's difference from dense over a grid of (p_stop, p_search), no ranges (the chart)."""
    base = np.mean([c.dense[metric] for c in chains])
    return [{"condition": condition, "model": model, "metric": metric, "p_stop": ps, "p_search": pq,
             "difference": float(np.mean([expected(c, ps, pq, metric) for c in chains]) - base)}
            for ps in grid for pq in grid]


def query_quality(results: Sequence[Result], questions: Sequence[Question], condition: str, model: str,
                  rrf_k: int = 60, shown: int = SHOWN) -> pd.DataFrame:
    """Every model query of the trees against the list its decision was made on (the fused list of the
    searches before it): strictly better / same / worse / lost (never a tie called better), by whether the
    model chose to search (its own query) or was asked to where it had stopped, and where the source was shown."""
    source = {q.qid: q.source_id for q in questions}
    rows = []
    for r in results:
        if r.qid not in source:
            continue
        lists = [list(x) for x in r.details["chain_lists"]]
        forced = {d["searches"]: bool(d.get("forced")) for d in r.details.get("decisions", [])}
        for k in range(1, len(lists)):
            s = source[r.qid]
            best = min(source_rank(x[:shown], s) for x in lists[:k])
            rows.append({"asked": "where it stopped" if forced.get(k) else "its own search",
                         "shown": "at rank 1" if best == 1 else "not shown" if best == float("inf") else "at 2-5",
                         "effect": query_effect(fused(lists[:k], rrf_k), lists[k], s)})
    df = pd.DataFrame(rows, columns=["asked", "shown", "effect"])
    if df.empty:
        return pd.DataFrame(columns=QUALITY_COLUMNS)
    out = (df.groupby(["asked", "shown"])["effect"].value_counts().unstack(fill_value=0)
           .reindex(columns=["better", "same", "worse", "lost"], fill_value=0).reset_index())
    out["queries"] = out[["better", "same", "worse", "lost"]].sum(axis=1)
    out.insert(0, "model", model)
    out.insert(0, "condition", condition)
    return out[QUALITY_COLUMNS]


def condition_chains(results: Sequence[Result], questions: Sequence[Question], dense: dict[str, list[str]],
                     rrf_k: int = 60, cap: int = 3, shown: int = SHOWN) -> list[Chain]:
    """The chains of the questions that have a tree and a dense list."""
    by_q = {q.qid: q for q in questions}
    return [chain_of(r, by_q[r.qid].source_id, dense[r.qid], rrf_k, cap, shown)
            for r in results if r.qid in by_q and r.qid in dense and r.details.get("chain_lists")]
