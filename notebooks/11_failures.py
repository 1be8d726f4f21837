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
# # 11. Failure cases
#
# *Where, and why, do the LLM designs find the source where dense does not, or lose it?*
#
# Where do multi-query and the agent differ from dense, and why? Below: every scored question
# where the source's rank differs from dense's, with every query the LLM wrote, exactly as written;
# then a measurement of what the article only read by hand: the words the agent added to the
# question, and whether adding words went with losing the source.

# %% tags=["parameters"]
profile = "offline"
question_form = None

# %%
import pandas as pd
from IPython.display import Markdown, display

from lib.report import queries
from lib.preflight import notebook_profile
from lib.evaluation import failures
from lib.report.pages import open_page, reading, show, whole_table

cfg = notebook_profile(globals())
open_page(cfg)
sc = queries.load_scored(cfg)
qtext = {q.qid: q.text for q in sc.questions}
pq, results = sc.pq, sc.results

# %% [markdown]
# ## Every question where an LLM design's rank of the source differs from dense

# %%
cases = failures.differing_cases(pq, results, qtext)
display(Markdown(f"{len(cases)} (question, design, run) cases differ from dense; "
                 f"{(cases.change == 'better').sum() if len(cases) else 0} better, "
                 f"{(cases.change == 'worse').sum() if len(cases) else 0} worse."))
whole_table(cases, cfg, "differing_cases", "every (question, design, run) whose rank of the source differs from dense")

# %% [markdown]
# ## How the agent used its searches

# %%
agent = pq[pq.design == "agent"]
if agent.empty:
    display(Markdown("No complete agent run yet (a run stopped part-way is saved, not scored)."))
else:
    usage = pd.DataFrame({
        "stopped after 1 search": [(agent.searches == 1).mean()],
        "used 2": [(agent.searches == 2).mean()],
        "used all 3": [(agent.searches == 3).mean()],
        "used all 3 and still missed at 5": [((agent.searches == 3) & (agent.recall_at_5 == 0)).mean()],
    }).T.rename(columns={0: "share of (question, run)"}).rename_axis("searches").reset_index()
    show(usage, shares={"share of (question, run)"})
    show(agent.stop_reason.value_counts().rename("(question, run) pairs").rename_axis("ended by").reset_index())

# %% [markdown]
# ## The words the agent added
# For each query the agent wrote: the content words (English stop words removed) that are not in
# the question. Then, over (question, run) pairs where dense had the source in its top 5: how
# often the agent lost it, for pairs where it added words versus pairs where it did not.

# %%
added, added_summary = failures.agent_added_words(results, pq, qtext)
show(added_summary, profile=cfg)

# %%
if len(added):
    words = added.added_words.str.split().explode().dropna()
    display(Markdown(f"{len(added)} agent queries, {added.n_added.mean():.1f} added words per query on average; "
                     "most frequent added words:"))
    show(words.value_counts().head(20).rename("times added").rename_axis("word").reset_index())
    whole_table(added, cfg, "agent_added_words", "every query the agent wrote, with the words it added")

# %% [markdown]
# ## Questions no design found (not in any design's top 10 in any run)

# %%
found = pq.groupby("qid").mrr_at_10.max()
missed = [q for q in found.index if found[q] == 0]
show(pd.DataFrame([{"qid": q, "question": qtext[q]} for q in missed]))

# %% tags=["finding"]
n_better = int((cases.change == "better").sum()) if len(cases) else 0
n_worse = int((cases.change == "worse").sum()) if len(cases) else 0
text = (f"{len(cases)} (question, design, run) cases rank the source differently from dense: {n_better} better and "
        f"{n_worse} worse. {len(missed)} question(s) were found by no design in any run (not in any top 10).")
if not agent.empty:
    text += (f" The agent stopped after its first search in {(agent.searches == 1).mean():.0%} of (question, run) pairs "
             f"and used all searches in {(agent.searches == agent.searches.max()).mean():.0%}.")
reading(text)
