"""The why analysis in words: sentences generated from page 12's saved tables (``results/why_paths.csv``:
where each design's difference from dense comes from, decision by decision; ``results/judges.csv``: stop
judges over the agent's real decision trees; ``results/query_quality.csv``: the trees' queries). Nothing
here computes a measure; every number comes from :mod:`lib.evaluation.why_paths`, :mod:`lib.evaluation.judges`,
:mod:`lib.evaluation.query_bound` (``results/query_bound.csv``: the query side's bound) and
:mod:`lib.evaluation.loss`. The two accuracies are defined once, here (:data:`ACCURACY_WORDS`)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import pandas as pd

from ..evaluation.metrics import ZERO
from ..evaluation.why_paths import FUSED, ONE_SEARCH, kind_of, query_names, rewrite_words
from .display import fixed
from .model_size import model_label

FILES = {"paths": "why_paths.csv", "judges": "judges.csv", "grid": "judges_grid.csv", "quality": "query_quality.csv",
         "bound": "query_bound.csv", "bound_grid": "query_bound_grid.csv"}
DESIGN_WORDS = {"agent": "the agent", "multiquery": "multi-query", "loop": "the loop",
                "loop_question_first": "the question-first loop", "agent_rerank": "the agent reranked",
                "decompose": "sub-question decomposition", "hyde": "HyDE"}
METRIC_WORDS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}
# the one definition of each accuracy, used by every page and caption
ACCURACY_WORDS = {
    "p_stop": ("stop accuracy", "of the decisions a model made with the source among the titles it had been shown "
                                "(the top 5 of every search so far), the share at which it stopped"),
    "p_search": ("search accuracy", "of the decisions it made with the source not among them, the share at which "
                                    "it searched again"),
}
STEP_WORDS = {"both cited": "both papers cited", "read, not cited": "the second paper read but not cited",
              "shown, not read": "the second paper shown by a search but never read",
              "in its list, never shown": "the second paper in its searches' lists but never among the titles shown",
              "never found": "the second paper in none of its searches' results"}


def _name(design: str, names: Callable[[str], str] | None = None) -> str:
    return DESIGN_WORDS.get(design) or (names(design) if names else design)


def _pct(x: float) -> str:
    """A share as a whole percent; "n/a" where nothing measured it (never "nan%")."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.0%}".replace("-", "−")


percent = _pct


def _signed(x: float) -> str:
    """A difference to three places, never "-0.000"."""
    return fixed(x, sign=True) if round(x, 3) != 0 else "±0.000"


def points(x: float) -> str:
    """A path's points to four places, never "-0.0000"."""
    return fixed(x, 4, sign=True) if round(x, 4) != 0 else "±0.0000"


def _ranged(d: float, lo: float, hi: float) -> str:
    return f"{_signed(d)} [{_signed(lo)}, {_signed(hi)}]"


def table(results_dir: Path, name: str) -> pd.DataFrame:
    """One of page 12's saved tables (``name``: a key of :data:`FILES`); empty when none was written."""
    path = Path(results_dir) / FILES[name]
    return pd.read_csv(path, keep_default_na=False, na_values=[""]) if path.exists() else pd.DataFrame()


def profile_model(paths: pd.DataFrame, condition: str, model: str | None = None) -> str | None:
    """The model a sentence is about: ``model``, else the one with the most results in the condition."""
    if model is not None or paths.empty:
        return model
    g = paths[paths.condition == condition]
    return None if g.empty else g.groupby("model").results.sum().idxmax()


def paths_sentence(paths: pd.DataFrame, condition: str, design: str, model: str | None = None,
                   metric: str = "mrr_at_10", names: Callable[[str], str] | None = None, short: bool = False) -> str:
    """One sentence: where a design's difference from dense comes from, by decision (the agent) or by what
    its rewrites did (multi-query); empty when the design has no paths there."""
    model = profile_model(paths, condition, model)
    g = paths[(paths.condition == condition) & (paths.design == design) & (paths.model == model)] if not paths.empty else paths
    if g.empty:
        return ""
    col = f"{metric}_points"
    total = float(g[col].sum())
    name = _name(design, names)
    head = f"{name[0].upper()}{name[1:]}'s {METRIC_WORDS[metric]} difference from dense, {_signed(total)},"
    lost = float(g[col].clip(upper=0).sum())
    if kind_of(design) == FUSED:
        one = query_names(design)[1]
        worse = g[g["query"].isin(rewrite_words(design)[1:3])]
        share = float(worse[col].clip(upper=0).sum()) / lost if lost < -ZERO else float("nan")
        return (f"{head} is {_signed(float(worse[col].sum()))} from the {int(worse.results.sum())} results in which a "
                f"{one} ranked the source lower than the question or lost it ({_pct(share)} of the points lost) and "
                f"{_signed(total - float(worse[col].sum()))} from the rest.")
    if kind_of(design) == ONE_SEARCH:
        above, below = g[g.final == "above dense"], g[g.final == "below dense"]
        return (f"{head} is {_signed(float(above[col].sum()))} from the {int(above.results.sum())} results whose one "
                f"search ranked the source above dense and {_signed(float(below[col].sum()))} from the "
                f"{int(below.results.sum())} below.")
    again = g[g.decision == "searched again"]
    shown = again[again.shown.isin(["at rank 1", "at 2-5"])]
    hidden = again[again.shown == "not shown"]
    share = float(shown[col].clip(upper=0).sum()) / lost if lost < -ZERO else float("nan")
    n_stop = int(g[g.decision == "stopped"].results.sum())
    stopped = ("that answered without a search of their own (their citations put first)" if design == "loop_question_first"
               else "that stopped")
    text = (f"{head} is {_signed(float(shown[col].sum()))} from searching again after the source was already among "
            f"the titles shown ({int(shown.results.sum())} results; {_pct(share)} of the points lost), "
            f"{_signed(float(hidden[col].sum()))} from searching again when it was not ({int(hidden.results.sum())} "
            f"results) and {_signed(float(g[g.decision == 'stopped'][col].sum()))} from the {n_stop} {stopped}")
    if short:
        return text + "."
    lower = shown[shown.final == "below dense"]
    by = lower.groupby("query")[col].sum()
    parts = [f"{q} {_signed(float(by[q]))}" for q in ("worse", "lost", "same", "better") if q in by and abs(by[q]) > ZERO]
    return text + (f"; where it ended below dense after such a search, the new query had ranked the source "
                   f"{', '.join(parts)} against the list the decision was made on." if parts else ".")


def _judge_row(judges: pd.DataFrame, condition: str, model: str, metric: str, point: str = "model"):
    if judges.empty:
        return None
    g = judges[(judges.condition == condition) & (judges.model == model) & (judges.metric == metric)
               & (judges.point == point)]
    return None if g.empty else g.iloc[0]


def _ranged4(d: float, lo: float, hi: float) -> str:
    return f"{points(d)} [{points(lo)}, {points(hi)}]"


def decisions_in(r) -> int:
    """How many decisions a judges.csv row carries accuracies for (shown_1, shown_2, ...)."""
    return sum(1 for k in range(1, 10) if f"shown_{k}" in r.index and pd.notna(r[f"shown_{k}"]))


ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _least(x: float) -> str:
    """A break-even accuracy in words: the least value from which a judge beats dense (rounded up)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "no value"
    return "any value above 0%" if x <= 1e-9 else f"at least {math.ceil(round(x * 100, 9)):.0f}%"


def accuracies_words(r) -> str:
    """A judges.csv row's per-decision accuracies, each with the decisions it is measured on."""
    d = decisions_in(r)
    stop = " and ".join(f"{_pct(r[f'p_stop_{k}'])} of {int(r[f'shown_{k}'])} at the {ORDINALS[k - 1]} decision"
                        for k in range(1, d + 1))
    search = " and ".join(f"{_pct(r[f'p_search_{k}'])} of {int(r[f'not_shown_{k}'])} at the {ORDINALS[k - 1]}"
                          for k in range(1, d + 1))
    return f"a stop accuracy of {stop}, a search accuracy of {search}"


def _perfect(judges: pd.DataFrame, condition: str, model: str, metric: str) -> str:
    r = _judge_row(judges, condition, model, metric, "perfect judge")
    return "" if r is None else _ranged4(r.predicted, r.predicted_low, r.predicted_high)


def breakeven_clause(judges: pd.DataFrame, condition: str, model: str, metric: str = "mrr_at_10") -> str:
    """Break-even for one model: the accuracies at which a judge beats dense over its real leaves, or that none
    does, with the perfect judge's value and range (judges.csv's break-even columns); empty without a row."""
    r = _judge_row(judges, condition, model, metric)
    perfect = _perfect(judges, condition, model, metric)
    if r is None or not perfect or "beats_dense" not in r.index:
        return ""
    who = f"with {model_label(model)}'s queries"
    d = decisions_in(r)
    if r.beats_dense not in (True, "True"):
        return (f"{who}, no stop or search accuracy at {'either' if d == 2 else 'any'} decision makes the agent beat "
                f"dense (a perfect judge reaches {perfect})")
    best = f"the best judge reaches {_ranged4(r.best_judge, r.best_judge_low, r.best_judge_high)} ({r.best_judge_at})"
    if pd.isna(r.breakeven_stop) and pd.isna(r.breakeven_search):
        return f"{who}, a judge beats dense only away from perfect accuracies: {best}, a perfect judge {perfect}"
    each = ", ".join(f"{_least(r[f'breakeven_stop_{k}'])} at the {ORDINALS[k - 1]}" for k in range(1, d + 1))
    return (f"{who}, a judge beats dense only with a stop accuracy of {_least(r.breakeven_stop)} at every decision "
            f"({each}, the other accuracies perfect) and a search accuracy of {_least(r.breakeven_search)}: a perfect "
            f"judge reaches {perfect}, {best}")


def breakeven_sentence(judges: pd.DataFrame, condition: str, metric: str = "mrr_at_10") -> str:
    """Break-even for every model with a tree in one condition, in one sentence (empty without one): the models
    for which no accuracy beats dense are said together."""
    if judges.empty:
        return ""
    models = [m for m in dict.fromkeys(judges[judges.condition == condition].model)
              if breakeven_clause(judges, condition, m, metric)]
    if not models:
        return ""
    none = [m for m in models if _judge_row(judges, condition, m, metric).beats_dense not in (True, "True")]
    parts = [breakeven_clause(judges, condition, m, metric) for m in models if m not in none]
    if len(none) == 1:
        parts.insert(0, breakeven_clause(judges, condition, none[0], metric))
    elif none:
        d = decisions_in(_judge_row(judges, condition, none[0], metric))
        who = " and ".join(model_label(m) for m in none)
        parts.insert(0, f"with the queries of {who}, no stop or search accuracy at {'either' if d == 2 else 'any'} "
                        f"decision makes the agent beat dense (a perfect judge reaches "
                        + " and ".join(_perfect(judges, condition, m, metric) for m in none) + ")")
    return f"Judging when to stop ({METRIC_WORDS[metric]}): {'; '.join(parts)}."


def hindsight_words(r) -> str:
    """The best leaf per question against dense: hindsight (it knows the answer), never a judge."""
    return (f"in hindsight, the best of its leaves per question would reach "
            f"{_ranged(r.hindsight, r.hindsight_low, r.hindsight_high)} (a choice that knows the answer, not a judge)")


def _test_words(r) -> str:
    """The prediction tested on the agent's runs outside the tree, or why it is not."""
    tested = str(r.get("tested_runs", "") or "").strip()
    if not tested or tested == "nan" or pd.isna(r.get("gap", float("nan"))):
        return (f"no run outside the tree to test the prediction on: the tree extends run {r.get('runs', 1)}, whose "
                "decisions are among those measured")
    gap = _ranged(r.gap, r.gap_low, r.gap_high)
    runs = f"run {tested}" if "," not in tested else f"runs {tested}"
    if r.agrees in (True, "True"):
        return f"{runs}, outside the tree, minus the prediction: {gap}, no different from a judge erring at random"
    return (f"{runs}, outside the tree, minus the prediction: {gap}: its errors cost "
            f"{'more' if r.gap < 0 else 'less'} than random errors at its accuracies would")


def judges_sentence(judges: pd.DataFrame, condition: str, model: str | None, metric: str = "mrr_at_10",
                    short: bool = False) -> str:
    """What the decision tree says for one model in one condition: its accuracies per decision with their
    counts, the judge's prediction at them beside the agent's runs, and the test on the runs outside the tree;
    empty without a tree."""
    if model is None:
        return ""
    r = _judge_row(judges, condition, model, metric)
    if r is None:
        return ""
    who = model_label(model)
    runs = str(r.get("runs", "1"))
    text = (f"In its decision trees ({int(r.questions)} questions, read as the agent runs: {int(r.chains_cut)} chains "
            f"end at a repeated query, and {int(r.repeat_stops)} of its stops were a repeated query), {who} had "
            f"{accuracies_words(r)}; a judge erring at random at those accuracies predicts "
            f"{_ranged(r.predicted, r.predicted_low, r.predicted_high)} {METRIC_WORDS[metric]} against dense, and the "
            f"agent's {'run' if ',' not in runs else 'runs'} ({runs}) measured "
            f"{_ranged(r.actual, r.actual_low, r.actual_high)} ({_test_words(r)})")
    if short:
        return text + "."
    stop = _judge_row(judges, condition, model, metric, "always search")
    more = (f" Searching on to the cap every time (a repeated query still ends it) would give "
            f"{_ranged(stop.predicted, stop.predicted_low, stop.predicted_high)}." if stop is not None else "")
    return text + f". Over the same leaves, {hindsight_words(r)}.{more}"


def quality_sentence(quality: pd.DataFrame, condition: str, model: str | None, design: str = "agent_tree") -> str:
    """The trees' queries (read by the agent's rules) against the list the decision was made on, ties apart."""
    if quality.empty or model is None:
        return ""
    g = quality[(quality.condition == condition) & (quality.model == model)]
    if "design" in g:
        g = g[g.design == design]
    if g.empty:
        return ""
    cols = ["queries", "better", "same", "worse", "lost"]
    t = g[cols].sum()
    asked = g[g.asked == "where it stopped"][cols].sum()
    repeated = int(g.repeated.sum()) if "repeated" in g else 0
    return (f"Of {model_label(model)}'s {int(t.queries)} new queries in the trees, {int(t.better)} ranked the source "
            f"strictly higher than the list the decision was made on, {int(t.same)} the same (a tie is not a gain), "
            f"{int(t.worse)} lower and {int(t.lost)} lost it; of the {int(asked.queries)} it wrote where it had chosen "
            f"to stop, {int(asked.better)} were better; {repeated} more repeated the query just searched, which ends "
            "the search as it ends the agent.")


def _share(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "no share (not even all of them)"
    return "none (it already does)" if x <= 1e-9 else f"at least {math.ceil(round(x * 100, 9)):.0f}%"


def bound_sentence(bound: pd.DataFrame, condition: str, metric: str = "mrr_at_10") -> str:
    """The query side's bound for every model with a tree in one condition, in one sentence: the share of its new
    queries that would have to give the best list a query can for the agent to reach dense, at its own
    accuracies and a perfect judge's, beside the share it wrote strictly better (results/query_bound.csv)."""
    if bound is None or bound.empty:
        return ""
    g = bound[(bound.condition == condition) & (bound.metric == metric)]
    parts = []
    for model, m in g.groupby("model", sort=False):
        own = m[m.accuracies == "the model's"]
        perfect = m[m.accuracies == "perfect"]
        if own.empty or perfect.empty:
            continue
        o, p = own.iloc[0], perfect.iloc[0]
        parts.append(f"{_share(o.least_share)} of {model_label(model)}'s new queries at its own accuracies and "
                     f"{_share(p.least_share)} with a perfect judge, where it wrote {int(o.better)} of "
                     f"{int(o.new_queries)} ({o.better_rate:.1%}) strictly better")
    if not parts:
        return ""
    return (f"On the query side, the agent reaches dense on {METRIC_WORDS[metric]} only if a query gives the best list "
            f"one can (the source first; an upper bound, so these shares are the least that could do) for "
            + "; ".join(parts) + ".")


def placement(judges: pd.DataFrame, bound: pd.DataFrame, condition: str, model: str,
              metric: str = "mrr_at_10") -> str:
    """One model in one condition in one line (``make place-model``): its accuracies per decision with their
    counts, the judge's prediction at them, the break-even, and its better-rate with the query side's bound."""
    r = _judge_row(judges, condition, model, metric)
    if r is None:
        return ""
    d = decisions_in(r)
    stop = " then ".join(f"{_pct(r[f'p_stop_{k}'])} (n {int(r[f'shown_{k}'])})" for k in range(1, d + 1))
    search = " then ".join(f"{_pct(r[f'p_search_{k}'])} (n {int(r[f'not_shown_{k}'])})" for k in range(1, d + 1))
    text = (f"{model_label(model)}, {condition} ({int(r.questions)} questions): stop accuracy {stop}, search accuracy "
            f"{search}; predicted {_ranged(r.predicted, r.predicted_low, r.predicted_high)} {METRIC_WORDS[metric]} "
            f"against dense.")
    even = breakeven_clause(judges, condition, model, metric)
    if even:
        text += f" Break-even: {even}."
    b = bound[(bound.condition == condition) & (bound.model == model) & (bound.metric == metric)] if not bound.empty else bound
    own, perfect = (b[b.accuracies == a] for a in ("the model's", "perfect")) if not b.empty else (b, b)
    if not own.empty and not perfect.empty:
        o = own.iloc[0]
        text += (f" Better-rate: {int(o.better)} of {int(o.new_queries)} new queries ({o.better_rate:.1%}) strictly "
                 f"better; the agent reaches dense only if {_share(o.least_share)} of them give the source first at "
                 f"its own accuracies, {_share(perfect.iloc[0].least_share)} with a perfect judge (an upper bound).")
    return text


def finding(paths: pd.DataFrame, judges: pd.DataFrame, condition: str, model: str | None = None,
            names: Callable[[str], str] | None = None, bound: pd.DataFrame | None = None) -> str:
    """Page 12's finding for one condition, at most five sentences: break-even for every model first, then the
    query side's bound, then where the profile model's agent loses and what its trees say."""
    model = profile_model(paths, condition, model)
    parts = [breakeven_sentence(judges, condition), bound_sentence(bound, condition),
             paths_sentence(paths, condition, "agent", model, names=names, short=True),
             judges_sentence(judges, condition, model, short=True),
             paths_sentence(paths, condition, "multiquery", model, names=names, short=True)]
    return " ".join(p for p in parts if p)


def index_clause(paths: pd.DataFrame, judges: pd.DataFrame, condition: str,
                 names: Callable[[str], str] | None = None) -> str:
    """The index's per-condition words on why (no trailing period): break-even for every model with a tree,
    then where the agent's difference comes from."""
    model = profile_model(paths, condition)
    parts = [breakeven_sentence(judges, condition),
             paths_sentence(paths, condition, "agent", model, names=names, short=True)]
    return " ".join(p for p in parts if p).rstrip(".")


def two_part_reading(counts: pd.DataFrame, condition: str = "two-part questions") -> str:
    """Where the question-first loop lost the second paper of two-part questions, step by step."""
    n = int(counts.loops.sum())
    if not n:
        return ""
    parts = [f"{STEP_WORDS[r.failed]} in {r.loops} ({_pct(r.share)})" for r in counts.itertuples() if r.loops]
    own = int(counts.no_search_of_its_own.sum())
    return (f"In {condition}, over {n} loops of the question-first loop: " + "; ".join(parts) + f". {own} of the {n} "
            f"loops made no search of their own.")
