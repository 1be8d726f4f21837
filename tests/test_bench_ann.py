"""`make bench ARGS="--ann real,1000000"`: recall against speed per engine, run small on real code and the
snapshot's real vectors (the shipped figures themselves are made by the bench), and the docs, chart and
defaults held to results/bench.json."""
import json

import numpy as np
import pytest

from lib.config import ROOT, load_profile
from lib.report import bench_ann as ba
from lib.report.bench_ann_chart import chart, series
from lib.report.bench_docs import ANN_BLOCK, ANN_CHART, ann_docs, hnsw_defaults

BENCH = json.loads((ROOT / "results" / "bench.json").read_text())["steps"]


@pytest.fixture(scope="module")
def real():
    """3,000 of the snapshot's real paper vectors and 40 others as queries (not among them)."""
    m = np.load(ROOT / "data" / "snapshot_embeddings" / "all-MiniLM-L6-v2.f16.npy", mmap_mode="r")
    return ba.unit_rows(m[:3_000]), ba.unit_rows(m[10_000:10_040])


def test_exact_neighbours_are_a_full_sort_done_in_blocks_and_leave_out_each_querys_own_row(real):
    base, queries = real
    idx, sim = ba.exact_neighbours(base, queries, 20, qblock=7, bblock=500)
    full = queries @ base.T
    assert np.array_equal(idx, np.argsort(-full, axis=1, kind="stable")[:, :20])
    assert np.allclose(sim, np.take_along_axis(full, idx, 1), atol=1e-6)
    near = ba.query_distances(base, queries, idx, "queries")
    assert near["n"] == 40 and near["q50"] == pytest.approx(np.median(ba.chord(full.max(axis=1))), abs=1e-6)
    own, _ = ba.exact_neighbours(base[:50], base[:50], 1, exclude=np.arange(50), bblock=16)
    assert (own[:, 0] != np.arange(50)).all()
    assert np.array_equal(own[:, 0], np.argsort(-(base[:50] @ base[:50].T - 3 * np.eye(50)), axis=1)[:, 0])


def test_grown_rows_lie_on_the_sphere_at_their_parents_nearest_neighbour_distance(real, tmp_path):
    base, _ = real
    nn = ba.real_nn_distances(base, tmp_path / "nn.npy")
    grown = ba.grown_set(base, nn, 9_000, tmp_path / "grown", seed=0)
    assert grown.shape == (9_000, 384) and np.allclose(np.linalg.norm(grown, axis=1), 1, atol=1e-5)
    assert np.allclose(grown[:3_000], base, atol=1e-6)  # the real rows first, as they are
    assert np.array_equal(np.asarray(grown), ba.grow(base, nn, 9_000, seed=0))  # seeded: the same rows again
    # each synthetic row's nearest real row is at most its parent's distance away: no row strays from its cluster
    _, sim = ba.exact_neighbours(base, np.asarray(grown[3_000:]), 1)
    assert np.quantile(ba.chord(sim[:, 0]), 0.99) <= np.quantile(nn, 0.99) + 1e-3
    table = ba.grown_distances(grown, 3_000, nn, sample=500)
    assert table["rows"] == 9_000 and table["synthetic"]["n"] == table["real_in_grown"]["n"] == 500
    assert table["synthetic"]["q50"] == pytest.approx(table["real"]["q50"], rel=0.15)
    assert 0 <= table["ks_synthetic_vs_real"] < 0.2


def test_the_sweep_measures_every_engine_and_resumes_from_its_parts(real, tmp_path):
    base, queries = real
    check = ba.Checkpoint(tmp_path / "parts.json")
    parts = ba.sweep(base, queries, tmp_path, check, hnsw_settings=((8, 40),), ef_sweep=(4, 128), nlist=16,
                     nprobe_sweep=(1, 16), pq=16, log=lambda m: None)
    assert set(parts) == {"numpy", "faiss-hnsw m8 efc40", "faiss-ivf-flat nlist16", "faiss-ivf-pq nlist16 pq16"}
    assert parts["numpy"]["points"][0]["k10"]["recall"] == 1.0 and parts["numpy"]["points"][0]["k50"]["recall"] == 1.0
    hnsw = parts["faiss-hnsw m8 efc40"]["points"]
    assert hnsw[1]["k10"]["recall"] >= hnsw[0]["k10"]["recall"] and hnsw[1]["k10"]["recall"] > 0.9
    ivf = parts["faiss-ivf-flat nlist16"]["points"]
    assert ivf[1]["k10"]["recall"] == 1.0 > ivf[0]["k10"]["recall"]  # every list probed: exact
    assert parts["faiss-ivf-pq nlist16 pq16"]["index_mb"] < parts["faiss-ivf-flat nlist16"]["index_mb"] / 5
    for part in parts.values():
        for p in part["points"]:
            assert 0 < p["k10"]["median_ms"] <= p["k10"]["p95_ms"] and p["queries"] == 40
    again = ba.sweep(base, queries, tmp_path, ba.Checkpoint(tmp_path / "parts.json"), hnsw_settings=((8, 40),),
                     ef_sweep=(4, 128), nlist=16, nprobe_sweep=(1, 16), pq=16, log=lambda m: None)
    assert again == parts  # every part read back, none measured again


def test_the_cheapest_setting_is_the_fastest_reaching_the_goal():
    def point(r, ms):
        return {"k10": {"recall": r, "median_ms": ms}}
    pts = [point(0.90, 0.1), point(0.96, 0.5), point(0.99, 0.3), point(0.97, 0.8)]
    assert ba.cheapest(pts) is pts[2] and ba.cheapest(pts[:1]) is None


def test_docs_and_chart_are_written_from_bench_json(tmp_path):
    from matplotlib.testing.compare import compare_images

    cfg = load_profile("offline")
    for rel, (block, marks) in ann_docs(BENCH, cfg).items():
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert text[text.index(marks[0]):text.index(marks[1]) + len(marks[1])] == (block or "\n".join(marks)), rel
    real = BENCH["ann_real"]
    assert real["rows"] == 63_903 and real["queries"] == 594
    assert {"numpy", "faiss-ivf-flat nlist256", "faiss-hnsw m32 efc80", "milvus-hnsw m32 efc80"} <= set(real["engines"])
    assert real["engines"]["numpy"]["points"][0]["k10"]["recall"] == 1.0
    assert ANN_BLOCK[0] in (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    chart(BENCH, tmp_path / "chart.png")
    assert compare_images(str(ROOT / ANN_CHART), str(tmp_path / "chart.png"), tol=5) is None
    drawn = series(real)
    assert list(drawn)[0] == "numpy"  # exact first, then the engines in their order
    assert drawn["numpy"] == [(1.0, real["engines"]["numpy"]["points"][0]["k10"]["cpu_qps"], "exact")]



def test_the_defaults_are_the_cheapest_hnsw_setting_reaching_the_goal_on_the_real_shaped_1m_set():
    grown = BENCH["ann_1000000"]
    assert grown["rows"] == 1_000_000 and grown["real_rows"] == 63_903 and grown["queries"] == 594
    d = grown["distances"]
    assert d["synthetic"]["q50"] == pytest.approx(d["real"]["q50"], rel=0.05) and d["ks_synthetic_vs_real"] < 0.05
    chosen = grown["chosen_hnsw"]
    assert chosen == ba.cheapest([{"engine": n, **p} for n, part in grown["engines"].items()
                                  if n.startswith("faiss-hnsw") for p in part["points"]])
    assert chosen["k10"]["recall"] >= ba.RECALL_GOAL
    m, efc = (int(w[3:]) if w.startswith("efc") else int(w[1:]) for w in chosen["engine"].split()[1:])
    assert hnsw_defaults(load_profile("offline")) == {"hnsw_m": m, "hnsw_ef_construction": efc,
                                                      "hnsw_ef_search": chosen["ef_search"]}


def test_the_index_speed_table_shows_both_sweeps_and_the_chart(tmp_path):
    from lib.report.index_html import speed_section

    page = speed_section(ROOT / "results" / "bench.json", '<img src="figures/bench_ann.png" alt="chart">')
    assert page.count("<td>recall against speed</td>") == 2 and 'src="figures/bench_ann.png"' in page
    assert "real-shaped vectors grown from them" in page and "the snapshot&#x27;s real vectors" in page
    # the uniform-vector runs stay, labelled as the worst case they are
    uniform = [row for row in page.split("<tr>") if "synthetic uniform vectors" in row]
    assert uniform and all("HNSW&#x27;s worst case, a bound" in row for row in uniform)
