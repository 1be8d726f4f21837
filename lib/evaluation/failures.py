"""Failure cases: where LLM designs differ from dense, and the words the agent added.

The article read the agent's queries by hand; here the added words are counted: for each query
the agent wrote, the content words (scikit-learn's English stop-word list removed) that are not
in the question, and whether questions where it added such words lost the source more often.
"""
from __future__ import annotations

import re

import pandas as pd
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from ..designs import BASELINE, Result, llm_design_names

_TOKEN = re.compile(r"[a-z0-9][a-z0-9\-]*")


def content_words(text: str) -> list[str]:
    return [w for w in _TOKEN.findall(text.lower()) if w not in ENGLISH_STOP_WORDS]


def added_words(question: str, query: str) -> list[str]:
    """Content words of ``query`` not in ``question``, in order, without repeats."""
    have = set(content_words(question))
    out: list[str] = []
    for w in content_words(query):
        if w not in have and w not in out:
            out.append(w)
    return out


def differing_cases(pq: pd.DataFrame, results: list[Result], questions: dict[str, str]) -> pd.DataFrame:
    """Every question where multiquery's or the agent's rank of the source differs from dense:
    dense's rank, the design's rank per run, and every query written, exactly as written."""
    dense_rank = pq[pq.design == BASELINE].set_index("qid")["rank"]
    by_key = {(r.design, r.run, r.qid): r for r in results}
    rows = []
    for (d, run), g in pq[pq.design.isin(llm_design_names())].groupby(["design", "run"]):
        for _, row in g.iterrows():
            dr = dense_rank.get(row.qid)
            if _same(dr, row["rank"]):
                continue
            r = by_key[(d, run, row.qid)]
            rows.append({"qid": row.qid, "design": d, "run": run, "dense_rank": _fmt(dr), "design_rank": _fmt(row["rank"]),
                         "change": _change(dr, row["rank"]), "question": questions.get(row.qid, ""),
                         "queries_written": " || ".join(r.queries[1:]), "stop_reason": r.stop_reason})
    return pd.DataFrame(rows)


def _same(a, b) -> bool:
    na, nb = a is None or pd.isna(a), b is None or pd.isna(b)
    return (na and nb) or (not na and not nb and int(a) == int(b))


def _fmt(r):
    return ">50" if r is None or pd.isna(r) else int(r)


def _change(dense, design) -> str:
    d = 10**6 if dense is None or pd.isna(dense) else dense
    x = 10**6 if design is None or pd.isna(design) else design
    return "better" if x < d else "worse"


def agent_added_words(results: list[Result], pq: pd.DataFrame, questions: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per agent query: the words added. Per group (added words or not): how often the source was
    lost at 5 where dense had it."""
    dense_hit = pq[pq.design == BASELINE].set_index("qid")["recall_at_5"]
    agent = pq[pq.design == "agent"].set_index(["run", "qid"])["recall_at_5"]
    qrows, arows = [], []
    for r in results:
        if r.design != "agent":
            continue
        words = [added_words(questions[r.qid], q) for q in r.queries[1:]]
        for q, w in zip(r.queries[1:], words):
            qrows.append({"qid": r.qid, "run": r.run, "query": q, "added_words": " ".join(w), "n_added": len(w)})
        arows.append({"qid": r.qid, "run": r.run, "searched_again": len(r.queries) > 1,
                      "added_any": any(words), "dense_hit": dense_hit.get(r.qid), "agent_hit": agent.get((r.run, r.qid))})
    per_q = pd.DataFrame(arows)
    if per_q.empty:
        return pd.DataFrame(qrows), per_q
    per_q["lost"] = (per_q.dense_hit == 1) & (per_q.agent_hit == 0)
    per_q["won"] = (per_q.dense_hit == 0) & (per_q.agent_hit == 1)
    summary = per_q.groupby("added_any").agg(cases=("qid", "count"), lost=("lost", "sum"), won=("won", "sum"),
                                             dense_had_it=("dense_hit", "sum")).reset_index()
    summary[["lost", "won", "dense_had_it"]] = summary[["lost", "won", "dense_had_it"]].astype(int)
    summary["loss_rate_where_dense_had_it"] = summary["lost"] / summary["dense_had_it"].where(summary["dense_had_it"] > 0)
    return pd.DataFrame(qrows), summary
