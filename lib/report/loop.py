"""The tool-calling loop's own report (notebook 9 and the scores notebook): its measures per run
(citation hit rate, papers read, searches, model turns, tokens, latency, how loops ended, under
which caps), the step-through of one question's trace, model-decided steps set apart from
code-decided ones, and the distribution of steps. Each page takes the loop design it shows
(``loop``, or ``loop_question_first``: the question searched first by the code); notebook 9 shows the
question-first loop beside the model-first one when its runs are saved, and says so when they are not.

Over 500 lines: the loop page's measures, step-through and charts all read one record shape (a loop's
steps and caps), kept in one file so a change to that shape is made once."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from .. import pipeline
from ..config import ROOT, condition_env, shown_path
from ..designs.loop import (ENDINGS, LOOP_DESIGNS, QUESTION_FIRST, READ_MAX_CHARS, READ_PASSAGES, code_searches,
                             first_shown, model_queries, shown_ids)
from ..evaluation.metrics import citation_hit, scores_of
from ..data.relevance import relevant_ids
from ..runs import read_results, run_files
from ..llm.prompts import corpus_for
from .display import (is_study, markdown_code, markdown_text, readable, safe_table, source_words, styled, transposed,
                      with_range)
from .index_numbers import verdict
from .pages import lacking, reading
from .plots import _save
from . import queries
from .pages import against_dense, with_index_family
import json
from collections import Counter
from ..config import load_profile
from ..evaluation.loop_selection import ARMS, parse_arm

NAME = "loop"
DESIGN_TITLES = {NAME: "the model-first loop", QUESTION_FIRST: "the question-first loop"}
EARLIER_PROMPT = "one_example"  # the prompt of every loop saved before the choice on dev (docs/loop.md)
# the loop summary's columns that are shares of questions (shown as percentages)
LOOP_SHARES = {"citation_hit_rate", "citation_all_rate", "citation_precision", "citations_relevant_share",
               "cites_first_top_rate", "ended_stop", "ended_step_cap",
               "ended_token_budget", "ended_refusal", "ended_max_tokens", "ended_bad_tool_arguments", "forced_final",
               "final_by_code"}
MODEL_COLOUR, CODE_COLOUR, CODE_RUN_COLOUR = "#dbe9f6", "#f3f3f3", "#fdf0d5"


def _capital(text: str) -> str:
    """The text with its first letter a capital ("the loop" -> "The loop")."""
    return text[:1].upper() + text[1:]


def dense_differences(profile, design: str) -> tuple[dict, int]:
    """A design against dense (``pages.against_dense``) as {metric: its difference row (delta, low,
    high, p_holm: the index's Holm correction where saved, ``pages.with_index_family``)}, and the number of
    questions paired; empty when either has no complete run."""
    deltas, n, _ = against_dense(profile, design)
    deltas = with_index_family(profile, deltas)
    return ({r.metric: r for r in deltas.itertuples()} if not deltas.empty else {}), n


def _range_words(d: dict, metric: str) -> str:
    """One metric's difference with its range from :func:`dense_differences`, or a dash."""
    r = d.get(metric)
    return with_range(r.delta, r.low, r.high, p=getattr(r, "p_holm", None)) if r is not None \
        else with_range(np.nan, np.nan, np.nan)


def chosen_design(path=None) -> str:
    """The loop design the page leads with: the one chosen on the dev set (``loop_selection.json``,
    docs/loop.md), or the model-first loop before any choice."""
    path = LOOP_SELECTION if path is None else path
    if not path.exists():
        return NAME
    return json.loads(path.read_text())["choice"]["design"]


def lead_design(design: str | None = None, path=None) -> str:
    """The page's loop design: the one given (``loop`` or ``loop_question_first``), or the one chosen on dev."""
    if design is None:
        return chosen_design(path)
    if design not in LOOP_DESIGNS:
        raise ValueError(f"parameter design: expected one of {', '.join(LOOP_DESIGNS)} (or None: the one chosen on "
                         f"the dev set), got {design!r}")
    return design


def headline_text(profile, lead: str) -> str:
    """Notebook 9's first lines: which loop the page leads with and why, and what it found here (its
    citation hit rate and its ranked list against dense on the same questions), from the saved runs."""
    title = DESIGN_TITLES.get(lead, lead)
    if lead != chosen_design():
        why = "as asked for by the parameter `design`"
    else:
        dev = "the arXiv study's dev set" if profile.collection_source == "documents" else "the dev set"
        why = f"chosen on {dev}, below" if LOOP_SELECTION.exists() else "no choice made on dev yet"
    m = means_of(profile, lead)
    if m is None:
        return f"This page leads with {title} (`{lead}`, prompt `{profile.loop_prompt}`; {why}); it has no complete run here."
    d, n = dense_differences(profile, lead)
    vs = "; ".join(f"{label} {_range_words(d, k)}" for k, label in (("recall_at_5", "recall@5"), ("mrr_at_10", "MRR@10")) if k in d)
    return (f"This page leads with {title} (`{lead}`, prompt `{profile.loop_prompt}`; {why}). Over "
            f"{int(m.questions)} questions it {_means_words(m, lead, _cited(profile))}"
            + (f"; against dense on the same {n} questions: {vs}." if vs else "."))


class Headline:
    """The "In short" line at the top of notebook 9, shown before the page runs anything and
    rewritten in place (an IPython display update) by :meth:`refresh` once the page's run cell has
    recorded or replayed the runs, so a page that records its first run does not open with "no
    complete run"."""

    def __init__(self, profile, lead: str):
        self.profile, self.lead = profile, lead
        self.text = headline_text(profile, lead)
        self._handle = display(Markdown(f"**In short.** {self.text}"), display_id=True)

    def refresh(self) -> None:
        text = headline_text(self.profile, self.lead)
        if text != self.text and self._handle is not None:
            self._handle.update(Markdown(f"**In short.** {text}"))
        self.text = text


def headline(profile, lead: str) -> Headline:
    """Show notebook 9's "In short" line (see :class:`Headline`)."""
    return Headline(profile, lead)


def other_design(design: str) -> str:
    """The loop with the other first search."""
    return QUESTION_FIRST if design == NAME else NAME


def no_run_text(profile, short: bool = False, design: str = NAME) -> str:
    """What the page says when no run of the loop design is saved (``short``: after the first time)."""
    title = DESIGN_TITLES.get(design, design)
    if short:
        return f"No run of {title} saved yet (see above)."
    env = condition_env(profile)
    env = f" {env}" if env else ""
    record = (f"Record one with the local model (`LOCAL_LLM_THREADS=2 LLM_BACKEND=local{env} python "
              f"scripts/run_designs.py {profile.name} {design} 1`, resumable)")
    return (f"{_capital(title)} (`{design}`, prompt `{profile.loop_prompt}`): not run. No run is saved in "
            f"`{shown_path(pipeline.results_dir(profile) / design)}` for this profile and condition. {record}, or "
            f"try it with a stub model: `make notebook NB=09 PARAMS=\"-p design {design} -p loop_backend scripted\"` "
            "(its results go to a variant folder).")


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
                     "citation_hit": citation_hit(cites, sources[r.qid]), "sources": len(src),
                     "citation_all": float(all(x in cites for x in src)),
                     "citations": len(cites), "citation_precision": (sum(c in src for c in cites) / len(cites)
                                                                     if cites else np.nan),
                     "citations_relevant": sum(c in src for c in cites),
                     # the answer is the first search's page, no more and no less: the loop found nothing of its own
                     "cites_first_top": float(bool(cites) and set(cites) == set(first_shown(r))),
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
               "citation_hit_rate": g.citation_hit.mean(),
               # two-part questions: the share of questions citing every source, beside the share of sources cited
               **({"citation_all_rate": g.citation_all.mean()} if (g.sources > 1).any() else {}),
               "citations_per_q": g.citations.mean(),
               "citation_precision": g.citation_precision.mean(),
               "citations_relevant_share": (g.citations_relevant.sum() / g.citations.sum() if g.citations.sum()
                                            else np.nan),
               "cites_first_top_rate": g.cites_first_top.mean(), "papers_read_per_q": g.papers_read.mean(),
               "searches_per_q": g.searches.mean(), "turns_per_q": g.turns.mean(), "tokens_in_per_q": g.tokens_in.mean(),
               "tokens_out_per_q": g.tokens_out.mean(), "prompt_reused_per_q": g.prompt_reused.mean(),
               "latency_median_s": g.latency_s.median()}
        for e in ENDINGS:
            row[f"ended_{e}"] = float((g.ended_by == e).mean())
        row["final_by_code"] = float((g.final_by == "code").mean())
        rows.append(row)
    return pd.DataFrame(rows)


def read_words(profile, results) -> str:
    """What one read showed the model: a document searched whole, its text cut at READ_MAX_CHARS; a long
    document searched as chunks, its passages the loop's searches matched (lib/designs/loop.py read_text),
    with how much the saved runs' reads showed."""
    w = corpus_for(profile)
    if not profile.chunk_documents:
        text = w.text if w.text == "abstract" else "text"  # a study's document searched whole: its text
        return f"A read showed the model one {w.item}'s title and {text}, cut at {READ_MAX_CHARS:,} characters."
    reads = sum(len(r.details.get("read", [])) for r in results)
    chars = sum(r.details.get("read_chars", 0) for r in results)
    seen = f" Its {reads:,} reads showed {chars / reads:,.0f} characters each on average." if reads else ""
    return (f"A read showed the model one {w.item}'s title and {READ_PASSAGES} of its passages (the chunks it is "
            "searched by): the ones the loop's searches matched best, then those beside them; a document of one "
            f"chunk whole, cut at {READ_MAX_CHARS:,} characters.{seen}")


def _share(value) -> str:
    return "none" if pd.isna(value) else f"{value:.0%}"


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
                     + f"; prompt `{prompt_of(first)}`). {read_words(profile, [r for rs in runs.values() for r in rs])}"))
    display(safe_table(transposed(table, shares=LOOP_SHARES, profile=profile)))
    row = table.mean(numeric_only=True)
    ended = ", ".join(f"{row[f'ended_{e}']:.0%} {e.replace('_', ' ')}" for e in ENDINGS if row[f"ended_{e}"])
    title = DESIGN_TITLES.get(design, design)
    first_search = " (the first of them the code's search of the question)" if design == QUESTION_FIRST else ""
    words = corpus_for(profile)
    k = caps.get("loop_search_k") or 5
    reading(f"Over {int(row.questions)} questions and {len(table)} run(s), {title} cited {source_words(profile)} in "
            f"{row.citation_hit_rate:.0%} of questions, with {row.citations_per_q:.2f} citations, "
            f"{_share(row.citations_relevant_share)} of them relevant (citation precision, over all its citations); "
            f"{int(pq.cites_first_top.sum())} of its {len(pq)} loops cite exactly the {k} {words.items} its first "
            f"search showed. It ran {row.searches_per_q:.2f} searches{first_search}, {row.papers_read_per_q:.2f} "
            f"{words.items} read and "
            f"{row.turns_per_q:.2f} model "
            f"turns per question ({row.tokens_in_per_q:,.0f} input and {row.tokens_out_per_q:,.0f} output tokens). "
            f"Loops ended: {ended or 'none'}. Its ranked list (citations first, then the fused searches) reaches "
            f"recall@5 {row.recall_at_5:.3f} and MRR@10 {row.mrr_at_10:.3f} (against dense: the reading above).")
    return {"measures": pq, "summary": table, "caps": caps}


def conditions_table(profile, design: str = NAME) -> pd.DataFrame:
    """One row per condition of the grid (``lib.queries.condition_profiles``): the loop design's complete
    runs there, its citation hit rate (two-part: the share of the two papers cited, and of questions with
    both), its ranked list against dense on the same questions (``pages.against_dense``: the paired
    95% range) and its searches and turns as distributions (value: questions, the first run); a
    condition with no complete run is a row that says so. Reading only: nothing is run."""
    rows = []
    for cname, cp in queries.condition_profiles(profile).items():
        runs = saved_runs(cp, design=design)
        if not runs:
            rows.append({"condition": cname, "runs": 0, "questions": 0, "status": "not run"})
            continue
        sources = {q.qid: q.source_id for q in pipeline.scored_questions(cp)}
        pq = measures([r for rs in runs.values() for r in rs], sources, design)
        m = summary(pq).mean(numeric_only=True)
        d, _ = dense_differences(cp, design)
        first = pq[pq.run == min(runs)]
        rows.append({"condition": cname, "runs": len(runs), "questions": int(m.questions), "status": "",
                     "citation hit rate": m.citation_hit_rate, "both cited": m.get("citation_all_rate", np.nan),
                     "recall@5": m.recall_at_5,
                     "recall@5 − dense": _range_words(d, "recall_at_5"),
                     "MRR@10": m.mrr_at_10,
                     "MRR@10 − dense": _range_words(d, "mrr_at_10"),
                     "MRR@10 delta": getattr(d.get("mrr_at_10"), "delta", np.nan),
                     "MRR@10 low": getattr(d.get("mrr_at_10"), "low", np.nan),
                     "MRR@10 high": getattr(d.get("mrr_at_10"), "high", np.nan),
                     "MRR@10 p_holm": getattr(d.get("mrr_at_10"), "p_holm", np.nan),
                     "no model search": float((first.model_searches == 0).mean()),
                     "searches (value: questions)": distribution_words(dict(sorted(Counter(first.searches).items()))),
                     "turns (value: questions)": distribution_words(dict(sorted(Counter(first.turns).items())))})
    return pd.DataFrame(rows)


def conditions_page(profile, design: str = NAME) -> pd.DataFrame:
    """Notebook 9: the loop design in every condition (:func:`conditions_table`), and a reading of it."""
    table = conditions_table(profile, design)
    shown = table.drop(columns=["MRR@10 delta", "MRR@10 low", "MRR@10 high", "MRR@10 p_holm"], errors="ignore")
    if "both cited" in shown and shown["both cited"].isna().all():
        shown = shown.drop(columns=["both cited"])
    display(styled(shown, shares={"citation hit rate", "both cited", "no model search"}))
    done = table[table.runs > 0]
    title = DESIGN_TITLES.get(design, design)
    if done.empty:
        reading(f"{_capital(title)} has no complete run in any condition.")
        return table
    parts = [f"{r.condition}: cited {r['citation hit rate']:.0%}, MRR@10 {r['MRR@10 − dense']} against dense"
             for _, r in done.iterrows()]
    # measurably: the report's one rule (lib.report.index_numbers.verdict: the Holm-corrected randomization test,
    # as on the index; the range where no test is saved)
    worse = [verdict({f"mrr_at_10_{k}": r[f"MRR@10 {k}"] for k in ("delta", "low", "high", "p_holm")}, "mrr_at_10")
             == "worse" for _, r in done.iterrows()]
    behind, measurable = done[done["MRR@10 delta"] < 0], done[worse]
    missing = table[table.runs == 0].condition.tolist()
    own = "made no search beyond the code's search of the question" if design == QUESTION_FIRST else "made no search at all"
    lo, hi = done["no model search"].min(), done["no model search"].max()
    reading(f"{_capital(title)} per condition ({'; '.join(parts)}). "
            f"Its ranked list is below dense's on MRR@10 in {len(behind)} of {len(done)} conditions run "
            f"(measurably, Holm-corrected p below 0.05, in {len(measurable)}); the model {own} in "
            + (f"{lo:.0%}" if lo == hi else f"{lo:.0%} to {hi:.0%}") + " of its loops."
            + (f" Not run: {'; '.join(missing)}." if missing else ""))
    return table


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

    return (safe_table(frame).apply(colour, axis=1).format(precision=1)
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
    if is_study(profile):  # a study's judgements: every relevant document, by id
        source = "Relevant: " + ", ".join(markdown_code(i) for i in relevant_ids(q.source_id))
    else:
        source = f"Source paper: {markdown_code(q.source_id)}"
    item = "document" if is_study(profile) else "paper"
    display(Markdown(f"**{markdown_text(r.qid)}** (run {first}): *{markdown_text(q.text)}*  \n{source}. The loop took "
                     f"{_n(d.get('turns'), 'model turn')}, {_n(r.searches, 'search', 'es')}, read "
                     f"{_n(d.get('papers_read'), item)}, ended "
                     f"by **{r.stop_reason}** and {hit} "
                     f"(citations: {markdown_text(', '.join(d.get('citations', [])) or 'none')}).  \n"
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
    fig.suptitle(f"{_capital(title)}: steps per question", fontsize=10)
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
            + (f"The model's own queries averaged {fq.query_words.mean():.1f} words against the question's "
               f"{fq.question_words.mean():.1f}, and {own}. " if fq.query_words.notna().any() else
               f"The model wrote no query of its own in any loop (the question: {fq.question_words.mean():.1f} "
               "words). ")
            + "Where a search showed the "
            f"source, the loop read it in {shown.read.mean() if len(shown) else float('nan'):.0%} and cited it in "
            f"{shown.cited.mean() if len(shown) else float('nan'):.0%} of loops.")
    return {"funnel": fq, "table": table}


# ------------------------------------------------------------------ the other first search, the earlier prompt
def side_by_side(columns) -> pd.DataFrame:
    """Loop runs' measures on the scored questions, one column per (profile, design, complete run) of
    ``columns`` (pairs of a profile and a loop design), one row per measure, each column naming its
    design and prompt; empty when none has a complete run."""
    frames = []
    for profile, design in columns:
        sources = {q.qid: q.source_id for q in pipeline.scored_questions(profile)}
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


def _cited(profile) -> str:
    """What a citation hit finds: the arXiv study's source paper, a study's relevant document."""
    return "the source paper" if profile.collection_source != "documents" else source_words(profile)


def _means_words(m, design: str, cited: str = "the source paper") -> str:
    code = " (one of them the code's)" if design == QUESTION_FIRST else ""
    return (f"cited {cited} in {m.citation_hit_rate:.0%} of questions with {m.turns_per_q:.2f} model turns "
            f"and {m.searches_per_q:.2f} searches per question{code}, its ranked list at recall@5 {m.recall_at_5:.3f} "
            f"and MRR@10 {m.mrr_at_10:.3f}")


def other_first_page(profile, lead: str, baseline: str = "dense") -> dict:
    """Notebook 9: the loop with the other first search than the page's ``lead`` design (the
    model-first loop makes its own first search; the question-first loop's code searches the question
    as written first), beside the lead, then its own step-through, steps and funnel; when none of its
    runs is saved, a line saying it was not run (reading only: nothing is run here)."""
    other = other_design(lead)
    title = DESIGN_TITLES[other]
    if not saved_runs(profile, complete=False, design=other):
        display(Markdown(no_run_text(profile, design=other)))
        return {}
    if not saved_runs(profile, design=other):
        display(Markdown(f"{_capital(title)} has runs saved part-way only (in "
                         f"`{shown_path(pipeline.results_dir(profile) / other)}`): not scored yet. "
                         "One of its questions, step by step:"))
        return {"example": step_through(profile, other)}
    table = side_by_side([(profile, lead), (profile, other)])
    display(safe_table(table))
    means = {d: means_of(profile, d) for d in (lead, other)}
    text = f"Over {int(means[other].questions)} questions, {title} {_means_words(means[other], other, _cited(profile))}"
    text += (f"; {DESIGN_TITLES[lead]}: {_means_words(means[lead], lead, _cited(profile))} (their complete runs; the "
             "columns name "
             "each design's prompt)." if means[lead] is not None else f"; {DESIGN_TITLES[lead]} has no complete run here.")
    reading(text)
    out = {"side_by_side": table, "means": means}
    out["example"] = step_through(profile, other)
    out["steps"] = steps_page(profile, other)
    out["lost"] = lost_page(profile, baseline, other)
    return out


def earlier_profile(profile):
    """The profile as it was before the prompt was chosen on dev (``loop_prompt`` one_example): its runs
    are kept in that setting's variant folder, where they still replay; None when the profile's prompt
    is that one."""
    if profile.loop_prompt == EARLIER_PROMPT:
        return None
    return load_profile(profile.name, **{**profile.overrides, "loop_prompt": EARLIER_PROMPT})


def earlier_prompt_page(profile) -> dict:
    """Notebook 9: the loops saved with the prompt used before the choice (one worked example) beside the
    chosen prompt's, on the same questions; a line when there are none (reading only)."""
    earlier = earlier_profile(profile)
    if earlier is None:
        display(Markdown(f"The runs on this page use `{EARLIER_PROMPT}`, the prompt every loop was saved with "
                         "before the choice; there is no earlier prompt to compare with."))
        return {}
    before = [d for d in LOOP_DESIGNS if saved_runs(earlier, design=d)]
    if not before:  # the section's heading and prose (tagged needs-earlier) are left out of the page
        lacking("earlier", f"No loop run with the earlier prompt `{EARLIER_PROMPT}` is saved for this condition (in "
                f"`{shown_path(pipeline.results_dir(earlier))}`).")
        return {}
    now = [d for d in LOOP_DESIGNS if saved_runs(profile, design=d)]
    table = side_by_side([(earlier, d) for d in before] + [(profile, d) for d in now])
    display(safe_table(table))
    parts = []
    for d in before:
        m = means_of(earlier, d)
        parts.append(f"with `{EARLIER_PROMPT}`, {DESIGN_TITLES[d]} {_means_words(m, d)}")
    for d in now:
        m = means_of(profile, d)
        parts.append(f"with `{profile.loop_prompt}`, {DESIGN_TITLES[d]} {_means_words(m, d, _cited(profile))}")
    reading("On the same questions, " + "; ".join(parts) + f". The earlier runs are kept in "
            f"`{shown_path(pipeline.results_dir(earlier))}` and replay from the saved model calls.")
    return {"table": table, "earlier": before, "now": now}


# ------------------------------------------------------------------ the scores notebook
def scored_summaries(scored) -> dict[str, tuple[list, pd.DataFrame]]:
    """Each loop design with scored runs: its results and its :func:`summary` on the scored questions
    (one row per run), in the order of ``LOOP_DESIGNS``."""
    sources = {q.qid: q.source_id for q in scored.questions}
    out = {}
    for design in LOOP_DESIGNS:
        results = [r for r in scored.results if r.design == design]
        if results:
            out[design] = (results, summary(measures(results, sources, design)))
    return out


def scores_section(profile, scored) -> pd.DataFrame:
    """The scores notebook: each loop design's own measures on the scored questions (its complete
    runs, one column each), or a line saying no loop run is scored."""
    loops = scored_summaries(scored)
    if not loops:
        display(Markdown("No loop run is scored in this condition yet (notebook 9 says how to record one)."))
        return pd.DataFrame()
    tables = []
    for design, (results, table) in loops.items():
        table = table.copy()
        table.insert(0, "design", design)
        table.insert(1, "prompt", prompt_of(results))
        tables.append(table)
    every = [r for results, _ in loops.values() for r in results]
    display(Markdown(f"Caps: {caps_words(caps_of(every))}."))
    table = pd.concat(tables, ignore_index=True)
    display(safe_table(transposed(table, shares=LOOP_SHARES, profile=profile)))
    return table


def summary_record(scored) -> dict | None:
    """Each loop design's measures on the scored questions for ``summary.json`` (means over its runs),
    with its caps and prompt, by design; None when no loop run is scored."""
    out = {}
    for design, (results, table) in scored_summaries(scored).items():
        means = table.drop(columns="run").mean(numeric_only=True)
        out[design] = {"runs": len(table), "caps": caps_of(results), "loop_prompt": prompt_of(results),
                       **{k: (None if pd.isna(v) else round(float(v), 6)) for k, v in means.items()}}
    return out or None


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
    path = LOOP_SELECTION if path is None else path
    if not path.exists():
        display(Markdown(f"Not chosen yet: the six dev arms (`loop` and `loop_question_first`, each with the "
                         f"prompts one_example, no_example and two_examples) have not all been run "
                         f"(`make loop-selection`, docs/loop.md), so `{shown_path(path)}` does not exist. The runs "
                         f"on this page use the prompt `{profile.loop_prompt}`, the profile's."))
        return {}
    record = json.loads(path.read_text())
    if profile.study_dir is not None:
        display(Markdown("This choice was made on the arXiv study's dev questions, not on this study's; the loop "
                         "here uses the prompt its profile names."))
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

    def now() -> str:  # the reading as the runs saved now make it
        chosen_runs = saved_runs(profile, design=design)
        if not chosen_runs or prompt_of(next(iter(chosen_runs.values()))) != prompt:
            return text + (f" The chosen arm has no complete run on these questions yet: the loop's runs on this page "
                           f"use the prompt `{profile.loop_prompt}`, the profile's.")
        return text

    shown = now()
    handle = display(Markdown(f"**Reading.** {shown}"), display_id=True)

    def refresh() -> None:
        """The reading rewritten in place (an IPython display update) once the page's run cell has saved
        the runs, so a page that records the chosen arm's first run reads as its rerun does."""
        if handle is not None and now() != shown:
            handle.update(Markdown(f"**Reading.** {now()}"))

    return {"table": table, "choice": c, "refresh": refresh}


def refresh_selection(selection: dict) -> None:
    """After notebook 9's run cell: the dev choice's reading from the runs saved now (see :func:`selection_page`)."""
    if "refresh" in selection:
        selection["refresh"]()
