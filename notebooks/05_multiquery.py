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
# *Does searching with the LLM's rewrites of the question, fused with the question itself, find the
# source more often than the question alone?*
#
# An LLM writes 3 different versions of the question; the original and the 3 versions are searched
# (dense top `dense_k` each) and the 4 lists fused with reciprocal rank fusion, k = `rrf_k` (Cormack et al.
# 2009), untuned. It runs the profile's number of times (the model samples at the profile's
# temperature, one seed per call); the tables below say how many runs are saved.
#
# Offline, `make report` replays the recorded responses of the local model (Qwen2.5-Coder-1.5B-Instruct,
# Q4_K_M, llama.cpp on the CPU); `llm_backend = "local"` calls it again (`make local-llm` installs it),
# and the `article` profile calls Claude Haiku. The local model gets one worked example and a grammar
# that asks for exactly 3 lines: a stated difference from the article's prompt (`lib/llm/prompts.py`).

# %% tags=["parameters"]
profile = "offline"
question_form = None    # full | short
question_limit = None   # e.g. 20 to try the design on the first 20 questions
rrf_k = None            # None: the profile's (60, as in Cormack et al. 2009)
runs = None             # None: the profile's n_runs (replay: the runs recorded); e.g. [3]
llm_backend = None      # None: the profile's (offline: replay); local or anthropic calls a model

# %%
from lib.preflight import notebook_profile
from lib.report.pages import design_page, finding

page = design_page(notebook_profile(globals()), "multiquery", runs=runs)

# %% tags=["finding"]
finding(page)
