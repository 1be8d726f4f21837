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
# # 4. Rerank
#
# Dense top 50, reordered by a cross-encoder that reads the question and each abstract together
# (Nogueira & Cho 2019). The `article` profile uses cross-encoder/ms-marco-MiniLM-L-6-v2.
#
# **This is not the article's reranker in the offline profile.** No MS MARCO cross-encoder can be
# installed offline, so the project trains its own: a sentence-transformers CrossEncoder initialised
# from the bundled all-MiniLM-L6-v2 weights, trained on paper titles as pseudo-queries against
# abstracts, with hard negatives mined by dense search, using only papers outside the evaluation
# collection and first listed before its window (`make reranker`; weights in
# `models/reranker-minilm-offline/`). Its training data, time and held-out quality:

# %%
import json
from lib.config import ROOT
info = json.loads((ROOT / "models" / "reranker-minilm-offline" / "training.json").read_text())
import pandas as pd
pd.DataFrame([("training pairs (query, abstract, label)", info["training_data"]["train_pairs"]),
              ("pseudo-queries (titles), train / held out", f'{info["settings"]["n_train_queries"]} / {info["training_data"]["heldout_queries"]}'),
              ("negatives per query", info["settings"]["negatives_per_query"]),
              ("training papers first listed", " to ".join(info["training_data"]["first_seen_range"])),
              ("training papers also in the collection", info["training_data"]["overlap_with_collection"]),
              ("training time (s, 2 CPU threads)", info["train_seconds"]),
              ("held-out MRR@10, dense order", round(info["heldout"]["dense_mrr_at_10"], 3)),
              ("held-out MRR@10, reranked", round(info["heldout"]["rerank_mrr_at_10"], 3))], columns=["", "value"])

# %% tags=["parameters"]
profile = "offline"
question_form = None    # full | short
question_limit = None   # e.g. 20 to try the design on the first 20 questions

# %%
from lib.config import notebook_profile
from lib.report.pages import design_page

page = design_page(notebook_profile(globals()), "rerank")
