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
# # 8. Bounded escalation
#
# *Is an agent worth adding after hybrid search and reranking, if it is called only when the first
# pass looks weak?*

# %% [markdown] tags=["arxiv-only"]
# Beyond the article, the production pattern: **escalate** answers every question with
# `hybrid_rerank` (notebook 7). A confidence signal read off that answer (no model call) decides
# whether the article's agent steps in: the margin between the first two papers' rerank scores, the
# top paper's rerank score, or its dense cosine. The signal and its threshold were chosen on the dev
# questions by a rule written before any dev score was seen (`docs/escalation.md`), never on the
# bundled questions. An escalated question gets the agent under hard bounds, each a profile setting:
# at most `escalate_max_queries` new queries, `escalate_max_llm_calls` calls, `escalate_max_tokens`
# tokens and `escalate_max_cost_usd` per question; the code stops before a call that could break
# one, and the record names which bound ended it. Every query the agent asks for is itself a hybrid
# search with the rerank step; the first pass and the new lists are fused by RRF (k = `rrf_k`).
# Each escalation carries a request id and the keys of its recorded LLM calls, so it replays.

# %% [markdown] tags=["study-only"]
# Beyond the article, the production pattern: **escalate** answers every question with
# `hybrid_rerank` (notebook 7). A confidence signal read off that answer (no model call) decides
# whether the article's agent steps in: the margin between the first two documents' rerank scores, the
# top document's rerank score, or its dense cosine. The signal and its threshold were chosen on the arXiv
# study's dev questions by a rule written before any dev score was seen (`docs/escalation.md`), never on
# this study's questions. An escalated question gets the agent under hard bounds, each a profile setting:
# at most `escalate_max_queries` new queries, `escalate_max_llm_calls` calls, `escalate_max_tokens`
# tokens and `escalate_max_cost_usd` per question; the code stops before a call that could break
# one, and the record names which bound ended it. Every query the agent asks for is itself a hybrid
# search with the rerank step; the first pass and the new lists are fused by RRF (k = `rrf_k`).
# Each escalation carries a request id and the keys of its recorded LLM calls, so it replays.

# %% tags=["parameters"]
profile = "offline"
question_form = None        # full | short
question_limit = None       # e.g. 20 to try the design on the first 20 questions
escalate_threshold = None   # None: the profile's (chosen on dev)
runs = None                 # None: the runs recorded; e.g. [1]
llm_backend = None          # None: the profile's (offline: replay); local or anthropic calls a model

# %%
from lib.preflight import notebook_profile
from lib.report.escalation import outcomes_report, selection_report
from lib.report.pages import design_page, finding

cfg = notebook_profile(globals())
selection = selection_report(cfg)

# %% [markdown]
# ## Escalate on this profile's questions

# %%
page = design_page(cfg, "escalate", runs=runs)

# %% tags=["finding"]
finding(page)

# %%
outcomes = outcomes_report(cfg)
