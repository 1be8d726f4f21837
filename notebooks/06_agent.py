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
# # 6. The agent
#
# *Does an LLM that sees the top titles and may search again find the source more often than one
# search?*
#
# Search with the question as written; the LLM sees the titles of the top 5 and replies only
# `{"decision":"stop"}` or `{"decision":"search","query":"..."}`; at most the profile's
# `agent_max_searches` searches (3, as in the article); a malformed reply, an empty query or a
# repeated query ends the loop (recorded as the stop reason); all lists fused with RRF, k = `rrf_k`.
# Every query the agent writes is kept in the record.
#
# The local model gets two worked examples and a grammar whose reply first names the matching title
# (`{"match":K,"decision":"stop"}` or `{"match":0,"decision":"search","query":"..."}`): a stated
# difference from the article's prompt (`lib/llm/prompts.py`).

# %% tags=["parameters"]
profile = "offline"
question_form = None    # full | short
question_limit = None   # e.g. 20 to try the design on the first 20 questions
agent_max_searches = None  # None: the profile's (3, as in the article)
runs = None             # None: the profile's n_runs (replay: the runs recorded); e.g. [3]
llm_backend = None      # None: the profile's (offline: replay); local or anthropic calls a model

# %%
from lib.preflight import notebook_profile
from lib.report.agent import agent_section
from lib.report.pages import design_page, finding

cfg = notebook_profile(globals())
page = design_page(cfg, "agent", runs=runs)

# %% [markdown] tags=["arxiv-only"]
# ## How it searched, and what it found and lost, beside the article's agent
# The article reports how often its agent stopped after one search and used all three, and, at
# recall@5 against dense, how many of dense's 13 misses it found and how many papers dense had found
# it lost, per run (`data/article_figures.json`). The same counts from the saved, complete runs here
# (a run stopped part-way is named, not counted):

# %% [markdown] tags=["study-only"]
# ## How it searched, and what it found and lost
# How often the agent stopped after one search and used all three, and, at recall@5 against dense, how
# many of dense's misses it found and how many of dense's finds it lost, per run, from the saved,
# complete runs (a run stopped part-way is named, not counted):

# %%
shares = agent_section(cfg)

# %% [markdown]
# ## The agent, its fused list reranked
# Beyond the article: the same agent (the same recorded answers), its fused top `rerank_k` then reordered
# by the rerank step of notebook 4 against the question as written. It tests the anti-pattern of
# expanding queries without reranking what they bring back.

# %%
page_reranked = design_page(cfg, "agent_rerank", runs=runs)

# %% [markdown] tags=["arxiv-only"]
# ## Other merges of the same lists, beside RRF
# The article's pilot first merged the agent's lists by the best raw score, then changed to RRF. Here
# the same saved queries (no model call) are searched again with each condition's dense search and
# merged by other rules (docs/merge.md): each paper's best similarity over the lists, the question's
# list first with the new finds below, and RRF with the question's list weighted 2, 4 or 8. One rule
# was chosen on the dev questions before any of these was scored (the escalation probe's agent queries,
# `results/dev/merge_selection.json`); here every rule is shown in every condition, each against dense
# on the same questions (the runs' mean per question; paired bootstrap range and the randomization
# test's p-value, uncorrected), from `results/merges.csv` (`python scripts/select_merge.py --conditions`).

# %% [markdown] tags=["study-only"]
# ## Other merges of the same lists, beside RRF
# The same saved queries (no model call) searched again with each condition's dense search and merged by
# other rules (docs/merge.md): each document's best similarity over the lists, the question's list first
# with the new finds below, and RRF with the question's list weighted 2, 4 or 8. One rule was chosen on
# the arXiv study's dev questions (`results/dev/merge_selection.json`), not on this study's; where this
# study's merge table is saved (`merges.csv` in its results folder: `python scripts/select_merge.py
# --conditions --profile <study>`), every rule is shown in every condition, each against dense on the same questions (the
# runs' mean per question; paired bootstrap range and the randomization test's p-value, uncorrected).

# %%
from lib.report.merges import merges_section  # noqa: E402

merge_rules = merges_section(cfg)

# %% tags=["finding"]
finding(page, page_reranked)
