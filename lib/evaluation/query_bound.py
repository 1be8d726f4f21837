"""The query side's bound (results/query_bound.csv, results/query_bound_grid.csv): what share of a model's new
queries would have to rank the source strictly better than the list the decision was made on for the agent
to reach dense, at the model's own per-decision accuracies and at perfect ones.

Over the decision trees read by the agent's rules (:class:`lib.evaluation.judges.Chain`), each new query of a
chain (a real re-search: the question's own search is not one) is given, with chance ``share`` and each
independently, the best list a query can give: the source first (every relevant document first, best grade
first), then the rest of its own list. The judge's expected score stays exact: a sum over which of a chain's
re-searches were given it, each leaf fused again and the titles shown read again. Mean minus dense is then a
polynomial in the share (degree at most the re-searches a chain holds), solved exactly for the least share that
reaches dense.

It is an **upper bound** on what that share of better queries could give (no query does better than the
source first, and the chain's later queries are kept as written), so the share it reads is the least that
could suffice. Beside it, each model's measured better-rate: the share of the trees' new queries that ranked
the source strictly higher than the list the decision was made on."""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np
import pandas as pd

from ..data.relevance import judgements
from .judges import METRICS, Chain, filled_accuracies, accuracy, expected
from .loss import SHOWN
from .metrics import ZERO, scores_of
from .why_paths import fused, query_effect, source_rank

SHARES = np.round(np.linspace(0.0, 1.0, 51), 2)
BOUND_COLUMNS = ["condition", "model", "metric", "accuracies", "p_stop", "p_search", "questions", "new_queries",
                 "better", "better_rate", "at_none", "at_better_rate", "at_all", "least_share"]
GRID_COLUMNS = ["condition", "model", "metric", "accuracies", "share", "difference"]
ACCURACIES = ("the model's", "perfect")


def best_list(ids: Sequence[str], source: str) -> list[str]:
    """The best list a query can give: every relevant document first (best grade first), then ``ids``."""
    grades = judgements(source)
    first = sorted((d for d, g in grades.items() if g > 0), key=lambda d: -grades[d])
    return first + [d for d in ids if d not in set(first)]


def _with_best(chain: Chain, given: Sequence[int], rrf_k: int, shown: int) -> tuple[list[dict], list[bool]]:
    """The chain's leaves and shown flags when the re-searches ``given`` (indices of its lists) give the best list."""
    lists = [best_list(x, chain.source) if i in given else list(x) for i, x in enumerate(chain.lists)]
    leaves = [scores_of(fused(lists[:k], rrf_k), chain.source) for k in range(1, len(lists) + 1)]
    seen = [min(source_rank(x[:shown], chain.source) for x in lists[:k]) < float("inf") for k in range(1, len(lists) + 1)]
    return leaves, seen


def chain_variants(chain: Chain, rrf_k: int = 60, shown: int = SHOWN) -> list[tuple[np.polynomial.Polynomial, list, list]]:
    """Each way the chain's re-searches can be given the best list: its weight as a polynomial in the share
    (``f**r (1-f)**(n-r)``), and the leaves and shown flags it gives; the same for every measure and judge."""
    f = np.polynomial.Polynomial([0.0, 1.0])
    re_searches = range(1, len(chain.lists))
    out = []
    for r in range(len(re_searches) + 1):
        weight = f ** r * (1 - f) ** (len(re_searches) - r)
        for given in itertools.combinations(re_searches, r):
            leaves, seen = _with_best(chain, given, rrf_k, shown)
            out.append((weight, leaves, seen))
    return out


def chain_polynomial(chain: Chain, p_stop, p_search, metric: str, rrf_k: int = 60,
                     shown: int = SHOWN, variants=None) -> np.ndarray:
    """The judge's expected score on one chain as a polynomial in the share of re-searches given the best list,
    by its coefficients, lowest degree first (``variants``: :func:`chain_variants` of the chain, computed here when
    not given). The sum is taken as numpy.polynomial's Polynomial takes it (:func:`_added`), on the arrays."""
    total = np.zeros(1)
    for weight, leaves, seen in (chain_variants(chain, rrf_k, shown) if variants is None else variants):
        total = _added(total, _trimmed(_trimmed(weight.coef) * expected(chain, p_stop, p_search, metric, leaves, seen)))
    return total


def _trimmed(c: np.ndarray) -> np.ndarray:
    """The coefficients without their trailing zeros, one kept (numpy.polynomial.polyutils.trimseq)."""
    n = len(c)
    while n > 1 and c[n - 1] == 0:
        n -= 1
    return c[:n]


def _added(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two polynomials' sum as Polynomial's ``+`` makes it (numpy.polynomial.polyutils: each trimmed, the shorter
    added into a copy of the longer, the sum trimmed), with the same floating-point additions, so the same bits,
    without a Polynomial object for each of the tens of thousands of terms."""
    a, b = _trimmed(a), _trimmed(b)
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    out = longer.copy()
    out[:len(shorter)] += shorter
    return _trimmed(out)


def curve(chains: Sequence[Chain], p_stop, p_search, metric: str, rrf_k: int = 60,
          shown: int = SHOWN, variants=None) -> np.polynomial.Polynomial:
    """Mean over the chains minus dense, as a polynomial in the share (``variants``: each chain's
    :func:`chain_variants`, in order, or None)."""
    variants = variants or [None] * len(chains)
    total = np.zeros(1)
    for c, v in zip(chains, variants):
        total = _added(total, chain_polynomial(c, p_stop, p_search, metric, rrf_k, shown, v))
    return np.polynomial.Polynomial(total) / len(chains) - float(np.mean([c.dense[metric] for c in chains]))


def least_share(poly: np.polynomial.Polynomial) -> float:
    """The least share in [0, 1] from which the curve stays at or above dense (NaN: not even at 1)."""
    if poly(1.0) < -ZERO:
        return float("nan")
    if all(poly(x) >= -ZERO for x in np.linspace(0.0, 1.0, 201)):
        return 0.0
    roots = [r.real for r in poly.roots() if abs(r.imag) < 1e-9 and 0.0 <= r.real <= 1.0]
    ups = [r for r in roots if poly(max(r - 1e-6, 0.0)) < ZERO]  # where it crosses up to dense
    return float(max(ups)) if ups else float("nan")


def better_rate(chains: Sequence[Chain], rrf_k: int = 60) -> tuple[int, int]:
    """(new queries, those strictly better than the list the decision was made on) over the chains."""
    n = better = 0
    for c in chains:
        for k in range(1, len(c.lists)):
            n += 1
            better += query_effect(fused(c.lists[:k], rrf_k), c.lists[k], c.source) == "better"
    return n, better


def bound_tables(chains: Sequence[Chain], condition: str, model: str, rrf_k: int = 60, shown: int = SHOWN,
                 shares: Sequence[float] = SHARES) -> tuple[list[dict], list[dict]]:
    """query_bound.csv's rows (per measure, at the model's accuracies and at perfect ones) and the curve's grid."""
    acc = accuracy(chains)
    own = filled_accuracies(acc)
    d = len(acc)
    n, better = better_rate(chains, rrf_k)
    rate = better / n if n else float("nan")
    rows, grid = [], []
    variants = [chain_variants(c, rrf_k, shown) for c in chains]  # shared by both measures and both judges
    for metric in METRICS:
        for name, (ps, pq) in zip(ACCURACIES, (own, ([1.0] * d, [1.0] * d))):
            poly = curve(chains, ps, pq, metric, rrf_k, shown, variants)
            rows.append({"condition": condition, "model": model, "metric": metric, "accuracies": name,
                         "p_stop": ", ".join(f"{x:.3f}" for x in ps), "p_search": ", ".join(f"{x:.3f}" for x in pq),
                         "questions": len(chains), "new_queries": n, "better": better, "better_rate": rate,
                         "at_none": float(poly(0.0)), "at_better_rate": float(poly(rate)) if n else float("nan"),
                         "at_all": float(poly(1.0)), "least_share": least_share(poly)})
            grid += [{"condition": condition, "model": model, "metric": metric, "accuracies": name, "share": float(s),
                      "difference": float(poly(s))} for s in shares]
    return rows, grid


def frames(rows: list[dict], grid: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    return pd.DataFrame(rows, columns=BOUND_COLUMNS), pd.DataFrame(grid, columns=GRID_COLUMNS)
