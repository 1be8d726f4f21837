"""docs/statistics.md, generated from the saved tests (``results/comparisons.csv``): the range, the exact
test and the correction, with every count (tests in the family, measurable ones, the smallest p) read
from the data, never typed. The scores page writes it for the shipped study; a test holds the committed
file to what the saved comparisons give."""
from __future__ import annotations

import pandas as pd

from .display import p_words

DOC = "docs/statistics.md"


def statistics_doc(comparisons: pd.DataFrame, resamples: int = 2000, seed: int = 7) -> str:
    """The page's text for these comparisons (one test a row: ``p_value``, ``p_holm``, ``measurable``)."""
    n = len(comparisons)
    measurable = int(comparisons["measurable"].astype(bool).sum()) if n else 0
    conditions = comparisons["condition"].nunique() if n else 0
    designs = comparisons["design"].nunique() if n else 0
    smallest = float(comparisons["p_value"].min()) if n else float("nan")
    return f"""# Differences from dense: the range, the test and the correction

Every design is compared with dense on the same questions (per question, the LLM designs' value is
the mean over their runs). Three numbers are reported for each comparison (`lib/evaluation/scores.py`,
`deltas`; `lib/evaluation/metrics.py`):

- **the 95% range**: a paired percentile bootstrap of the mean difference, {resamples:,} resamples of the
  questions, seed {seed} (as the article reports its differences); an end within 1e-12 of zero is zero;
- **`p_value`**: the paired randomization test (Fisher's, as IR evaluation uses it: Smucker, Allan &
  Carterette 2007): under the null each question's difference is as likely to carry either sign, and
  the two-sided p is the share of the 2^n sign patterns whose |sum| reaches the observed one. It is
  **exact**: every sign pattern is enumerated where at most 20 questions differ; otherwise the exact
  distribution of the sum is built by dynamic programming over the differences scaled to whole numbers
  (an MRR@10 difference is a multiple of 1/2,520, the least common multiple of 1 to 10; a mean over three
  runs, of 1/7,560; a recall@5 difference of 1, or 1/2 on two-part questions). There is no floor of
  1/10,001 as with random flips: the smallest p here is {p_words(smallest) if n else "none"} before
  the correction ({smallest:.3g}). Differences within 1e-12 of zero count as zero. It equals full
  enumeration on small cases and scipy's exact `permutation_test`, and agrees with ranx's
  `compare(..., stat_test="fisher")` to its Monte Carlo error (`tests/test_metrics.py`);
- **`p_holm`**: Holm's step-down correction (Holm 1979) over **the family of comparisons the index
  makes: every design in the index's tables minus dense, on recall@5 and on MRR@10, in every condition
  of the condition table** (`lib.report.queries.condition_table`): {n} tests with the offline profile's saved runs
  ({designs} designs, {conditions} conditions), of which {measurable} are measurable. A difference is
  **measurable** when `p_holm` < 0.05; its sign says better or worse. A range that excludes 0 with a
  corrected p of 0.05 or more is said as such: the sample alone would not give that range, but the
  difference is not measurable once every comparison of the family is counted.

Where they are: `results/deltas.csv` (one condition; its `p_holm` is taken from the whole family,
named in the `family` column), `results/summary.json` (`against_dense`), `results/comparisons.csv`
(every condition's tests, one row each), and the condition table's columns `<metric>_p_value`,
`<metric>_p_holm`, `<metric>_measurable` and `holm_family`.

The range and the test can disagree where few questions differ: with recall@5, a design that finds
the source on 4 questions dense misses and loses none has a bootstrap range above 0, but only 2 of the
16 sign patterns of those 4 questions are as extreme, so p = 0.125 before any correction. The index
words "measurably better/worse" follow `p_holm`.

The merge table (`results/merges.csv`, docs/merge.md) carries uncorrected p-values: its rows are for
reading and belong to no family the index names. Page 12's judges carry bootstrap ranges only.

This page is generated from `results/comparisons.csv` (`lib/report/statistics_doc.py`).
"""
