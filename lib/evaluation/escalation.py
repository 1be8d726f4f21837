"""Choosing and reading the escalation signal (``lib/designs/escalate.py``).

Choice, on dev questions only (the rule in ``docs/escalation.md``, fixed before any dev score was
seen): every dev question is escalated once (the probe), so each question's first-pass and
escalated answers are both known; for each signal and each escalation rate in ``RATES`` the
threshold is the signal's value at that quantile, and the mixed answer (escalated below the
threshold, first pass above) is scored. The (signal, rate) with the highest mean MRR@10 wins;
answers within ``TIE`` of the best count as ties, broken by the lower rate (fewer model calls),
then by the signal's order in ``SIGNALS``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..designs.escalate import SIGNALS
from .metrics import scores_of

RATES = (0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50)
TIE = 0.002


def probe_table(results: Sequence, sources: dict[str, str]) -> pd.DataFrame:
    """One row per probed question: its signals and the MRR@10 / recall@5 of the first pass and of
    the escalated answer (``results``: escalate results run with every question escalated)."""
    rows = []
    for r in results:
        d, src = r.details, sources[r.qid]
        if not d.get("escalated"):
            raise ValueError(f"question {r.qid}: the probe must escalate every question (threshold above every signal)")
        first, esc = scores_of(d["first_pass"], src), scores_of(r.ranked_ids, src)
        rows.append({"qid": r.qid, **{f"signal_{s}": d["signals"][s] for s in SIGNALS},
                     "first_mrr": first["mrr_at_10"], "first_recall": first["recall_at_5"],
                     "esc_mrr": esc["mrr_at_10"], "esc_recall": esc["recall_at_5"],
                     "llm_calls": r.llm_calls, "tokens": r.tokens_in + r.tokens_out})
    return pd.DataFrame(rows)


def threshold_at(values: np.ndarray, rate: float) -> float:
    """The threshold that escalates the lowest ``rate`` share of ``values`` (escalate when below):
    midway between the last escalated value and the next (``-inf`` for rate 0)."""
    n = int(round(rate * len(values)))
    if n == 0:
        return float("-inf")
    v = np.sort(values)
    return float(v[n - 1] + (v[n] - v[n - 1]) / 2) if n < len(v) else float("inf")


def sweep(table: pd.DataFrame, rates: Sequence[float] = RATES) -> pd.DataFrame:
    """Every (signal, rate): its threshold, the share escalated, mean MRR@10 and recall@5 of the
    mixed answer, and how many escalations helped or hurt MRR@10."""
    rows = []
    for s in SIGNALS:
        vals = table[f"signal_{s}"].to_numpy(dtype=float)
        for rate in rates:
            t = threshold_at(vals, rate)
            esc = vals < t
            mrr = np.where(esc, table["esc_mrr"], table["first_mrr"])
            rec = np.where(esc, table["esc_recall"], table["first_recall"])
            diff = (table["esc_mrr"] - table["first_mrr"]).to_numpy()
            rows.append({"signal": s, "rate": rate, "threshold": t, "escalated": float(esc.mean()),
                         "mrr@10": float(mrr.mean()), "recall@5": float(rec.mean()),
                         "helped": int((esc & (diff > 0)).sum()), "hurt": int((esc & (diff < 0)).sum()),
                         "llm_calls": float(table["llm_calls"].to_numpy()[esc].sum() / len(table))})
    return pd.DataFrame(rows)


def choose(swept: pd.DataFrame, tie: float = TIE) -> dict:
    """The rule of the module docstring, applied to a :func:`sweep` table."""
    best = swept["mrr@10"].max()
    near = swept[swept["mrr@10"] >= best - tie].copy()
    near["order"] = near["signal"].map({s: i for i, s in enumerate(SIGNALS)})
    pick = near.sort_values(["rate", "order"]).iloc[0]
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in pick.drop("order").items()}


def outcomes(results: Sequence, sources: dict[str, str]) -> dict:
    """How a run of escalate went: share escalated, and of the escalated questions how many the
    escalation helped, hurt or left alone (MRR@10 of the final answer against the first pass)."""
    n = len(results)
    esc = [r for r in results if r.details.get("escalated")]
    mrr = {r.qid: (scores_of(r.ranked_ids, sources[r.qid])["mrr_at_10"],
                   scores_of(r.details["first_pass"], sources[r.qid])["mrr_at_10"]) for r in esc}
    diffs = [final - first for final, first in mrr.values()]
    return {"questions": n, "escalated": len(esc), "rate": len(esc) / n if n else 0.0,
            "helped": sum(d > 0 for d in diffs), "hurt": sum(d < 0 for d in diffs),
            "unchanged": sum(d == 0 for d in diffs), "llm_calls": sum(r.llm_calls for r in results),
            "tokens": sum(r.tokens_in + r.tokens_out for r in results),
            "cost_usd": sum(r.cost_usd for r in results)}
