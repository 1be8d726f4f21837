"""The why analysis in words: sentences generated from page 12's saved tables (``results/why_paths.csv``:
where each design's difference from dense comes from, decision by decision; ``results/judges.csv``: stop
judges over the agent's real decision trees; ``results/query_quality.csv``: the trees' queries). Nothing
here computes a measure; every number comes from :mod:`lib.evaluation.why_paths`, :mod:`lib.evaluation.judges`
and :mod:`lib.evaluation.loss`. The two accuracies are defined once, here (:data:`ACCURACY_WORDS`)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import pandas as pd

from ..evaluation.metrics import ZERO
from .display import fixed
from .model_size import model_label

FILES = {"paths": "why_paths.csv", "judges": "judges.csv", "grid": "judges_grid.csv", "quality": "query_quality.csv"}
DESIGN_WORDS = {"agent": "the agent", "multiquery": "multi-query", "loop": "the loop",
                "loop_question_first": "the question-first loop"}
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
    if design == "multiquery":
        worse = g[g["query"].isin(["none better, some worse", "better and worse"])]
        share = float(worse[col].clip(upper=0).sum()) / lost if lost < -ZERO else float("nan")
        return (f"{head} is {_signed(float(worse[col].sum()))} from the {int(worse.results.sum())} results in which a "
                f"rewrite ranked the source lower than the question or lost it ({_pct(share)} of the points lost) and "
                f"{_signed(total - float(worse[col].sum()))} from the rest.")
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


def ceiling_words(r) -> str:
    """The best leaf per question against dense, and what it allows."""
    best = _ranged(r.ceiling, r.ceiling_low, r.ceiling_high)
    if r.ceiling_low > ZERO:
        return f"a judge that always stopped at the best of its leaves would reach {best}, above dense"
    return f"the best of its leaves per question reaches {best}: no judge can be shown to beat dense with this model's queries"


def judges_sentence(judges: pd.DataFrame, condition: str, model: str | None, metric: str = "mrr_at_10",
                    short: bool = False) -> str:
    """What the decision tree says for one model in one condition: its two accuracies, the judge's prediction
    at them beside the agent's actual difference, and the ceiling; empty without a tree."""
    if model is None:
        return ""
    r = _judge_row(judges, condition, model, metric)
    if r is None:
        return ""
    who = model_label(model)
    if pd.isna(r.get("gap", float("nan"))):  # a table saved before the paired gap was kept: the ranges alone
        agrees = ("within the predicted range" if r.predicted_low <= r.actual <= r.predicted_high
                  else "outside the predicted range")
    else:
        gap = _ranged(r.gap, r.gap_low, r.gap_high)
        agrees = (f"run minus prediction {gap}: no different from a judge erring at random" if r.agrees in (True, "True")
                  else f"run minus prediction {gap}: its errors cost {'more' if r.gap < 0 else 'less'} than random "
                       "errors at its accuracies would")
    text = (f"In its decision trees ({int(r.questions)} questions), {who} had a stop accuracy of {_pct(r.p_stop)} and a "
            f"search accuracy of {_pct(r.p_search)}; a judge erring at random at those accuracies predicts "
            f"{_ranged(r.predicted, r.predicted_low, r.predicted_high)} {METRIC_WORDS[metric]} against dense, and the "
            f"agent's run measured {_signed(r.actual)} ({agrees})")
    if short:
        return text + f"; {ceiling_words(r)}."
    stop = _judge_row(judges, condition, model, metric, "always search")
    more = (f" Searching on to the cap every time would give {_ranged(stop.predicted, stop.predicted_low, stop.predicted_high)}."
            if stop is not None else "")
    return text + f". Over the same leaves, {ceiling_words(r)}.{more}"


def quality_sentence(quality: pd.DataFrame, condition: str, model: str | None) -> str:
    """The trees' queries against the list the decision was made on, ties apart."""
    if quality.empty or model is None:
        return ""
    g = quality[(quality.condition == condition) & (quality.model == model)]
    if g.empty:
        return ""
    t = g[["queries", "better", "same", "worse", "lost"]].sum()
    asked = g[g.asked == "where it stopped"][["queries", "better", "same", "worse", "lost"]].sum()
    return (f"Of {model_label(model)}'s {int(t.queries)} queries in the trees, {int(t.better)} ranked the source strictly "
            f"higher than the list the decision was made on, {int(t.same)} the same (a tie is not a gain), {int(t.worse)} "
            f"lower and {int(t.lost)} lost it; of the {int(asked.queries)} it wrote where it had chosen to stop, "
            f"{int(asked.better)} were better.")


def finding(paths: pd.DataFrame, judges: pd.DataFrame, condition: str, model: str | None = None,
            names: Callable[[str], str] | None = None) -> str:
    """Page 12's finding for one condition: at most five sentences."""
    model = profile_model(paths, condition, model)
    parts = [paths_sentence(paths, condition, "agent", model, names=names, short=True),
             judges_sentence(judges, condition, model, short=True),
             paths_sentence(paths, condition, "multiquery", model, names=names, short=True)]
    return " ".join(p for p in parts if p)


def index_clause(paths: pd.DataFrame, judges: pd.DataFrame, condition: str,
                 names: Callable[[str], str] | None = None) -> str:
    """The index's per-condition words on why (one or two sentences, no trailing period)."""
    model = profile_model(paths, condition)
    parts = [paths_sentence(paths, condition, "agent", model, names=names, short=True),
             judges_sentence(judges, condition, model, short=True)]
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
