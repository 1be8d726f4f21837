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

# %% [markdown] tags=["arxiv-only"]
# # 3. Dense search (the baseline)
#
# *How often does one search with the question as written find the source paper?*
#
# Embed the question with the profile's embedder (offline: all-MiniLM-L6-v2; article:
# BAAI/bge-small-en-v1.5) and return the nearest abstracts by exact cosine similarity, ties broken
# by paper id. The collection is embedded once and cached on disk keyed by model and text.
# Deterministic, so one run.

# %% [markdown] tags=["study-only"]
# # 3. Dense search (the baseline)
#
# *How often does one search with the question as written find a relevant document?*
#
# Embed the question with the profile's embedder and return the nearest documents by exact cosine
# similarity (with `chunk_documents` on, the nearest chunks, each document at its best chunk's place),
# ties broken by document id. The collection is embedded once and cached on disk keyed by model and
# text. Deterministic, so one run.

# %% tags=["parameters"]
profile = "offline"
question_form = None    # full | short
question_limit = None   # e.g. 20 to try the design on the first 20 questions

# %%
from lib.preflight import notebook_profile
from lib.report.pages import design_page, finding

page = design_page(notebook_profile(globals()), "dense")

# %% tags=["finding"]
finding(page)
