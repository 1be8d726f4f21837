"""The quality of the model's queries (results/query_quality.csv): each query's list against the list it
would replace or join, strictly better / same / worse / lost (:func:`lib.evaluation.why_paths.query_effect`:
a tie is never better), counted by what the query was and where the source already was.

* **the agent's decision tree** (``agent_tree``), read by the agent's rules (:mod:`lib.evaluation.judges`):
  every new query of a chain against the list the decision was made on (the fused list of the searches
  before it), split by whether the model chose to search (its own search) or was asked to where it had
  stopped; a query equal to the one just searched ends the chain as it ends the agent, so it is not
  compared and is counted apart (``repeated``);
* **a design that decides after each search** (the agent, the agent reranked, the question-first loop):
  each new query of its saved runs against the fused list of the searches before it;
* **a fused design** (multi-query, decomposition): each of its queries against the question's own list;
* **a design with one search of its own** (HyDE): its saved list against dense's list of the question.

``shown``: where the source was in the top 5 of the searches before the query (for a tree and a deciding
design: the titles the model had been shown; for a fused or one-search design: the question's own list)."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from ..designs import Question, Result
from .judges import agent_end
from .loss import SHOWN, Search, searched_queries, with_questions
from .why_paths import DECISIONS, FUSED, ONE_SEARCH, fused, kind_of, query_effect, query_names, shown_at

TREE = "agent_tree"
EFFECTS = ("better", "same", "worse", "lost")
QUALITY_COLUMNS = ["condition", "design", "model", "asked", "shown", "queries", *EFFECTS, "repeated"]
ASKED_WORDS = {"own": "its own search", "forced": "where it stopped", ONE_SEARCH: "hypothetical abstract"}


def _table(rows: list[dict], condition: str, design: str, model: str) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["asked", "shown", "effect"])
    if df.empty:
        return pd.DataFrame(columns=QUALITY_COLUMNS)
    df["effect"] = df.effect.fillna("repeated")
    out = (df.groupby(["asked", "shown"])["effect"].value_counts().unstack(fill_value=0)
           .reindex(columns=[*EFFECTS, "repeated"], fill_value=0).reset_index())
    out["queries"] = out[list(EFFECTS)].sum(axis=1)
    out.insert(0, "model", model)
    out.insert(0, "design", design)
    out.insert(0, "condition", condition)
    return out[QUALITY_COLUMNS]


def tree_quality(results: Sequence[Result], questions: Sequence[Question], condition: str, model: str,
                 rrf_k: int = 60, shown: int = SHOWN) -> pd.DataFrame:
    """Every new query of the trees, read by the agent's rules, against the list the decision was made on; the
    repeated query that ends a chain is counted apart."""
    source = {q.qid: q.source_id for q in questions}
    rows = []
    for r in results:
        if r.qid not in source or not r.details.get("chain_lists"):
            continue
        lists = [list(x) for x in r.details["chain_lists"]]
        end = min(len(lists), agent_end(r.details.get("chain_queries") or []) or len(lists))
        forced = {d["searches"]: bool(d.get("forced")) for d in r.details.get("decisions", [])}
        s = source[r.qid]
        for k in range(1, min(len(lists), end + 1)):
            rows.append({"asked": ASKED_WORDS["forced" if forced.get(k) else "own"], "shown": shown_at(lists[:k], s, shown),
                         "effect": None if k == end else query_effect(fused(lists[:k], rrf_k), lists[k], s)})
    return _table(rows, condition, TREE, model)


def design_quality(results: Sequence[Result], questions: Sequence[Question], search: Search,
                   dense: dict[str, list[str]], design: str, condition: str, model: str, rrf_k: int = 60,
                   shown: int = SHOWN) -> pd.DataFrame:
    """Every model query of a design's saved runs (every run counted), by the design's kind."""
    kind = kind_of(design)
    rows = []
    for r, q in with_questions(results, questions):
        s = q.source_id
        if kind == ONE_SEARCH:
            if q.qid in dense and len(r.queries) > 1:
                rows.append({"asked": ASKED_WORDS[ONE_SEARCH], "shown": shown_at([dense[q.qid]], s, shown),
                             "effect": query_effect(dense[q.qid], r.ranked_ids, s)})
        elif kind == FUSED:
            question = list(search(r.queries[0]))
            rows += [{"asked": query_names(design)[1], "shown": shown_at([question], s, shown),
                      "effect": query_effect(question, list(search(x)), s)} for x in r.queries[1:]]
        elif kind == DECISIONS:
            lists = [list(search(x)) for x in searched_queries(r)]
            rows += [{"asked": ASKED_WORDS["own"], "shown": shown_at(lists[:k], s, shown),
                      "effect": query_effect(fused(lists[:k], rrf_k), lists[k], s)} for k in range(1, len(lists))]
    return _table(rows, condition, design, model)


def condition_quality(condition: str, records_by_model: dict, trees: dict | None = None) -> pd.DataFrame:
    """Every model's query quality in one condition: each design of a known kind with complete runs
    (``records_by_model``: model -> ``loss.ConditionRecords``) and each saved tree (``trees``: model -> its
    results), compared with the condition's own dense run where one is needed."""
    frames = []
    dense = next((rec.dense for rec in records_by_model.values() if rec.dense), None)
    for model, rec in records_by_model.items():
        rrf_k = rec.profile.rrf_k if rec.profile is not None else 60
        if (trees or {}).get(model):
            frames.append(tree_quality(trees[model], rec.questions, condition, model, rrf_k))
        if rec.search is None or not dense:
            continue
        for d, (complete, _) in rec.runs.items():
            if complete and kind_of(d):
                frames.append(design_quality(complete, rec.questions, rec.search, dense, d, condition, model, rrf_k,
                                             rec.shown.get(d, SHOWN)))
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=QUALITY_COLUMNS)
