"""Drawing sources and finding their lookalikes, shared by the drawn collection
(``lib/data/collection.py``) and a study of one's own documents (``lib/data/study.py``).

Lookalikes are each source's nearest papers by cosine similarity of TF-IDF vectors over title +
abstract (Salton & Buckley 1988; scikit-learn's ``TfidfVectorizer``)."""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .papers import Paper


def draw_sources(eligible: list[Paper], n: int, seed: int, given: Iterable[str] = ()) -> list[Paper]:
    """Given ids first, then a seeded permutation of the eligible papers, cut to ``n``.

    A permutation (not a fresh sample per size) makes smaller draws prefixes of larger ones:
    the pilot's 20 sources are the first 20 of the default 300.
    """
    by_id = {p.id: p for p in eligible}
    given = list(dict.fromkeys(given))
    chosen = [by_id[g] for g in given if g in by_id]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(eligible))
    taken = {p.id for p in chosen}
    for i in order:
        if len(chosen) >= max(n, len(given)):
            break
        if eligible[i].id not in taken:
            chosen.append(eligible[i])
            taken.add(eligible[i].id)
    return chosen


def tfidf_neighbours(pool: list[Paper], query_ids: list[str], k: int) -> dict[str, list[tuple[str, float]]]:
    """For each query paper, its ``k`` most similar other papers of the pool by TF-IDF cosine.

    Ties are broken by id so the result is deterministic.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn is heavy and only this step needs it

    # a word in one text alone links nothing, so words must be in two; a handful of short texts may share none,
    # and then no text has a lookalike (scikit-learn refuses an empty vocabulary)
    vec = TfidfVectorizer(stop_words="english", sublinear_tf=True, min_df=2, dtype=np.float32)
    try:
        matrix = vec.fit_transform([p.text for p in pool])  # rows are L2-normalised
    except ValueError:
        if len(pool) >= 50:
            raise
        return {qid: [] for qid in query_ids}
    index = {p.id: i for i, p in enumerate(pool)}
    ids = np.array([p.id for p in pool])
    out: dict[str, list[tuple[str, float]]] = {}
    for qid in query_ids:
        i = index[qid]
        sims = (matrix @ matrix[i].T).toarray().ravel()
        sims[i] = -1.0
        m = min(k + 10, len(sims) - 1)
        top = np.argpartition(-sims, m)[: m + 1] if m < len(sims) - 1 else np.arange(len(sims))
        top = top[top != i]
        ranked = sorted(top, key=lambda j: (-round(float(sims[j]), 6), ids[j]))[:k]
        out[qid] = [(str(ids[j]), float(sims[j])) for j in ranked]
    return out
