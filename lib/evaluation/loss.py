"""The LLM designs' loss against dense, taken apart from the saved records (no model call).

Four measurements, each a pure function over saved :class:`Result` records, the questions and a
search function (``search(text) -> ranked ids``, the condition's dense search at depth 50), so the
design's own saved queries can be searched again:

1. **the stop judgement** (the agent): every decision the model made, whether the source was among
   the titles it was shown (the top 5 of each search so far, as the agent shows them) and whether
   it stopped or searched again (:func:`decisions`, :func:`stop_table`, :func:`search_use`);
2. **the queries**: the source's rank under each model-written query alone against its rank under
   the question as written, and the words each query added (:func:`query_outcomes`,
   :func:`outcome_counts`, :func:`added_word_table`);
3. **the merge**: the fused list against the best single list among the same searches and against
   the question's own list (:func:`per_result`, :func:`merge_table`);
4. **ceilings**: an oracle-stop agent over the same queries and a one-extra-search bound
   (:func:`ceilings_table`).

:func:`account` puts the parts side by side (numbers only: the sentences are written in
``lib.report.why``). :func:`condition_loss` and :func:`conditions_loss` take a condition's saved complete
runs (read by ``lib.report.queries.condition_records``, the re-searched lists cached on disk:
:func:`cached_search`) and return every table. Where each difference comes from, decision by decision, is
``lib.evaluation.why_paths``'s; the residual split below cannot blame the queries where the question is
one of the searches, so it is kept as a table, not as the answer.

The parts of the loss (MRR@10 or recall@5, means over questions, runs averaged first):
``loss = dense - fused = (best single - fused) + (dense - best single)``: the merge's part and the
queries' part. For the agent, multi-query and the question-first loop the question is one of the
searches, so the best single list is never below dense and the merge's part is the whole loss or more;
the (model-first) loop searches only the model's queries. The oracle stop's gain
(``oracle stop - fused``) overlaps the merge's part: a search that should not have been made
matters only through the fusion.

Over 500 lines: the four measurements and the account that joins them walk the same saved results and
re-searched lists (:func:`per_result`), and the on-disk caches of those lists go with them.
"""
from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import os
import pickle
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..data.relevance import relevant_ids
from ..designs import Question, Result
from ..designs.loop import LOOP_DESIGNS, QUESTION_FIRST, model_queries, ranked_list, shown_ids
from ..paths import ROOT
from ..search.fusion import rrf
from .failures import added_words
from .metrics import paired_bootstrap, scores_of

LOSS_DESIGNS = ("agent", "multiquery", "loop", QUESTION_FIRST)
# designs taken apart only where some condition has a saved run of them (else left out, not listed as missing)
OPTIONAL_DESIGNS = (QUESTION_FIRST,)
METRICS = ("recall_at_5", "mrr_at_10")
SHOWN = 5      # titles the agent is shown from each search (its prompt: ids[:5])
DEPTH = 50     # the depth of every search and of the fused list
OUTCOMES = ("better", "same", "worse", "both missing")
# the list variants of one result: as run (the saved list), the question alone (dense), the best
# single list among the searches it made, an oracle stop over the same queries, and the best of the
# question's list and any one of the model's queries (one extra search, used perfectly)
VARIANTS = {"fused": "the design as run", "oracle": "oracle stop (same queries)",
            "extra": "one-extra-search bound", "best": "best single list among its searches",
            "question": "dense (the question's own list)"}

Search = Callable[[str], Sequence[str]]


# --------------------------------------------------------------------------- what a design searched
def searched_queries(result: Result) -> list[str]:
    """The queries a design searched, in order: the agent and multi-query search the question first,
    then the model's queries; the tool-calling loops' records keep the question first, then every
    search they ran: the model-first loop's are only the queries the model called, the question-first
    loop's begin with the code's search of the question as written."""
    return list(result.queries[1:]) if result.design in LOOP_DESIGNS else list(result.queries)


def written_queries(result: Result) -> list[str]:
    """The model-written queries of a result (every design's record: the question first, then them;
    the question-first loop's code search of the question is not one)."""
    return model_queries(result) if result.design in LOOP_DESIGNS else list(result.queries[1:])


def _covered(ids: Sequence[str], source: str) -> bool:
    """The source (for a two-part question: both papers; with judgements: every relevant document) among the ids."""
    have = set(ids)
    return all(p in have for p in relevant_ids(source))


def _shown(lists: Sequence[Sequence[str]], upto: int, shown: int) -> list[str]:
    """The ids of the top ``shown`` of each of the first ``upto`` lists."""
    return [d for ids in lists[:upto] for d in ids[:shown]]


def _fuse(lists: Sequence[Sequence[str]], rrf_k: int, depth: int = DEPTH) -> list[str]:
    return [d for d, _ in rrf(lists, rrf_k)][:depth]


def _rank(x) -> float:
    """A rank for comparison: missing (beyond the depth) ranks below every found one."""
    return float("inf") if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)


def outcome(question_rank, query_rank) -> str:
    """How a query alone ranks the source against the question alone: better, same, worse or both
    missing (a rank of None: not in the top 50)."""
    q, x = _rank(question_rank), _rank(query_rank)
    if q == x == float("inf"):
        return "both missing"
    return "better" if x < q else "worse" if x > q else "same"


def search_texts(results: Sequence[Result], questions: Sequence[Question]) -> list[str]:
    """Every text the measurements search (the questions and every saved query), once each."""
    return list(dict.fromkeys([q.text for q in questions] + [t for r in results for t in r.queries]))


# --------------------------------------------------------------------------- 1. the stop judgement
def decisions(results: Sequence[Result], questions: Sequence[Question], search: Search,
              shown: int = SHOWN) -> pd.DataFrame:
    """One row per decision the agent's model made: after which search, whether the source was among
    the titles it was shown (the top ``shown`` of every search so far), and what followed: it searched
    again, or the search ended (``ending``: the record's stop reason; "stop" is the model's own stop,
    others are a malformed, empty or repeated query, a refusal or a cut reply). After the last allowed
    search (stop reason "cap") no decision is asked for."""
    source = {q.qid: q.source_id for q in questions}
    rows = []
    for r in results:
        if r.qid not in source:
            continue
        lists = [list(search(q)) for q in r.queries]
        n = len(lists)
        made = n - 1 if r.stop_reason == "cap" else n
        for i in range(1, made + 1):
            again = i < n
            rows.append({"qid": r.qid, "run": r.run, "after_search": i,
                         "source_shown": _covered(_shown(lists, i, shown), source[r.qid]),
                         "decision": "searched again" if again else "stopped",
                         "ending": "searched again" if again else (r.stop_reason or "stop")})
    return pd.DataFrame(rows, columns=["qid", "run", "after_search", "source_shown", "decision", "ending"])


def stop_table(dec: pd.DataFrame) -> pd.DataFrame:
    """The 2x2 of the stop judgement: source shown or not x stopped or searched again, each cell's
    decisions, its share of all decisions and of its row; ``not_explicit_stop``: the stopped
    decisions that were no "stop" reply (a malformed, empty or repeated query, a refusal, a cut reply)."""
    total = len(dec)
    rows = []
    for shown_ in (True, False):
        row = dec[dec.source_shown == shown_] if total else dec
        for d in ("stopped", "searched again"):
            cell = row[row.decision == d] if total else row
            rows.append({"source": "shown" if shown_ else "not shown", "decision": d, "decisions": len(cell),
                         "share": len(cell) / total if total else np.nan,
                         "share_of_row": len(cell) / len(row) if len(row) else np.nan,
                         "not_explicit_stop": int((cell.ending != "stop").sum()) if d == "stopped" else 0})
    return pd.DataFrame(rows)


def stop_grid(table: pd.DataFrame) -> pd.DataFrame:
    """The 2x2 of :func:`stop_table` as a grid: counts with their share of all decisions."""
    cells = {(r.source, r.decision): f"{r.decisions} ({r.share:.0%})" if r.decisions else "0"
             for r in table.itertuples()}
    return pd.DataFrame({d: {f"source {s}": cells.get((s, d), "0") for s in ("shown", "not shown")}
                         for d in ("stopped", "searched again")})


def article_search_use() -> dict:
    """The article's agent: the share of questions it stopped after one search and used all three
    (``data/article_figures.json``, its "Other reported figures")."""
    other = json.loads((ROOT / "data" / "article_figures.json").read_text(encoding="utf-8"))["other"]
    return {"stopped_after_one": other["agent_stopped_after_one_search"], "used_all": other["agent_used_all_three"]}


def search_use(results: Sequence[Result], max_searches: int = 3, article: dict | None = None) -> dict:
    """Over (question, run) results: the share that stopped after one search and the share that used
    all ``max_searches``, beside the article's (``article``: its two shares, or None)."""
    n = len(results)
    searches = np.array([r.searches for r in results])
    out = {"results": n, "stopped_after_one": float((searches == 1).mean()) if n else np.nan,
           "used_all": float((searches == max_searches).mean()) if n else np.nan,
           "searches_mean": float(searches.mean()) if n else np.nan}
    if article:
        out.update({"article_stopped_after_one": article["stopped_after_one"], "article_used_all": article["used_all"]})
    return out


def with_questions(results: Sequence[Result], questions: Sequence[Question]):
    """Each result with its question (results for questions not in the set are left out)."""
    by = {q.qid: q for q in questions}
    return [(r, by[r.qid]) for r in results if r.qid in by]


# --------------------------------------------------------------------------- 2. the queries
def query_outcomes(results: Sequence[Result], questions: Sequence[Question], search: Search) -> pd.DataFrame:
    """One row per model-written query: the source's rank under it alone and under the question as
    written (dense, the search's depth; None: not found), the outcome (better, same, worse, both
    missing) and the words it added (lowercased word tokens not in the question, stop words removed:
    :func:`lib.evaluation.failures.added_words`)."""
    rows = []
    for r, q in with_questions(results, questions):
        base = scores_of(list(search(q.text)), q.source_id)["rank"]
        for i, text in enumerate(written_queries(r), start=1):
            rank = scores_of(list(search(text)), q.source_id)["rank"]
            words = added_words(q.text, text)
            rows.append({"qid": r.qid, "run": r.run, "query_no": i, "query": text, "question_rank": base,
                         "query_rank": rank, "outcome": outcome(base, rank), "added_words": " ".join(words),
                         "n_added": len(words)})
    return pd.DataFrame(rows, columns=["qid", "run", "query_no", "query", "question_rank", "query_rank", "outcome",
                                       "added_words", "n_added"])


def outcome_counts(qdf: pd.DataFrame) -> dict:
    """The queries' outcomes: counts and shares of better, same, worse and both missing."""
    n = len(qdf)
    out: dict = {"queries": n}
    for o in OUTCOMES:
        k = int((qdf.outcome == o).sum()) if n else 0
        out[o] = k
        out[f"{o}_share"] = k / n if n else np.nan
    return out


def outcomes_by_added(qdf: pd.DataFrame) -> pd.DataFrame:
    """The outcomes of queries that added words to the question against those that added none."""
    rows = []
    for added, g in ((True, qdf[qdf.n_added > 0]), (False, qdf[qdf.n_added == 0])):
        rows.append({"added_words": "some" if added else "none", **outcome_counts(g)})
    return pd.DataFrame(rows)


def added_word_table(qdf: pd.DataFrame, top: int = 15) -> pd.DataFrame:
    """The most frequent added words among the queries that ranked the source worse than the
    question, beside those among the queries that ranked it better: each word counted once a query,
    with the share of that group's queries that added it (ties by the word)."""
    cols = {}
    for o in ("worse", "better"):
        g = qdf[qdf.outcome == o]
        counts = Counter(w for text in g.added_words for w in set(str(text).split()))
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        cols[o] = ranked, len(g)
    n = max((len(v[0]) for v in cols.values()), default=0)
    rows = []
    for i in range(n):
        row = {"rank": i + 1}
        for o, (ranked, size) in cols.items():
            w, k = ranked[i] if i < len(ranked) else ("", 0)
            row.update({f"{o}_word": w, f"{o}_queries": k, f"{o}_share": k / size if w else np.nan})
        rows.append(row)
    return pd.DataFrame(rows, columns=["rank", "worse_word", "worse_queries", "worse_share", "better_word",
                                       "better_queries", "better_share"])


# --------------------------------------------------------------------------- 3./4. merge and ceilings
def oracle_stop(lists: Sequence[Sequence[str]], source: str, shown: int = SHOWN) -> int:
    """How many of the lists an oracle-stop agent fuses: up to the first search whose shown titles
    (with every earlier search's) hold the source; all of them when it is never shown."""
    for i in range(1, len(lists) + 1):
        if _covered(_shown(lists, i, shown), source):
            return i
    return len(lists)


def _best(scored: Sequence[dict]) -> dict:
    """The best of several lists' scores, each measure on its own (rank: the best rank)."""
    if not scored:
        return {"recall_at_5": 0.0, "mrr_at_10": 0.0, "rank": None}
    ranks = [s["rank"] for s in scored if s["rank"] is not None]
    return {"recall_at_5": max(s["recall_at_5"] for s in scored), "mrr_at_10": max(s["mrr_at_10"] for s in scored),
            "rank": min(ranks) if ranks else None}


def recomputed(result: Result, lists: Sequence[Sequence[str]], rrf_k: int = 60, depth: int = DEPTH) -> list[str]:
    """The design's ranked list rebuilt from the lists searched again (the loop: its citations first)."""
    if result.design in LOOP_DESIGNS:
        return ranked_list(result.details.get("citations", []), lists, rrf_k, depth)
    return _fuse(lists, rrf_k, depth)


def per_result(results: Sequence[Result], questions: Sequence[Question], search: Search, rrf_k: int = 60,
               shown: int = SHOWN, depth: int = DEPTH) -> pd.DataFrame:
    """One row per (question, run): recall@5, MRR@10 and rank of the source in each list variant
    (:data:`VARIANTS`): ``fused`` the saved list as the design ran it; ``question`` the question's own
    list (dense); ``best`` the best single list among the searches the design made (each measure on its
    own: an oracle pick); ``oracle`` the fusion of the lists up to the first search whose shown titles
    hold the source (``stop_at``; all of them if never shown); ``extra`` the best of the question's list
    and any one model-written query's list. ``reproduced``: the saved list equals the one rebuilt from
    the lists searched again (the check that the search reproduces the run)."""
    rows = []
    for r, q in with_questions(results, questions):
        src = q.source_id
        lists = [list(search(t)) for t in searched_queries(r)]
        own = list(search(q.text))
        written = [list(search(t)) for t in written_queries(r)]
        stop_at = oracle_stop(lists, src, shown)
        variants = {"fused": scores_of(r.ranked_ids, src), "question": scores_of(own, src),
                    "best": _best([scores_of(x, src) for x in lists]),
                    "oracle": scores_of(_fuse(lists[:stop_at], rrf_k, depth), src) if lists else
                    {"recall_at_5": 0.0, "mrr_at_10": 0.0, "rank": None},
                    "extra": _best([scores_of(x, src) for x in [own] + written])}
        row = {"qid": r.qid, "run": r.run, "design": r.design, "searches": len(lists), "stop_at": stop_at,
               "reproduced": recomputed(r, lists, rrf_k, depth) == list(r.ranked_ids)}
        for v, s in variants.items():
            row.update({f"{v}_{m}": s[m] for m in (*METRICS, "rank")})
        rows.append(row)
    return pd.DataFrame(rows)


def _by_question(pr: pd.DataFrame, col: str) -> pd.Series:
    """A column averaged over runs, per question (question order as first met)."""
    return pr.groupby("qid", sort=False)[col].mean()


def _paired(pr: pd.DataFrame, a: str, b: str, n_resamples: int, seed: int) -> tuple[float, float, float]:
    return paired_bootstrap(_by_question(pr, a).to_numpy(), _by_question(pr, b).to_numpy(), n_resamples, seed)


def merge_table(pr: pd.DataFrame, n_resamples: int = 2000, seed: int = 7) -> pd.DataFrame:
    """Per measure: the fused list, the best single list among the same searches and the question's own
    list (means over questions, runs averaged first), with paired bootstrap ranges of fused - best single
    and fused - question only."""
    rows = []
    for m in METRICS:
        row = {"metric": m, "questions": int(pr.qid.nunique()), "fused": _by_question(pr, f"fused_{m}").mean(),
               "best_single": _by_question(pr, f"best_{m}").mean(), "question_only": _by_question(pr, f"question_{m}").mean()}
        for variant, other in (("best", "best_single"), ("question", "question_only")):
            d, lo, hi = _paired(pr, f"fused_{m}", f"{variant}_{m}", n_resamples, seed)
            row.update({f"fused_minus_{other}": d, f"fused_minus_{other}_low": lo, f"fused_minus_{other}_high": hi})
        rows.append(row)
    return pd.DataFrame(rows)


def ceilings_table(pr: pd.DataFrame, n_resamples: int = 2000, seed: int = 7) -> pd.DataFrame:
    """The design as run, an oracle-stop agent over the same queries, the one-extra-search bound and the
    best single list, against dense (the question's own list): recall@5 and MRR@10 with paired ranges."""
    rows = []
    for v in ("fused", "oracle", "extra", "best", "question"):
        row = {"variant": VARIANTS[v], "questions": int(pr.qid.nunique())}
        for m in METRICS:
            row[m] = _by_question(pr, f"{v}_{m}").mean()
            if v != "question":
                d, lo, hi = _paired(pr, f"{v}_{m}", f"question_{m}", n_resamples, seed)
                row.update({f"{m}_delta": d, f"{m}_delta_low": lo, f"{m}_delta_high": hi})
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- the account
def account(pr: pd.DataFrame, qdf: pd.DataFrame, dec: pd.DataFrame | None = None, metric: str = "mrr_at_10",
            n_resamples: int = 2000, seed: int = 7) -> dict:
    """The loss against dense in one measure and its parts: ``loss`` (dense - fused), ``merge_part`` (best
    single - fused), ``queries_part`` (dense - best single; loss = merge_part + queries_part), ``stop_part``
    (oracle stop - fused), each share of the loss (``<part>_share``, when there is a loss), the ranges of
    fused - dense and fused - best single, the queries' outcomes (``queries``: how many) and, with the
    agent's decisions, the stop judgement's cells."""
    mean = {v: _by_question(pr, f"{v}_{metric}").mean() for v in VARIANTS}
    d, lo, hi = _paired(pr, f"fused_{metric}", f"question_{metric}", n_resamples, seed)
    dm, lom, him = _paired(pr, f"fused_{metric}", f"best_{metric}", n_resamples, seed)
    out = {"metric": metric, "questions": int(pr.qid.nunique()), "results": len(pr),
           **{f"{v}_mean": x for v, x in mean.items()},
           "loss": mean["question"] - mean["fused"], "fused_minus_dense": d, "fused_minus_dense_low": lo,
           "fused_minus_dense_high": hi, "merge_part": mean["best"] - mean["fused"], "fused_minus_best": dm,
           "fused_minus_best_low": lom, "fused_minus_best_high": him, "queries_part": mean["question"] - mean["best"],
           "stop_part": mean["oracle"] - mean["fused"],
           "best_below_question": int((_by_question(pr, f"best_{metric}") < _by_question(pr, f"question_{metric}")).sum()),
           "reproduced": float(pr.reproduced.mean()) if len(pr) else np.nan}
    for part in ("merge", "queries", "stop"):
        out[f"{part}_share"] = out[f"{part}_part"] / out["loss"] if out["loss"] > 0 else np.nan
    out.update(outcome_counts(qdf))
    if dec is not None:
        shown_, hidden = dec[dec.source_shown], dec[~dec.source_shown]
        out.update({"decisions": len(dec), "shown_decisions": len(shown_), "hidden_decisions": len(hidden),
                    "shown_searched_again": int((shown_.decision == "searched again").sum()),
                    "hidden_stopped": int((hidden.decision == "stopped").sum())})
    return out


# --------------------------------------------------------------------------- one design, one condition
@dataclass
class DesignLoss:
    """One design's loss taken apart in one condition (``status`` says why not, when it could not be)."""

    condition: str
    design: str
    status: str = ""
    runs: list[int] = field(default_factory=list)
    not_scored: list[str] = field(default_factory=list)
    questions: int = 0
    per_result: pd.DataFrame = field(default_factory=pd.DataFrame)
    decisions: pd.DataFrame = field(default_factory=pd.DataFrame)
    queries: pd.DataFrame = field(default_factory=pd.DataFrame)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    accounts: dict[str, dict] = field(default_factory=dict)
    dense_reproduced: float | None = None

    @property
    def analysed(self) -> bool:
        return not self.status


def analyse(condition: str, design: str, results: Sequence[Result], questions: Sequence[Question], search: Search,
            rrf_k: int = 60, max_searches: int = 3, shown: int = SHOWN, n_resamples: int = 2000, seed: int = 7,
            article: dict | None = None, top_words: int = 15) -> DesignLoss:
    """Every table of one design's loss from its complete runs' results (pure: the search is given)."""
    pr = per_result(results, questions, search, rrf_k, shown)
    qdf = query_outcomes(results, questions, search)
    dec = decisions(results, questions, search, shown) if design == "agent" else pd.DataFrame()
    tables = {"merge": merge_table(pr, n_resamples, seed), "ceilings": ceilings_table(pr, n_resamples, seed),
              "outcomes": pd.DataFrame([outcome_counts(qdf)]), "by_added": outcomes_by_added(qdf),
              "words": added_word_table(qdf, top_words)}
    if design == "agent":
        tables["stop"] = stop_table(dec)
        tables["use"] = pd.DataFrame([search_use(results, max_searches, article)])
    accounts = {m: account(pr, qdf, dec if design == "agent" else None, m, n_resamples, seed) for m in METRICS}
    if design == "agent":
        for acc in accounts.values():
            acc.update({**search_use(results, max_searches, article), "max_searches": max_searches})
    runs = sorted({r.run for r in results})
    return DesignLoss(condition, design, runs=runs, questions=int(pr.qid.nunique()) if len(pr) else 0, per_result=pr,
                      decisions=dec, queries=qdf, tables=tables, accounts=accounts)


# --------------------------------------------------------------------------- from a profile's saved runs
def complete_runs(runs: dict[int, list[Result] | str], qids: set[str]) -> tuple[list[Result], list[str]]:
    """The results of the complete runs (every scored question answered; other questions left out),
    and a line for each run not scored: a partial run with how many it answered, or (a text in place
    of the results) why its records could not be used."""
    complete: list[Result] = []
    not_scored: list[str] = []
    for k in sorted(runs):
        res = runs[k]
        if isinstance(res, str):
            not_scored.append(f"run {k}: {res}")
            continue
        res = [r for r in res if r.qid in qids]
        answered = {r.qid for r in res}
        if answered < qids:
            not_scored.append(f"run {k}: {len(answered)} of {len(qids)} questions answered (a partial run; not scored)")
        else:
            complete.extend(res)
    return complete, not_scored


def batched_search(searcher, texts: Sequence[str], k: int = DEPTH, chunk: int = 512) -> Search:
    """The dense search as a function of the text, every given text embedded in batches first (the
    searcher's own embedding and index; other texts are searched when asked)."""
    lists: dict[str, list[str]] = {}
    todo = list(dict.fromkeys(texts))
    for i in range(0, len(todo), chunk):
        part = todo[i:i + chunk]
        for t, v in zip(part, searcher.query_vectors(part)):
            lists[t] = [h.id for h in searcher.index.search_vector(v, k)]
        searcher.forget_queries()

    def search(text: str) -> list[str]:
        if text not in lists:
            lists[text] = [h.id for h in searcher.search(text, k)]
        return lists[text]

    return search


# what the search lists depend on besides the texts (bump CACHE_VERSION when the search code changes)
CACHE_VERSION = 1
SEARCH_SETTINGS = ("embedder", "embedder_backend", "collection_scope", "collection_source", "chunk_documents",
                   "chunk_tokens", "chunk_overlap", "filter_categories", "filter_first_seen", "dense_backend")


def search_cache_key(profile, collection_digest: str, depth: int = DEPTH) -> str:
    """The key of a store of search lists: the search settings, the collection, the depth and the code version."""
    blob = {"v": CACHE_VERSION, "depth": depth, "collection": collection_digest,
            "settings": {k: getattr(profile, k, None) for k in SEARCH_SETTINGS}}
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()[:20]


def cache_dir() -> Path:
    """Where page 12's computed tables are kept between renders (ignored by git; the re-searched
    lists they come from are kept in the profile's ``why`` cache: :func:`cached_search`)."""
    return ROOT / "build" / "why_cache"


def cached_search(profile, parts, texts: Sequence[str], folder: Path, depth: int = DEPTH,
                  bases: Sequence[Path] = ()) -> Search:
    """:func:`batched_search`, its lists kept on disk (``folder``, read after it: ``bases``; for page 12 the profile's
    ``why`` cache and ``data/cache/why/`` for the shipped profiles, ``lib.pipeline.cache_dirs``, so a clone renders
    page 12 without searching again) in one store per
    search settings and collection (:func:`search_cache_key`), text -> ranked ids: only the texts not yet in
    the store are embedded (in batches), so a re-render embeds nothing and another question subset or model
    embeds only its new queries; the searcher is built only when some text is missing."""
    folder = Path(folder)
    name = f"lists-{search_cache_key(profile, parts.collection_digest, depth)}.json.gz"
    path = folder / name
    lists: dict[str, list[str]] = {}
    for source in (path, *(b / name for b in bases)):  # a study's own store first, then the shipped one
        if source.exists():
            try:
                lists = json.loads(gzip.decompress(source.read_bytes()).decode("utf-8"))
                break
            except (OSError, EOFError, ValueError):  # a store cut short: searched again
                lists = {}
    missing = [t for t in dict.fromkeys(texts) if t not in lists]
    if missing:
        search = batched_search(parts.searcher, missing, depth)
        lists.update({t: list(search(t)) for t in missing})
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(gzip.compress(json.dumps(lists).encode("utf-8")))
        tmp.replace(path)

    def search(text: str) -> list[str]:
        if text not in lists:
            lists[text] = [h.id for h in parts.searcher.search(text, depth)]
        return lists[text]

    return search


@dataclass
class ConditionRecords:
    """One condition's saved records as the measurements read them: the scored questions, per design its
    complete runs' results and the lines naming runs not scored, the search (cached lists; None when no
    design has a complete run) and the saved dense run's lists (None when not read)."""

    questions: list[Question]
    runs: dict[str, tuple[list[Result], list[str]]]
    search: Search | None = None
    dense: dict[str, list[str]] | None = None
    shown: dict[str, int] = field(default_factory=dict)
    profile: object = None


def records_digest(records: "ConditionRecords") -> str:
    """A digest of what the measurements read from one condition's records: the questions, every complete
    result's queries, list and citations, and the search settings."""
    h = hashlib.sha256()
    prof = records.profile
    h.update(json.dumps({k: getattr(prof, k, None) for k in (*SEARCH_SETTINGS, "rrf_k", "agent_max_searches",
                                                               "loop_search_k", "bootstrap_resamples", "bootstrap_seed",
                                                               "llm_model", "question_set")},
                        sort_keys=True, default=str).encode())
    h.update(json.dumps([[q.qid, q.text, q.source_id] for q in records.questions]).encode())
    for d in sorted(records.runs):
        for r in records.runs[d][0]:
            h.update(json.dumps([d, r.qid, r.run, r.queries, r.ranked_ids, r.details.get("citations", [])]).encode())
    return h.hexdigest()[:20]


def code_version(*modules) -> str:
    """A digest of the given modules' source (a cached table is recomputed when the code that made it changes)."""
    return hashlib.sha256("".join(inspect.getsource(m) for m in modules).encode()).hexdigest()[:12]


def cached(name: str, key: str, compute: Callable[[], object], folder: Path | None = None):
    """``compute()``, kept on disk under ``name`` and ``key`` (its inputs' digest) and read back when present."""
    folder = Path(folder) if folder is not None else cache_dir()
    path = folder / f"{name}-{key}.pkl"
    if path.exists():
        try:
            return pickle.loads(path.read_bytes())
        except Exception:  # a cache written by other library versions, or cut short: computed again
            pass
    value = compute()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(value))
    tmp.replace(path)
    return value


def condition_loss(records: ConditionRecords, condition: str = "", designs: Sequence[str] = LOSS_DESIGNS,
                   article: dict | None = None) -> list[DesignLoss]:
    """Each design's loss in one condition from its complete saved runs (``records``, as
    ``lib.report.queries.condition_records`` reads them; ``records.profile``: that condition's profile).
    No model is called."""
    rec, profile = records, records.profile
    if not any(res for res, _ in rec.runs.values()) and not any(ns for _, ns in rec.runs.values()):
        return [DesignLoss(condition, d, status="no saved run") for d in designs]
    article = article if article is not None else article_search_use()
    qs, search = rec.questions, rec.search
    dense_same = None
    if search is not None and rec.dense is not None:
        dense_same = float(np.mean([rec.dense.get(q.qid) == list(search(q.text))[:len(rec.dense.get(q.qid) or [])]
                                    for q in qs]))
    out = []
    for d in designs:
        complete, not_scored = rec.runs[d]
        if not complete:
            out.append(DesignLoss(condition, d, status="no complete run" if not_scored else "no saved run",
                                  not_scored=not_scored))
            continue
        res = analyse(condition, d, complete, qs, search, profile.rrf_k, profile.agent_max_searches, rec.shown[d],
                      profile.bootstrap_resamples, profile.bootstrap_seed, article)
        res.not_scored, res.dense_reproduced = not_scored, dense_same
        out.append(res)
    return out


def conditions_loss(records: dict[str, "ConditionRecords | str"], designs: Sequence[str] = LOSS_DESIGNS) -> list[DesignLoss]:
    """:func:`condition_loss` in every condition of ``records`` (``lib.report.queries.conditions_records``:
    every condition of the grid); a condition whose saved records could not be read is named with why."""
    out: list[DesignLoss] = []
    article = article_search_use()
    for cname, rec in records.items():
        if isinstance(rec, str):
            out += [DesignLoss(cname, d, status=rec) for d in designs]
        else:
            out += condition_loss(rec, cname, designs, article)
    never = {d for d in OPTIONAL_DESIGNS if all(x.status == "no saved run" for x in out if x.design == d)}
    return [x for x in out if x.design not in never]


def status_table(losses: Sequence[DesignLoss]) -> pd.DataFrame:
    """Per condition and design: the runs analysed, the runs not scored and why, questions, and the share
    of results whose saved list the searches rebuilt exactly."""
    return pd.DataFrame([{"condition": x.condition, "design": x.design,
                          "runs analysed": ", ".join(map(str, x.runs)) or "—", "questions": x.questions,
                          "not scored": "; ".join(x.not_scored) or "—", "status": x.status or "analysed",
                          "saved list rebuilt": x.accounts["mrr_at_10"]["reproduced"] if x.analysed else np.nan,
                          "dense run rebuilt": x.dense_reproduced if x.dense_reproduced is not None else np.nan}
                         for x in losses])


def combined(losses: Sequence[DesignLoss], name: str) -> pd.DataFrame:
    """One table (``name``: a key of :attr:`DesignLoss.tables`) over every analysed condition and design,
    the condition and design first."""
    frames = [x.tables[name].assign(condition=x.condition, design=x.design) for x in losses
              if x.analysed and name in x.tables]
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    return df[["condition", "design", *[c for c in df.columns if c not in ("condition", "design")]]]


def account_table(losses: Sequence[DesignLoss], metric: str = "mrr_at_10") -> pd.DataFrame:
    """The loss and its parts in one measure, one row per analysed condition and design."""
    keep = ["questions", "question_mean", "fused_mean", "loss", "merge_part", "queries_part", "stop_part", "merge_share",
            "queries_share", "stop_share", "best_mean", "oracle_mean", "extra_mean", "worse_share", "better_share"]
    return pd.DataFrame([{"condition": x.condition, "design": x.design, **{k: x.accounts[metric][k] for k in keep}}
                         for x in losses if x.analysed])


# --------------------------------------------------------------------------- the two-part loop
TWO_PART_STEPS = ("cited", "read, not cited", "shown, not read", "in its list, never shown", "never found")


def paper_step(result: Result, paper: str) -> str:
    """How far one paper got in a tool-calling loop (:data:`TWO_PART_STEPS`): cited; read but not cited;
    shown by one of its searches but not read; in its ranked list (the fusion of its searches, depth 50)
    but never among the titles shown; or in none of its searches' results at all."""
    if paper in result.details.get("citations", []):
        return "cited"
    if paper in result.details.get("read", []):
        return "read, not cited"
    if paper in shown_ids(result):
        return "shown, not read"
    if paper in result.ranked_ids:
        return "in its list, never shown"
    return "never found"


def two_part_table(results: Sequence[Result], questions: Sequence[Question]) -> pd.DataFrame:
    """Per two-part question and run of a tool-calling loop: each paper's step (:func:`paper_step`; ``first``:
    the paper that got further, ties by the question's order), the searches the model made of its own, and
    ``failed``: the step at which the other paper was lost (``both cited`` when none was)."""
    rows = []
    order = {s: i for i, s in enumerate(TWO_PART_STEPS)}
    for r, q in with_questions(results, questions):
        papers = relevant_ids(q.source_id)
        if len(papers) != 2:
            continue
        steps = sorted(((paper_step(r, p), p) for p in papers), key=lambda sp: order[sp[0]])
        rows.append({"qid": r.qid, "run": r.run, "first": steps[0][1], "first_step": steps[0][0],
                     "second": steps[1][1], "second_step": steps[1][0], "model_searches": len(written_queries(r)),
                     "failed": "both cited" if steps[1][0] == "cited" else steps[1][0]})
    return pd.DataFrame(rows, columns=["qid", "run", "first", "first_step", "second", "second_step", "model_searches",
                                       "failed"])


def two_part_counts(table: pd.DataFrame) -> pd.DataFrame:
    """How many (question, run) pairs lost the second paper at each step, and their share."""
    n = len(table)
    steps = ["both cited", *TWO_PART_STEPS[1:]]
    return pd.DataFrame([{"failed": s, "loops": int((table.failed == s).sum()),
                          "share": float((table.failed == s).mean()) if n else np.nan,
                          "no_search_of_its_own": int(((table.failed == s) & (table.model_searches == 0)).sum())}
                         for s in steps])
