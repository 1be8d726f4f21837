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
# Search with the question as written; the LLM sees the titles of the top 5 and replies only
# `{"decision":"stop"}` or `{"decision":"search","query":"..."}`; at most 3 searches; a malformed
# reply, an empty query or a repeated query ends the loop (recorded as the stop reason); all lists
# fused with RRF, k = 60. Every query the agent writes is kept in the record.
#
# The local model gets two worked examples and a grammar whose reply first names the matching title
# (`{"match":K,"decision":"stop"}` or `{"match":0,"decision":"search","query":"..."}`): a stated
# difference from the article's prompt (`lib/prompts.py`).

# %% tags=["parameters"]
profile = "offline"
runs = None             # None: 1 for deterministic designs, the profile's n_runs (3) for LLM designs
question_limit = None   # e.g. 20 to try a design on the first 20 questions
llm_backend = None      # None: the profile's (offline: replay); local or anthropic to call a model
question_form = None    # full | short

# %%
from lib import pipeline
from lib.config import notebook_profile

cfg = notebook_profile(globals())
page = pipeline.design_page(cfg, "agent", runs=runs)

# %% [markdown]
# ## Summary of the saved runs
# Scores over the reviewed questions that this design has answered; the full comparison with ranges
# is in notebook 07. Latency for LLM calls is the model's time when the call was made (a replayed
# run reports the recorded time).

# %%
page["summary"]

# %% [markdown]
# Which profile, models and backend produced each saved run:

# %%
page["provenance"]
