"""docs/statistics.md, generated from the saved tests (``results/comparisons.csv``): the range, the exact
test and the correction, with every count (tests in the family, measurable ones, the smallest p) read
from the data, never typed. The scores page writes it for the shipped study; a test holds the committed
file to what the saved comparisons give.

Every page's sentence on how its p-values were computed (the test, the bootstrap's resamples, the family's
size, the smallest p) is written here from the saved comparisons' own columns (``test``, ``resamples``:
:func:`lib.evaluation.metrics.paired_test`), so it names the test they were computed with
(:func:`method_of`, :func:`test_words`, :func:`p_sentence`); tests/test_page_numbers.py fails on a page that
names another."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from ..evaluation.metrics import NO_DIFFERENCE
from .display import p_words

DOC = "docs/statistics.md"
FLIPS = re.compile(r"random sign flips \((\d+), seed (\d+)\)")


@dataclass(frozen=True)
class Method:
    """How the saved comparisons were computed, read from their columns: ``tests`` comparisons, ``exact`` of them
    by an exact test, ``flips`` {number of random sign flips: comparisons} (the fallback), ``unsaid`` saved
    without their test (older files), the bootstrap's ``resamples`` (each value saved) and the ``smallest`` p
    before the correction."""
    tests: int = 0
    exact: int = 0
    flips: dict = field(default_factory=dict)
    unsaid: int = 0
    resamples: tuple = ()
    smallest: float = float("nan")


def method_of(comparisons: pd.DataFrame) -> Method:
    """The :class:`Method` of these comparisons (one test a row: ``p_value``, ``test``, ``resamples``)."""
    if comparisons is None or comparisons.empty:
        return Method()
    tests = comparisons["test"] if "test" in comparisons else pd.Series([None] * len(comparisons))
    flips: dict[int, int] = {}
    exact = unsaid = 0
    for t in tests:
        if not isinstance(t, str):
            unsaid += 1
        elif t.startswith("exact") or t == NO_DIFFERENCE:
            exact += 1
        elif FLIPS.fullmatch(t):
            n = int(FLIPS.fullmatch(t).group(1))
            flips[n] = flips.get(n, 0) + 1
        else:
            unsaid += 1
    resamples = tuple(sorted({int(r) for r in comparisons.get("resamples", pd.Series(dtype=float)).dropna()}))
    return Method(len(comparisons), exact, flips, unsaid, resamples, float(comparisons["p_value"].min()))


def test_words(m: Method) -> str:
    """The test, as the comparisons were computed: "the exact paired randomization test (...)", with how many
    fell back to random sign flips where any did; only "the paired randomization test" where the saved
    comparisons do not say."""
    if m.tests == 0 or m.unsaid:
        return "the paired randomization test"
    exact = ("the exact paired randomization test (every sign pattern of the per-question differences, or the exact "
             "distribution of their sum)")
    flips = "; ".join(f"{k:,} seeded sign flips for {v} of the {m.tests}" for k, v in sorted(m.flips.items()))
    if not m.flips:
        return exact
    if not m.exact:
        return f"the paired randomization test ({flips})"
    return f"{exact}, and {flips}, where no exact distribution was computable"


def resamples_words(m: Method, default: int | None = None) -> str:
    """The bootstrap's resamples as the comparisons saved them ("2,000"), else ``default``'s."""
    if len(m.resamples) == 1:
        return f"{m.resamples[0]:,}"
    if m.resamples:
        return " or ".join(f"{r:,}" for r in m.resamples)
    return f"{default:,}" if default else "the profile's number of"


def floor_words(m: Method) -> str:
    """What the smallest p can be: none below 1/(flips + 1) where random flips were used, none (exact) else."""
    if m.tests == 0 or m.unsaid:
        return ""
    if not m.flips:
        return (f"exact, it has no floor: the smallest p of the {m.tests} before the correction is {m.smallest:.3g} "
                f"({p_words(m.smallest)} as the tables print it)")
    low = min(m.flips)
    return (f"with {low:,} flips no p is below 1/{low + 1:,} before the correction; the smallest of the {m.tests} is "
            f"{m.smallest:.3g}")


def p_sentence(comparisons: pd.DataFrame) -> str:
    """The index's sentence on its p-values, from the saved comparisons: the test, the family, what the smallest p
    can be (HTML-safe text, no markup)."""
    m = method_of(comparisons)
    floor = floor_words(m)
    return (f"p: {test_words(m)}, Holm-corrected over every comparison with dense that this page makes (every design, "
            f"both measures, every condition: {m.tests} comparisons; docs/statistics.md)" + (f"; {floor}" if floor else ""))


def method_sentence(comparisons: pd.DataFrame) -> str:
    """A page's sentence on how its tests against dense were computed (Markdown), from the saved comparisons."""
    m = method_of(comparisons)
    if m.tests == 0:
        return "No test against dense was computed."
    floor = floor_words(m)
    return (f"How these were computed (every condition's tests, `comparisons.csv`): the p-values by {test_words(m)}; "
            f"the 95% ranges from {resamples_words(m)} paired bootstrap resamples of the questions; Holm's correction "
            f"over the {m.tests} comparisons" + (f"; {floor}." if floor else "."))


def statistics_doc(comparisons: pd.DataFrame, resamples: int = 2000, seed: int = 7) -> str:
    """The page's text for these comparisons (one test a row: ``p_value``, ``p_holm``, ``measurable``)."""
    n = len(comparisons)
    measurable = int(comparisons["measurable"].astype(bool).sum()) if n else 0
    conditions = comparisons["condition"].nunique() if n else 0
    designs = comparisons["design"].nunique() if n else 0
    smallest = float(comparisons["p_value"].min()) if n else float("nan")
    m = method_of(comparisons)
    if m.flips or m.unsaid:
        said = floor_words(m) or "the saved comparisons do not say which test computed each p"
        fallback = f"The saved comparisons: {test_words(m)}; {said}."
    else:
        fallback = ("No saved comparison needed the fallback of random sign flips (the differences no scale makes "
                    "whole).")
    return f"""# Differences from dense: the range, the test and the correction

Every design is compared with dense on the same questions (per question, the LLM designs' value is
the mean over their runs). Three numbers are reported for each comparison (`lib/evaluation/scores.py`,
`deltas`; `lib/evaluation/metrics.py`):

- **the 95% range**: a paired percentile bootstrap of the mean difference, {resamples_words(m, resamples)} resamples of the
  questions, seed {seed} (as the article reports its differences); an end within 1e-12 of zero is zero;
- **`p_value`**: the paired randomization test (Fisher's, as IR evaluation uses it: Smucker, Allan &
  Carterette 2007): under the null each question's difference is as likely to carry either sign, and
  the two-sided p is the share of the 2^n sign patterns whose |sum| reaches the observed one. It is
  **exact** wherever it can be computed: every sign pattern is enumerated where at most 20 questions
  differ; otherwise the exact distribution of the sum is built by dynamic programming over the
  differences scaled to whole numbers (an MRR@10 difference is a multiple of 1/2,520, the least common
  multiple of 1 to 10; a mean over three runs, of 1/7,560; a recall@5 difference of 1, or 1/2 on
  two-part questions). {fallback} The smallest p here is {p_words(smallest) if n else "none"} before the
  correction ({smallest:.3g}). Differences within 1e-12 of zero count as zero. It equals full
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
