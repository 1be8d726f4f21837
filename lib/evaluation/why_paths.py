"""Where an LLM design's difference from dense comes from, decision by decision (results/why_paths.csv).

Every saved (question, run) result of the agent (or of multi-query) is put on exactly one *path* by what
happened at its decisions, read from its own queries searched again (the condition's dense search, 50
deep: :mod:`lib.evaluation.loss`):

* the agent (and the question-first loop, whose code searches the question and whose model then searches
  again or answers; its final list puts its citations first): ``stopped`` after the question's search; or
  ``searched again``, split by where the source was among the titles the model had been shown (the top 5
  of every search so far) when it decided:
  ``at rank 1`` / ``at 2-5`` / ``not shown``; then by what its first new query did to the source against
  the list the decision was made on (the fused list of the searches so far, what stopping would have
  returned): ``better`` (strictly higher), ``same`` (the same rank, or missing from both), ``worse``
  (lower, still in the new query's top 50) or ``lost`` (not in the new query's top 50);
* a design that fuses the question's list with its model's queries' lists, written up front (multi-query's
  rewrites, sub-question decomposition's sub-queries): by what those queries did against the question's own
  list: ``a rewrite better, none worse``, ``better and worse``, ``none better, some worse`` (a lost source
  counts as worse), ``all the same`` or ``no query of its own`` (a refused or empty reply: the question alone);
* a design that makes one search of its own (HyDE: the question's and a written abstract's mean vector):
  ``one search``;
* then, for every design, by the final list against dense's: ``above dense`` / ``same as dense`` / ``below
  dense`` (the source's rank in the saved list against the saved dense run's; beyond 50 ranks equal).

Which of these a design is: :data:`PATH_KINDS` (the agent with its list reranked is the agent's decisions
with its own final list). Left out: escalate (its searches are hybrid searches with a rerank, not the
condition's dense search its queries are searched again with here) and the model-first loop (no search of
the question to decide after).

Each path's *points* are the sum over its results of (design − dense) on a measure, divided by the
number of results a question has times the number of questions: the mean over questions of the mean over
runs, split by path. So the paths of a design add up exactly to its difference from dense in the scores
table (the saved lists are scored, never the rebuilt ones; the rebuilt lists only say which path)."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import pandas as pd

from ..designs import Question, Result
from ..designs.loop import QUESTION_FIRST
from ..search.fusion import rrf
from .loss import SHOWN, Search, searched_queries, with_questions
from .metrics import scores_of

METRICS = ("mrr_at_10", "recall_at_5")
DEPTH = 50
SHOWN_WORDS = ("at rank 1", "at 2-5", "not shown")
QUERY_WORDS = ("better", "same", "worse", "lost")
FINAL_WORDS = ("above dense", "same as dense", "below dense")
REWRITE_WORDS = ("a rewrite better, none worse", "better and worse", "none better, some worse", "all the same",
                 "no query of its own")
DECISIONS, FUSED, ONE_SEARCH = "decisions", "fused queries", "one search"
# how each LLM design is taken apart (every design with saved runs and a kind here is; see the docstring)
PATH_KINDS = {"agent": DECISIONS, "agent_rerank": DECISIONS, QUESTION_FIRST: DECISIONS, "multiquery": FUSED,
              "decompose": FUSED, "hyde": ONE_SEARCH}
PATH_DESIGNS = tuple(PATH_KINDS)
# what a fused design's queries are called (plural, one): the path's words and the query-quality table's
QUERY_NAMES = {"multiquery": ("rewrites", "rewrite"), "decompose": ("sub-queries", "sub-query")}
COLUMNS = ["condition", "design", "model", "path", "decision", "shown", "query", "final", "results", "questions",
           "mrr_at_10_points", "recall_at_5_points"]


def source_rank(ids: Sequence[str], source: str) -> float:
    """The rank the measures read (the source; a two-part question's second paper; the first relevant
    document), inf when it is not in the list."""
    r = scores_of(list(ids)[:DEPTH], source).get("rank")
    return float("inf") if r is None else float(r)


def query_effect(decision_list: Sequence[str], new_list: Sequence[str], source: str) -> str:
    """What a new query did to the source against the list the decision was made on: better (strictly),
    same (equal rank, or missing from both), worse, or lost (in the decision's list, not in the query's)."""
    before, after = source_rank(decision_list, source), source_rank(new_list, source)
    if after < before:
        return "better"
    if after == before:
        return "same"
    return "lost" if after == float("inf") else "worse"


def shown_at(lists: Sequence[Sequence[str]], source: str, shown: int = SHOWN) -> str:
    """Where the source was among the titles shown (the top ``shown`` of each list): at rank 1 of some
    list, at 2-5 of some list, or not shown."""
    best = min((source_rank(ids[:shown], source) for ids in lists), default=float("inf"))
    return "at rank 1" if best == 1 else "not shown" if best == float("inf") else "at 2-5"


def final_vs_dense(saved: Sequence[str], dense: Sequence[str], source: str) -> str:
    a, b = source_rank(saved, source), source_rank(dense, source)
    return "above dense" if a < b else "below dense" if a > b else "same as dense"


def fused(lists: Sequence[Sequence[str]], rrf_k: int = 60) -> list[str]:
    return [d for d, _ in rrf(lists, rrf_k)][:DEPTH]


def agent_path(result: Result, source: str, search: Search, dense: Sequence[str], rrf_k: int = 60,
               shown: int = SHOWN) -> dict:
    """One agent result's path (or the question-first loop's, whose code searches the question first and
    whose model then searches again or answers): its first decision, and (searched again) where the source
    was shown, what the new query did against the fused list so far, and the final list against dense."""
    final = final_vs_dense(result.ranked_ids, dense, source)
    queries = searched_queries(result)
    if len(queries) < 2:
        return {"decision": "stopped", "shown": "", "query": "", "final": final}
    first = list(search(queries[0]))
    new = list(search(queries[1]))
    return {"decision": "searched again", "shown": shown_at([first], source, shown),
            "query": query_effect(fused([first], rrf_k), new, source), "final": final}


def kind_of(design: str) -> str | None:
    return PATH_KINDS.get(design)


def query_names(design: str) -> tuple[str, str]:
    return QUERY_NAMES.get(design, ("queries", "query"))


def rewrite_words(design: str) -> tuple[str, ...]:
    """REWRITE_WORDS in a fused design's own word for its queries."""
    one = query_names(design)[1]
    return tuple(w.replace("a rewrite", f"a {one}") for w in REWRITE_WORDS)


def multiquery_path(result: Result, source: str, search: Search, dense: Sequence[str]) -> dict:
    """One result of a fused design (multi-query, decomposition): its queries against the question's own list,
    then the final list."""
    words = rewrite_words(result.design)
    question = list(search(result.queries[0]))
    effects = Counter(query_effect(question, list(search(q)), source) for q in result.queries[1:])
    better, worse = effects["better"] > 0, effects["worse"] + effects["lost"] > 0
    word = (words[4] if len(result.queries) < 2 else words[1] if better and worse else words[0] if better else
            words[2] if worse else words[3])
    return {"decision": query_names(result.design)[0], "shown": "", "query": word,
            "final": final_vs_dense(result.ranked_ids, dense, source)}


def one_search_path(result: Result, source: str, dense: Sequence[str]) -> dict:
    """One result of a design that makes one search of its own (HyDE): its list against dense's."""
    return {"decision": ONE_SEARCH, "shown": "", "query": "", "final": final_vs_dense(result.ranked_ids, dense, source)}


def path_of(result: Result, source: str, search: Search, dense: Sequence[str], rrf_k: int = 60,
            shown: int = SHOWN, design: str | None = None) -> dict:
    """One result's path by its design's kind (``design``, else the result's own; a design of no known kind
    is read as the agent's decisions)."""
    kind = kind_of(design or result.design)
    if kind == FUSED:
        return multiquery_path(result, source, search, dense)
    if kind == ONE_SEARCH:
        return one_search_path(result, source, dense)
    return agent_path(result, source, search, dense, rrf_k, shown)


def path_name(p: dict) -> str:
    parts = [p["decision"]] + [p[k] for k in ("shown", "query") if p[k]] + [p["final"]]
    return "; ".join(parts)


def design_paths(results: Sequence[Result], questions: Sequence[Question], search: Search,
                 dense: dict[str, list[str]], design: str, rrf_k: int = 60, shown: int = SHOWN) -> pd.DataFrame:
    """Per result: its path and its difference from dense on each measure, weighted so that the sum over
    all results is the design's difference from dense (mean over questions of the mean over runs)."""
    pairs = list(with_questions(results, questions))
    runs_of = Counter(r.qid for r, _ in pairs)
    n_q = len(runs_of)
    rows = []
    for r, q in pairs:
        d = dense[q.qid]
        p = path_of(r, q.source_id, search, d, rrf_k, shown, design)
        mine, base = scores_of(r.ranked_ids, q.source_id), scores_of(d, q.source_id)
        weight = 1.0 / (runs_of[q.qid] * n_q)
        rows.append({"qid": q.qid, "run": r.run, **p, "path": path_name(p),
                     **{f"{m}_points": (mine[m] - base[m]) * weight for m in METRICS}})
    return pd.DataFrame(rows)


def summary(per_result: pd.DataFrame, condition: str, design: str, model: str) -> pd.DataFrame:
    """One row per path: results, questions, and the points on each measure (they add up to the design's
    difference from dense)."""
    if per_result.empty:
        return pd.DataFrame(columns=COLUMNS)
    g = per_result.groupby(["path", "decision", "shown", "query", "final"], sort=False)
    out = g.agg(results=("qid", "size"), questions=("qid", "nunique"),
                mrr_at_10_points=("mrr_at_10_points", "sum"), recall_at_5_points=("recall_at_5_points", "sum")).reset_index()
    out.insert(0, "model", model)
    out.insert(0, "design", design)
    out.insert(0, "condition", condition)
    return out[COLUMNS].sort_values(["decision", "shown", "query", "final"], key=_order).reset_index(drop=True)


_RANK = {w: i for i, w in enumerate(dict.fromkeys((
    "stopped", "searched again", *(n for n, _ in QUERY_NAMES.values()), "queries", ONE_SEARCH, "", *SHOWN_WORDS,
    *QUERY_WORDS, *(w for d in (*QUERY_NAMES, "") for w in rewrite_words(d)), *FINAL_WORDS)))}


def _order(col: pd.Series) -> pd.Series:
    return col.map(lambda w: _RANK.get(w, len(_RANK)))


def condition_paths(condition: str, records_by_model: dict, designs: Sequence[str] = PATH_DESIGNS) -> pd.DataFrame:
    """Every model's paths in one condition (``records_by_model``: model -> ``loss.ConditionRecords``, as
    :func:`lib.report.why_tables.model_records` gives them, the profile's model first); every model is
    compared with the condition's own dense run (another model's folder holds none of its own). A design
    with no complete run, or a condition without its saved dense run, gives no rows."""
    frames = []
    dense = next((rec.dense for rec in records_by_model.values() if rec.dense), None)
    for model, rec in records_by_model.items():
        if rec.search is None or not dense:
            continue
        for d in (d for d in designs if kind_of(d)):
            complete, _ = rec.runs.get(d, ([], []))
            if not complete:
                continue
            pr = design_paths(complete, rec.questions, rec.search, dense, d, rec.profile.rrf_k, rec.shown.get(d, SHOWN))
            frames.append(summary(pr, condition, d, model))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
