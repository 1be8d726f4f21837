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
# # 9. The tool-calling loop
#
# *Does a model that drives search and read itself, as often as it decides, find the source paper?*
#
# Beyond the article, the agentic RAG of deep-research modes: the article's agent only chooses the
# next query after seeing five titles; here the whole loop is the model's. It gets a system prompt,
# the question and two tools, `search(query)` (the dense index's top `loop_search_k` ids and titles)
# and `read(paper_id)` (that paper's abstract). It calls them one at a time, as often as it decides,
# reads what comes back, and stops when it judges it has enough, answering with the ids of the
# papers it relies on: its **citations**. The code runs every call and can cut the loop off: at
# most `loop_max_steps` model turns (the last one answer-only) and `loop_max_tokens` input + output
# tokens over the loop. A turn is made only if the answer could still be asked for after it within
# the token budget; on either cap the code makes one last call for the answer only (or, when even
# that would not fit, makes none and cites nothing), and the record names the cap. Never a silent cut.

# %% [markdown] tags=["study-only"]
# # 9. The tool-calling loop
#
# *Does a model that drives search and read itself, as often as it decides, find a relevant document?*
#
# Beyond the article, the agentic RAG of deep-research modes: the article's agent only chooses the
# next query after seeing five titles; here the whole loop is the model's. It gets a system prompt,
# the question and two tools, `search(query)` (the dense index's top `loop_search_k` ids and titles)
# and `read(id)` (one document: its text, or with `chunk_documents` on, the passages of it that the
# loop's searches matched). It calls them one at a time, as often as it decides, reads what comes
# back, and stops when it judges it has enough, answering with the ids of the documents it relies on:
# its **citations**. The code runs every call and can cut the loop off: at
# most `loop_max_steps` model turns (the last one answer-only) and `loop_max_tokens` input + output
# tokens over the loop. A turn is made only if the answer could still be asked for after it within
# the token budget; on either cap the code makes one last call for the answer only (or, when even
# that would not fit, makes none and cites nothing), and the record names the cap. Never a silent cut.

# %% [markdown]
# Two first searches: in `loop` the model makes the first search; in `loop_question_first` the code
# searches the question as written first (as the article's agent does) and shows its result to the
# model as the first tool result, before the model's first turn. That search is a code-decided step
# of the trace, counts as one of the loop's searches (so the question's own list is always in the
# fusion) and takes no model turn; its tokens count in the budget.

# %% [markdown] tags=["arxiv-only"]
# Scored like the other designs: the citations first, in the order cited, then the RRF fusion
# (k = `rrf_k`) of every search the loop ran. Its own measure is the **citation hit rate**: the share
# of questions whose source paper is among the citations (for two-part questions, the share of the
# two papers cited). Also: papers read, searches, model turns, tokens and how loops ended. Every
# result keeps a trace of every step: who decided it (the model or the code), what it was, its
# tokens and time.
#
# The local model (Qwen2.5-Coder-1.5B) writes one JSON call a turn under a grammar that lets it read
# or cite only papers its searches showed, after the worked examples of the prompt variant
# `loop_prompt` (`one_example`, the prompt of every loop saved before the choice; `no_example`;
# `two_examples`, the second example searching twice and citing two papers). The prompt and the first
# search were chosen on the dev questions, never on these, by the rule of `docs/loop.md`; the page
# leads with the loop so chosen. Claude gets native tool use and no worked example
# (`lib/llm/prompts.py`). A stub model (`loop_backend`: `scripted` searches, reads the top hit and
# cites it; `echo` never calls a tool) tries the loop with no model; its results go to a variant folder.

# %% [markdown] tags=["study-only"]
# Scored like the other designs: the citations first, in the order cited, then the RRF fusion
# (k = `rrf_k`) of every search the loop ran. Its own measure is the **citation hit rate**: the share
# of a question's relevant documents among the citations (1 or 0 with one relevant document), averaged
# over questions. Also: documents read, searches, model turns, tokens and how loops ended. Every
# result keeps a trace of every step: who decided it (the model or the code), what it was, its
# tokens and time.
#
# The local model (Qwen2.5-Coder-1.5B) writes one JSON call a turn under a grammar that lets it read
# or cite only documents its searches showed, after the worked examples of the prompt variant
# `loop_prompt` (`one_example`, the prompt of every loop saved before the choice; `no_example`;
# `two_examples`, the second example searching twice and citing two documents). The prompt and the
# first search were chosen on the arXiv study's dev questions, never on these, by the rule of
# `docs/loop.md`; the page leads with the loop so chosen. Claude gets native tool use and no worked example
# (`lib/llm/prompts.py`). A stub model (`loop_backend`: `scripted` searches, reads the top hit and
# cites it; `echo` never calls a tool) tries the loop with no model; its results go to a variant folder.

# %% tags=["parameters"]
profile = "offline"
design = None             # None: the loop chosen on the dev set; loop | loop_question_first
question_form = None      # full | short
question_limit = None     # e.g. 20 to try the design on the first 20 questions
loop_max_steps = None     # None: the profile's caps
loop_max_tokens = None
loop_search_k = None
loop_prompt = None        # None: the profile's (chosen on dev); one_example | no_example | two_examples
loop_backend = None       # None: the profile's llm_backend; "scripted" or "echo": a stub model (no model needed)
runs = None               # None: the runs recorded (a stub: the profile's n_runs); e.g. [1]
llm_backend = None        # None: the profile's (offline: replay); local or anthropic calls a model

# %%
from lib.preflight import notebook_profile
from lib.report import loop as loop_report
from lib.report.pages import design_page

cfg = notebook_profile(globals())
lead = loop_report.lead_design(design)

# %% tags=["finding"]
short = loop_report.headline(cfg, lead)

# %% [markdown] tags=["arxiv-only"]
# ## The prompt and the first search, chosen on the dev set
# Six arms, the model-first and the question-first loop each with three prompts (`one_example`: its
# single worked example; `no_example`; `two_examples`: two contrasting examples, one of which searches
# twice), are run once on the first 60 dev questions, and the rule of `docs/loop.md`, written before
# any dev score was seen, chooses one: the highest citation hit rate, and within 0.02 of it the fewest
# model turns. Below: every arm's measures on dev, its searches and turns as distributions
# (value: questions), and the choice; nothing is run here (`make loop-selection` runs the arms and
# writes `results/dev/loop_selection.json`).

# %% [markdown] tags=["study-only"]
# ## The prompt and the first search, chosen on the arXiv study's dev set
# Six arms, the model-first and the question-first loop each with three prompts (`one_example`: its
# single worked example; `no_example`; `two_examples`: two contrasting examples, one of which searches
# twice), are run once on the first 60 of the arXiv study's dev questions, and the rule of
# `docs/loop.md`, written before any dev score was seen, chooses one: the highest citation hit rate,
# and within 0.02 of it the fewest model turns. Below: every arm's measures on dev, its searches and turns as distributions
# (value: questions), and the choice; nothing is run here (`make loop-selection` runs the arms and
# writes `results/dev/loop_selection.json`).

# %%
selection = loop_report.selection_page(cfg)

# %% [markdown]
# ## The chosen loop on these questions

# %%
page = design_page(cfg, lead, runs=runs)
short.refresh()  # the "In short" line above, now from the runs this cell recorded or replayed
loop_report.refresh_selection(selection)  # and the dev choice's reading

# %% [markdown] tags=["arxiv-only"]
# ## The loop's own measures
# Per complete run: the citation hit rate, citations per question and the share of them that are the
# source, papers read, searches and model turns per question, tokens (every call's whole prompt
# counted; `prompt_reused`: the prompt tokens the local model took from its cache of the previous
# turn instead of processing them again), median latency, and the share of loops each ending closed
# (`stop`: the model answered; `step_cap`, `token_budget`: a cap forced the answer; `refusal`,
# `max_tokens`: a reply that could not be used).

# %% [markdown] tags=["study-only"]
# ## The loop's own measures
# Per complete run: the citation hit rate, citations per question and the share of them that are
# relevant, documents read, searches and model turns per question, tokens (every call's whole prompt
# counted; `prompt_reused`: the prompt tokens the local model took from its cache of the previous
# turn instead of processing them again), median latency, and the share of loops each ending closed
# (`stop`: the model answered; `step_cap`, `token_budget`: a cap forced the answer; `refusal`,
# `max_tokens`: a reply that could not be used).

# %%
measures = loop_report.measures_page(cfg, lead)

# %% [markdown] tags=["arxiv-only"]
# ## The same loop in every condition
# Its complete runs in each condition of the report (the short forms, the two-part questions, the
# whole snapshot): the citation hit rate (two-part: the share of the two papers cited, and of questions
# with both cited), its ranked list against dense on the same questions with the 95% paired range,
# the share of loops in which the model made no search of its own, and the first run's searches and
# turns as distributions (value: questions). A condition with no complete run says so; nothing is run
# here (`QUESTION_FORM=short` or `QUESTION_SET=twopart` before `scripts/run_designs.py` records one).

# %% [markdown] tags=["study-only"]
# ## The same loop in every condition
# Its complete runs in each condition this study has (the questions as written, and the short forms
# where its questions have them): the citation hit rate, its ranked list against dense on the same
# questions with the 95% paired range, the share of loops in which the model made no search of its own,
# and the first run's searches and turns as distributions (value: questions). A condition with no
# complete run says so; nothing is run here (`QUESTION_FORM=short` before `scripts/run_designs.py` records one).

# %%
conditions = loop_report.conditions_page(cfg, lead)

# %% [markdown]
# ## One question, step by step
# The question shown is picked by a fixed rule, not by its outcome: among the first run's loops that
# searched and read, the one with the median number of steps (ties: the first in question order).
# Model turns carry their tokens (for the local model, how many of the prompt's tokens were reused
# from the previous turn's processed prefix) and the model's time; the code's steps their own time.

# %%
example = loop_report.step_through(cfg, lead)

# %% [markdown]
# ## How long the loops ran, and how they ended

# %%
steps = loop_report.steps_page(cfg, lead)

# %% [markdown] tags=["arxiv-only"]
# ## Where the loop loses the source
# Each loop against dense's saved list for the same question: did one of the loop's searches show
# the model the source paper, did the model read it, did it cite it? And how the model's own queries
# compare in length with the question it was given.

# %% [markdown] tags=["study-only"]
# ## Where the loop loses the source
# Each loop against dense's saved list for the same question: did one of the loop's searches show
# the model a relevant document, did the model read it, did it cite it? And how the model's own queries
# compare in length with the question it was given.

# %%
lost = loop_report.lost_page(cfg, design=lead)

# %% [markdown]
# ## The other first search
# The same loop, with the same prompt, caps, tools and ranked-list rule, with the other first search
# (the model's own, or the code's search of the question). Below, when its runs are saved: its
# measures beside the chosen loop's, one of its questions step by step, its steps and where it loses
# the source. Nothing is run here: its runs are recorded apart
# (`scripts/run_designs.py PROFILE DESIGN 1`), and this section says so when there are none.

# %%
other = loop_report.other_first_page(cfg, lead)

# %% [markdown] tags=["arxiv-only", "needs-earlier"]
# ## Before the choice: the earlier prompt
# Every loop saved before the choice used `one_example`, whose single worked example searches once
# with a rewritten query, reads one paper and answers; every one of those loops copied that shape.
# Those runs are kept, in the variant folder of that setting, and shown here beside the chosen
# prompt's on the same questions.

# %% [markdown] tags=["study-only", "needs-earlier"]
# ## The earlier prompt
# The same loop with the prompt `one_example` (its single worked example searches once with a
# rewritten query, reads one document and answers), where its runs are saved in the variant folder of
# that setting, shown beside the chosen prompt's on the same questions.

# %%
earlier = loop_report.earlier_prompt_page(cfg)
