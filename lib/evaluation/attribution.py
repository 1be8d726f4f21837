"""Which part of an LLM design costs it against dense: a Shapley split over counterfactuals (no model call).

Each saved (question, run) result is rebuilt from the lists its saved queries return when searched again
(the condition's dense search, depth 50: ``lib.evaluation.loss``), and each part of the design is a
*factor* with two settings: as run, or a neutral (counterfactual) setting:

* ``stop`` (the agent and the tool-calling loops): the model's own stops, or an **oracle stop** over the
  same queries in the same order: the searches up to the first whose shown titles (with every earlier
  search's) hold the source; all of them when it is never shown;
* ``queries``: each model-written query's list as searched, or **levelled**: every relevant paper put at
  its rank under the question (moved up where the query ranks it worse or misses it, down where it ranks
  it better, left out where the question misses it), the rest of the list in its order: a query exactly
  as good as the question for the source, so that a worse query is blamed and a better one credited;
* ``merge``: reciprocal rank fusion (``lib.search.fusion.rrf``) of the lists, or **the question's own
  list first**, the new finds of the other lists appended below it (``lib.search.fusion.question_first``):
  a rule that keeps whatever the question found where the question put it;
* ``citations`` (the tool-calling loops): the cited papers placed first, or the list without them put first.

With every factor neutral, the list is the question's own list (its depth-50 top is the merged list's),
so the neutral value is dense's, and the split sums to the loss exactly. (The model-first loop never
searched the question: there the merge's neutral is the first list it searched, and what remains
between dense and that all-neutral list is reported as ``start``.)

The split is the Shapley value (Shapley 1953; as used for feature attribution by Lundberg & Lee 2017):
each factor's share is its marginal effect on the score, averaged over every order in which the factors
could be switched from neutral to as run. It is order-free and the shares sum to the loss (efficiency);
a factor that changes nothing in any setting of the others gets exactly 0 (null player); an effect that
needs several factors together (an AND: a further search hurts only if its query ranks the source worse
*and* the merge lets it in *and* the stop let it be made) is split equally among them (symmetry). It is
computed per result from all 2^n settings (n <= 4), averaged over runs per question, then over questions.
Beside it, ``fix_<factor>``: the gain from making only that factor neutral (the others as run).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from ..designs import Question, Result
from ..designs.loop import LOOP_DESIGNS, QUESTION_FIRST, code_searches
from ..search.fusion import question_first, rrf
from .loss import DEPTH, SHOWN, Search, oracle_stop, searched_queries, with_questions
from .metrics import scores_of
from .relevance import relevant_ids

FACTORS = ("stop", "queries", "merge", "citations")
METRICS = ("mrr_at_10", "recall_at_5")
# how a factor is set when it is neutral (a name for tables; the report layer writes the sentences)
NEUTRALS = {"stop": "oracle stop over the same queries", "queries": "each query's list levelled to the question's rank",
            "merge": "the question's list first, new finds below", "citations": "no citations put first"}


def design_factors(design: str) -> tuple[str, ...]:
    """The factors of a design: multi-query writes a fixed number of queries (no stop judgement); only the
    tool-calling loops cite."""
    if design in LOOP_DESIGNS:
        return FACTORS
    if design == "multiquery":
        return ("queries", "merge")
    return ("stop", "queries", "merge")


@dataclass
class Case:
    """One result as the counterfactuals need it: the question's own list, the lists the design searched
    (in order; ``first_model``: the index of the first model-written one), its citations and saved list."""

    design: str
    source: str
    question: list[str]
    lists: list[list[str]]
    first_model: int
    citations: list[str] = field(default_factory=list)
    saved: list[str] | None = None
    rrf_k: int = 60
    shown: int = SHOWN
    depth: int = DEPTH
    qid: str = ""
    run: int = 1


def case_of(result: Result, question: Question, search: Search, rrf_k: int = 60, shown: int = SHOWN,
            depth: int = DEPTH) -> Case:
    """A saved result and its question, every list searched again (``search``: text -> ranked ids)."""
    lists = [list(search(t)) for t in searched_queries(result)]
    if result.design in LOOP_DESIGNS:
        first = code_searches(result)
    elif result.design in ("agent", "multiquery"):
        first = 1
    else:
        raise ValueError(f"result {result.qid} run {result.run}: design {result.design!r} is not taken apart "
                         f"(one of agent, multiquery, {', '.join(LOOP_DESIGNS)})")
    return Case(result.design, question.source_id, list(search(question.text)), lists, first,
                list(result.details.get("citations", [])) if result.design in LOOP_DESIGNS else [],
                list(result.ranked_ids), rrf_k, shown, depth, result.qid, result.run)


def levelled(ids: Sequence[str], question: Sequence[str], source: str) -> list[str]:
    """The queries' neutral: the list with every relevant paper put at its rank under the question (moved up
    where the query ranks it worse or misses it, down where it ranks it better, left out where the question
    misses it), the rest of the list in its order: a query exactly as good as the question for this source."""
    rel = relevant_ids(source)
    qrank = {d: i for i, d in enumerate(question)}
    out = [d for d in ids if d not in rel]
    for d in sorted((d for d in rel if d in qrank), key=lambda d: qrank[d]):
        out.insert(qrank[d], d)
    return out


def ranked(case: Case, active: frozenset) -> list[str]:
    """The case's ranked list with the factors in ``active`` as run and the others neutral."""
    lists = [x if i < case.first_model or "queries" in active else levelled(x, case.question, case.source)
             for i, x in enumerate(case.lists)]
    if "stop" not in active and lists:
        lists = lists[:oracle_stop(lists, case.source, case.shown)]
    if "merge" in active:
        merged = [d for d, _ in rrf(lists, case.rrf_k)]
    else:
        base = case.question if case.first_model > 0 or not lists else lists[0]
        merged = question_first([base, *lists])
    if "citations" in active:
        merged = list(dict.fromkeys(list(case.citations) + merged))
    return merged[:case.depth]


def shapley(values: dict[frozenset, float], factors: Sequence[str]) -> dict[str, float]:
    """Shapley values of a game given on every subset of ``factors`` (``values[S]``: the value with the
    factors in S as run): each factor's marginal effect averaged over all orders."""
    n = len(factors)
    out = {}
    for f in factors:
        others = [g for g in factors if g != f]
        total = 0.0
        for k in range(n):
            w = math.factorial(k) * math.factorial(n - k - 1) / math.factorial(n)
            for s in itertools.combinations(others, k):
                s = frozenset(s)
                total += w * (values[s | {f}] - values[s])
        out[f] = total
    return out


def attribute(case: Case, factors: Sequence[str] | None = None) -> dict:
    """One result's loss against dense split over its factors, per measure: ``loss`` (dense − as run,
    the saved list's score when saved), ``<factor>`` (its Shapley share of ``loss − start``), ``start``
    (dense − the all-neutral list: 0 unless the design never searched the question),
    ``fix_<factor>`` (the score gained by making that factor alone neutral)."""
    factors = tuple(factors or design_factors(case.design))
    subsets = [frozenset(s) for k in range(len(factors) + 1) for s in itertools.combinations(factors, k)]
    full = frozenset(factors)
    fixed = frozenset(FACTORS) - frozenset(factors)  # a factor the design does not have stays as run
    lists = {s: ranked(case, s | fixed) for s in subsets}
    if case.saved is not None:
        lists[full] = list(case.saved)
    scored = {s: scores_of(x, case.source) for s, x in lists.items()}
    dense = scores_of(case.question[:case.depth], case.source)
    out: dict = {"qid": case.qid, "run": case.run, "design": case.design,
                 "rebuilt": ranked(case, full | fixed) == lists[full], "searches": len(case.lists),
                 "first_rank": dense["rank"]}
    for m in METRICS:
        v = {s: -float(sc[m]) for s, sc in scored.items()}  # the game's value: the loss below 0
        sh = shapley(v, factors)
        out[f"{m}_dense"], out[f"{m}_run"] = float(dense[m]), float(scored[full][m])
        out[f"{m}_loss"] = float(dense[m]) - float(scored[full][m])
        out[f"{m}_start"] = float(dense[m]) - float(scored[frozenset()][m])
        for f in FACTORS:
            out[f"{m}_{f}"] = sh[f] if f in factors else np.nan
            out[f"{m}_fix_{f}"] = float(scored[full - {f}][m] - scored[full][m]) if f in factors else np.nan
    return out


def per_result(results: Sequence[Result], questions: Sequence[Question], search: Search, rrf_k: int = 60,
               shown: int = SHOWN, depth: int = DEPTH) -> pd.DataFrame:
    """:func:`attribute` for every (question, run) result, one row each."""
    return pd.DataFrame([attribute(case_of(r, q, search, rrf_k, shown, depth)) for r, q in with_questions(results, questions)])


def summary(pr: pd.DataFrame, condition: str = "", design: str = "") -> pd.DataFrame:
    """Per measure: the mean over questions (runs averaged first) of dense, the design as run, the loss, the
    start and each factor's share and fix; ``<factor>_fraction``: the share over the loss; ``results``,
    ``below``: results below dense, ``rebuilt``: the share of results whose saved list the rebuild matches."""
    rows = []
    for m in METRICS:
        cols = [c for c in pr.columns if c.startswith(f"{m}_")]
        per_q = pr.groupby("qid", sort=False)[cols].mean()
        row = {"condition": condition, "design": design or (pr.design.iloc[0] if len(pr) else ""), "metric": m,
               "questions": len(per_q), "results": len(pr), "below": int((pr[f"{m}_loss"] > 1e-12).sum()),
               "rebuilt": float(pr.rebuilt.mean()) if len(pr) else np.nan}
        for c in cols:
            row[c[len(m) + 1:]] = float(per_q[c].mean()) if per_q[c].notna().any() else np.nan
        for f in FACTORS:
            row[f"{f}_fraction"] = row[f] / row["loss"] if row["loss"] > 0 and pd.notna(row[f]) else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- named findings
@dataclass(frozen=True)
class Finding:
    """A named finding of the attribution: in ``condition``, ``design``'s ``metric`` is ``loss`` below dense
    (negative: above) and ``factor`` carries ``share`` of it (``fraction``: share / loss)."""

    condition: str
    design: str
    metric: str
    loss: float
    factor: str
    share: float
    fraction: float


def findings(table: pd.DataFrame, metric: str = "mrr_at_10") -> list[Finding]:
    """Each factor's share per condition and design, largest share first within each."""
    out = []
    for r in table[table.metric == metric].itertuples():
        shares = [(f, getattr(r, f)) for f in FACTORS if pd.notna(getattr(r, f))]
        if abs(r.start) > 1e-12:
            shares.append(("start", r.start))
        for f, s in sorted(shares, key=lambda x: -x[1]):
            out.append(Finding(r.condition, r.design, metric, float(r.loss), f, float(s),
                               float(s / r.loss) if r.loss > 0 else float("nan")))
    return out


def leading(table: pd.DataFrame, condition: str, design: str, metric: str = "mrr_at_10") -> Finding | None:
    """The factor with the largest share of a design's loss in a condition (None: not analysed, or no loss)."""
    found = [f for f in findings(table, metric) if f.condition == condition and f.design == design]
    return found[0] if found and found[0].loss > 0 else None


# --------------------------------------------------------------------------- the recount, from the saved lists alone
def agent_recount(results: Sequence[Result], questions: Sequence[Question], dense: dict[str, list[str]],
                  shown: int = SHOWN) -> dict:
    """The agent's losing results, from the saved lists only (``dense``: qid -> the dense run's list, the
    agent's first search): how many results rank the source below dense in MRR@10, how many of those had
    it in the first search's top ``shown`` and searched again, and the MRR@10 points each set lost."""
    below = shown_again = 0
    lost = lost_shown = 0.0
    for r, q in with_questions(results, questions):
        d = scores_of(dense[r.qid], q.source_id)["mrr_at_10"] - scores_of(r.ranked_ids, q.source_id)["mrr_at_10"]
        if d <= 1e-12:
            continue
        below += 1
        lost += d
        if r.searches > 1 and all(p in dense[r.qid][:shown] for p in relevant_ids(q.source_id)):
            shown_again += 1
            lost_shown += d
    return {"results": len(with_questions(results, questions)), "below": below, "shown_and_searched_again": shown_again,
            "points_lost": lost, "points_shown_and_searched_again": lost_shown}


def loop_recount(results: Sequence[Result], questions: Sequence[Question], dense: dict[str, list[str]]) -> dict:
    """The question-first loop's losses, from the saved lists only: loops that ran only the code's search,
    questions below dense in MRR@10 (runs averaged), those whose rank-1 paper is a citation that is not
    relevant (a wrong citation put first) in some run, those of them whose every loop ran only the code's
    search (``_only_code``), and the MRR@10 points each set lost."""
    only_code = sum(1 for r in results if len(r.queries) - 1 <= code_searches(r))
    per_q: dict[str, list] = {}
    for r, q in with_questions(results, questions):
        d = scores_of(dense[r.qid], q.source_id)["mrr_at_10"] - scores_of(r.ranked_ids, q.source_id)["mrr_at_10"]
        cites = r.details.get("citations", [])
        wrong = bool(cites) and r.ranked_ids[:1] == cites[:1] and cites[0] not in relevant_ids(q.source_id)
        per_q.setdefault(r.qid, []).append((d, wrong, len(r.queries) - 1 <= code_searches(r)))
    losing = {k: v for k, v in per_q.items() if np.mean([d for d, _, _ in v]) > 1e-12}
    wrong = {k: v for k, v in losing.items() if any(w for _, w, _ in v)}
    alone = {k: v for k, v in wrong.items() if all(c for _, _, c in v)}

    def points(group):
        return float(sum(np.mean([d for d, _, _ in v]) for v in group.values()))

    return {"results": len(results), "only_code_search": only_code, "questions_below": len(losing),
            "below_wrong_citation_first": len(wrong), "below_wrong_citation_first_only_code": len(alone),
            "points_lost": points(losing), "points_wrong_citation_first": points(wrong),
            "points_wrong_citation_first_only_code": points(alone)}


# --------------------------------------------------------------------------- from the saved records
ATTRIBUTED = ("agent", "multiquery", "loop", QUESTION_FIRST)


def condition_table(records, condition: str, designs: Sequence[str] = ATTRIBUTED) -> tuple[pd.DataFrame, dict]:
    """Every design's attribution in one condition (``records``: ``loss.ConditionRecords``): the summary
    rows and, per design, the per-result rows."""
    prof = records.profile
    tables, rows = [], {}
    for d in designs:
        complete, _ = records.runs.get(d, ([], []))
        if not complete or records.search is None:
            continue
        pr = per_result(complete, records.questions, records.search, prof.rrf_k, records.shown.get(d, SHOWN))
        rows[d] = pr
        tables.append(summary(pr, condition, d))
    return (pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()), rows


def conditions_table(records: dict) -> tuple[pd.DataFrame, dict]:
    """:func:`condition_table` in every condition read (``records``: ``loss.conditions_records``), each
    condition's result cached on disk under the digest of its records and of this code
    (``loss.cached``): the summary over every condition and design, and per (condition, design) the rows."""
    import sys

    from . import loss

    tables, rows = [], {}
    version = loss.code_version(sys.modules[__name__], loss)
    for c, rec in records.items():
        if isinstance(rec, str) or rec.search is None:
            continue
        tab, per = loss.cached("attribution", f"{loss.records_digest(rec)}-{version}",
                               lambda rec=rec, c=c: condition_table(rec, c))
        tables.append(tab)
        rows.update({(c, d): pr for d, pr in per.items()})
    return (pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()), rows
