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
# *What does every design search over?*
#
# Every design searches the same collection of recent arXiv papers, each represented by its title
# and abstract only. It is built in three steps:
#
# 1. **Sources.** With a fixed seed, draw the source papers from those first listed in the profile's
#    window (after the article's models' training cut-off; the table below gives it) in its
#    categories. Only new submissions count: the daily listings also carry old papers that were
#    replaced or cross-listed, and those are skipped. Each question is written from one source paper.
# 2. **Lookalikes.** For each source, its `n_lookalikes` most similar papers by TF-IDF cosine over title + abstract,
#    taken from the whole pool, so that every source has close competitors.
# 3. **Fillers.** Random papers from the pool, up to the collection size.
#
# The `offline` profile draws from the bundled arXiv snapshot (see `data/README.md`); the `article`
# profile asks the arXiv API. The pilot profile's sources are the first of the default draw.

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
from lib.report.article import article_figures
from lib.report.pages import open_page, reading, show
from lib.report import plots
from lib.config import notebook_profile

cfg = notebook_profile(globals())
open_page(cfg, "collection_source", "window_start", "window_end", "n_sources", "n_papers", "seed")
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
], columns=["measure", "value"])
show(summary)

# %%
plots.collection_chart(manifest, cfg.figures_dir / f"{cfg.name}_collection.png")

# %% [markdown]
# A source and its closest lookalike (the first source of the draw):

# %%
first = manifest["source_order"][0]
by_id = {r["id"]: r for r in rows}
nid, sim = manifest["lookalikes"][first][0]
pair = pd.DataFrame([{"paper": "source", "id": first, "title": by_id[first]["title"]},
                     {"paper": f"lookalike (TF-IDF cosine {sim:.3f})", "id": nid, "title": by_id[nid]["title"]}])
pair.style.hide(axis="index")

# %%
reading(f"The collection holds {manifest['n_papers']:,} papers: {manifest['by_role'].get('source', 0)} sources drawn "
        f"from {manifest['eligible_sources']:,} eligible papers of {manifest['pool_size']:,} in the pool, "
        f"{manifest['by_role'].get('lookalike', 0)} lookalikes and {manifest['by_role'].get('filler', 0)} fillers. A "
        f"source's closest lookalike has a median TF-IDF similarity of {nb['median']:.2f} (the article reports "
        f"{article_figures()['collection']['top_neighbour_tfidf_median']:.2f}).")
