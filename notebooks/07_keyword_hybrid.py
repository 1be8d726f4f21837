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
# # 7. Keyword and hybrid search
#
# *What do the first stages of the pipeline practitioners run by default find, without any LLM?*

# %% [markdown] tags=["arxiv-only"]
# Beyond the article: **bm25** is keyword search over title + abstract (bm25s; Lucene's BM25,
# k1 = 1.5, b = 0.75, English stop words, Snowball stemming). **hybrid** fuses the BM25 and dense
# lists (each to the profile's `hybrid_depth`) by reciprocal rank fusion, k = `rrf_k`. **hybrid_rerank**
# reorders the hybrid list's top `rerank_k` by the same rerank step as notebook 4.

# %% [markdown] tags=["study-only"]
# Beyond the article: **bm25** is keyword search over title + text (bm25s; Lucene's BM25,
# k1 = 1.5, b = 0.75, English stop words, Snowball stemming). **hybrid** fuses the BM25 and dense
# lists (each to the profile's `hybrid_depth`) by reciprocal rank fusion, k = `rrf_k`. **hybrid_rerank**
# reorders the hybrid list's top `rerank_k` by the same rerank step as notebook 4.

# %% tags=["parameters"]
profile = "offline"
question_form = None    # full | short
question_limit = None   # e.g. 20 to try the designs on the first 20 questions
hybrid_depth = None     # None: the profile's (50)

# %%
from lib.preflight import notebook_profile
from lib.report.pages import design_page, finding

cfg = notebook_profile(globals())
pages = {name: design_page(cfg, name) for name in ("bm25", "hybrid", "hybrid_rerank")}

# %% tags=["finding"]
finding(*pages.values())
