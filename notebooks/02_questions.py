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
# # 2. The questions
#
# *What is each design asked to find, and can every question be answered by its source alone?*

# %% [markdown] tags=["arxiv-only"]
# One question per source paper, written from its title and abstract only, in three styles that
# rotate in draw order: **specific** (names the method or setting in its own words), **problem**
# (describes the problem without naming the method) and **vague** (short, imprecise, half
# remembered). No question may copy the title or any run of 4+ consecutive title words; a
# mechanical check (lowercase, strip punctuation, word 4-grams) enforces it.
#
# Each question is then **reviewed** against its source abstract and the 3 nearest other papers of
# the collection (the source's TF-IDF lookalikes): it passes if the source answers it and no other
# paper answers it as well. Only passing questions (ok = 1) are scored, and no question is changed
# or removed after any search result is seen.
#
# **The bundled set (offline profile).** No question-writing model can be called offline, so the
# offline profile ships a set written and reviewed by a language model (Claude, in the session that
# built this report, not through the API) under exactly these rules, before any search was run on
# them; the reviews were done by separate passes that saw only the abstracts. `generator` says so
# for every row. A user with an API key can set `questions_source = "generate"` (profile `article`)
# to write a fresh set with Claude Sonnet, or `"user"` with `user_questions_path` pointing to a CSV
# (qid, source_id, question[, style, short]). A study of your own data (`make study`) scores your
# questions against your judgements (one or more relevant documents each, graded allowed): its
# questions were not written under these rules, and the checks below only describe them.

# %% [markdown] tags=["study-only"]
# The study's own questions (`make study`, `docs/your-data.md`), each scored against the study's own
# judgements: one or more relevant documents per question, graded allowed. Questions given in a file
# were not written under the rules of this project's question writer, and the checks below only
# describe them. A study given no questions has them written by the question writer under those rules:
# one question per source document, from its title and text only, in three styles that rotate in draw
# order (**specific**, **problem**, **vague**), none copying the title or any run of 4+ consecutive
# title words (a mechanical check: lowercase, strip punctuation, word 4-grams), each then **reviewed**
# against its source and the 3 nearest other documents of the collection: it passes if the source
# answers it and no other document answers it as well. Only passing questions (ok = 1) are scored, and
# no question is changed or removed after any search result is seen.

# %% tags=["parameters"]
profile = "offline"
questions_source = None      # None: the profile's (bundled | generate | user)
user_questions_path = None

# %%
import pandas as pd
from IPython.display import Markdown, display

from lib import pipeline
from lib.config import shown_path
from lib.preflight import notebook_profile
from lib.data.questions import copied_ngrams, read_twopart_questions, word_count
from lib.data.relevance import relevant_ids
from lib.report import plots
from lib.report.collection import length_words, questions_reading
from lib.report.display import safe_table
from lib.report.pages import lacking, open_page, reading, show, whole_table

cfg = notebook_profile(globals())
open_page(cfg, "questions_source", "questions_path")
papers = pipeline.collection(cfg)
if cfg.questions_source == "generate":
    from lib.data.question_gen import generate_for_profile

    generate_for_profile(cfg, papers)
qs = pd.DataFrame(pipeline.all_questions(cfg, papers))
by_id = {p["id"]: p for p in papers}
qs["words"] = qs["question"].map(word_count)
qs["style"] = qs["style"].replace("", "(none)")
first_source = qs["source_id"].map(lambda s: by_id[relevant_ids(s)[0]])  # a question's (first) relevant paper
display(Markdown(f"`{shown_path(pipeline.questions_path(cfg))}`: {len(qs)} questions, "
                 f"{int(qs.ok.sum())} passed review; generator: {', '.join(sorted(qs.generator.unique()))}."))

# %% [markdown]
# ## Counts and lengths by style

# %%
by_style = qs.groupby("style").agg(questions=("qid", "count"), passed=("ok", "sum"), median_words=("words", "median"),
                                   min_words=("words", "min"), max_words=("words", "max"))
show(by_style.reindex([s for s in ("specific", "problem", "vague", "(none)") if s in by_style.index]).reset_index())

# %%
plots.question_lengths(qs, cfg.figures_dir / f"{cfg.name}_question_lengths.png")

# %% [markdown]
# ## The first question of each style
# (the first in draw order: a fixed rule, not a pick)

# %%
first = qs.groupby("style", sort=False).head(1)
safe_table(pd.DataFrame({"style": first["style"], "question": first["question"], "short form": first["short"],
                    "source title": first_source[first.index].map(lambda p: p["title"])}))

# %% [markdown]
# ## Every question, with its review

# %%
whole_table(qs[["qid", "style", "question", "short", "ok", "review_note", "words"]], cfg, "questions")

# %% [markdown]
# ## Failed review, with the reason

# %%
safe_table(qs.loc[qs.ok == 0, ["qid", "style", "question", "review_note"]])

# %% [markdown]
# ## The 4-gram check
# Runs of 4 consecutive title words repeated in the question or its short form:

# %%
copies = [(r.qid, f, g) for r in qs.itertuples() for f in ("question", "short")
          for g in copied_ngrams(first_source[r.Index]["title"], getattr(r, f) or "")]
display(Markdown(f"**{len(copies)}** copied 4-grams in {len(qs)} questions and their short forms."))
show(pd.DataFrame(copies, columns=["qid", "field", "copied words"]))

# %% [markdown] tags=["arxiv-only", "needs-twopart"]
# ## Two-part questions
# A second set, where one search is not supposed to be enough: each question is answered only by
# **two** papers of the collection together. The pairs come from a fixed rule that never looks at
# a retriever (each source, in draw order, with its most similar TF-IDF lookalike not yet used);
# the review passed a question only if the two abstracts together answer it, neither alone does,
# and none of either paper's 3 nearest other papers replaces it.

# %% [markdown] tags=["study-only", "needs-twopart"]
# ## Two-part questions
# A second set (`twopart_questions_path`), where one search is not supposed to be enough: each question
# is answered only by **two** documents of the collection together.

# %%
tp = None
if cfg.twopart_questions_path:
    tp = pd.DataFrame(read_twopart_questions(cfg.path("twopart_questions_path"), {p["id"] for p in papers}))
    tp["words"] = tp["question"].map(word_count)
    display(Markdown(f"`{shown_path(cfg.path('twopart_questions_path'))}`: {len(tp)} questions, {int(tp.ok.sum())} "
                     f"passed review; {length_words(tp.words)}; generator: {', '.join(sorted(tp.generator.unique()))}."))
    display(safe_table(pd.DataFrame([{"qid": t1.qid, "question": t1.question, "short form": t1.short,
                           "first paper": by_id[t1.source_ids[0]]["title"],
                           "second paper": by_id[t1.source_ids[1]]["title"]} for t1 in tp.head(1).itertuples()])))
    display(Markdown("Failed review, with the reason:"))
    display(safe_table(tp.loc[tp.ok == 0, ["qid", "question", "review_note"]]))
    whole_table(tp.assign(source_ids=tp.source_ids.str.join(";"))[["qid", "source_ids", "question", "short", "ok",
                                                                   "review_note"]], cfg, "questions_twopart")
else:
    lacking("twopart", "This profile has no two-part question set (`twopart_questions_path`).")

# %% tags=["finding"]
reading(questions_reading(qs, copies, tp))
