"""The probes of a careful and a hostile user that must keep passing (issue list 1-4, the fast ones):
the scorer on any subset of designs, integer settings that refuse boolean-looking values, runs with
parameters that never rewrite the shipped pages, and `make study` that never hands a value to the
shell. (Escaped pages: tests/test_render_safety.py.)"""
from __future__ import annotations

import pandas as pd
import pytest

from lib.evaluation.power import power_sentence, power_table


def scored(designs: list[str], n: int = 12) -> pd.DataFrame:
    """Per-question scores of ``designs`` over ``n`` questions, one run each (dense finds the even ones)."""
    rows = []
    for i in range(n):
        for j, d in enumerate(designs):
            hit = float((i + j) % 2 == 0)
            rows.append({"qid": f"q{i}", "design": d, "run": 1, "recall_at_5": hit, "mrr_at_10": hit / 2})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------- 4. the scorer on any subset of designs


@pytest.mark.parametrize("designs, why", [
    (["dense"], "only dense is saved"),
    (["bm25"], "needs dense's runs, and only bm25 is saved"),
    (["bm25", "agent"], "needs dense's runs, and only agent, bm25 are saved"),
    ([], "no saved run is scored"),
])
def test_power_on_a_subset_of_designs_says_what_it_needs(designs, why):
    pq = scored(designs) if designs else pd.DataFrame(columns=["qid", "design", "run", "recall_at_5", "mrr_at_10"])
    pw = power_table(pq)
    assert pw.empty and "sd_of_differences" in pw.columns and "min_detectable_difference" in pw.columns
    assert why in power_sentence(pw)


def test_power_with_dense_and_one_other_design_sizes_that_one():
    pw = power_table(scored(["dense", "bm25"]))
    assert sorted(set(pw.design)) == ["bm25"] and len(pw) == 2
    assert power_sentence(pw).startswith("with 12 questions the smallest difference from dense")
