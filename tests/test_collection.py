import gzip
import json

import pytest

from lib.errors import DataError
from lib.data.collection import (build_collection, draw_sources, eligible_sources, is_new_submission,
                            read_papers, tfidf_neighbours, Paper)


def P(i, title, abstract, first_seen="2026-07-10", cats=("cs.CL",)):
    return Paper(i, title, abstract, tuple(cats), first_seen)


def test_snapshot_parses_every_row(snapshot):
    assert len(snapshot) == 63903
    p = snapshot[0]
    assert p.id and p.title and p.abstract and p.categories and len(p.first_seen) == 10


def test_bad_rows_name_file_row_and_field(tmp_path):
    path = tmp_path / "papers.jsonl.gz"
    good = {"id": "2607.00001", "title": "A", "abstract": "B", "categories": ["cs.CL"], "first_seen": "2026-07-02"}
    with gzip.open(path, "wt") as fh:
        fh.write(json.dumps(good) + "\n")
        fh.write(json.dumps({**good, "id": "2607.00002", "categories": "cs.CL"}) + "\n")
    with pytest.raises(DataError, match=r"papers.jsonl.gz: line 2: field 'categories'"):
        read_papers(path)
    path2 = tmp_path / "p.jsonl"
    path2.write_text(json.dumps(good) + "\n" + "{not json\n")
    with pytest.raises(DataError, match="line 2: not valid JSON"):
        read_papers(path2)
    path3 = tmp_path / "p3.jsonl"
    path3.write_text(json.dumps({k: v for k, v in good.items() if k != "abstract"}) + "\n")
    with pytest.raises(DataError, match="line 1: missing field 'abstract'"):
        read_papers(path3)


def test_window_keeps_new_submissions_only():
    old = P("1708.04326", "t", "a", "2026-07-13")
    new = P("2607.01234", "t", "a", "2026-07-13")
    prev_month = P("2606.09999", "t", "a", "2026-07-01")
    assert not is_new_submission(old) and is_new_submission(new) and is_new_submission(prev_month)
    pool = [old, new, prev_month, P("2607.00002", "t", "a", "2026-08-30"), P("2607.00003", "t", "a", cats=("cs.CV",))]
    got = [p.id for p in eligible_sources(pool, "2026-07-01", "2026-08-22", ["cs.CL"])]
    assert got == ["2606.09999", "2607.01234"]


def test_draw_is_seeded_and_nested():
    pool = [P(f"2607.{i:05d}", "t", "a") for i in range(200)]
    a = draw_sources(pool, 30, seed=5)
    b = draw_sources(pool, 30, seed=5)
    c = draw_sources(pool, 10, seed=5)
    d = draw_sources(pool, 30, seed=6)
    assert [p.id for p in a] == [p.id for p in b]
    assert [p.id for p in c] == [p.id for p in a[:10]]  # pilot draw is a prefix of the full one
    assert [p.id for p in a] != [p.id for p in d]
    given = draw_sources(pool, 3, seed=5, given=["2607.00150"])
    assert given[0].id == "2607.00150" and len(given) == 3


def test_tfidf_lookalikes_find_the_topical_twin():
    pool = [
        P("a", "Sparse attention for long context decoding", "We prune the key value cache with sparse attention."),
        P("b", "Key value cache compression", "Sparse attention and key value cache eviction for long context."),
        P("c", "Protein folding with diffusion", "Diffusion models predict protein structures."),
        P("d", "Protein design", "Generative diffusion for protein design and folding."),
        P("e", "Reinforcement learning for robots", "Robots learn grasping with reinforcement learning."),
        P("f", "Robot grasping", "Grasping policies for robots trained by reinforcement learning."),
    ]
    nb = tfidf_neighbours(pool, ["a", "c", "e"], k=2)
    assert nb["a"][0][0] == "b" and nb["c"][0][0] == "d" and nb["e"][0][0] == "f"
    assert all(pid != q for q, lst in nb.items() for pid, _ in lst)  # never itself
    assert nb["a"][0][1] > nb["a"][1][1]


def test_a_handful_of_texts_sharing_no_word_have_no_lookalikes():
    # five short notes of a study: no word in two of them, so TF-IDF keeps none (scikit-learn refused: page 01 crashed)
    pool = [P(c, f"note {c}", t) for c, t in zip("abcde", ("pump seal leaked", "valve stuck open", "gearbox noise",
                                                           "blade crack found", "oil filter clogged"))]
    pool = [P(p.id, t, p.abstract) for p, t in zip(pool, ("Pump", "Valve", "Gearbox", "Blade", "Filter"))]
    assert tfidf_neighbours(pool, ["a", "c"], k=2) == {"a": [], "c": []}


@pytest.fixture(scope="module")
def pool(snapshot):
    """A real pool, about a seventh of the snapshot: the window's papers, the two weeks before it (papers
    outside the window that must never be drawn as sources) and 200 from the year before (the draw's
    TF-IDF over the whole snapshot is what the pilot reproduction test checks)."""
    return [p for p in snapshot if p.first_seen >= "2026-06-15"] + [p for p in snapshot if p.first_seen < "2025-06-01"][:200]


def test_build_collection_roles_and_counts(pool):
    snapshot = pool
    rows, stats = build_collection(snapshot, n_sources=20, n_papers=300, n_lookalikes=5, seed=20260701,
                                   window=("2026-07-01", "2026-08-22"), categories=["cs.AI", "cs.CL", "cs.IR", "cs.LG"])
    assert len(rows) == 300 and len({r["id"] for r in rows}) == 300
    assert stats["by_role"]["source"] == 20
    assert stats["by_role"]["source"] + stats["by_role"]["lookalike"] + stats["by_role"]["filler"] == 300
    ids = {r["id"] for r in rows}
    for sid, nbs in stats["lookalikes"].items():
        assert len(nbs) == 5 and all(n in ids for n, _ in nbs)
    src = [r for r in rows if r["role"] == "source"]
    assert all("2026-07-01" <= r["first_seen"] <= "2026-08-22" for r in src)
    q = stats["top_neighbour_tfidf"]
    assert 0 < q["q1"] <= q["median"] <= q["q3"] < 1
    with pytest.raises(DataError, match="not in the paper pool"):
        build_collection(snapshot, n_sources=2, n_papers=50, n_lookalikes=2, seed=1, window=("2026-07-01", "2026-08-22"),
                         categories=["cs.CL"], given_sources=["9999.99999"])


def test_given_sources_are_included(pool):
    snapshot = pool
    old = next(p for p in snapshot if p.first_seen < "2025-06-01")
    rows, stats = build_collection(snapshot, n_sources=5, n_papers=60, n_lookalikes=2, seed=3,
                                   window=("2026-07-01", "2026-08-22"), categories=["cs.CL"], given_sources=[old.id])
    assert stats["source_order"][0] == old.id
    assert {r["id"]: r["role"] for r in rows}[old.id] == "source"


def test_make_collection_is_cached_by_its_inputs(tmp_path, monkeypatch, pool):
    import lib.data.collection as col
    from lib.config import load_profile

    cfg = load_profile("pilot", data_dir=str(tmp_path), n_papers=40, n_sources=3)
    with monkeypatch.context() as m:
        m.setattr(col, "load_pool", lambda profile: pool)
        rows, man = col.make_collection(cfg)
    calls = []
    monkeypatch.setattr(col, "load_pool", lambda profile: calls.append(1) or [])
    rows2, man2 = col.make_collection(cfg)  # same inputs: read back, no pool read
    assert calls == [] and rows2 == rows and man2["inputs_key"] == man["inputs_key"]
    cfg2 = load_profile("pilot", data_dir=str(tmp_path), n_papers=41, n_sources=3)
    with pytest.raises(DataError):  # a changed setting draws again (here from the empty stub pool)
        col.make_collection(cfg2)
    assert calls == [1]


def test_the_collection_is_read_once_while_its_file_is_unchanged_and_its_digest_follows_its_content(tmp_path):
    """pipeline.collection keeps the rows of a file it has read (same path, size, inode, mtime); the digest
    that enters every inputs key is taken once of those rows, and of any other rows afresh."""
    import os
    import shutil

    from lib import pipeline
    from lib.config import ROOT, load_profile

    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(ROOT / "data" / "pilot" / "collection.jsonl", data / "collection.jsonl")
    cfg = load_profile("pilot", data_dir=str(data), results_dir=str(tmp_path / "results"))
    rows = pipeline.collection(cfg)
    assert pipeline.collection(cfg) is rows  # read once
    first = pipeline.collection_digest(rows)
    assert pipeline.collection_digest([dict(r) for r in rows]) == first  # the same content, the same digest
    edited = [dict(r) for r in rows]
    edited[0]["abstract"] += " (revised)"
    assert pipeline.collection_digest(edited) != first
    path = data / "collection.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[1:] + lines[:1]))  # other order, other file state: read again
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    again = pipeline.collection(cfg)
    assert again is not rows and pipeline.collection_digest(again) != first  # the order is part of the digest


def test_the_question_rows_are_read_once_per_file_content_and_papers_and_each_caller_gets_its_own(tmp_path):
    """pipeline.all_questions keeps the rows it read by the file's content and the papers list itself: asked
    again it reads nothing, an edit that keeps the file's size and time is read again, other papers are checked
    again, and a caller that changes its rows changes no other caller's."""
    import os
    import shutil

    from lib import pipeline
    from lib.config import ROOT, load_profile

    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(ROOT / "data" / "pilot" / "collection.jsonl", data / "collection.jsonl")
    shutil.copy(ROOT / "data" / "pilot" / "questions.csv", data / "questions.csv")
    cfg = load_profile("pilot", data_dir=str(data), results_dir=str(tmp_path / "results"),
                       questions_path=str(data / "questions.csv"))
    papers = pipeline.collection(cfg)
    rows = pipeline.all_questions(cfg, papers)
    rows[0]["question"] = "changed by this caller"
    again = pipeline.all_questions(cfg, papers)
    assert again[0]["question"] != "changed by this caller" and again == pipeline.all_questions(cfg, papers)
    path = data / "questions.csv"
    before = path.stat()
    text = path.read_text()
    first = again[0]["question"]
    path.write_text(text.replace(first, first[::-1], 1))  # the same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert pipeline.all_questions(cfg, papers)[0]["question"] == first[::-1]
    with pytest.raises(DataError, match="source_id"):  # other papers: checked against them, not the kept rows
        pipeline.all_questions(cfg, [p for p in papers if p["id"] != again[0]["source_id"]])
