"""The tool-calling loop's own report (notebook 9 and the scores notebook): its measures per run
(citation hit rate, papers read, searches, model turns, tokens, latency, how loops ended, under
which caps), the step-through of one question's trace, model-decided steps set apart from
code-decided ones, and the distribution of steps. Each page takes the loop design it shows
(``loop``, or ``loop_question_first``: the question searched first by the code); notebook 9 shows the
question-first loop beside the model-first one when its runs are saved, and says so when they are not."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from .. import pipeline
from ..config import ROOT, condition_env, shown_path
from ..designs.loop import ENDINGS, QUESTION_FIRST, code_searches, model_queries, shown_ids
from ..evaluation.metrics import citation_hit, scores_of
from ..evaluation.relevance import relevant_ids
from ..runs import read_results, run_files
from .display import readable, styled, transposed
from .pages import reading
from .plots import _save

NAME = "loop"
DESIGN_TITLES = {NAME: "the loop", QUESTION_FIRST: "the question-first loop"}
# the loop summary's columns that are shares of questions (shown as percentages)
LOOP_SHARES = {"citation_hit_rate", "citation_precision", "ended_stop", "ended_step_cap", "ended_token_budget",
               "ended_refusal", "ended_max_tokens", "forced_final", "final_by_code"}
MODEL_COLOUR, CODE_COLOUR, CODE_RUN_COLOUR = "#dbe9f6", "#f3f3f3", "#fdf0d5"


def no_run_text(profile, short: bool = False, design: str = NAME) -> str:
    """What the page says when no run of the loop design is saved (``short``: after the first time)."""
    if short:
        return "No loop run saved yet (see above)." if design == NAME else f"No {design} run saved yet (see above)."
    env = condition_env(profile)
    env = f" {env}" if env else ""
    record = (f"Record one with the local model (`LOCAL_LLM_THREADS=2 LLM_BACKEND=local{env} python "
              f"scripts/run_designs.py {profile.name} {design} 1`, resumable)")
    if design != NAME:
        return (f"{DESIGN_TITLES[design].capitalize()} (`{design}`): not run. No run is saved in "
                f"`{shown_path(pipeline.results_dir(profile) / design)}` for this profile and condition. {record}.")
    return (f"No loop run is saved yet in `{shown_path(pipeline.results_dir(profile) / NAME)}` for this profile and "
            f"condition, so there is nothing to show here. {record}, or try the loop with a stub model: "
            "`make notebook NB=09 PARAMS=\"-p loop_backend scripted\"` (its results go to a variant folder).")


def saved_runs(profile, complete: bool = True, design: str = NAME) -> dict[int, list]:
    """A loop design's saved runs on the scored questions, by run (``complete``: only runs that
    answered every scored question, the scores notebook's rule)."""
    qids = {q.qid for q in pipeline.scored_questions(profile)}
    out = {}
    for path in run_files(pipeline.results_dir(profile), design):
        res = [r for r in read_results(path) if r.qid in qids]
        if res and (not complete or len(res) == len(qids)):
            out[int(path.stem[3:])] = res
    return out


def measures(results, sources: dict[str, str], design: str = NAME) -> pd.DataFrame:
    """One row per question and run of one loop design: scores, citations against the source(s), and
    the loop's use (``searches``: every search it ran, ``model_searches``: those the model called)."""
    rows = []
    for r in results:
        if r.design != design or r.qid not in sources:
            continue
        d, src = r.details, relevant_ids(sources[r.qid])
        cites = d.get("citations", [])
        rows.append({"run": r.run, "qid": r.qid, **{k: v for k, v in scores_of(r.ranked_ids, sources[r.qid]).items()
                                                   if k in ("recall_at_5", "mrr_at_10")},
                     "citation_hit": citation_hit(cites, sources[r.qid]),
                     "citations": len(cites), "citation_precision": (sum(c in src for c in cites) / len(cites)
                                                                     if cites else np.nan),
                     "papers_read": d.get("papers_read", 0), "searches": r.searches,
                     "model_searches": r.searches - code_searches(r), "turns": d.get("turns", r.llm_calls),
                     "tokens_in": r.tokens_in, "tokens_out": r.tokens_out, "tokens_used": d.get("tokens_used", 0),
                     "prompt_reused": d.get("prompt_reused", 0),
                     "latency_s": r.latency_s, "ended_by": r.stop_reason, "forced_final": d.get("forced_final", False),
                     "final_by": d.get("final_by", ""), "tool_errors": d.get("tool_errors", 0)})
    return pd.DataFrame(rows)


def summary(pq: pd.DataFrame) -> pd.DataFrame:
    """Per run, the loop's own measures (means per question; how loops ended as shares)."""
    rows = []
    for run, g in pq.groupby("run"):
        row = {"run": run, "questions": len(g), "recall_at_5": g.recall_at_5.mean(), "mrr_at_10": g.mrr_at_10.mean(),
               "citation_hit_rate": g.citation_hit.mean(), "citations_per_q": g.citations.mean(),
               "citation_precision": g.citation_precision.mean(), "papers_read_per_q": g.papers_read.mean(),
               "searches_per_q": g.searches.mean(), "turns_per_q": g.turns.mean(), "tokens_in_per_q": g.tokens_in.mean(),
               "tokens_out_per_q": g.tokens_out.mean(), "prompt_reused_per_q": g.prompt_reused.mean(),
               "latency_median_s": g.latency_s.median()}
        for e in ENDINGS:
            row[f"ended_{e}"] = float((g.ended_by == e).mean())
        row["final_by_code"] = float((g.final_by == "code").mean())
        rows.append(row)
    return pd.DataFrame(rows)


def caps_of(results) -> dict:
    """The caps a run ran under (from its provenance)."""
    p = results[0].provenance if results else {}
    return {k: p.get(k) for k in ("loop_max_steps", "loop_max_tokens", "loop_search_k", "loop_turn_max_tokens",
                                  "loop_backend", "llm_backend", "llm_model")}


def caps_words(caps: dict) -> str:
    steps, tokens = caps.get("loop_max_steps"), caps.get("loop_max_tokens")
    return (f"{steps} model turns (the last answer-only) and {tokens:,} input + output tokens a question; search "
            f"shows the top {caps.get('loop_search_k')} and a turn writes at most {caps.get('loop_turn_max_tokens')} "
            "tokens")


def prompt_of(results) -> str:
    """The prompt variant a run ran with (``loop_prompt``; absent from the provenance at its default)."""
    p = results[0].provenance if results else {}
    return p.get("loop_prompt") or "one_example"


def measures_page(profile, design: str = NAME) -> dict:
    """Notebook 9: a loop design's measures per complete run, with the caps and prompt it ran under."""
    runs = saved_runs(profile, design=design)
    if not runs:
        display(Markdown(no_run_text(profile, design=design)))
        return {}
    sources = {q.qid: q.source_id for q in pipeline.scored_questions(profile)}
    pq = measures([r for rs in runs.values() for r in rs], sources, design)
    table = summary(pq)
    first = next(iter(runs.values()))
    caps = caps_of(first)
    display(Markdown(f"Caps: {caps_words(caps)} (model `{caps['llm_model']}`, backend `{caps['llm_backend']}`"
                     + (f", stub `{caps['loop_backend']}`" if caps.get("loop_backend") else "")
                     + f"; prompt `{prompt_of(first)}`)."))
    display(transposed(table, shares=LOOP_SHARES).style.hide(axis="index"))
    row = table.mean(numeric_only=True)
    ended = ", ".join(f"{row[f'ended_{e}']:.0%} {e.replace('_', ' ')}" for e in ENDINGS if row[f"ended_{e}"])
    title = DESIGN_TITLES.get(design, design)
    first_search = " (the first of them the code's search of the question)" if design == QUESTION_FIRST else ""
    reading(f"Over {int(row.questions)} questions and {len(table)} run(s), {title} cited the source paper in "
            f"{row.citation_hit_rate:.0%} of questions, with {row.citations_per_q:.2f} citations, "
            f"{row.searches_per_q:.2f} searches{first_search}, {row.papers_read_per_q:.2f} papers read and "
            f"{row.turns_per_q:.2f} model "
            f"turns per question ({row.tokens_in_per_q:,.0f} input and {row.tokens_out_per_q:,.0f} output tokens). "
            f"Loops ended: {ended or 'none'}. Its ranked list (citations first, then the fused searches) reaches "
            f"recall@5 {row.recall_at_5:.3f} and MRR@10 {row.mrr_at_10:.3f} (against dense: the reading above).")
    return {"measures": pq, "summary": table, "caps": caps}


# ------------------------------------------------------------------ one question, step by step
def _n(count, word: str, plural: str = "s") -> str:
    return f"{count} {word}{'' if count == 1 else plural}"


def pick(results: list):
    """The question shown step by step, by a fixed rule: among the first run's loops that searched
    and read, the one with the median number of trace steps (ties: the first in question order);
    if none read, the first question."""
    rich = [r for r in results if r.searches and r.details.get("read")]
    if not rich:
        return results[0] if results else None
    lengths = sorted(len(r.trace) for r in rich)
    median = lengths[(len(lengths) - 1) // 2]
    return next(r for r in rich if len(r.trace) == median)


def trace_frame(result) -> pd.DataFrame:
    """A result's trace as a table, one row per step."""
    rows = []
    for s in result.trace:
        who = "MODEL decided" if s["decided_by"] == "model" else "code decided"
        rows.append({"step": s["step"], "who decided": who, "kind": "model turn" if s["kind"] == "model" else "code ran",
                     "title": s["title"], "detail": s["detail"], "tokens in": s.get("tokens_in", 0),
                     "of which reused": s.get("prompt_reused", 0) if s["kind"] == "model" else 0,
                     "tokens out": s.get("tokens_out", 0), "ms": s.get("ms", 0.0)})
    return pd.DataFrame(rows)


def trace_style(frame: pd.DataFrame):
    """The trace table styled: model turns shaded blue, the tools the code ran for the model in
    sand, the code's own steps in grey and italics."""
    def colour(row):
        if row["kind"] == "model turn":
            style = f"background-color: {MODEL_COLOUR}; font-weight: bold" if row["who decided"] == "MODEL decided" \
                else f"background-color: {MODEL_COLOUR}; font-style: italic"
        elif row["who decided"] == "MODEL decided":
            style = f"background-color: {CODE_RUN_COLOUR}"
        else:
            style = f"background-color: {CODE_COLOUR}; font-style: italic"
        return [style] * len(row)

    return (frame.style.apply(colour, axis=1).hide(axis="index").format(precision=1)
            .set_properties(subset=["who decided", "kind", "title", "detail"], **{"text-align": "left"}))


def step_through(profile, design: str = NAME) -> dict:
    """Notebook 9: one question's loop, every step, chosen by :func:`pick` from the first saved run."""
    runs = saved_runs(profile, complete=False, design=design)
    if not runs:
        display(Markdown(no_run_text(profile, short=True, design=design)))
        return {}
    first = min(runs)
    r = pick(runs[first])
    q = {x.qid: x for x in pipeline.scored_questions(profile)}[r.qid]
    d = r.details
    hit = "cited the source" if set(relevant_ids(q.source_id)) & set(d.get("citations", [])) else "did not cite the source"
    display(Markdown(f"**{r.qid}** (run {first}): *{q.text}*  \nSource paper: `{q.source_id}`. The loop took "
                     f"{_n(d.get('turns'), 'model turn')}, {_n(r.searches, 'search', 'es')}, read "
                     f"{_n(d.get('papers_read'), 'paper')}, ended "
                     f"by **{r.stop_reason}** and {hit} (citations: {', '.join(d.get('citations', [])) or 'none'}).  \n"
                     "Blue rows: model turns (bold: the model decided; italic: the code forced an answer-only turn). "
                     "Sand rows: the code ran a tool the model called. Grey italic rows: the code's own steps."))
    frame = trace_frame(r)
    display(trace_style(frame))
    return {"result": r, "trace": frame}


# ------------------------------------------------------------------ distribution of steps
def steps_chart(pq: pd.DataFrame, path, max_steps: int | None = None, title: str = "the tool-calling loop"):
    """Three panels over every question and run: model turns per loop (dashed: the step cap),
    searches and papers read per loop, and how loops ended."""
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    t = np.arange(1, int(max(pq.turns.max(), max_steps or 1)) + 1)
    axes[0].bar(t, [(pq.turns == n).sum() for n in t], color="#4c72b0")
    axes[0].set_xticks(t)
    if max_steps:
        axes[0].axvline(max_steps + 0.5, ls="--", color="grey")
    axes[0].set_xlabel("model turns in the loop")
    axes[0].set_ylabel("loops (questions x runs)")
    axes[0].set_title("model turns per loop")
    top = int(max(pq.searches.max(), pq.papers_read.max(), 1))
    x = np.arange(0, top + 1)
    axes[1].bar(x - 0.2, [(pq.searches == n).sum() for n in x], width=0.4, label="searches", color="#55a868")
    axes[1].bar(x + 0.2, [(pq.papers_read == n).sum() for n in x], width=0.4, label="papers read", color="#dd8452")
    axes[1].set_xticks(x)
    axes[1].set_xlabel("per loop")
    axes[1].set_title("searches and papers read")
    axes[1].legend(fontsize=9)
    ended = pq.ended_by.value_counts().reindex(list(ENDINGS)).fillna(0)
    ended = ended[(ended > 0) | ended.index.isin(["stop", "step_cap", "token_budget"])]
    axes[2].barh([e.replace("_", " ") for e in ended.index], ended.values, color="#8172b2")
    axes[2].invert_yaxis()
    axes[2].set_xlabel("loops")
    axes[2].set_title("how loops ended")
    for ax in axes:
        for c in ax.containers:
            ax.bar_label(c, fontsize=9)
        if ax is axes[2]:
            ax.margins(x=0.15)
        else:
            ax.margins(y=0.15)
    fig.suptitle(f"{title[:1].upper()}{title[1:]}: steps per question", fontsize=10)
    return _save(fig, path)


def steps_page(profile, design: str = NAME) -> dict:
    """Notebook 9: the distribution of turns, searches, reads and endings over the complete runs."""
    runs = saved_runs(profile, design=design)
    if not runs:
        display(Markdown(no_run_text(profile, short=True, design=design)))
        return {}
    sources = {q.qid: q.source_id for q in pipeline.scored_questions(profile)}
    pq = measures([r for rs in runs.values() for r in rs], sources, design)
    caps = caps_of(next(iter(runs.values())))
    fig = steps_chart(pq, profile.figures_dir / f"{profile.name}_{design}_steps.png", caps.get("loop_max_steps"),
                      "the tool-calling loop" if design == NAME else DESIGN_TITLES.get(design, design))
    display(fig)
    by_end = pq.groupby("ended_by").agg(loops=("qid", "count"), citation_hit_rate=("citation_hit", "mean"),
                                        turns=("turns", "mean"), tokens_used=("tokens_used", "mean")).reset_index()
    display(styled(by_end, shares={"citation_hit_rate"}))
    return {"measures": pq, "by_ending": by_end, "figure": fig}


# ------------------------------------------------------------------ where the source is lost
def funnel(results, questions, baseline: dict[str, list[str]], k: int = 5, design: str = NAME) -> pd.DataFrame:
    """Per question and run, how far the loop got with the source paper: shown by one of its searches,
    read, cited; beside whether the baseline's top ``k`` (dense's saved list) held it, and the words of
    the model's own queries against the question's (the question-first loop's code search is none)."""
    qs = {q.qid: q for q in questions}
    rows = []
    for r in results:
        if r.design != design or r.qid not in qs:
            continue
        src, q = set(relevant_ids(qs[r.qid].source_id)), qs[r.qid]
        own = model_queries(r)
        rows.append({"run": r.run, "qid": r.qid, "baseline_top_k": bool(src & set(baseline.get(r.qid, [])[:k])),
                     "shown": bool(src & set(shown_ids(r))), "read": bool(src & set(r.details.get("read", []))),
                     "cited": bool(src & set(r.details.get("citations", []))), "searches": r.searches,
                     "model_searches": r.searches - code_searches(r),
                     "query_words": float(np.mean([len(x.split()) for x in own])) if own else np.nan,
                     "question_words": len(q.text.split())})
    return pd.DataFrame(rows)


def funnel_table(fq: pd.DataFrame, baseline: str = "dense") -> pd.DataFrame:
    """The funnel as shares of loops (questions x runs)."""
    stages = [(f"{baseline}'s top 5 holds the source", "baseline_top_k"),
              ("a loop search showed the source", "shown"), ("the loop read the source", "read"),
              ("the loop cited the source", "cited")]
    return pd.DataFrame([{"stage": name, "loops": int(fq[col].sum()), "share": fq[col].mean()} for name, col in stages])


def lost_page(profile, baseline: str = "dense", design: str = NAME) -> dict:
    """Notebook 9: where the loop loses the source paper, against the baseline's saved run 1."""
    runs = saved_runs(profile, design=design)
    if not runs:
        display(Markdown(no_run_text(profile, short=True, design=design)))
        return {}
    questions = pipeline.scored_questions(profile)
    base_files = run_files(pipeline.results_dir(profile), baseline)
    if not base_files:
        display(Markdown(f"No saved {baseline} run to compare with."))
        return {}
    base = {r.qid: r.ranked_ids for r in read_results(base_files[0])}
    fq = funnel([r for rs in runs.values() for r in rs], questions, base, design=design)
    table = funnel_table(fq, baseline)
    display(styled(table, shares={"share"}))
    once = (fq.model_searches <= 1).mean()
    own = (f"{once:.0%} of loops searched only once" if design == NAME else
           f"in {(fq.model_searches == 0).mean():.0%} of loops the model made no search of its own beyond the code's")
    shown = fq[fq.shown]
    lost_at_search = (fq.baseline_top_k & ~fq.shown).mean()
    reading(f"The loop's searches showed the source for {fq.shown.mean():.0%} of loops, against "
            f"{fq.baseline_top_k.mean():.0%} for {baseline}'s top 5 on the question as written: "
            f"{lost_at_search:.0%} of loops lost a source {baseline} had found before the model read anything. "
            f"The model's own queries averaged {fq.query_words.mean():.1f} words against the question's "
            f"{fq.question_words.mean():.1f}, and {own}. Where a search showed the "
            f"source, the loop read it in {shown.read.mean() if len(shown) else float('nan'):.0%} and cited it in "
            f"{shown.cited.mean() if len(shown) else float('nan'):.0%} of loops.")
    return {"funnel": fq, "table": table}


# ------------------------------------------------------------------ the question-first loop beside the loop
def side_by_side(profile) -> pd.DataFrame:
    """Each loop design's measures on the scored questions, one column per (design, complete run),
    one row per measure; empty when neither has a complete run."""
    sources = {q.qid: q.source_id for q in pipeline.scored_questions(profile)}
    frames = []
    for design in (NAME, QUESTION_FIRST):
        runs = saved_runs(profile, design=design)
        if runs:
            table = summary(measures([r for rs in runs.values() for r in rs], sources, design))
            prompt = prompt_of(next(iter(runs.values())))
            frames.append(table.assign(run=[f"{design} ({prompt}), run {k}" for k in table.run]))
    if not frames:
        return pd.DataFrame()
    both = pd.concat(frames, ignore_index=True)
    cells = readable(both.drop(columns=["run"]), shares=LOOP_SHARES)
    out = pd.DataFrame({"measure": list(cells.columns)})
    for i, name in enumerate(both.run):
        out[name] = cells.iloc[i].tolist()
    return out


def means_of(profile, design: str):
    """A loop design's measures averaged over its complete runs (a row of :func:`summary`), or None."""
    runs = saved_runs(profile, design=design)
    if not runs:
        return None
    sources = {q.qid: q.source_id for q in pipeline.scored_questions(profile)}
    return summary(measures([r for rs in runs.values() for r in rs], sources, design)).mean(numeric_only=True)


def question_first_page(profile, baseline: str = "dense") -> dict:
    """Notebook 9: the question-first loop (``loop_question_first``: the code searches the question as
    written first) beside the model-first loop, then its own step-through, steps and funnel; when none
    of its runs is saved, a line saying it was not run (reading only: nothing is run here)."""
    if not saved_runs(profile, complete=False, design=QUESTION_FIRST):
        display(Markdown(no_run_text(profile, design=QUESTION_FIRST)))
        return {}
    if not saved_runs(profile, design=QUESTION_FIRST):
        display(Markdown(f"The question-first loop has runs saved part-way only (in "
                         f"`{shown_path(pipeline.results_dir(profile) / QUESTION_FIRST)}`): not scored yet. "
                         "One of its questions, step by step:"))
        return {"example": step_through(profile, QUESTION_FIRST)}
    table = side_by_side(profile)
    display(table.style.hide(axis="index"))
    means = {d: means_of(profile, d) for d in (NAME, QUESTION_FIRST)}
    qf, mf = means[QUESTION_FIRST], means[NAME]
    text = (f"Over {int(qf.questions)} questions, the question-first loop cited the source paper in "
            f"{qf.citation_hit_rate:.0%} of questions with {qf.turns_per_q:.2f} model turns and "
            f"{qf.searches_per_q:.2f} searches per question (one of them the code's), its ranked list at recall@5 "
            f"{qf.recall_at_5:.3f} and MRR@10 {qf.mrr_at_10:.3f}")
    text += (f"; the model-first loop: {mf.citation_hit_rate:.0%}, {mf.turns_per_q:.2f} turns, {mf.searches_per_q:.2f} "
             f"searches, recall@5 {mf.recall_at_5:.3f}, MRR@10 {mf.mrr_at_10:.3f} (its complete runs; the columns "
             "name each design's prompt)." if mf is not None else "; the model-first loop has no complete run here.")
    reading(text)
    out = {"side_by_side": table, "means": means}
    out["example"] = step_through(profile, QUESTION_FIRST)
    out["steps"] = steps_page(profile, QUESTION_FIRST)
    out["lost"] = lost_page(profile, baseline, QUESTION_FIRST)
    return out


# ------------------------------------------------------------------ the scores notebook
def scores_section(profile, scored) -> pd.DataFrame:
    """The scores notebook: the loop's own measures on the scored questions (its complete runs),
    or a line saying no loop run is scored."""
    results = [r for r in scored.results if r.design == NAME]
    if not results:
        display(Markdown("No loop run is scored in this condition yet (notebook 9 says how to record one)."))
        return pd.DataFrame()
    pq = measures(results, {q.qid: q.source_id for q in scored.questions})
    table = summary(pq)
    display(Markdown(f"Caps: {caps_words(caps_of(results))}."))
    display(transposed(table, shares=LOOP_SHARES).style.hide(axis="index"))
    return table


def summary_record(scored) -> dict | None:
    """The loop's measures on the scored questions for ``summary.json`` (means over its runs), with
    its caps; None when no loop run is scored."""
    results = [r for r in scored.results if r.design == NAME]
    if not results:
        return None
    table = summary(measures(results, {q.qid: q.source_id for q in scored.questions}))
    means = table.drop(columns="run").mean(numeric_only=True)
    return {"runs": len(table), "caps": caps_of(results),
            **{k: (None if pd.isna(v) else round(float(v), 6)) for k, v in means.items()}}


def summary_sentence(record: dict | None) -> str:
    """The index page's sentence on the loop (from ``summary.json``); empty without a scored run."""
    if not record:
        return ""
    ended = ", ".join(f"{record[f'ended_{e}']:.0%} {e.replace('_', ' ')}" for e in ENDINGS
                      if record.get(f"ended_{e}"))
    return (f"The tool-calling loop cited the source paper in {record['citation_hit_rate']:.0%} of questions, after "
            f"{record['searches_per_q']:.2f} searches, {record['papers_read_per_q']:.2f} papers read and "
            f"{record['turns_per_q']:.2f} model turns per question; loops ended: {ended}. Its caps: "
            f"{caps_words(record['caps'])}.")


# ------------------------------------------------------------------ the prompt, chosen on dev
LOOP_SELECTION = ROOT / "results" / "dev" / "loop_selection.json"
ARM_COLUMNS = {"questions": "questions", "citation_hit_rate": "citation hit rate", "recall_at_5": "recall@5",
               "mrr_at_10": "MRR@10", "turns_mean": "turns / q", "searches_mean": "searches / q",
               "reads_mean": "reads / q"}


def distribution_words(counts: dict) -> str:
    """{"1": 40, "2": 20} -> "1: 40, 2: 20" (value: questions)."""
    return ", ".join(f"{k}: {v}" for k, v in counts.items())


def selection_table(record: dict) -> pd.DataFrame:
    """One row per dev arm (loop design x prompt variant) of ``results/dev/loop_selection.json``: its
    measures on the dev questions, and its searches and turns as distributions (value: questions)."""
    from ..evaluation.loop_selection import ARMS, parse_arm

    rows = []
    for arm in sorted(record["arms"], key=lambda a: ARMS.index(a) if a in ARMS else len(ARMS)):
        design, prompt = parse_arm(arm)  # an arm not in ARMS is refused by name
        m = record["arms"][arm]
        row = {"loop": DESIGN_TITLES.get(design, design), "prompt": prompt,
               **{label: m.get(key) for key, label in ARM_COLUMNS.items()},
               "searches (value: questions)": distribution_words(m.get("distributions", {}).get("searches", {})),
               "turns (value: questions)": distribution_words(m.get("distributions", {}).get("turns", {})),
               "chosen": "yes" if arm == record["choice"]["arm"] else ""}
        rows.append(row)
    return pd.DataFrame(rows)


def selection_page(profile, path=None) -> dict:
    """Notebook 9: the loop's prompt variants and first search, compared on the dev questions by the rule
    of docs/loop.md (stated before any dev score was seen) and the arm it chose; or, before every arm has
    run, a line saying which prompt the loop uses meanwhile (reading only: nothing is run here)."""
    import json

    path = LOOP_SELECTION if path is None else path
    if not path.exists():
        display(Markdown(f"Not chosen yet: the six dev arms (`loop` and `loop_question_first`, each with the "
                         f"prompts one_example, no_example and two_examples) have not all been run "
                         f"(`make loop-selection`, docs/loop.md), so `{shown_path(path)}` does not exist. The runs "
                         f"on this page use the prompt `{profile.loop_prompt}`, the profile's."))
        return {}
    record = json.loads(path.read_text())
    if profile.study_dir is not None:
        display(Markdown("This choice was made on the project's own dev questions over arXiv papers, not on this "
                         "study's documents; the loop here uses the prompt its profile names."))
    table = selection_table(record)
    display(styled(table))
    c = record["choice"]
    arm = record["arms"][c["arm"]]
    design, prompt = c["design"], c["loop_prompt"]
    dense = record.get("dense_recall_at_5")
    text = (f"On the first {record['questions']} dev questions (run {record['run']}), the rule chose "
            f"{DESIGN_TITLES.get(design, design)} with the prompt `{prompt}`: it cited the source in "
            f"{arm['citation_hit_rate']:.0%} of questions with {arm['turns_mean']:.2f} model turns a question "
            f"({c.get('why', '')})")
    text += (f"; dense search found the source in its top 5 for {dense:.0%} of the same questions." if dense is not None
             else ".")
    chosen_runs = saved_runs(profile, design=design)
    if not chosen_runs or prompt_of(next(iter(chosen_runs.values()))) != prompt:
        text += (f" The chosen arm has no complete run on these questions yet: the loop's runs on this page use "
                 f"the prompt `{profile.loop_prompt}`, the profile's.")
    reading(text)
    return {"table": table, "choice": c}
