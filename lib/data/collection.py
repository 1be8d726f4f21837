"""The collection: source papers drawn from a window, TF-IDF lookalikes, random fillers.

Lookalikes are each source's nearest papers by cosine similarity of TF-IDF vectors over
title + abstract (Salton & Buckley 1988; scikit-learn's ``TfidfVectorizer``), taken from the
whole pool, so that every source has close competitors in the collection.
"""
from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Iterable

import numpy as np

from ..config import ROOT, Profile
from ..errors import DataError
from ..io import write_json, write_jsonl
from .draw import draw_sources, tfidf_neighbours
from .papers import Paper, read_collection, read_papers
from .study import import_study
from .arxiv_api import fetch_window
import hashlib


def is_new_submission(paper: Paper) -> bool:
    """True when the arXiv id's YYMM is no earlier than one month before the first listing.

    The daily listings also carry replaced and cross-listed old papers; the article's window means
    papers *submitted* in it (after the models' training cut-off), so old ids are not sources.
    """
    head = paper.id.split(".")[0]
    if len(head) != 4 or not head.isdigit():
        return False
    year, month = 2000 + int(head[:2]), int(head[2:])
    seen_year, seen_month = int(paper.first_seen[:4]), int(paper.first_seen[5:7])
    return (seen_year * 12 + seen_month) - (year * 12 + month) <= 1


def eligible_sources(pool: Iterable[Paper], start: str, end: str, categories: Iterable[str]) -> list[Paper]:
    """Papers first listed in [start, end] with one of the categories, new submissions only, by id."""
    cats = set(categories)
    out = [p for p in pool
           if start <= p.first_seen <= end and cats & set(p.categories) and is_new_submission(p)]
    return sorted(out, key=lambda p: p.id)


def build_collection(pool: list[Paper], *, n_sources: int, n_papers: int, n_lookalikes: int, seed: int,
                     window: tuple[str, str], categories: Iterable[str],
                     given_sources: Iterable[str] = ()) -> tuple[list[dict], dict]:
    """Draw sources, add their lookalikes, fill at random to ``n_papers``; return rows and stats."""
    given_sources = list(given_sources)
    pool_ids = {p.id for p in pool}
    unknown = [g for g in given_sources if g not in pool_ids]
    if unknown:
        raise DataError(f"source_ids: {len(unknown)} given id(s) not in the paper pool: {unknown[:5]}")
    eligible = eligible_sources(pool, window[0], window[1], categories)
    by_id = {p.id: p for p in pool}
    # given sources need not be in the window: a user's own question may be about any paper
    eligible_plus = sorted({**{p.id: p for p in eligible}, **{g: by_id[g] for g in given_sources}}.values(),
                           key=lambda p: p.id)
    sources = draw_sources(eligible_plus if given_sources else eligible, n_sources, seed, given_sources)
    if len(sources) < n_sources:
        raise DataError(f"only {len(sources)} eligible source papers in {window}, {n_sources} asked for")
    neighbours = tfidf_neighbours(pool, [p.id for p in sources], n_lookalikes)
    role: dict[str, str] = {p.id: "source" for p in sources}
    for p in sources:
        for nid, _ in neighbours[p.id]:
            role.setdefault(nid, "lookalike")
    if len(role) > n_papers:
        raise DataError(f"n_papers={n_papers} is smaller than sources + lookalikes ({len(role)})")
    rng = np.random.default_rng(seed + 1)
    rest = sorted(pid for pid in pool_ids if pid not in role)
    for j in rng.permutation(len(rest))[: n_papers - len(role)]:
        role[rest[j]] = "filler"
    rows = [{"id": pid, "title": by_id[pid].title, "abstract": by_id[pid].abstract,
             "categories": list(by_id[pid].categories), "first_seen": by_id[pid].first_seen, "role": r}
            for pid, r in sorted(role.items())]
    top_sims = [neighbours[p.id][0][1] for p in sources]
    stats = {
        "n_papers": len(rows),
        "by_role": dict(Counter(r["role"] for r in rows)),
        "by_category": dict(Counter(c for r in rows for c in r["categories"] if c in set(categories))),
        "first_seen_range": [min(r["first_seen"] for r in rows), max(r["first_seen"] for r in rows)],
        "source_first_seen_range": [min(p.first_seen for p in sources), max(p.first_seen for p in sources)],
        "eligible_sources": len(eligible),
        "pool_size": len(pool),
        "top_neighbour_tfidf": {
            "median": statistics.median(top_sims),
            "q1": float(np.quantile(top_sims, 0.25)),
            "q3": float(np.quantile(top_sims, 0.75)),
        },
        "source_order": [p.id for p in sources],
        "lookalikes": {p.id: neighbours[p.id] for p in sources},
    }
    return rows, stats


def write_collection(rows: list[dict], stats: dict, profile: Profile) -> tuple[Path, Path]:
    """Write ``collection.jsonl`` and ``collection_manifest.json`` into the profile's data folder."""
    out = write_jsonl(profile.data_dir / "collection.jsonl", rows)
    manifest = {**stats, "seed": profile.seed, "profile": profile.name,
                "window": [profile.window_start, profile.window_end], "categories": profile.categories,
                "collection_source": profile.collection_source,
                "snapshot": profile.settings.get("snapshot_path")}
    write_json(profile.data_dir / "collection_manifest.json", manifest)
    return out, profile.data_dir / "collection_manifest.json"


def filter_pool(pool: list[Paper], before: str | None = None, exclude: Iterable[str] = ()) -> list[Paper]:
    """The pool restricted to papers first listed before ``before`` and not in ``exclude`` (ids):
    how the dev collection is drawn from pre-window papers only, apart from the default collection."""
    drop = set(exclude)
    return [p for p in pool if (before is None or p.first_seen < before) and p.id not in drop]


def load_pool(profile: Profile) -> list[Paper]:
    """The paper pool for a profile: the bundled snapshot, or the arXiv API (``arxiv_api`` source),
    restricted by ``pool_before`` and ``pool_exclude`` (collections whose papers are left out)."""
    if profile.collection_source == "snapshot":
        pool = read_papers(profile.path("snapshot_path"))
    elif profile.collection_source == "arxiv_api":
        pool = fetch_window(profile.categories, profile.window_start, profile.window_end,
                            cache_dir=profile.data_dir / "arxiv_cache")
    else:
        pool = None
    if pool is not None:
        before = profile.settings.get("pool_before")
        excluded = [r["id"] for path in profile.settings.get("pool_exclude") or []
                    for r in read_collection(ROOT / path)]
        return filter_pool(pool, before, excluded) if (before or excluded) else pool
    raise DataError(f"profiles/{profile.name}.yaml: field 'collection_source': unknown value "
                    f"{profile.collection_source!r} (snapshot | arxiv_api)")


def collection_inputs_key(profile: Profile) -> str:
    """A hash of everything the collection depends on: the draw settings and the snapshot's bytes."""
    keys = ["collection_source", "categories", "window_start", "window_end", "n_sources", "n_papers",
            "n_lookalikes", "seed", "source_ids"]
    # the pool filters enter the key only when set, so older collections keep their key
    keys += [k for k in ("pool_before", "pool_exclude") if profile.settings.get(k)]
    h = hashlib.sha256(json.dumps({k: profile.settings.get(k) for k in keys}, sort_keys=True).encode())
    if profile.collection_source == "snapshot":
        with open(profile.path("snapshot_path"), "rb") as fh:
            while chunk := fh.read(1 << 22):
                h.update(chunk)
    return h.hexdigest()[:20]


def make_collection(profile: Profile, force: bool = False) -> tuple[list[dict], dict]:
    """Notebook 01's whole step: pool, draw, write; returns rows and the manifest.

    The result is cached keyed by its inputs: when the saved manifest carries the same key, the
    saved collection is read instead of drawn again (for the arXiv API source, whose pool can
    change, the key covers the settings and the cached responses make a redraw cheap anyway).
    """
    if profile.collection_source == "documents":  # a study of your own documents: imported, not drawn
        return import_study(profile, force)
    key = collection_inputs_key(profile)
    out = profile.data_dir / "collection.jsonl"
    man = profile.data_dir / "collection_manifest.json"
    if not force and out.exists() and man.exists():
        manifest = json.loads(man.read_text())
        if manifest.get("inputs_key") == key:
            return read_collection(out), manifest
    pool = load_pool(profile)
    rows, stats = build_collection(
        pool, n_sources=profile.n_sources, n_papers=profile.n_papers, n_lookalikes=profile.n_lookalikes,
        seed=profile.seed, window=(profile.window_start, profile.window_end), categories=profile.categories,
        given_sources=profile.source_ids or ())
    write_collection(rows, {**stats, "inputs_key": key}, profile)
    return rows, json.loads(man.read_text())
