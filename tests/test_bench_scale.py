"""`make bench ARGS="--scale N"`: the dense and BM25 measurements at scale, run small on real code (the
1M figures themselves are made by the bench, not here), and the report's speed table that shows them."""
import json

import numpy as np
import pytest

from lib.config import ROOT
from lib.data.papers import paper_text, read_collection
from lib.report.bench import (bm25_at_scale, collection_vocabulary, dense_at_scale, synthetic_chunks,
                              unit_vectors)
from lib.report.index_page import scale_rows, speed_section


@pytest.fixture(scope="module")
def vocabulary():
    papers = read_collection(ROOT / "data" / "collection.jsonl")[:300]
    return collection_vocabulary([paper_text(p) for p in papers])


def test_the_vocabulary_is_the_collections_words_most_frequent_first(vocabulary):
    words, counts = vocabulary
    assert counts == sorted(counts, reverse=True) and len(words) == len(set(words)) > 1000
    assert words[0] in {"the", "of", "and", "to", "a", "in"}  # English function words lead, as in any abstract set
    assert all(len(w) >= 2 and w == w.lower() for w in words)


def test_synthetic_chunks_draw_by_frequency_reproducibly(vocabulary):
    words, counts = vocabulary
    a = [t for part in synthetic_chunks(2_500, words, counts, 40, seed=0, block=1_000) for t in part]
    b = [t for part in synthetic_chunks(2_500, words, counts, 40, seed=0, block=1_000) for t in part]
    assert a == b and len(a) == 2_500 and all(len(t.split()) == 40 for t in a)
    drawn = " ".join(a).split()
    share = drawn.count(words[0]) / len(drawn)
    assert share == pytest.approx(counts[0] / sum(counts), rel=0.1)  # the most frequent word, as often as in the papers


def test_bm25_at_scale_builds_reads_back_memory_mapped_and_finds_each_querys_chunk(vocabulary, tmp_path):
    words, counts = vocabulary
    row = bm25_at_scale(5_000, words, counts, tmp_path / "bm25", label="5000", words=60, queries=50,
                        log=lambda m: None)["bm25_scale_5000"]
    assert row["rows"] == 5_000 and row["queries"] == 50 and row["disk_mb"] > 0
    assert row["found_at_10"] >= 0.9  # twelve of a chunk's own words find it among 5,000
    assert 0 < row["median_ms"] <= row["p95_ms"]
    assert not (tmp_path / "bm25").exists()  # the scratch index is removed


def test_the_speed_table_shows_the_scale_rows_in_size_and_backend_order(tmp_path):
    ids = [f"v{i:05d}" for i in range(3_000)]
    steps = dense_at_scale(ids, unit_vectors(3_000, 32, seed=0), unit_vectors(20, 32, seed=1), label="3000",
                           ef_sweep=(16, 256), log=lambda m: None)
    hnsw = steps["dense_scale_3000_faiss-hnsw"]
    assert steps["dense_scale_3000_faiss-flat"]["recall_at_10"] == 1.0
    assert hnsw["sweep"]["256"]["recall_at_10"] >= hnsw["sweep"]["16"]["recall_at_10"]
    steps["bm25_scale_3000"] = {"rows": 3_000, "summary": "bm25 row"}
    rows = scale_rows(steps)
    assert [r[1].split(" search")[0] for r in rows[:3]] == ["exact (numpy)", "exact (faiss flat)", "approximate (faiss HNSW)"]
    assert "ef_search 16:" in rows[2][2] and rows[2][2].index("16:") < rows[2][2].index("256:")
    assert rows[3][0] == "BM25 at scale"
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"machine": {"threads": 2}, "steps": steps}))
    page = speed_section(bench)
    assert page.count("dense search at scale") == 3 and "BM25 at scale" in page
    assert np.isfinite(hnsw["build_s"])
