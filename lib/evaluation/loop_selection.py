"""Choosing the tool-calling loop's prompt on the dev set (``scripts/select_loop.py``, ``docs/loop.md``).

An arm is a loop design and a prompt variant (``ARMS``: ``loop`` and ``loop_question_first``, each
with ``loop_prompt`` one_example, no_example and two_examples), run once (run 1) on the first dev
questions; the functions here are pure: they take each arm's saved results and the questions'
sources and return its measures and the choice.

Choice, on dev questions only (the rule in ``docs/loop.md``, fixed before any dev score was seen):
the primary measure is the citation hit rate (per question, the share of its source paper(s) among
the loop's citations; averaged over the questions). Every arm must have answered every question
before anything is chosen (``IncompleteArms`` names each arm short of questions and by how many).
The arm with the highest citation hit rate wins, except that an arm within ``TIE`` (0.02) of the
best with fewer mean model turns is preferred: among the arms whose citation hit rate is at least
the best minus ``TIE`` (inclusive), the one with the fewest mean model turns per question wins;
equal turns (to 1e-9) are broken by the higher citation hit rate, then by the higher MRR@10 of the
ranked list, then by the order of ``ARMS`` (loop before loop_question_first; one_example, no_example,
two_examples). There is no floor: an arm whose citation hit rate is below dense's recall@5 on the
same questions stays eligible (dense's recall@5 is reported beside, for reading).
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

import numpy as np

from .metrics import citation_hit, scores_of

DESIGNS = ("loop", "loop_question_first")
PROMPTS = ("one_example", "no_example", "two_examples")
ARMS = tuple(f"{d}:{p}" for d in DESIGNS for p in PROMPTS)
TIE = 0.02
EPS = 1e-9  # two means closer than this are equal (turns; the tie's edge)


class IncompleteArms(ValueError):
    """An arm has not answered every dev question of the choice: no arm may be chosen yet."""


def parse_arm(arm: str) -> tuple[str, str]:
    """``design:prompt`` -> (design, prompt), refusing an arm not in ``ARMS``."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; the arms are {', '.join(ARMS)}")
    design, prompt = arm.split(":")
    return design, prompt


def parse_arms(text: str) -> list[str]:
    """A comma-separated list of arms (``all``: every arm), in the order of ``ARMS``, each checked."""
    if text.strip() == "all":
        return list(ARMS)
    named = [a.strip() for a in text.split(",") if a.strip()]
    if not named:
        raise ValueError(f"no arm named; the arms are {', '.join(ARMS)} (or all)")
    for a in named:
        parse_arm(a)
    return [a for a in ARMS if a in named]


def counts(values: Sequence[int]) -> dict[str, int]:
    """How many times each value occurs, by value ascending (keys as text, for JSON)."""
    return {str(k): v for k, v in sorted(Counter(int(x) for x in values).items())}


def arm_measures(results: Sequence, sources: Mapping[str, str]) -> dict:
    """One arm's measures over its results on the questions of ``sources``: citation hit rate,
    recall@5 and MRR@10 of the ranked list, means of model turns, searches (every search, the code's
    included) and reads (read calls run), and their distributions as counts per value, with how the
    loops ended and the tokens used."""
    res = [r for r in results if r.qid in sources]
    if not res:
        return {"questions": 0}
    sc = [scores_of(r.ranked_ids, sources[r.qid]) for r in res]
    turns = [int(r.details.get("turns", r.llm_calls)) for r in res]
    searches = [int(r.searches) for r in res]
    reads = [len(r.details.get("read", [])) for r in res]
    return {"questions": len(res),
            "citation_hit_rate": float(np.mean([citation_hit(r.details.get("citations", []), sources[r.qid])
                                                for r in res])),
            "recall_at_5": float(np.mean([s["recall_at_5"] for s in sc])),
            "mrr_at_10": float(np.mean([s["mrr_at_10"] for s in sc])),
            "turns_mean": float(np.mean(turns)), "searches_mean": float(np.mean(searches)),
            "reads_mean": float(np.mean(reads)),
            "papers_read_mean": float(np.mean([r.details.get("papers_read", 0) for r in res])),
            "tokens_mean": float(np.mean([r.tokens_in + r.tokens_out for r in res])),
            "distributions": {"turns": counts(turns), "searches": counts(searches), "reads": counts(reads)},
            "ended_by": dict(sorted(Counter(r.stop_reason for r in res).items()))}


def missing(arms: Mapping[str, Sequence], qids: Sequence[str], required: Sequence[str] = ARMS) -> dict[str, int]:
    """Per arm of ``required`` that is short of questions: how many of ``qids`` it has not answered
    (an arm with no results at all misses every one)."""
    want = set(qids)
    out = {}
    for a in required:
        done = {r.qid for r in arms.get(a, ())} & want
        if len(done) < len(want):
            out[a] = len(want) - len(done)
    return out


def check_complete(arms: Mapping[str, Sequence], qids: Sequence[str], required: Sequence[str] = ARMS) -> None:
    """Refuse (:class:`IncompleteArms`) while any required arm has not answered every question."""
    short = missing(arms, qids, required)
    if short:
        raise IncompleteArms("no choice while an arm is incomplete: " + "; ".join(
            f"{a} misses {n} of {len(set(qids))} questions" for a, n in short.items()))


def choose(table: Mapping[str, Mapping], tie: float = TIE, order: Sequence[str] = ARMS) -> dict:
    """The rule of the module docstring applied to ``table`` (arm -> :func:`arm_measures`): the chosen
    arm, the best citation hit rate and its arm, the arms within the tie, and why."""
    if not table:
        raise IncompleteArms("no arm to choose from")
    rank = {a: i for i, a in enumerate(order)}
    hit = {a: m["citation_hit_rate"] for a, m in table.items()}
    best = max(hit.values())
    first = sorted((a for a in table if hit[a] >= best - EPS), key=lambda a: rank.get(a, len(rank)))[0]
    near = [a for a in table if hit[a] >= best - tie - EPS]

    def key(a):
        m = table[a]
        return (round(m["turns_mean"], 9), -hit[a], -m["mrr_at_10"], rank.get(a, len(rank)))

    pick = sorted(near, key=key)[0]
    design, prompt = pick.split(":")
    if pick == first:
        why = f"the highest citation hit rate ({hit[pick]:.3f})"
        if len(near) > 1:
            why += f", and no arm within {tie} of it takes fewer model turns"
    else:
        why = (f"within {tie} of the best citation hit rate ({hit[pick]:.3f} against {best:.3f}, {first}) with "
               f"fewer model turns ({table[pick]['turns_mean']:.2f} against {table[first]['turns_mean']:.2f})")
    return {"arm": pick, "design": design, "loop_prompt": prompt, "citation_hit_rate": hit[pick],
            "turns_mean": table[pick]["turns_mean"], "best_arm": first, "best_citation_hit_rate": best,
            "within_tie": [a for a in order if a in near] + [a for a in near if a not in rank], "why": why}


def select(arms: Mapping[str, Sequence], sources: Mapping[str, str], required: Sequence[str] = ARMS) -> dict:
    """Every required arm's measures and the choice, refused while an arm is incomplete."""
    qids = list(sources)
    check_complete(arms, qids, required)
    table = {a: arm_measures(arms[a], sources) for a in required}
    return {"arms": table, "choice": choose(table)}
