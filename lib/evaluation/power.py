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


def power_table(pq: pd.DataFrame, alpha: float = 0.05, power: float = 0.8, target: float = 0.01) -> pd.DataFrame:
    """Per design and metric: questions, sd of the paired differences, the minimum detectable
    difference, and the questions a difference of ``target`` would need."""
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    rows = []
    for m in METRICS:
        table = question_means(pq, m)
        for d in table.columns:
            if d == BASELINE:
                continue
            diff = (table[d] - table[BASELINE]).dropna().to_numpy()
            n, sd = len(diff), float(np.std(diff, ddof=1)) if len(diff) > 1 else float("nan")
            rows.append({"design": d, "metric": m, "questions": n, "sd_of_differences": sd,
                         "min_detectable_difference": z * sd / math.sqrt(n) if n else float("nan"),
                         f"questions_for_{target:g}": math.ceil((z * sd / target) ** 2) if sd == sd and sd > 0 else 0})
    return pd.DataFrame(rows)
