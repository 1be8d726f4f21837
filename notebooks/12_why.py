# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: agentic-rag-evidence
#     language: python
#     name: agentic-rag-evidence
# ---

# %% [markdown]
# # 12. Why searching again wins or loses
#
# *When the agent or multi-query ranks the source below plain dense search, which decision did it? And would
# a model that judged better when to stop have won with the queries it writes?*
#
# Two kinds of evidence, both from saved records (no model call here):
#
# - **The decisions, result by result.** Every saved (question, run) result of the agent is put on one path:
#   it stopped after the question's search, or it searched again, split by where the source was among the
#   titles the model had been shown (at rank 1, at 2-5, not shown), by what its new query did to the source
#   against the list the decision was made on (strictly better, the same, worse, or lost from the top 50),
#   and by its final list against dense's. Each path's points add up exactly to the design's difference
#   from dense. Multi-query, by what its three rewrites did; the question-first loop as the agent (its code
#   searches the question, then its model searches again or answers).
# - **What the model would have searched where it stopped, measured.** The agent's decision tree
#   (`agent_tree`): the agent's own run, and wherever the model stopped before the cap, the same model asked
#   once more from that state with only the search branch of its reply open, then on to the cap. Each
#   question thus has a chain of leaves (stop after 1, 2 or 3 searches), every query the model's own, and
#   the model's decision at every state it reached. The chains are read as the agent runs: a query equal to
#   the one just searched ends the search, so a chain ends there and no leaf fuses a repeated list. A stop
#   judge is then simulated over those real leaves, and the accuracies at which it would beat dense (the
#   break-even) are found exactly.
# - **The query side.** How large a share of the model's new queries would have to give the best list a
#   query can give (the source first) for the agent to reach dense: an upper bound, beside the share it
#   actually wrote strictly better.
#
# Two accuracies, defined once and used everywhere, each measured per decision (the first: after the
# question's search; the second: after one more), never pooled: a model's **stop accuracy** is, of the
# decisions it made with the source among the titles it had been shown (the top 5 of every search so far),
# the share at which it stopped; its **search accuracy** is, of the decisions made with the source not among
# them, the share at which it searched again. The method: docs/why.md.

# %% tags=["parameters"]
profile = "offline"
question_limit = None   # e.g. 50: the first 50 scored questions of every condition

# %%
import pandas as pd
from IPython.display import Markdown, display

from lib import pipeline
from lib.preflight import notebook_profile
from lib.evaluation import loss
from lib.io import write_text
from lib.report import why, why_plots, why_tables
from lib.report.display import fixed, safe_table
from lib.report.model_size import model_label
from lib.report.pages import lacking, open_page, reading
from lib.report.queries import conditions_records

cfg = notebook_profile(globals())
open_page(cfg, "rrf_k", "agent_max_searches")
records = conditions_records(cfg, why_tables.DESIGNS)  # every LLM design page 12 can take apart
tables = why_tables.conditions_tables(records)
# saved beside the results for the index: the shipped study's in results/, any other run's in its own folder
out_dir = pipeline.results_dir(cfg) if cfg.shipped or cfg.own_dir is not None else cfg.report_dir / "why"
for key, frame in tables.frames().items():
    write_text(out_dir / why.FILES[key], frame.to_csv(index=False))
DEFAULT = "full questions"
conditions = sorted(dict.fromkeys(tables.paths.condition), key=lambda c: c != DEFAULT)


def say(text):
    display(Markdown(text))


def ranged(df, pairs):
    """Columns d, d_low, d_high shown as one 'd [low, high]' column each (pairs: new name -> d)."""
    out = df.copy()
    for name, col in pairs.items():
        out[name] = [f"{fixed(d, sign=True)} [{fixed(lo, sign=True)}, {fixed(hi, sign=True)}]" if pd.notna(d) else "—"
                     for d, lo, hi in zip(out[col], out[f"{col}_low"], out[f"{col}_high"])]
        out = out.drop(columns=[col, f"{col}_low", f"{col}_high"])
    return out


# %% tags=["finding"]
found = why.finding(tables.paths, tables.judges, conditions[0], names=None, bound=tables.bound) if conditions else ""
if found:
    say("**Finding.** " + found)
elif conditions:
    reading(f"No complete run of the agent or multi-query in {conditions[0]}: no decision of theirs to take apart there.")
else:
    reading("No complete run of the agent or multi-query in any condition: no decision to take apart.")

# %% [markdown] tags=["needs-trees"]
# ## 1. Judges over the model's own decision trees
# Per condition and model with a tree: the agent minus dense (MRR@10) for a simulated judge, against its stop
# accuracy (the same at every decision), one line per search accuracy. The judge's expected score is exact
# over each question's real leaves, read as the agent runs (a repeated query ends a chain). The model is
# placed at its measured accuracies, a bar from its stop accuracy at the first decision to that at the
# second: open, the judge's prediction at its per-decision accuracies with its 95% range over questions;
# filled, the agent's runs; dotted, the best leaf per question in hindsight (it knows the answer, so it is
# no judge). The prediction is tested on the agent's runs outside the tree (the tree extends run 1, whose
# decisions are among those measured).

# %%
if not tables.judges.empty:
    display(why_plots.judges_chart(tables.grid, tables.judges, cfg.figures_dir / f"{cfg.name}_judges.png",
                                   label=model_label))
    for c, m in dict.fromkeys(zip(tables.judges.condition, tables.judges.model)):
        say(f"**{c}, {model_label(m)}.** " + why.judges_sentence(tables.judges, c, m))
else:  # the sections over the trees (tagged needs-trees) are left out of the page
    lacking("trees", "No decision tree saved in any condition: run one with "
            "`python scripts/run_designs.py <profile> agent_tree 1` (with `LLM_BACKEND=local`, or a backend of your own).")

# %% [markdown] tags=["needs-trees"]
# **Place your own model on this chart** (a sample of N questions, its accuracies, the predicted difference
# from dense with its range; README, "Place your own model"):
#
# ```
# make place-model N=40 SET="llm_backend=openai llm_model=<your model> openai_base_url=<its server>"
# ```

# %%
if not tables.judges.empty:
    jm = tables.judges[tables.judges.metric == "mrr_at_10"]
    decisions = [k for k in (1, 2, 3, 4) if f"shown_{k}" in jm and jm[f"shown_{k}"].notna().any()]
    acc = {f"{name} {why.ORDINALS[k - 1]} (n)": [f"{why.percent(p)} ({int(n)})" if pd.notna(n) else "—"
                                                 for p, n in zip(jm[f"p_{key}_{k}"], jm[f"{count}_{k}"])]
           for k in decisions for name, key, count in (("stop accuracy", "stop", "shown"),
                                                         ("search accuracy", "search", "not_shown"))}
    shown_j = ranged(jm.assign(**acc), {"predicted [95%]": "predicted", "runs' actual [95%]": "actual",
                                        "runs outside the tree − prediction [95%]": "gap",
                                        "best leaf in hindsight [95%]": "hindsight"})
    cols = (["condition", "model", "point", *acc, "questions", "chains_cut", "predicted [95%]", "runs",
             "runs' actual [95%]", "tested_runs", "runs outside the tree − prediction [95%]",
             "best leaf in hindsight [95%]"] + [c for c in ("measured_under",) if c in shown_j])
    display(safe_table(shown_j[cols].assign(model=shown_j.model.map(model_label)).rename(
        columns={"chains_cut": "chains ended by a repeat", "tested_runs": "runs outside the tree",
                 "measured_under": "measured under (prompt, constraint)"})).hide(axis="index"))

# %% [markdown] tags=["needs-trees"]
# **Break-even.** Per condition and model (MRR@10): whether any judge beats dense over these leaves, searched
# exactly (every corner of the per-decision accuracies, where the best judge must lie), the best judge and the
# perfect one with their ranges, and the least accuracies that beat dense: the same at every decision with the
# other accuracy perfect, and at one decision with every other accuracy perfect ("n/a": none does).

# %%
if not tables.judges.empty:
    for c in dict.fromkeys(tables.judges.condition):
        say(f"**{c}.** " + why.breakeven_sentence(tables.judges, c))
    be = tables.judges[(tables.judges.metric == "mrr_at_10") & (tables.judges.point == "model")]
    perfect = tables.judges[(tables.judges.metric == "mrr_at_10") & (tables.judges.point == "perfect judge")]
    be = be.assign(perfect=perfect.predicted.values, perfect_low=perfect.predicted_low.values,
                   perfect_high=perfect.predicted_high.values)
    least = {c: c.replace("breakeven_", "least ").replace("_", " accuracy at decision ")
             for c in be.columns if c.startswith("breakeven_")}
    shown_be = ranged(be, {"perfect judge [95%]": "perfect", "best judge [95%]": "best_judge"})
    shown_be = shown_be[["condition", "model", "beats_dense", "perfect judge [95%]", "best judge [95%]",
                         "best_judge_at", *least]].assign(model=shown_be.model.map(model_label))
    display(safe_table(shown_be.rename(columns={"beats_dense": "a judge beats dense", "best_judge_at": "best judge at",
                                                **least}))
            .format({c: why.percent for c in least.values()}).hide(axis="index"))

# %% [markdown] tags=["needs-trees"]
# ## 2. The query side: what better queries would have to do
# Each new query in the trees (a real re-search, read as the agent runs) is given, with chance *share* and
# independently, the best list a query can give: the source first, then the rest of its own list. The judge's
# expected difference from dense is then exact again, at the model's own per-decision accuracies (solid) and
# with a perfect judge (dashed); a dot marks where it reaches dense. It is an **upper bound** on what that share
# of better queries could give (no query does better than the source first, and later queries are kept as
# written), so the share where a line reaches dense is the least that could suffice. The vertical line of each
# model: the share of its new queries that ranked the source strictly higher than the list the decision was
# made on.

# %%
if not tables.bound.empty:
    display(why_plots.bound_chart(tables.bound_grid, tables.bound, cfg.figures_dir / f"{cfg.name}_query_bound.png",
                                  label=model_label))
    for c in dict.fromkeys(tables.bound.condition):
        say(f"**{c}.** " + why.bound_sentence(tables.bound, c))
    qb = tables.bound[tables.bound.metric == "mrr_at_10"]
    display(safe_table(qb.assign(model=qb.model.map(model_label))[
        ["condition", "model", "accuracies", "p_stop", "p_search", "new_queries", "better", "better_rate", "at_none",
         "at_better_rate", "at_all", "least_share"]].rename(
        columns={"new_queries": "new queries", "better": "strictly better", "better_rate": "better-rate",
                 "at_none": "none given (as run)", "at_better_rate": "at the better-rate (bound)",
                 "at_all": "all given (bound)", "least_share": "least share reaching dense"}))
        .format({"better-rate": why.percent, "least share reaching dense": why.percent,
                 "none given (as run)": why.points, "at the better-rate (bound)": why.points,
                 "all given (bound)": why.points}).hide(axis="index"))

# %% [markdown] tags=["needs-paths"]
# ## 3. Where each difference comes from, decision by decision
# Each path: its results (question-runs), the questions they cover, and its points (the sum over its results
# of design minus dense, over results per question times questions): a design's paths add up to its
# difference from dense.

# %%
if tables.paths.empty:
    lacking("paths", "No complete run of the agent or multi-query in any condition.")
else:
    p = tables.paths.assign(model=tables.paths.model.map(model_label))
    for c in conditions:
        for m in dict.fromkeys(tables.paths[tables.paths.condition == c].model):
            for d in why_tables.DESIGNS:
                text = why.paths_sentence(tables.paths, c, d, m)
                if text:
                    say(f"**{c}, {model_label(m)}.** {text}")
    cols = {"condition": "condition", "design": "design", "model": "model", "decision": "decision",
            "shown": "source shown", "query": "new query / rewrites", "final": "final list", "results": "results",
            "mrr_at_10_points": "MRR@10 points", "recall_at_5_points": "recall@5 points"}
    display(safe_table(p[list(cols)].rename(columns=cols))
            .format({"MRR@10 points": why.points, "recall@5 points": why.points})
            .hide(axis="index"))

# %% [markdown] tags=["needs-paths"]
# ## 4. The model's queries
# Every new query in the trees (read as the agent runs) against the list the decision was made on (the fused
# list of the searches before it): strictly better, the same (a tie is no gain), worse, or the source lost
# from the top 50; split by whether the model chose to search or was asked to where it had stopped, and by
# where the source was shown; a query repeating the one just searched ends the chain and is counted apart.
# Then the same for every LLM design's saved runs: the agent's new queries against the fused list before
# them; a fused design's queries (multi-query's rewrites, decomposition's sub-queries) against the question's
# own list; HyDE's one search against dense's list.

# %%
if tables.quality.empty:
    lacking("paths")  # said once, in section 3's place
else:
    for c, m in dict.fromkeys(zip(tables.quality.condition, tables.quality.model)):
        text = why.quality_sentence(tables.quality, c, m)
        if text:
            say(f"**{c}.** " + text)
    q = tables.quality.assign(model=tables.quality.model.map(model_label)).rename(
        columns={"asked": "the query", "shown": "source shown"})
    display(safe_table(q).hide(axis="index"))

# %% [markdown]
# ## 5. What was read
# Per condition: the complete runs read, and the questions with a decision tree per model. Then how every
# saved reply was decoded, per model, record kind and run: *token*, a token at a time; *fast*, the local
# backend's fast path (docs/speed.md); the two paths can differ in a sampled reply, so a run's path is named
# here (the agent's run 1 made every tree's path; the trees' own calls are `agent_tree` and `agent_tree_search`);
# then the path that made each saved run of a condition, found by the questions its records ask.

# %%
status = pd.DataFrame([{"condition": c, "design": d, "runs": len({r.run for r in rec.runs[d][0]}),
                        "not scored": "; ".join(rec.runs[d][1])}
                       for c, rec in records.items() if not isinstance(rec, str) for d in rec.runs])
trees = pd.DataFrame([{"condition": c, "model": model_label(m), "questions with a tree": n}
                      for (c, m), n in tables.trees.items()])
if not status.empty:
    display(safe_table(status).hide(axis="index"))
if not trees.empty:
    display(safe_table(trees).hide(axis="index"))
decoding = why_tables.decoding_table(why_tables.records_root(cfg))  # a study's own model records
if not decoding.empty:
    display(safe_table(decoding.assign(model=decoding.model.map(model_label))).hide(axis="index"))
made_by = why_tables.run_decoding(pipeline.results_dir(cfg), (why_tables.records_root(cfg),))  # each saved run's path
if not made_by.empty:
    display(safe_table(made_by.assign(model=made_by.model.map(model_label))).hide(axis="index"))
unread = [f"{c}: {rec}" for c, rec in records.items() if isinstance(rec, str)]
if unread:
    say("Not read: " + "; ".join(unread) + ".")

# %% [markdown] tags=["arxiv-only", "needs-twopart"]
# ## 6. The two-part loop: where the second paper was lost
# For each two-part question (both papers needed), how far each paper got in the question-first loop:
# cited; read but not cited; shown by one of its searches but not read; in its searches' lists (depth 50)
# but never among the titles shown; or in none of them. *failed*: the step at which the paper that got
# less far was lost.

# %% [markdown] tags=["study-only", "needs-twopart"]
# ## 6. The two-part loop: where the second document was lost
# For each two-part question (both documents needed), how far each document got in the question-first
# loop: cited; read but not cited; shown by one of its searches but not read; in its searches' lists
# (depth 50) but never among the titles shown; or in none of them. *failed*: the step at which the
# document that got less far was lost.

# %%
tp = next((rec for c, rec in records.items() if not isinstance(rec, str) and rec.profile.question_set == "twopart"), None)
tp_res = tp.runs.get("loop_question_first", ([], []))[0] if tp is not None else []
if tp_res:
    tp_table = loss.two_part_table(tp_res, tp.questions)
    tp_counts = loss.two_part_counts(tp_table)
    display(safe_table(tp_counts).format({"share": "{:.1%}"}).hide(axis="index"))
    say(why.two_part_reading(tp_counts))
    display(safe_table(tp_table))
elif tp is None:
    lacking("twopart", "This study has no two-part questions: nothing to show here.")
else:
    lacking("twopart", "No complete run of the question-first loop on the two-part questions.")

# %% [markdown] tags=["arxiv-only", "needs-sizes"]
# ## 7. Model size
# The same agent, multi-query and loop with each local model: Qwen2.5-Coder-0.5B-Instruct and the
# profile's Qwen2.5-Coder-1.5B-Instruct (both run by llama.cpp on the CPU, recorded and replayed), each
# design minus dense (MRR@10, the 95% paired range) in the questions-as-written and short-question
# conditions; beside them, in the first, the article's published differences with Claude Haiku 5.5
# (its own questions and set-up, so a marker of scale, not a paired comparison). A design not run with
# a model says so in its place.

# %% [markdown] tags=["study-only", "needs-sizes"]
# ## 7. Model size
# The same agent, multi-query and loop with each model this study ran, each design minus dense (MRR@10,
# the 95% paired range) per condition. A design not run with a model says so in its place.

# %%
from lib.report import model_size
from lib.report.article import article_figures, shows_article
from lib.report.display import design_namer

sizes = model_size.axis_table(cfg)
published = article_figures() if shows_article(cfg) else None
scored_sizes = sizes[sizes.status.str.startswith("scored")] if not sizes.empty else sizes
several = not scored_sizes.empty and scored_sizes.model.nunique() > 1
if several or published is not None:
    display(model_size.axis_chart(sizes, cfg.figures_dir / f"{cfg.name}_model_size.png", published,
                                  names=design_namer(cfg)))
    if not scored_sizes.empty:
        shown_sizes = ranged(scored_sizes, {"recall@5 − dense [95%]": "recall_at_5_delta",
                                            "MRR@10 − dense [95%]": "mrr_at_10_delta"})
        cols = ["condition", "model_label", "design", "runs", "questions", "recall_at_5", "recall@5 − dense [95%]",
                "mrr_at_10", "MRR@10 − dense [95%]", "folder"]
        display(safe_table(shown_sizes[cols].rename(columns={"model_label": "model"}))
                .format({"recall_at_5": "{:.3f}", "mrr_at_10": "{:.3f}"}).hide(axis="index"))
    say(model_size.axis_reading(sizes, published, names=design_namer(cfg)))  # the page's own reading stays the loss's
else:  # the section's heading and prose (tagged needs-sizes) are left out of the page
    lacking("sizes", "Only one model was run in this study: no model-size axis to draw.")

# %% [markdown]
# ## Reading
# Generated from the numbers above, per condition.

# %%
said = False
for c in conditions:
    text = why.finding(tables.paths, tables.judges, c, bound=tables.bound)
    if text:
        reading(f"{c}: {text}")
    extra = why.quality_sentence(tables.quality, c, why.profile_model(tables.paths, c))
    if extra:
        reading(extra)
    said = said or bool(text or extra)
if not said:
    reading("Nothing to read: no complete run of the agent or multi-query.")
