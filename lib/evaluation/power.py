"""Power of the paired comparison: from the observed per-question differences (design minus dense),
the smallest mean difference the question count can detect, and the questions a given difference
would need (normal approximation of the paired test; Cohen 1988, ch. 2):
``MDE = (z_{1-alpha/2} + z_{power}) * sd / sqrt(n)``, ``n = ((z_{1-alpha/2} + z_{power}) * sd / delta)^2``."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from ..designs import BASELINE
from .scores import METRICS, question_means

ALPHA, POWER, TARGET = 0.05, 0.8, 0.01  # two-sided level, power, and the gain sized in questions


def power_columns(target: float = TARGET) -> list[str]:
    """The columns of :func:`power_table`, present even when it has no rows."""
    return ["design", "metric", "questions", "sd_of_differences", "min_detectable_difference",
            f"questions_for_{target:g}"]


def power_table(pq: pd.DataFrame, alpha: float = ALPHA, power: float = POWER, target: float = TARGET) -> pd.DataFrame:
    """Per design and metric: questions, sd of the paired differences, the minimum detectable
    difference, and the questions a difference of ``target`` would need. Any subset of designs: with
    dense alone, or without dense, there is no paired difference and the table has no rows (its
    columns kept; :func:`power_sentence` says why)."""
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    rows = []
    for m in METRICS:
        if pq.empty or m not in pq.columns or "design" not in pq.columns:
            continue
        table = question_means(pq, m)
        if BASELINE not in table.columns:
            continue
        for d in table.columns:
            if d == BASELINE:
                continue
            diff = (table[d] - table[BASELINE]).dropna().to_numpy()
            n, sd = len(diff), float(np.std(diff, ddof=1)) if len(diff) > 1 else float("nan")
            rows.append({"design": d, "metric": m, "questions": n, "sd_of_differences": sd,
                         "min_detectable_difference": z * sd / math.sqrt(n) if n else float("nan"),
                         f"questions_for_{target:g}": math.ceil((z * sd / target) ** 2) if sd == sd and sd > 0 else 0})
    out = pd.DataFrame(rows, columns=power_columns(target))
    out.attrs["why_empty"] = missing_for_power(pq)
    return out


def missing_for_power(pq: pd.DataFrame) -> str | None:
    """Why no paired difference from dense can be sized from ``pq``, in words; None when one can."""
    designs = sorted(set(pq["design"])) if not pq.empty and "design" in pq.columns else []
    if not designs:
        return "no saved run is scored, so no difference from dense to size"
    if BASELINE not in designs:
        return (f"the power of the comparison needs dense's runs, and only {', '.join(designs)} "
                f"{'is' if len(designs) == 1 else 'are'} saved")
    if designs == [BASELINE]:
        return "only dense is saved, so there is no other design whose difference from dense to size"
    return None


def power_sentence(pw: pd.DataFrame, target: float = TARGET) -> str:
    """In words, from one condition's :func:`power_table`: the smallest recall@5 and MRR@10 differences
    its question count detects (the range over designs), and the questions a ``target`` recall@5 gain needs."""
    col = f"questions_for_{target:g}"
    if pw.empty or "sd_of_differences" not in pw.columns:
        return pw.attrs.get("why_empty") or "no design has a paired difference from dense to size"
    pw = pw[pw.sd_of_differences > 0]
    if pw.empty:
        return "every design answered every question as dense did, so no difference to size"
    bits = []
    for m, label in (("recall_at_5", "recall@5"), ("mrr_at_10", "MRR@10")):
        r = pw[pw.metric == m]
        if not r.empty:
            bits.append(f"{r.min_detectable_difference.min():.3f} to {r.min_detectable_difference.max():.3f} in {label}")
    text = (f"with {int(pw.questions.max())} questions the smallest difference from dense a paired test detects "
            f"({POWER:.0%} power, two-sided {ALPHA:.0%}) is " + " and ".join(bits) + " (the range over designs)")
    rec = pw[pw.metric == "recall_at_5"]
    if not rec.empty:
        text += (f"; a {target * 100:g}-point recall@5 gain would need {int(rec[col].min()):,} to "
                 f"{int(rec[col].max()):,} questions")
    return text
