"""The why analysis in words: sentences generated from the numbers and named findings of
``lib.evaluation.attribution`` (the Shapley split of each design's loss), ``lib.evaluation.breakeven``
(what a judge or query writer would need) and ``lib.evaluation.loss`` (the old account, the two-part loop).
Nothing here computes a measure; every number comes from those modules or the saved tables they write.

For the index: :func:`why_clause` (per condition and design, the attribution in one clause, from the
saved ``results/attribution.csv``: :func:`attribution_table`) and :func:`break_even_line` (from
``results/break_even.csv``: :func:`break_even_table`)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import pandas as pd

from .display import fixed

ATTRIBUTION_CSV = "attribution.csv"   # page 12's attribution per condition, design and measure
BREAK_EVEN_CSV = "break_even.csv"     # page 12's break-even per condition and curve
FACTOR_WORDS = {"stop": "the stop judgement", "queries": "the new queries", "merge": "the merge (RRF)",
                "citations": "citations put first", "start": "not searching the question"}
DESIGN_WORDS = {"agent": "the agent", "multiquery": "multi-query", "loop": "the loop",
                "loop_question_first": "the question-first loop"}
METRIC_WORDS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}
STEP_WORDS = {"both cited": "both papers cited", "read, not cited": "the second paper read but not cited",
              "shown, not read": "the second paper shown by a search but never read",
              "in its list, never shown": "the second paper in its searches' lists but never among the titles shown",
              "never found": "the second paper in none of its searches' results"}


def _name(design: str, names: Callable[[str], str] | None = None) -> str:
    """The design's words: the sentence's own ("the agent") where it has them, else the report's label."""
    return DESIGN_WORDS.get(design) or (names(design) if names else design)


def _pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}".replace("-", "−")


def _present(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def attribution_table(results_dir: Path) -> pd.DataFrame:
    """The saved attribution (written by page 12); empty when none."""
    path = Path(results_dir) / ATTRIBUTION_CSV
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def break_even_table(results_dir: Path) -> pd.DataFrame:
    """The saved break-even summary (written by page 12); empty when none."""
    path = Path(results_dir) / BREAK_EVEN_CSV
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def _row(table: pd.DataFrame, condition: str, design: str, metric: str):
    if table.empty:
        return None
    rows = table[(table.condition == condition) & (table.design == design) & (table.metric == metric)]
    return rows.iloc[0] if len(rows) else None


def shares_words(row, factors=("stop", "queries", "merge", "citations", "start")) -> str:
    """Each factor's share of the loss, largest first: "the new queries 0.017 (37%), ..."."""
    parts = [(f, row[f]) for f in factors if f in row and _present(row[f]) and (f != "start" or abs(row[f]) > 1e-9)]
    parts.sort(key=lambda p: -p[1])
    return ", ".join(f"{FACTOR_WORDS[f]} {s:.3f} ({_pct(s / row['loss'])})" for f, s in parts)


def why_line(table: pd.DataFrame, condition: str, design: str, names: Callable[[str], str] | None = None,
             metric: str = "mrr_at_10") -> str:
    """One sentence: how far a design is below dense in a condition and each factor's Shapley share of that
    loss, largest first; empty when not analysed or when it is not below dense."""
    r = _row(table, condition, design, metric)
    if r is None or not round(float(r["loss"]), 3) > 0:
        return ""
    return (f"Why {_name(design, names)} loses here ({METRIC_WORDS[metric]} {fixed(-r['loss'], sign=True)} against dense, page 12): "
            f"of the loss, {shares_words(r)}, by a Shapley split over counterfactuals")


def why_clause(table: pd.DataFrame, condition: str, design: str = "agent",
               names: Callable[[str], str] | None = None) -> str:
    """:func:`why_line` as the index's per-condition line appends it (after ". "); empty when there is none."""
    line = why_line(table, condition, design, names)
    return f". {line}" if line else ""


def attribution_reading(table: pd.DataFrame, condition: str, design: str, names: Callable[[str], str] | None = None) -> str:
    """A paragraph for one condition and design: the loss in MRR@10 and recall@5, each factor's share, and what
    making one factor alone neutral would recover."""
    name = _name(design, names)
    m, rc = _row(table, condition, design, "mrr_at_10"), _row(table, condition, design, "recall_at_5")
    if m is None:
        return ""
    head = (f"In {condition}, {name}'s MRR@10 is {m['run']:.3f} against dense's {m['dense']:.3f} "
            f"({fixed(-m['loss'], sign=True)}; {int(m['below'])} of {int(m['results'])} question-runs below dense"
            + (f"; recall@5 {fixed(-rc['loss'], sign=True)}" if rc is not None else "") + ").")
    if not round(float(m["loss"]), 3) > 0:
        return head + " There is no loss to take apart."
    fixes = [(f, m[f"fix_{f}"]) for f in ("stop", "queries", "merge", "citations") if _present(m.get(f"fix_{f}"))]
    fix = "; ".join(f"{FACTOR_WORDS[f]} alone {fixed(v, sign=True)}" for f, v in sorted(fixes, key=lambda p: -p[1]))
    return (head + f" Of the MRR@10 loss: {shares_words(m)}. Made neutral one at a time (the others as run), each "
            f"factor would recover: {fix}.")


def recount_reading(agent: dict | None, loop: dict | None, condition: str) -> str:
    """The recount from the saved lists alone: where the agent's and the question-first loop's losses lie."""
    parts = []
    if agent:
        parts.append(f"In {condition}, the agent ranks the source below dense in {agent['below']} of its "
                     f"{agent['results']} question-runs; in {agent['shown_and_searched_again']} of them the source was "
                     f"already in the first search's top 5 and the model searched again, and those carry "
                     f"{agent['points_shown_and_searched_again']:.2f} of the {agent['points_lost']:.2f} MRR@10 points lost.")
    if loop:
        parts.append(f"The question-first loop made only the code's search in {loop['only_code_search']} of its "
                     f"{loop['results']} loops; {loop['below_wrong_citation_first']} of its {loop['questions_below']} "
                     f"questions below dense have a wrong citation at rank 1 ({loop['points_wrong_citation_first']:.2f} of "
                     f"{loop['points_lost']:.2f} points), {loop['below_wrong_citation_first_only_code']} of them in loops "
                     f"that made only the code's search ({loop['points_wrong_citation_first_only_code']:.2f} points).")
    return " ".join(parts)


def _model_label(model: str) -> str:
    from .model_size import model_label

    return model_label(model)


def _signed(x: float) -> str:
    """A difference to three places, never "-0.000"."""
    return fixed(x, sign=True) if round(x, 3) != 0 else "±0.000"


def break_even_line(table: pd.DataFrame, condition: str, metric: str = "mrr_at_10") -> str:
    """The break-even of a condition in words: the stop-judge accuracy and the share of better queries the
    agent would need to match dense in ``metric`` (or that none would do: the ceiling), then where today's
    models stand (measured from their saved decisions and queries)."""
    if table.empty:
        return ""
    sub = table[table.condition == condition]
    judge = sub[(sub.design == "agent") & (sub.axis == "stop judge accuracy")]
    query = sub[(sub.design == "agent") & (sub.axis == "share of better queries")]
    if judge.empty:
        return ""
    j = judge.iloc[0]
    q = query.iloc[0] if len(query) else None
    if _present(j["break_even"]):
        text = (f"In {condition}, the agent would match dense ({METRIC_WORDS[metric]}) with a stop judge right "
                f"{_pct(j['break_even'])} of the time both ways (a perfect one: {_signed(j['ceiling'])})")
    else:
        text = (f"In {condition}, no stop judge lets the agent beat dense with its queries (a perfect one: "
                f"{_signed(j['ceiling'])} {METRIC_WORDS[metric]})")
    if q is not None:
        text += (f"; with its stops as run, it would take {_pct(q['break_even'])} of its new queries ranking the source "
                 f"better than the question" if _present(q["break_even"]) else
                 "; with its stops as run, no share of better queries would do")
    models = [c[:-len("_p_stop")] for c in sub.columns if c.endswith("_p_stop") and _present(j[c])]
    today = []
    for mo in models:
        words = (f"{_model_label(mo)} stops on {_pct(j[f'{mo}_p_stop'])} of the decisions with the source shown and "
                 f"searches on in {_pct(j[f'{mo}_p_search'])} of those without it")
        if q is not None and _present(q.get(f"{mo}_accuracy")):
            words += f", {_pct(q[f'{mo}_accuracy'])} of its queries better"
        today.append(words + f" ({_signed(j[f'{mo}_{metric}_as_run'])} as run)")
    return text + "." + (f" Today: {'; '.join(today)}." if today else "")


def two_part_reading(counts: pd.DataFrame, condition: str = "two-part questions") -> str:
    """Where the question-first loop lost the second paper of two-part questions, step by step."""
    n = int(counts.loops.sum())
    if not n:
        return ""
    parts = [f"{STEP_WORDS[r.failed]} in {r.loops} ({_pct(r.share)})" for r in counts.itertuples() if r.loops]
    own = int(counts.no_search_of_its_own.sum())
    return (f"In {condition}, over {n} loops of the question-first loop: " + "; ".join(parts) + f". {own} of the {n} "
            f"loops made no search of their own.")


def account_reading(condition: str, design: str, acc: dict, names: Callable[[str], str] | None = None) -> str:
    """What the old account measures, in words (``acc``: ``lib.evaluation.loss.account``'s numbers): how
    the design's new queries, each searched alone, ranked the source against the question, and (the agent)
    how it used its searches and its stop judgement, with the oracle stop's score. Which part caused the loss
    is :func:`attribution_reading`'s."""
    name = _name(design, names)
    parts = []
    if acc["queries"]:
        parts.append(f"In {condition}, {name}'s {acc['queries']} new queries, each searched alone, ranked the source "
                     f"worse than the question in {_pct(acc['worse_share'])}, better in {_pct(acc['better_share'])} and "
                     f"the same in {_pct(acc['same_share'])} (both missing: {_pct(acc['both missing_share'])}).")
    else:
        parts.append(f"In {condition}, {name} wrote no new query.")
    if "stopped_after_one" in acc:
        parts.append(f"It stopped after one search on {_pct(acc['stopped_after_one'])} of its (question, run) pairs and "
                     f"used all {acc['max_searches']} on {_pct(acc['used_all'])}"
                     + (f" (the article's agent: {_pct(acc['article_stopped_after_one'])} and "
                        f"{_pct(acc['article_used_all'])})" if "article_used_all" in acc else "") + ".")
    if "decisions" in acc:
        parts.append(f"Of the {acc['shown_decisions']} decisions it made with the source among the shown titles, "
                     f"{acc['shown_searched_again']} searched again, and of the {acc['hidden_decisions']} made without "
                     f"it, {acc['hidden_stopped']} stopped; stopping exactly when the source was shown gives "
                     f"{acc['oracle_mean']:.3f} {METRIC_WORDS[acc['metric']]} against dense's {acc['question_mean']:.3f}.")
    return " ".join(parts)


def design_shares(attr: pd.DataFrame, condition: str, design: str, metric: str = "mrr_at_10",
                  names: Callable[[str], str] | None = None, floor: float = 0.05) -> str:
    """One sentence for one design in one condition: its loss against dense and the parts that carry at least
    ``floor`` of it either way (largest first; a negative share is a gain); empty when it was not analysed."""
    r = _row(attr, condition, design=design, metric=metric)
    if r is None:
        return ""
    name = _name(design, names)
    if not round(float(r["loss"]), 3) > 0:
        return f"{name[0].upper()}{name[1:]} is not below dense ({METRIC_WORDS[metric]} {_signed(-r['loss'])})."
    big = sorted(((f, r[f] / r["loss"]) for f in FACTOR_WORDS if f in r and _present(r[f])
                  and (f != "start" or abs(r[f]) > 1e-9)), key=lambda p: -p[1])
    named = [f"{FACTOR_WORDS[f]} {_pct(x)}" for f, x in big if abs(x) >= floor]
    rest = [f for f, x in big if abs(x) < floor]
    return (f"{name[0].upper()}{name[1:]} is {_signed(-r['loss'])} {METRIC_WORDS[metric]} against dense: "
            f"{', '.join(named)} of the loss" + (f" (the rest under {_pct(floor)} each)" if rest else "") + ".")


def condition_finding(attr: pd.DataFrame, be_table: pd.DataFrame, condition: str, designs, metric: str = "mrr_at_10",
                      names: Callable[[str], str] | None = None, floor: float = 0.05) -> str:
    """A condition's finding in a few lines of Markdown: :func:`design_shares` per design, then the break-even
    line."""
    parts = [t for t in (design_shares(attr, condition, d, metric, names, floor) for d in designs) if t]
    line = break_even_line(be_table, condition, metric)
    return f"- **{condition}.** " + " ".join(parts + ([line] if line else []))
