"""Choosing how the agent's lists are merged, on the dev set (``scripts/select_merge.py``, ``docs/merge.md``).

The arms are ``merges.ARMS``; the functions here are pure: they take each arm's per-question scores
(``merges.merge_scores`` rows over the dev questions) and return the measures and the choice.

Choice, on dev questions only (the rule in ``docs/merge.md``, fixed before any merge was scored):
every arm must have merged every dev question before anything is chosen (``IncompleteArms`` names each
arm short of questions). The measure is MRR@10 of the merged list, the mean over the questions. The
arm with the highest mean wins; arms within ``TIE`` (0.002) of the best, inclusive, count as tied,
broken by the order of ``merges.ARMS`` (rrf, question_first, best_score, weighted_rrf w = 2, 4, 8):
RRF, the article's, is kept unless another arm is better by more than the tie.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from .merges import ARM_NAMES

TIE = 0.002
EPS = 1e-9


class IncompleteArms(ValueError):
    """An arm has not merged every dev question of the choice: no arm may be chosen yet."""


def arm_measures(rows: pd.DataFrame, qids: Sequence[str], arms: Sequence[str] = ARM_NAMES,
                 groups: Mapping[str, str] | None = None) -> dict[str, dict]:
    """Per arm over ``qids``: questions, mean MRR@10 and recall@5 (and, with ``groups``: qid -> group,
    the mean MRR@10 within each group, for reading). Refuses (:class:`IncompleteArms`) while an arm
    misses a question."""
    want = set(qids)
    short = {a: len(want - set(rows.qid[rows.arm == a])) for a in arms}
    short = {a: n for a, n in short.items() if n}
    if short:
        raise IncompleteArms("no choice while an arm is incomplete: " + "; ".join(
            f"{a} misses {n} of {len(want)} questions" for a, n in short.items()))
    out = {}
    for a in arms:
        g = rows[(rows.arm == a) & rows.qid.isin(want)]
        m = {"questions": int(g.qid.nunique()), "mrr_at_10": float(g.mrr_at_10.mean()),
             "recall_at_5": float(g.recall_at_5.mean())}
        if groups:
            m["mrr_at_10_by_group"] = {k: float(x) for k, x in g.groupby(g.qid.map(groups)).mrr_at_10.mean().items()}
        out[a] = m
    return out


def choose(table: Mapping[str, Mapping], tie: float = TIE, order: Sequence[str] = ARM_NAMES) -> dict:
    """The rule of the module docstring applied to ``table`` (arm -> :func:`arm_measures`'s entry):
    the chosen arm, the best MRR@10 and its arm, the arms within the tie, and why."""
    if not table:
        raise IncompleteArms("no arm to choose from")
    rank = {a: i for i, a in enumerate(order)}
    mrr = {a: m["mrr_at_10"] for a, m in table.items()}
    best = max(mrr.values())
    by_order = sorted(table, key=lambda a: rank.get(a, len(rank)))
    best_arm = next(a for a in by_order if mrr[a] >= best - EPS)
    near = [a for a in by_order if mrr[a] >= best - tie - EPS]
    pick = near[0]
    if pick == best_arm:
        why = f"the highest MRR@10 ({mrr[pick]:.4f})" + (
            f"; {', '.join(a for a in near if a != pick)} within {tie} of it, after it in the order" if len(near) > 1 else
            f"; no other arm within {tie} of it")
    else:
        why = (f"within {tie} of the best MRR@10 ({mrr[pick]:.4f} against {best:.4f}, {best_arm}) and first in the "
               f"order")
    return {"arm": pick, "mrr_at_10": mrr[pick], "best_arm": best_arm, "best_mrr_at_10": best, "within_tie": near,
            "why": why}
