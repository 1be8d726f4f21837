"""Scores: recall@5 and MRR@10 per question (one relevant paper each; graded judgements with one or
more relevant documents: :func:`qrels_scores`, adding nDCG@10), per-design summaries,
and paired bootstrap ranges of each design minus dense (Efron & Tibshirani 1993; scipy's
``stats.bootstrap`` with paired resampling, percentile method), with a paired randomization test's
p-value (:func:`paired_permutation`) and Holm's correction over a family of tests (:func:`holm`)."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..data.relevance import is_judged, judgements, relevant_ids


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
    (pairs) with replacement. Kept for this process by the differences in order and the settings (the report's
    pages ask for the same range several times; the same seed gives the same range)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired bootstrap needs the same questions on both sides")
    return _paired_bootstrap(a.tobytes(), b.tobytes(), n_resamples, seed, confidence)


@lru_cache(maxsize=4096)
def _paired_bootstrap(a_bytes: bytes, b_bytes: bytes, n_resamples: int, seed: int,
                      confidence: float) -> tuple[float, float, float]:
    a, b = np.frombuffer(a_bytes), np.frombuffer(b_bytes)
    delta = float(np.mean(a - b))
    if np.all(a - b == a[0] - b[0]):  # no spread: the range is the point
        return _zeroed(delta), _zeroed(delta), _zeroed(delta)
    res = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(x - y, axis=axis), paired=True,
                          n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                          random_state=np.random.default_rng(seed), vectorized=True)
    return _zeroed(delta), _zeroed(float(res.confidence_interval.low)), _zeroed(float(res.confidence_interval.high))


def _zeroed(x: float) -> float:
    """0 for a value within 1e-12 of zero (floating-point noise of a mean, e.g. 9.3e-20, is no difference)."""
    return 0.0 if abs(x) < ZERO else x


PERMUTATIONS = 10_000  # sign flips of the randomization test where no exact distribution is computable
# integer scales that make the differences of recall@5 and MRR@10 whole numbers: MRR@10 takes 1/r for r <= 10,
# so its differences are multiples of 1/2,520 (the least common multiple of 1..10); a mean over n runs divides
# by n (7,560 for three runs); a two-part question's recall@5 is a multiple of 1/2
EXACT_SCALES = (1, 2, 6, 12, 60, 2520, 5040, 7560, 10080, 30240, 151200)
EXACT_ENUMERATE = 20    # at most this many nonzero differences: every sign vector enumerated
EXACT_MAX_SUM = 20_000_000  # the dynamic programme's largest sum of scaled differences (memory: 8 bytes x 2 x it)
ZERO = 1e-12            # a difference (or a range's end) within this of zero is zero


def integer_scale(d: np.ndarray, scales=EXACT_SCALES) -> tuple[np.ndarray, int] | None:
    """The differences as whole numbers (``d * scale``, divided by their greatest common divisor) and the
    scale, for the smallest scale that makes every one whole (within 1e-6); None when none does."""
    for scale in scales:
        x = d * scale
        r = np.rint(x)
        if np.all(np.abs(x - r) < 1e-6):
            ints = r.astype(np.int64)
            g = int(np.gcd.reduce(np.abs(ints))) if ints.size else 1
            return ints // max(g, 1), scale
    return None


def sign_flip_distribution(x: np.ndarray) -> tuple[np.ndarray, int]:
    """The exact null distribution of sum(s_i * x_i) over the 2^n equally likely sign vectors s (x whole
    numbers): probabilities over the sums -S..S (S = sum |x_i|) by dynamic programming, one difference at a
    time (each adds or subtracts it with probability 1/2), and the offset S."""
    total = int(np.abs(x).sum())
    dist = np.zeros(2 * total + 1)
    dist[total] = 1.0
    span = 0  # the sums reached so far lie in -span..span
    for v in (int(a) for a in np.abs(x).astype(np.int64)):
        lo, hi = total - span, total + span + 1
        half = 0.5 * dist[lo:hi]  # each sum so far, with probability 1/2 each way: minus v, plus v
        dist[lo - v:hi - v] = half
        dist[hi - v:hi + v] = 0.0
        dist[lo + v:hi + v] += half
        span += v
    return dist, total


def exact_sign_flip(d: np.ndarray) -> tuple[float, str]:
    """The exact two-sided p of the paired sign-flip test on differences ``d`` (zeros already removed):
    P(|sum of randomly signed d| >= |sum d|), by enumeration of every sign vector for at most
    ``EXACT_ENUMERATE`` differences, else by the dynamic programme over the integer-scaled sums
    (:func:`sign_flip_distribution`); (p, method), or (nan, why) when neither is computable. Kept for this
    process by the differences (the report's pages ask for the same comparison several times)."""
    return _exact_sign_flip(np.asarray(d, dtype=float).tobytes())


@lru_cache(maxsize=4096)
def _exact_sign_flip(d_bytes: bytes) -> tuple[float, str]:
    d = np.frombuffer(d_bytes)
    if d.size <= EXACT_ENUMERATE:  # every sum as one half's signed sum plus the other's (2 x 2^(n/2) sums, not n x 2^n)
        first, second = (_signed_sums(part) for part in np.array_split(d, 2))
        sums = np.abs(first[:, None] + second[None, :])
        return float(np.mean(sums >= abs(d.sum()) - ZERO)), "exact (every sign vector)"
    scaled = integer_scale(d)
    if scaled is None:
        return float("nan"), "differences are no multiples of 1/151,200"
    x, _ = scaled
    if int(np.abs(x).sum()) > EXACT_MAX_SUM:
        return float("nan"), "too many distinct sums"
    dist, total = sign_flip_distribution(x)
    observed = abs(int(x.sum()))
    sums = np.abs(np.arange(-total, total + 1))
    return float(min(1.0, dist[sums >= observed].sum())), "exact (distribution of the scaled sum)"


def _signed_sums(d: np.ndarray) -> np.ndarray:
    """sum(s_i * d_i) for every sign vector s of ``d``'s length."""
    signs = 1 - 2 * ((np.arange(2 ** d.size)[:, None] >> np.arange(d.size)) & 1)
    return signs @ d


NO_DIFFERENCE = "no difference on any question"


def flips_method(n_permutations: int, seed: int) -> str:
    """How a p from random sign flips was computed, as the saved comparisons name it."""
    return f"random sign flips ({n_permutations}, seed {seed})"


def paired_test(a: np.ndarray, b: np.ndarray, n_permutations: int = PERMUTATIONS, seed: int = 7) -> tuple[float, str]:
    """:func:`paired_permutation`'s p and how it was computed: :func:`exact_sign_flip`'s method ("exact (...)"),
    :func:`flips_method`'s, or :data:`NO_DIFFERENCE` (p = 1). Saved beside each p (the ``test`` column), so a page
    says the test its p-values came from."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError("paired permutation test needs the same questions on both sides")
    d = a - b
    d = d[np.abs(d) > ZERO]  # a zero difference is the same under either sign
    if d.size == 0:
        return 1.0, NO_DIFFERENCE
    p, method = exact_sign_flip(d)
    if not np.isnan(p):
        return p, method
    return random_sign_flips(d, n_permutations, seed), flips_method(n_permutations, seed)


def paired_permutation(a: np.ndarray, b: np.ndarray, n_permutations: int = PERMUTATIONS, seed: int = 7) -> float:
    """Two-sided p-value of the paired randomization test of mean(a - b) = 0 (Fisher's randomization
    test as IR reports it: Smucker, Allan & Carterette 2007, CIKM; ranx's ``fisher``): under the null
    each question's difference is as likely to carry either sign. The p is **exact** wherever it is
    computable (:func:`exact_sign_flip`: every sign vector, or the exact distribution of the sum of the
    differences scaled to whole numbers, as recall@5 and MRR@10 differences always are); only
    differences that no scale makes whole fall back to ``n_permutations`` seeded sign flips, p = (1 +
    flips whose |mean| >= the observed |mean|) / (1 + n_permutations). A difference within ``ZERO`` of
    0 is 0; no difference on any question gives p = 1. (:func:`paired_test` also says how.)"""
    return paired_test(a, b, n_permutations, seed)[0]


def random_sign_flips(d: np.ndarray, n_permutations: int = PERMUTATIONS, seed: int = 7) -> float:
    """The randomization test's p from ``n_permutations`` seeded sign flips (never below 1 / (1 + n))."""
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < n_permutations:  # in chunks, so memory stays small whatever the question count
        n = min(2000, n_permutations - done)
        signs = rng.integers(0, 2, size=(n, d.size), dtype=np.int8) * 2 - 1
        flipped = np.abs(signs @ d) / d.size
        hits += int((flipped >= observed - ZERO).sum())
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
