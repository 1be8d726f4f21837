"""Scores: recall@5 and MRR@10 per question (one relevant paper each; graded judgements with one or
more relevant documents: :func:`qrels_scores`, adding nDCG@10), per-design summaries,
and paired bootstrap ranges of each design minus dense (Efron & Tibshirani 1993; scipy's
``stats.bootstrap`` with paired resampling, percentile method), with a paired randomization test's
p-value (:func:`paired_permutation`) and Holm's correction over a family of tests (:func:`holm`)."""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .relevance import is_judged, judgements, relevant_ids


def recall_at_k(ranked: Sequence[str], relevant: str, k: int = 5) -> float:
    """1 if the source paper is in the top ``k``, else 0 (one relevant paper per question)."""
    return float(relevant in list(ranked[:k]))


def mrr_at_k(ranked: Sequence[str], relevant: str, k: int = 10) -> float:
    """1 / rank of the source paper if within the top ``k``, else 0."""
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc == relevant:
            return 1.0 / rank
    return 0.0


def rank_of(ranked: Sequence[str], relevant: str) -> int | None:
    try:
        return list(ranked).index(relevant) + 1
    except ValueError:
        return None


def twopart_scores(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    """A question answered by two papers together: per-paper recall@5 averaged (as recall_at_5),
    1 / rank of the second-found paper if both are within 10, else 0 (as mrr_at_10), and whether
    both are in the top 10 (both_found_at_10)."""
    ranks = [rank_of(ranked, p) for p in relevant]
    second = None if None in ranks else max(ranks)
    return {"recall_at_5": sum(r is not None and r <= 5 for r in ranks) / len(ranks),
            "mrr_at_10": 1.0 / second if second is not None and second <= 10 else 0.0,
            "both_found_at_10": float(second is not None and second <= 10), "rank": second}


def scores_of(ranked: Sequence[str], source: str) -> dict:
    """recall@5, MRR@10 and rank of one ranked list; a source given as two ids joined by ";" is a
    two-part question (:func:`twopart_scores`)."""
    if is_judged(source):  # a study of your own data: judgements, one or more relevant, graded allowed
        return qrels_scores(ranked, judgements(source))
    if ";" in source:
        return twopart_scores(ranked, source.split(";"))
    return {"recall_at_5": recall_at_k(ranked, source, 5), "mrr_at_10": mrr_at_k(ranked, source, 10),
            "rank": rank_of(ranked, source)}


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int = 10) -> float:
    """Normalised discounted cumulative gain at ``k`` (Järvelin & Kekäläinen 2002, "Cumulated
    gain-based evaluation of IR techniques", ACM TOIS 20(4):422-446), with trec_eval's conventions
    (``ndcg_cut``, trec_eval 9.0.x, as pytrec_eval and ir_measures compute it): the gain of a document
    is its grade (grades <= 0 and unjudged documents gain 0), the discount is log2(rank + 1) at every
    rank, and the ideal list is every judged document with grade > 0, best grades first, cut at
    ``k``, whether retrieved or not. (Older trec_eval versions left rank 2 undiscounted too, J&K's
    base-2 form; the two differ from rank 2 on.)"""
    gains = {d: g for d, g in relevant.items() if g > 0}
    ideal = sum(g / math.log2(i + 1) for i, g in enumerate(sorted(gains.values(), reverse=True)[:k], start=1))
    if ideal == 0:
        return 0.0
    return sum(gains.get(d, 0) / math.log2(i + 1) for i, d in enumerate(ranked[:k], start=1)) / ideal


def qrels_scores(ranked: Sequence[str], relevant: Mapping[str, float]) -> dict:
    """Scores of one ranked list against graded judgements ``{doc_id: grade}`` (one or more relevant
    documents; grade > 0 is relevant, as trec_eval's default relevance level 1 counts for integer
    grades): recall_at_5, the fraction of the relevant documents in the top 5 (trec_eval
    ``recall_5``); mrr_at_10, 1 / rank of the first relevant document within the top 10, else 0
    (``recip_rank`` cut at 10, ir_measures ``RR@10``); ndcg_at_10 (:func:`ndcg_at_k`); rank, of the
    first relevant document anywhere in the list (None: none found). With one relevant document the
    first three equal :func:`recall_at_k`, :func:`mrr_at_k` and :func:`rank_of`. Ranks are list
    positions: the list must hold no id twice."""
    gains = {d: g for d, g in relevant.items() if g > 0}
    if not gains:
        raise ValueError("qrels_scores needs at least one relevant document (grade > 0)")
    ranked = list(ranked)
    if len(set(ranked)) != len(ranked):
        raise ValueError("qrels_scores: the ranked list holds an id more than once")
    rank = next((i for i, d in enumerate(ranked, start=1) if d in gains), None)
    return {"recall_at_5": sum(d in gains for d in ranked[:5]) / len(gains),
            "mrr_at_10": 1.0 / rank if rank is not None and rank <= 10 else 0.0,
            "ndcg_at_10": ndcg_at_k(ranked, gains, 10), "rank": rank}


def citation_hit(citations: Iterable[str], source: str) -> float:
    """The share of the question's source paper(s) among the papers a design cited (1 or 0; for a
    two-part question 0, 0.5 or 1; judgements: the share of the relevant documents cited)."""
    src, cites = relevant_ids(source), set(citations)
    return sum(s in cites for s in src) / len(src)


def cited(result, source: str) -> float:
    """:func:`citation_hit` of a result whose design cites papers (the tool-calling loops record
    ``citations``); NaN for a design that cites none, so a mean over designs never mixes them in."""
    if "citations" not in result.details:
        return float("nan")
    return citation_hit(result.details["citations"], source)


def per_question(results: Iterable, sources: dict[str, str]) -> pd.DataFrame:
    """One row per (design, run, question) with both scores, the source's rank, whether it was cited
    (``cited``: :func:`cited`, NaN for designs that cite nothing) and usage. A source given as two
    ids joined by ";" is a two-part question (:func:`twopart_scores`)."""
    rows = []
    for r in results:
        if r.qid not in sources:
            continue
        found = scores_of(r.ranked_ids, sources[r.qid])
        rows.append({"design": r.design, "run": r.run, "qid": r.qid, **found, "cited": cited(r, sources[r.qid]),
                     "searches": r.searches,
                     "latency_s": r.latency_s, "llm_calls": r.llm_calls, "tokens_in": r.tokens_in,
                     "tokens_out": r.tokens_out, "cost_usd": r.cost_usd, "stop_reason": r.stop_reason})
    return pd.DataFrame(rows)


def paired_bootstrap(a: np.ndarray, b: np.ndarray, n_resamples: int = 2000, seed: int = 7,
                     confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of a - b over questions and its percentile bootstrap range, resampling questions
    (pairs) with replacement."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired bootstrap needs the same questions on both sides")
    delta = float(np.mean(a - b))
    if np.all(a - b == a[0] - b[0]):  # no spread: the range is the point
        return delta, delta, delta
    res = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True,
                          n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                          random_state=np.random.default_rng(seed), vectorized=True)
    return delta, float(res.confidence_interval.low), float(res.confidence_interval.high)


PERMUTATIONS = 10_000  # sign flips of the paired randomization test


def paired_permutation(a: np.ndarray, b: np.ndarray, n_permutations: int = PERMUTATIONS, seed: int = 7) -> float:
    """Two-sided p-value of the paired randomization test of mean(a - b) = 0 (Fisher's randomization
    test as IR reports it: Smucker, Allan & Carterette 2007, CIKM; ranx's ``fisher``): under the null
    each question's difference is as likely to carry either sign, so ``n_permutations`` seeded sign
    flips of the differences are drawn and p = (1 + flips whose |mean| >= the observed |mean|) /
    (1 + n_permutations), never 0. No difference on any question gives p = 1."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired permutation test needs the same questions on both sides")
    d = a - b
    d = d[d != 0]  # a zero difference is the same under either sign
    if d.size == 0:
        return 1.0
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_permutations:  # in chunks, so memory stays small whatever the question count
        n = min(2000, n_permutations - done)
        signs = rng.integers(0, 2, size=(n, d.size), dtype=np.int8) * 2 - 1
        flipped = np.abs(signs @ d) / d.size
        hits += int((flipped >= observed - 1e-12).sum())
        done += n
    return (1 + hits) / (1 + n_permutations)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979, Scand. J. Statist. 6:65-70) over the family of
    the given tests, in their order: the i-th smallest of m is multiplied by m - i + 1, kept no smaller
    than the adjusted p before it, capped at 1. A NaN (no test) stays NaN and is not in the family."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    have = np.flatnonzero(~np.isnan(p))
    m = have.size
    if m == 0:
        return out
    order = have[np.argsort(p[have], kind="stable")]
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out[order] = adjusted
    return out
