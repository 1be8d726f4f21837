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
# *When the agent, multi-query or the loop ranks the source paper below plain dense search, what
# takes it down: the decision to search again, the queries the model writes, or the merge of the lists?*
#
# The published study read its agent's changed questions by hand and concluded that terms guessed
# from the model's memory of the field named other work, and that the fusion then put those papers
# above the right one. Its agent stopped after one search on about 59% of the questions and used all
# three on about 26%. This page measures each step of that reading from the saved records, in every
# condition, with no model call: every query a design wrote is searched again, alone, with the
# condition's own dense search (depth 50), and the lists are taken apart.
#
# 1. **The stop judgement** (the agent). After each search the model sees the question and the top 5
#    titles of every search so far, and stops or writes a new query. For each decision it made: was
#    the source among those titles, and did it stop or search again? A search made after the source was
#    shown can only add papers that compete with it in the fusion; a stop made without it ends the hunt.
# 2. **The queries.** For each model-written query: the source's rank under that query alone against its
#    rank under the question as written (better, same, worse, or missing from both top 50s), and the
#    words the query added (lowercased word tokens not in the question, English stop words removed):
#    which added words were most frequent among the queries that made the rank worse, and among those
#    that made it better, counted rather than read.
# 3. **The merge.** The design's fused list against the best single list among the same searches
#    (picked knowing the source, so a ceiling, not a method) and against the question's own list.
#    For the agent and multi-query the question is one of the searches, so whatever the fused list
#    loses against its best list is the fusion's doing.
# 4. **Ceilings.** An oracle-stop agent: the same queries in the same order, stopping exactly when the
#    source is among the shown titles (only the lists up to that search are fused). And a
#    one-extra-search bound: the best rank that the question or any one of the design's own queries
#    reached.
#
# Scores are recall@5 and MRR@10; every comparison is paired by question (the mean over runs first),
# with the profile's bootstrap (95% percentile range). Only complete runs are used (every scored
# question answered); a run stopped part-way is named below as not scored. The tool-calling loop puts
# the papers it cites first and never searches the question as written: its "searches" are the ones it
# called, and its oracle stop fuses those without its citations.

# %% tags=["parameters"]
profile = "offline"
question_limit = None   # e.g. 50: the first 50 scored questions of every condition

# %%
import pandas as pd
from IPython.display import Markdown, display

from lib import pipeline
from lib.config import notebook_profile
from lib.evaluation import loss
from lib.io import write_text
from lib.report import index_page
from lib.report.display import safe_table
from lib.report.pages import open_page, reading

cfg = notebook_profile(globals())
open_page(cfg, "rrf_k", "agent_max_searches", "loop_search_k")
losses = loss.conditions_loss(cfg)
done = [x for x in losses if x.analysed]
DEFAULT = "full questions"


def say(text):
    display(Markdown(text))


def ranged(df, pairs):
    """Columns d, d_low, d_high shown as one 'd [low, high]' column each (pairs: new name -> d)."""
    out = df.copy()
    for name, col in pairs.items():
        out[name] = [f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" if pd.notna(d) else "—"
                     for d, lo, hi in zip(out[col], out[f"{col}_low"], out[f"{col}_high"])]
        out = out.drop(columns=[col, f"{col}_low", f"{col}_high"])
    return out


# %% [markdown]
# ## What was analysed
# Per condition and design: the complete runs analysed, the runs not scored and why, and two checks
# that searching again reproduces the saved runs: the share of results whose saved ranked list the
# searches rebuild exactly (the fusion, and for the loop its citations first), and the share of
# questions whose saved dense list the question's search rebuilds.

# %%
status = loss.status_table(losses)
display(safe_table(status).format({"saved list rebuilt": "{:.1%}", "dense run rebuilt": "{:.1%}"}, na_rep="—")
        .hide(axis="index"))
missing = [x for x in losses if not x.analysed]
if missing:
    say("Not analysed: " + "; ".join(f"{loss.DESIGN_WORDS[x.design]} in {x.condition} ({x.status}"
                                     + (f": {'; '.join(x.not_scored)}" if x.not_scored else "") + ")"
                                     for x in missing) + ".")

# %% [markdown]
# ## 1. The stop judgement
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
# ## 2. The queries
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
    say(f"**{loss.DESIGN_WORDS[x.design]}, {x.condition}**: {int(o.worse)} of {int(o.queries)} queries ranked the "
        f"source worse, {int(o.better)} better.")
    words = x.tables["words"].head(10)
    if words.empty:
        say("No query added a word.")
    else:
        display(safe_table(words).format({"worse_share": "{:.1%}", "better_share": "{:.1%}"}, na_rep="").hide(axis="index"))

# %% [markdown]
# ## 3. The merge
# The fused list (as saved) against the best single list among the same searches and against the
# question's own list (dense), per measure, with the paired ranges of the differences.

# %%
if done:
    merge = ranged(loss.combined(done, "merge"), {"fused − best single [95%]": "fused_minus_best_single",
                                                  "fused − question only [95%]": "fused_minus_question_only"})
    display(safe_table(merge).format({"fused": "{:.3f}", "best_single": "{:.3f}", "question_only": "{:.3f}"})
            .hide(axis="index"))

# %% [markdown]
# ## 4. Ceilings
# Each design as run, the oracle-stop agent over its queries, the one-extra-search bound and the best
# single list among its searches, against dense in the same condition.

# %%
if done:
    ceilings = ranged(loss.combined(done, "ceilings"), {"recall@5 − dense [95%]": "recall_at_5_delta",
                                                        "MRR@10 − dense [95%]": "mrr_at_10_delta"})
    display(safe_table(ceilings).format({"recall_at_5": "{:.3f}", "mrr_at_10": "{:.3f}"}).hide(axis="index"))

# %% [markdown]
# ## 5. Model size
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
# ## The loss, part by part
# In MRR@10 (then recall@5): the loss against dense; the merge's part (best single list − fused) and the
# queries' part (dense − best single list), which add up to the loss; the oracle stop's gain (oracle
# stop − fused), which overlaps the merge's part; each as a share of the loss, and the shares of new
# queries that ranked the source worse and better than the question.

# %%
# the MRR@10 account is saved with the results: the report's index says per condition which part accounts for the loss
write_text(pipeline.results_dir(cfg) / index_page.LOSS_ACCOUNT, loss.account_table(losses, "mrr_at_10").to_csv(index=False))
for metric in loss.METRICS:
    acc = loss.account_table(losses, metric)
    if acc.empty:
        continue
    say(f"**{loss.METRIC_WORDS[metric]}**")
    pct = [c for c in acc.columns if c.endswith("_share")]
    num = [c for c in acc.columns if c not in pct + ["condition", "design", "questions"]]
    display(safe_table(acc).format({c: "{:.1%}" for c in pct} | {c: "{:+.3f}" if c.endswith("_part") or c == "loss" else "{:.3f}"
                                                           for c in num}, na_rep="—").hide(axis="index"))

# %% [markdown]
# ## Reading
# Generated from the numbers above, one paragraph per condition and design (the report's default
# condition, the questions as written over the drawn collection, first).

# %%
order = sorted(done, key=lambda x: x.condition != DEFAULT)  # otherwise the grid's order
for x in order:
    reading(x.reading)
gaps = [f"{loss.DESIGN_WORDS[x.design]} in {x.condition} ({x.status})" for x in losses if not x.analysed]
if gaps:
    reading("Not taken apart, for want of a complete run: " + "; ".join(gaps) + ".")
