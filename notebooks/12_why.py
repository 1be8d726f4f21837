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
# # 12. Why the LLM designs lose
#
# *When the agent, multi-query or the loop ranks the source paper below plain dense search, which of its
# parts takes it down: the decision to search again, the queries the model writes, the merge of the
# lists, or (the tool-calling loop) the citations it puts first? And what would it take to win?*
#
# The published study read its agent's changed questions by hand and concluded that terms guessed
# from the model's memory of the field named other work, and that the fusion then put those papers
# above the right one. This page measures each part from the saved records, in every condition, with no
# model call: every query a design wrote is searched again with the condition's own dense search (depth
# 50; the lists are kept on disk, so a re-render searches nothing), and each saved result is rebuilt with
# each part either as run or at a **neutral** setting:
#
# - **the stop judgement** (the agent, the loops): neutral is an oracle stop over the same queries: the
#   searches up to the first whose shown titles (the top 5 of every search so far) hold the source;
# - **the queries**: neutral is each model-written query's list *levelled*: every relevant paper put at
#   its rank under the question as written, the rest of the list unchanged (a worse query is blamed, a
#   better one credited);
# - **the merge**: neutral is the question's own list first, the other lists' new finds below it (a rule
#   that keeps what the question found); the design's rule is reciprocal rank fusion;
# - **citations put first** (the loops): neutral is the list without its citations put first.
#
# With every part neutral the list is dense's, so the loss against dense is split exactly among the parts
# by the **Shapley value** (each part's effect averaged over every order of switching the parts from
# neutral to as run; per question-run, then runs averaged per question, then over questions). An effect
# that needs several parts at once is shared equally among them: a further search made after the source
# was shown hurts only if its query ranks the source worse *and* RRF blends it in, so the stop judgement,
# the queries and the merge each carry a third of it. The method, the neutrals and why: docs/why.md.
#
# Then **what it would take**: stop judges of given accuracy and query writers of a given share of better
# queries, simulated over the same records (exact expectations), against dense, with today's two local
# models placed by their measured accuracy. Last, **the two-part loop**: where the second paper was lost.
# The residual tables of the earlier analysis (the fused list against the best single list) follow as
# measurements, not as causes.

# %% tags=["parameters"]
profile = "offline"
question_limit = None   # e.g. 50: the first 50 scored questions of every condition

# %%
import pandas as pd
from IPython.display import Markdown, display

from lib import pipeline
from lib.config import notebook_profile
from lib.evaluation import attribution, breakeven, loss
from lib.io import write_text
from lib.report import why, why_plots
from lib.report.display import fixed, safe_table


def signed(x):
    return fixed(x, sign=True)
from lib.report.model_size import model_label
from lib.report.pages import open_page, reading

cfg = notebook_profile(globals())
open_page(cfg, "rrf_k", "agent_max_searches", "loop_search_k")
records = loss.conditions_records(cfg)          # every condition's records, the re-searched lists cached on disk
attr, attr_rows = attribution.conditions_table(records)   # cached by the records' and the code's digest
items = breakeven.conditions_break_even(records)          # cached likewise
be_table = breakeven.summary_table(items)
losses = loss.conditions_loss(cfg, records=records)
done = [x for x in losses if x.analysed]
DEFAULT = "full questions"
conditions = sorted(dict.fromkeys(attr.condition) if not attr.empty else [], key=lambda c: c != DEFAULT)
designs = list(dict.fromkeys(attr.design)) if not attr.empty else []
out_dir = pipeline.results_dir(cfg)
# saved for the report's index: the attribution (its "why" per condition) and the break-even (its reading)
write_text(out_dir / why.ATTRIBUTION_CSV, attr.to_csv(index=False))
write_text(out_dir / why.BREAK_EVEN_CSV, be_table.to_csv(index=False))


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
if conditions:
    say("**Finding.** Each LLM design's loss against dense, split among its parts (Shapley, over counterfactuals from "
        "the saved records), and what a stop judge or query writer would need to match dense:\n\n"
        + "\n".join(why.condition_finding(attr, be_table, c, designs) for c in conditions))
else:
    reading("No complete run of any LLM design in any condition: nothing to take apart.")

# %% [markdown]
# ## What was analysed
# Per condition and design: the complete runs analysed, the runs not scored and why, and two checks
# that searching again reproduces the saved runs: the share of results whose saved ranked list the
# searches rebuild exactly (the fusion, and for the loop its citations first), and the share of
# questions whose saved dense list the question's search rebuilds. Where a rebuild differs, the
# attribution takes the saved list as the design's (its shares still sum to the saved loss).

# %%
status = loss.status_table(losses)
display(safe_table(status).format({"saved list rebuilt": "{:.1%}", "dense run rebuilt": "{:.1%}"}, na_rep="—")
        .hide(axis="index"))
missing = [x for x in losses if not x.analysed]
if missing:
    say("Not analysed: " + "; ".join(f"{why.DESIGN_WORDS[x.design]} in {x.condition} ({x.status}"
                                     + (f": {'; '.join(x.not_scored)}" if x.not_scored else "") + ")"
                                     for x in missing) + ".")

# %% [markdown]
# ## 1. Which part costs what: the attribution
# Per condition and design, in MRR@10 then recall@5: dense, the design as run, the loss (dense − design)
# and each part's Shapley share of it (points; they add up to the loss; a negative share is a gain). Then
# *fix*: what making that part alone neutral would recover (the others as run; these overlap and do not
# add up). *below*: question-runs ranked below dense.

# %%
if attr.empty:
    say("No complete run of any LLM design in any condition: nothing to take apart.")
else:
    shares = [f for f in ("stop", "queries", "merge", "citations", "start")
              if attr[f].notna().any() and (f != "start" or attr[f].abs().max() > 1e-9)]
    fixes = [c for c in attr.columns if c.startswith("fix_")]
    cols = ["condition", "design", "metric", "questions", "below", "dense", "run", "loss", *shares, *fixes, "rebuilt"]
    display(safe_table(attr[cols]).format({c: signed for c in ["loss", *shares, *fixes]}
                                    | {"dense": "{:.3f}", "run": "{:.3f}", "rebuilt": "{:.1%}"}, na_rep="—")
            .hide(axis="index"))
    display(why_plots.shares_chart(attr, cfg.figures_dir / f"{cfg.name}_why_shares.png"))
    for c in conditions:
        for d in designs:
            text = why.attribution_reading(attr, c, d)
            if text:
                say(text)

# %% [markdown]
# Recounted from the saved lists alone (no search again): the agent's losing question-runs, and how many
# had the source in the first search's top 5 and searched again; the question-first loop's losing
# questions with a wrong citation at rank 1.

# %%
for c in conditions:
    rec = records[c]
    dense_lists = rec.dense or {}
    agent_res, loop_res = rec.runs.get("agent", ([], []))[0], rec.runs.get("loop_question_first", ([], []))[0]
    qids = {q.qid for q in rec.questions}
    if not dense_lists or not qids <= set(dense_lists):
        continue
    a = attribution.agent_recount(agent_res, rec.questions, dense_lists) if agent_res else None
    lp = attribution.loop_recount(loop_res, rec.questions, dense_lists) if loop_res else None
    text = why.recount_reading(a, lp, c)
    if text:
        say(text)

# %% [markdown]
# ## 2. What it would take to win: break-even
# Left: the agent minus dense (MRR@10) as a simulated stop judge grows more accurate (on the curve it stops
# when the source is shown and searches on when it is not, each with the accuracy on the x axis; the
# queries are the saved ones, and where the model wrote no further query the judge must stop). At 1 it is
# the oracle stop: the ceiling of any judge with these queries. Each local model is marked at its
# measured share of stops with the source shown: open, a judge of its measured accuracy both ways erring at
# random (over the profile model's queries); filled, its own run. Right: the agent minus dense as a share
# of its new queries is made better than the question (each query not yet better replaced by its own list
# with the source one rank above the question's), from today's share up, with its stops as run.

# %%
if items:
    display(why_plots.break_even_chart(items, cfg.figures_dir / f"{cfg.name}_break_even.png", label=model_label))
    show_cols = ["condition", "design", "axis", "break_even", "ceiling", "at_zero"]
    display(safe_table(be_table[show_cols + [c for c in be_table.columns if c not in show_cols]])
            .format({c: signed for c in be_table.columns if "mrr" in c or c in ("ceiling", "at_zero")}
                          | {c: "{:.0%}" for c in be_table.columns if c == "break_even" or c.endswith(("_accuracy",
                                                                                                      "_p_stop",
                                                                                                      "_p_search"))},
                          na_rep="none").hide(axis="index"))
    for c in conditions:
        line = why.break_even_line(be_table, c)
        if line:
            say(line)
else:
    say("No complete agent run in any condition: no break-even to compute.")

# %% [markdown]
# ## 3. The two-part loop: where the second paper was lost
# For each two-part question (both papers needed), how far each paper got in the question-first loop:
# cited; read but not cited; shown by one of its searches but not read; in its searches' lists (depth 50)
# but never among the titles shown; or in none of them. *failed*: the step at which the paper that got
# less far was lost.

# %%
tp = next((rec for c, rec in records.items() if not isinstance(rec, str) and rec.profile.question_set == "twopart"), None)
tp_res = tp.runs.get("loop_question_first", ([], []))[0] if tp is not None else []
if tp_res:
    tp_table = loss.two_part_table(tp_res, tp.questions)
    tp_counts = loss.two_part_counts(tp_table)
    display(safe_table(tp_counts).format({"share": "{:.1%}"}).hide(axis="index"))
    say(why.two_part_reading(tp_counts))
    display(safe_table(tp_table))
else:
    say("No complete run of the question-first loop on the two-part questions.")

# %% [markdown]
# ## 4. The stop judgement, decision by decision
# Each decision the agent's model made, by whether the source was among the titles it had been shown
# (the top 5 of every search so far) and by what followed. *Stopped* counts every decision that ended
# the search: the model's own stop and (named in the long table) a malformed, empty or repeated query,
# a refusal or a cut reply. Beside it, how the agent used its searches against the article's agent.

# %%
agents = [x for x in done if x.design == "agent"]
if not agents:
    why = [f"{x.condition}: {x.status}" + (f" ({'; '.join(x.not_scored)})" if x.not_scored else "")
           for x in losses if x.design == "agent"]
    say("**No complete agent run in any condition**, so the stop judgement cannot be measured yet: "
        + "; ".join(why) + ".")
for x in agents:
    say(f"**{x.condition}** ({', '.join(f'run {k}' for k in x.runs)}; {len(x.decisions)} decisions)")
    display(loss.stop_grid(x.tables["stop"]))
if agents:
    display(safe_table(loss.combined(agents, "stop")).format({"share": "{:.1%}", "share_of_row": "{:.1%}"}).hide(axis="index"))
    use = loss.combined(agents, "use")
    display(safe_table(use).format({c: "{:.1%}" for c in use.columns if "stopped" in c or "used_all" in c}
                             | {"searches_mean": "{:.2f}"}).hide(axis="index"))

# %% [markdown]
# ## 5. The queries, one by one
# Every query a model wrote, searched alone: is the source ranked better, the same or worse than under
# the question as written? Then the same outcomes for queries that added words to the question against
# queries that added none.

# %%
if not done:
    say("No complete run of any LLM design in any condition: nothing to take apart.")
else:
    outcomes = loss.combined(done, "outcomes")
    shares = [c for c in outcomes.columns if c.endswith("_share")]
    display(safe_table(outcomes).format({c: "{:.1%}" for c in shares}).hide(axis="index"))
    by_added = loss.combined(done, "by_added")
    display(safe_table(by_added).format({c: "{:.1%}" for c in shares}, na_rep="—").hide(axis="index"))

# %% [markdown]
# The added words, counted: for each condition and design, the most frequent words added by the queries
# that ranked the source worse than the question, beside those added by the queries that ranked it
# better (each word counted once a query; *share*: of that group's queries).

# %%
for x in done:
    o = x.tables["outcomes"].iloc[0]
    say(f"**{why.DESIGN_WORDS[x.design]}, {x.condition}**: {int(o.worse)} of {int(o.queries)} queries ranked the "
        f"source worse, {int(o.better)} better.")
    words = x.tables["words"].head(10)
    if words.empty:
        say("No query added a word.")
    else:
        display(safe_table(words).format({"worse_share": "{:.1%}", "better_share": "{:.1%}"}, na_rep="").hide(axis="index"))

# %% [markdown]
# ## 6. The fused list against the best single list (a measurement, not a cause)
# The fused list (as saved) against the best single list among the same searches (picked knowing the
# source) and against the question's own list, per measure, with the paired ranges. Where the question
# is one of the searches the best single list is never below dense, so this difference is never a
# measure of the queries: which part causes the loss is section 1's.

# %%
if done:
    merge = ranged(loss.combined(done, "merge"), {"fused − best single [95%]": "fused_minus_best_single",
                                                  "fused − question only [95%]": "fused_minus_question_only"})
    display(safe_table(merge).format({"fused": "{:.3f}", "best_single": "{:.3f}", "question_only": "{:.3f}"})
            .hide(axis="index"))

# %% [markdown]
# ## 7. Ceilings
# Each design as run, the oracle-stop agent over its queries, the one-extra-search bound and the best
# single list among its searches, against dense in the same condition.

# %%
if done:
    ceilings = ranged(loss.combined(done, "ceilings"), {"recall@5 − dense [95%]": "recall_at_5_delta",
                                                        "MRR@10 − dense [95%]": "mrr_at_10_delta"})
    display(safe_table(ceilings).format({"recall_at_5": "{:.3f}", "mrr_at_10": "{:.3f}"}).hide(axis="index"))

# %% [markdown]
# ## 8. Model size
# The same agent, multi-query and loop with each local model: Qwen2.5-Coder-0.5B-Instruct and the
# profile's Qwen2.5-Coder-1.5B-Instruct (both run by llama.cpp on the CPU, recorded and replayed), each
# design minus dense (MRR@10, the 95% paired range) in the questions-as-written and short-question
# conditions; beside them, in the first, the article's published differences with Claude Haiku 5.5
# (its own questions and set-up, so a marker of scale, not a paired comparison). A design not run with
# a model says so in its place.

# %%
from lib.report import model_size
from lib.report.article import article_figures, shows_article
from lib.report.display import design_namer

sizes = model_size.axis_table(cfg)
published = article_figures() if shows_article(cfg) else None
display(model_size.axis_chart(sizes, cfg.figures_dir / f"{cfg.name}_model_size.png", published, names=design_namer(cfg)))
scored_sizes = sizes[sizes.status.str.startswith("scored")] if not sizes.empty else sizes
if not scored_sizes.empty:
    shown_sizes = ranged(scored_sizes, {"recall@5 − dense [95%]": "recall_at_5_delta",
                                        "MRR@10 − dense [95%]": "mrr_at_10_delta"})
    cols = ["condition", "model_label", "design", "runs", "questions", "recall_at_5", "recall@5 − dense [95%]",
            "mrr_at_10", "MRR@10 − dense [95%]", "folder"]
    display(safe_table(shown_sizes[cols].rename(columns={"model_label": "model"}))
            .format({"recall_at_5": "{:.3f}", "mrr_at_10": "{:.3f}"}).hide(axis="index"))
say(model_size.axis_reading(sizes, published, names=design_namer(cfg)))  # the page's own reading stays the loss's

# %% [markdown]
# ## Reading
# Generated from the numbers above: per condition and design, how its new queries ranked the source and
# (the agent) how it used its searches and its stop judgement, after what section 1 attributes the loss to.

# %%
order = sorted(done, key=lambda x: x.condition != DEFAULT)  # otherwise the grid's order
for x in order:
    reading(" ".join(t for t in (why.attribution_reading(attr, x.condition, x.design),
                                 why.account_reading(x.condition, x.design, x.accounts["mrr_at_10"])) if t))
gaps = [f"{why.DESIGN_WORDS[x.design]} in {x.condition} ({x.status})" for x in losses if not x.analysed]
if gaps:
    reading("Not taken apart, for want of a complete run: " + "; ".join(gaps) + ".")
