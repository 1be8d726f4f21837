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
# # 3. Dense search (the baseline)
#
# Embed the question with the profile's embedder (offline: all-MiniLM-L6-v2; article:
# BAAI/bge-small-en-v1.5) and return the nearest abstracts by exact cosine similarity, ties broken
# by paper id. The collection is embedded once and cached on disk keyed by model and text.
# Deterministic, so one run.

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
page = pipeline.design_page(cfg, "dense", runs=runs)

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
