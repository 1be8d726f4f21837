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
# # 5. Multi-query
#
# An LLM writes 3 different versions of the question; the original and the 3 versions are searched
# (dense top 50 each) and the 4 lists fused with reciprocal rank fusion, k = 60 (Cormack et al.
# 2009), untuned. Three runs (the model samples at the profile's temperature, one seed per call).
#
# Offline, `make report` replays the recorded responses of the local model (Qwen2.5-Coder-1.5B-Instruct,
# Q4_K_M, llama.cpp on the CPU); `llm_backend = "local"` calls it again (`make local-llm` installs it),
# and the `article` profile calls Claude Haiku. The local model gets one worked example and a grammar
# that asks for exactly 3 lines: a stated difference from the article's prompt (`lib/prompts.py`).

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
page = pipeline.design_page(cfg, "multiquery", runs=runs)

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
