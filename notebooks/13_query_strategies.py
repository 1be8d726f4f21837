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
# # 13. Better queries up front: decomposition and HyDE
#
# *Page 12 finds that no judgment of when to stop makes the agent beat dense with these models' queries:
# what could is better queries. Do the two strategies practitioners reach for when one search is not
# enough write better ones?*

# %% [markdown] tags=["arxiv-only"]
# Neither is in the article; both ask the same local model once per question, before any search, and run
# in every condition (a stated addition, `lib/llm/prompts.py`):
#
# - **decompose**: sub-question decomposition (LlamaIndex's sub-question query engine; Self-Ask, Press et
#   al. 2022; least-to-most prompting, Zhou et al. 2022). The model writes one search query per part of
#   the question, one to three; the question and each part are searched (dense top `dense_k`) and the
#   lists fused with reciprocal rank fusion, k = `rrf_k`, as multi-query fuses its rewrites. Two-part
#   questions are its case.
# - **hyde**: Hypothetical Document Embeddings (Gao et al. 2022). The model writes a short abstract of a
#   paper that would answer the question; one dense search with the mean of the question's and the
#   abstract's vectors (the paper's estimate, the question counted as one more hypothesis).
#
# Offline, `make report` replays the recorded responses of the local model; the local model gets worked
# examples (decomposition two: a single-part and a two-part question; HyDE one) and a grammar (1-3 lines;
# one paragraph).

# %% [markdown] tags=["study-only"]
# Neither is in the article; both ask the same local model once per question, before any search, and run
# in every condition (a stated addition, `lib/llm/prompts.py`):
#
# - **decompose**: sub-question decomposition (LlamaIndex's sub-question query engine; Self-Ask, Press et
#   al. 2022; least-to-most prompting, Zhou et al. 2022). The model writes one search query per part of
#   the question, one to three; the question and each part are searched (dense top `dense_k`) and the
#   lists fused with reciprocal rank fusion, k = `rrf_k`, as multi-query fuses its rewrites. Two-part
#   questions are its case.
# - **hyde**: Hypothetical Document Embeddings (Gao et al. 2022). The model writes a short passage of a
#   document that would answer the question; one dense search with the mean of the question's and the
#   passage's vectors (Gao et al.'s estimate, the question counted as one more hypothesis).
#
# Offline, `make report` replays the recorded responses of the local model; the local model gets worked
# examples (decomposition two: a single-part and a two-part question; HyDE one) and a grammar (1-3 lines;
# one paragraph).

# %% tags=["parameters"]
profile = "offline"
question_form = None    # full | short
question_limit = None   # e.g. 20 to try the design on the first 20 questions
rrf_k = None            # None: the profile's (60, as in Cormack et al. 2009)
runs = None             # None: the profile's n_runs (replay: the runs recorded); e.g. [1]
llm_backend = None      # None: the profile's (offline: replay); local or anthropic calls a model

# %%
from lib.preflight import notebook_profile
from lib.report.pages import design_page, finding, reading, show
from lib.report.strategies import strategies_reading, strategies_table

cfg = notebook_profile(globals())

# %% [markdown]
# ## Every condition, two-part questions first
# Each design minus dense on the same questions, with its 95% paired bootstrap range and the Holm-corrected
# p of the index's family (every design, both measures, every condition): the same numbers as the index
# and page 10. Page 12 reads the queries themselves: how often a strategy's list ranks the source better,
# the same or worse than dense's (`results/query_quality.csv`), and where each difference from dense comes
# from (`results/why_paths.csv`).

# %%
show(strategies_table(cfg), profile=cfg)
summary = strategies_reading(cfg)

# %% [markdown]
# ## Sub-question decomposition

# %%
page_decompose = design_page(cfg, "decompose", runs=runs)

# %% [markdown]
# ## HyDE

# %%
page_hyde = design_page(cfg, "hyde", runs=runs)

# %% tags=["finding"]
if summary:
    reading(summary)
finding(page_decompose, page_hyde)
