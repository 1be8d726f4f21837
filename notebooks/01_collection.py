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

# %% [markdown] tags=["arxiv-only"]
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
#
# **A study of your own data** (`make study`, `docs/your-data.md`) draws nothing: its documents are
# read from your file as they are, and this page counts them instead.

# %% [markdown] tags=["study-only"]
# Every design searches the same collection: this study's documents, read from its file as they are
# (`make study`, `docs/your-data.md`), each represented by its title and text. Nothing is drawn: this
# page counts the documents, the questions and their judgements. With `chunk_documents` on, a long
# document is searched as overlapping chunks, and a design's ranked list still names whole documents.

# %% tags=["parameters"]
profile = "offline"
n_papers = None      # None: the profile's value
n_sources = None
seed = None
source_ids = None    # a list of arXiv ids that must be sources (for your own questions)

# %%
from IPython.display import Markdown, display

from lib.data.collection import make_collection
from lib.report.collection import collection_reading, documents_table, draw_table, lookalike_pair
from lib.report.pages import open_page, reading, show
from lib.report import plots
from lib.preflight import notebook_profile

cfg = notebook_profile(globals())
rows, manifest = make_collection(cfg)  # first: the page's opening names what was imported, on a first run too
open_page(cfg, "collection_source", "window_start", "window_end", "n_sources", "n_papers", "seed")
drawn = manifest.get("kind") != "documents"  # an arXiv draw, not your own documents
if drawn:
    display(Markdown(f"Profile **{cfg.name}**: collection source `{cfg.collection_source}`, seed {cfg.seed}, "
                     f"window {cfg.window_start} to {cfg.window_end}, categories {', '.join(cfg.categories)}."))
else:
    show(documents_table(manifest, rows, cfg))

# %% [markdown] tags=["arxiv-only"]
# ## What was drawn
# (for an arXiv draw: the pool, the roles, and a source beside its closest lookalike, the first
# source of the draw: a fixed rule, not a pick)

# %%
if drawn:
    show(draw_table(manifest))
    display(plots.collection_chart(manifest, cfg.figures_dir / f"{cfg.name}_collection.png"))
    show(lookalike_pair(manifest, rows))

# %% tags=["finding"]
reading(collection_reading(manifest))
