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
# # 1. The collection
#
# Every design searches the same collection of recent arXiv papers, each represented by its title
# and abstract only. It is built in three steps:
#
# 1. **Sources.** With a fixed seed, draw the source papers from those first listed in the window
#    (default 2026-07-01 to 2026-08-22, after the article's models' training cut-off) in cs.AI, cs.CL,
#    cs.IR or cs.LG. Only new submissions count: the daily listings also carry old papers that were
#    replaced or cross-listed, and those are skipped. Each question is written from one source paper.
# 2. **Lookalikes.** For each source, its 5 most similar papers by TF-IDF cosine over title + abstract,
#    taken from the whole pool, so that every source has close competitors.
# 3. **Fillers.** Random papers from the pool, up to the collection size.
#
# The `offline` profile draws from the bundled snapshot of 63,903 arXiv papers (see `data/README.md`);
# the `article` profile asks the arXiv API. The pilot profile gives 300 papers and 20 sources,
# whose sources are the first 20 of the default draw.

# %% tags=["parameters"]
profile = "offline"
n_papers = None      # None: the profile's value
n_sources = None
seed = None
source_ids = None    # a list of arXiv ids that must be sources (for your own questions)

# %%
import pandas as pd
from IPython.display import Markdown, display

from lib.data.collection import make_collection
from lib.report import plots
from lib.config import notebook_profile

cfg = notebook_profile(globals())
rows, manifest = make_collection(cfg)
display(Markdown(f"Profile **{cfg.name}**: collection source `{cfg.collection_source}`, seed {cfg.seed}, "
                 f"window {cfg.window_start} to {cfg.window_end}, categories {', '.join(cfg.categories)}."))

# %% [markdown]
# ## What was drawn

# %%
nb = manifest["top_neighbour_tfidf"]
summary = pd.DataFrame([
    ("papers in the pool", manifest["pool_size"]),
    ("eligible sources in the window", manifest["eligible_sources"]),
    ("papers in the collection", manifest["n_papers"]),
    *[(f"role: {k}", v) for k, v in manifest["by_role"].items()],
    ("first listed, all papers", " to ".join(manifest["first_seen_range"])),
    ("first listed, sources", " to ".join(manifest["source_first_seen_range"])),
    ("source's top-neighbour TF-IDF similarity: median (Q1 to Q3)",
     f"{nb['median']:.3f} ({nb['q1']:.3f} to {nb['q3']:.3f})"),
], columns=["", "value"])
summary

# %%
plots.collection_chart(manifest, cfg.figures_dir / f"{cfg.name}_collection.png");

# %% [markdown]
# A source and its closest lookalike (the first source of the draw):

# %%
first = manifest["source_order"][0]
by_id = {r["id"]: r for r in rows}
nid, sim = manifest["lookalikes"][first][0]
pd.DataFrame([{"paper": "source", "id": first, "title": by_id[first]["title"]},
              {"paper": f"lookalike (TF-IDF cosine {sim:.3f})", "id": nid, "title": by_id[nid]["title"]}])
