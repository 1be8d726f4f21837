"""The model-size axis: each LLM design against dense with every local model, per condition, from the
saved runs (reading only), beside the article's published Haiku 5.5 figures in its own condition.

The profile's own model (``llm_model`` in its file) keeps its runs in the condition's folder; another
local model keeps its runs in ``<condition folder>/models/<model>/`` (``Profile.results_dir``), recorded
and replayed like the profile's. Dense is the same in every row of a condition (it calls no model), so
each delta pairs the model's design with that condition's dense over the questions both answered
(the profile's bootstrap, 95% percentile range; ``lib.evaluation.scores.deltas``).
"""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D

from ..config import Profile, load_profile, shown_path
from ..evaluation import scores
from ..llm.local_backend import LOCAL_MODELS
from .display import fixed
from .plots import ARTICLE_COLOUR, SMALL, _grid, _legend, _save, design_colours
from . import queries
from .. import pipeline

AXIS_CONDITIONS = ("full questions", "short questions")
AXIS_DESIGNS = ("agent", "multiquery", "loop", "loop_question_first", "decompose", "hyde")
ARTICLE_MODEL = "Claude Haiku 5.5 (the article's)"
DEFAULT = "full questions"
METRIC_WORDS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}


def model_label(name: str) -> str:
    """A local model's short name: its family and size (``qwen2.5-coder-0.5b-...`` -> ``Qwen2.5-Coder 0.5B``)."""
    size = re.search(r"-(\d+(?:\.\d+)?)b(?:-|$)", name)
    family = re.match(r"(qwen[\d.]*)(-coder)?", name)
    if not size or not family:
        return name
    return f"{family.group(1).capitalize()}{'-Coder' if family.group(2) else ''} {size.group(1)}B"


def model_size(name: str) -> float:
    """Parameters in billions, read from the name (for ordering the axis); unknown sizes last."""
    size = re.search(r"-(\d+(?:\.\d+)?)b(?:-|$)", name)
    return float(size.group(1)) if size else float("inf")


def axis_models() -> list[str]:
    """The local models on the axis, smallest first."""
    return sorted(LOCAL_MODELS, key=model_size)


def model_profile(cp: Profile, model: str) -> Profile:
    """The condition's profile with ``model`` as its LLM (the profile itself for its own model)."""
    if model == cp.settings["llm_model"]:
        return cp
    return load_profile(cp.name, **{**cp.overrides, "llm_model": model})


def axis_table(profile: Profile, designs=AXIS_DESIGNS, conditions=AXIS_CONDITIONS) -> pd.DataFrame:
    """Condition x model x design: the design's recall@5 and MRR@10 and each minus dense with its
    paired range, the runs and questions scored, and a status (``scored``, ``no complete run`` with
    the partial runs named, or ``not run``). Reading only."""
    rows = []
    for cname, cp in queries.condition_profiles(profile).items():
        if cname not in conditions:
            continue
        base = queries.load_scored(cp)
        dense = base.pq[base.pq.design == "dense"] if not base.pq.empty else base.pq
        for model in axis_models():
            mp = model_profile(cp, model)
            pq_m, partial_m = (base.pq, base.partial) if mp is cp else model_runs(mp, designs)
            for d in designs:
                row = {"condition": cname, "model": model, "model_label": model_label(model), "design": d,
                       "own_model": mp is cp, "folder": shown_path(mp.results_dir)}
                ours = pq_m[pq_m.design == d] if not pq_m.empty else pq_m
                partial = [k for dd, k in partial_m if dd == d]
                if ours.empty or dense.empty:
                    status = (f"no complete run ({', '.join(f'run {k}' for k in partial)} stopped part-way)"
                              if partial else "not run")
                    rows.append({**row, "status": status, "runs": 0, "questions": 0})
                    continue
                pq = pd.concat([dense, ours], ignore_index=True)
                summary = scores.design_summary(pq).set_index("design")
                deltas = scores.deltas(pq, n_resamples=cp.bootstrap_resamples, seed=cp.bootstrap_seed)
                row.update({"status": "scored", "runs": int(summary.loc[d, "runs"]),
                            "questions": int(summary.loc[d, "questions"]),
                            "searches": summary.loc[d, "searches"]})
                for m in scores.METRICS:
                    dl = deltas[(deltas.design == d) & (deltas.metric == m)].iloc[0]
                    row.update({m: summary.loc[d, m], f"{m}_delta": dl.delta, f"{m}_delta_low": dl.low,
                                f"{m}_delta_high": dl.high})
                if partial:
                    row["status"] = f"scored ({', '.join(f'run {k}' for k in partial)} stopped part-way, left out)"
                rows.append(row)
    return pd.DataFrame(rows)


def model_runs(mp: Profile, designs) -> tuple[pd.DataFrame, list[tuple[str, int]]]:
    """Another model's saved runs of ``designs`` (its folder holds no dense: dense calls no model), every
    record checked as the scorer checks it: the per-question rows of its complete runs, and the runs
    stopped part-way (design, run)."""
    parts = pipeline.ProfileParts(mp, progress=False)
    questions = pipeline.scored_questions(mp, parts.papers)
    scored = scores.load_scored(questions, pipeline.results_dir(mp), pipeline.record_check(mp, parts), designs=designs,
                                baseline=False)
    if scored.pq_all.empty:
        return scored.pq_all, []
    return scores.scored_runs(scored.pq_all, len(questions)), scored.partial


def article_points(article: dict | None, designs=AXIS_DESIGNS) -> dict[str, dict[str, tuple]]:
    """The article's published differences against dense (design -> metric -> (delta, low, high))."""
    published = (article or {}).get("results", {})
    return {d: {m: tuple(published[d][f"delta_{m}"]) for m in scores.METRICS if f"delta_{m}" in published.get(d, {})}
            for d in designs if d in published}


def axis_chart(table: pd.DataFrame, path: Path, article: dict | None = None, metric: str = "mrr_at_10",
               names=lambda d: d):
    """One panel per condition: each LLM design minus dense (``metric``, with its 95% paired range)
    against the model, smallest first; in the default condition the article's published Haiku 5.5
    differences in black as the last column, marked as the article's. A design not run with a model
    says so in its place ("not run")."""
    conditions = [c for c in AXIS_CONDITIONS if not table.empty and c in set(table.condition)]
    if not conditions:
        fig, ax = plt.subplots(figsize=(8, 1.6))
        ax.axis("off")
        ax.text(0.5, 0.5, "No condition has a model-size run yet.", ha="center", va="center")
        return _save(fig, path)
    designs = [d for d in AXIS_DESIGNS if d in set(table.design)]
    colours = design_colours(designs)
    points = article_points(article, designs)
    fig, panels, legend_ax, rect = _grid(len(conditions), 2, 12.6, 3.6, 0.5, legend_height=0.9)
    width = 0.8 / max(len(designs), 1)
    for ax, c in zip(panels, conditions):
        sub = table[table.condition == c]
        models = list(dict.fromkeys(sub.sort_values("model", key=lambda s: s.map(model_size)).model_label))
        columns = models + ([ARTICLE_MODEL] if c == DEFAULT and points else [])
        for j, d in enumerate(designs):
            off = (j - (len(designs) - 1) / 2) * width
            for i, label in enumerate(columns):
                if label == ARTICLE_MODEL:
                    if metric not in points.get(d, {}):
                        continue
                    delta, lo, hi = points[d][metric]
                    col, face = ARTICLE_COLOUR, "white"
                else:
                    r = sub[(sub.model_label == label) & (sub.design == d)]
                    if r.empty or not str(r.status.iloc[0]).startswith("scored"):
                        ax.text(i + off, 0.5, f"{names(d)}: not run", transform=ax.get_xaxis_transform(),
                                rotation=90, ha="center", va="center", fontsize=SMALL, color="grey", style="italic")
                        continue
                    r = r.iloc[0]
                    delta, lo, hi = r[f"{metric}_delta"], r[f"{metric}_delta_low"], r[f"{metric}_delta_high"]
                    col = face = colours[d]
                ax.plot([i + off] * 2, [lo, hi], "-", color=col, lw=1.8, solid_capstyle="butt")
                ax.plot(i + off, delta, "s", color=col, mfc=face, ms=6, mew=1.3)
        ax.axhline(0, ls="--", color="grey", lw=1)
        ax.set_xticks(range(len(columns)), [c.replace(" (", "\n(") if c == ARTICLE_MODEL else c.replace(" ", "\n")
                                            for c in columns], fontsize=SMALL)
        for tick, label in zip(ax.get_xticklabels(), columns):
            if label == ARTICLE_MODEL:
                tick.set_fontstyle("italic")
        ax.set_xlim(-0.6, len(columns) - 0.4)
        ax.set_title(c, fontsize=10)
        ax.set_ylabel(f"{METRIC_WORDS[metric]} − dense, 95% range", fontsize=SMALL)
        ax.tick_params(axis="y", labelsize=SMALL)
        ax.grid(axis="y", alpha=0.3)
    handles = [Line2D([], [], marker="s", ls="-", color=colours[d], ms=6, label=names(d)) for d in designs]
    if points:
        handles.append(Line2D([], [], marker="s", ls="-", color=ARTICLE_COLOUR, mfc="white", ms=6,
                              label="the article, as published\n(its own questions and set-up)"))
    _legend(fig, legend_ax, handles, len(handles), fontsize=SMALL, title_fontsize=SMALL,
            title="above the dashed line: better than dense")
    return _save(fig, path, rect=rect)


def axis_reading(table: pd.DataFrame, article: dict | None = None, names=lambda d: d) -> str:
    """What the axis says, from the numbers: per condition and design, its MRR@10 − dense with each
    model (smallest first), whether the range excludes zero, and the article's in its condition."""
    if table.empty or not (table.status.str.startswith("scored")).any():
        return "No design has a complete run with more than one model yet, so the model-size axis says nothing yet."
    points = article_points(article)
    parts = []
    for c in AXIS_CONDITIONS:
        sub = table[(table.condition == c) & table.status.str.startswith("scored")]
        if sub.empty:
            continue
        for d in AXIS_DESIGNS:
            rows = sub[sub.design == d].sort_values("model", key=lambda s: s.map(model_size))
            if rows.empty:
                continue
            said = [f"{r.model_label} {fixed(r.mrr_at_10_delta, sign=True)} [{fixed(r.mrr_at_10_delta_low, sign=True)}, {fixed(r.mrr_at_10_delta_high, sign=True)}]"
                    for r in rows.itertuples()]
            text = f"{names(d)}, {c}: MRR@10 − dense " + ", ".join(said)
            if len(rows) > 1:
                first, last = rows.iloc[0], rows.iloc[-1]
                change = last.mrr_at_10_delta - first.mrr_at_10_delta
                text += (f" — {fixed(change, sign=True)} from {first.model_label} to {last.model_label}"
                         + (", and every model loses to dense" if (rows.mrr_at_10_delta_high < 0).all() else ""))
            if c == DEFAULT and "mrr_at_10" in points.get(d, {}):
                delta, lo, hi = points[d]["mrr_at_10"]
                text += f"; the article's Haiku 5.5: {fixed(delta, sign=True)} [{fixed(lo, sign=True)}, {fixed(hi, sign=True)}]"
            parts.append(text + ".")
    not_run = table[~table.status.str.startswith("scored")]
    if not not_run.empty:
        parts.append("Not on the axis yet: " + "; ".join(f"{names(r.design)} with {r.model_label} in {r.condition} "
                                                        f"({r.status})" for r in not_run.itertuples()) + ".")
    return " ".join(parts)
