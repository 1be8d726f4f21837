"""scripts/bench_study.py: the study's throughput projected to 1M documents from measured rates, and the
docs' and README's throughput figures held to results/bench.json."""
import json

import pytest

from lib.config import ROOT, load_profile
from lib.report.bench_docs import throughput_docs
from lib.report.bench_study import SEARCHES, projected, throughput_row

BENCH = json.loads((ROOT / "results" / "bench.json").read_text())["steps"]


def step(wall, cpu, **extra):
    return {"wall_s": wall, "cpu_s": cpu, "loadavg": 1.0, "peak_rss_mb": 500.0, **extra}


@pytest.fixture
def measured():
    steps = {"new_study": step(2, 1), "import": step(10, 5), "chunk": step(40, 20, measured_apart=True),
             "embed": step(100, 200, texts=1000), "dense_index": step(1, 1), "bm25_index": step(4, 2),
             "search": {"dense_ms": 2.0, "bm25_ms": 5.0}}
    steps.update({f"design_{d}": step(30, 15) for d in SEARCHES})
    steps["pages"] = step(60, 50)
    return steps


def test_steps_grow_with_documents_or_come_from_the_figures_measured_at_1m(measured):
    bench = {"ann_1000000": {"chosen_hnsw": {"engine": "faiss-hnsw m16 efc80", "k50": {"median_ms": 3.0}},
                             "engines": {"faiss-hnsw m16 efc80": {"build_s": 900.0}}},
             "bm25_scale_1000000": {"build_s": 136.0, "median_ms": 75.0}}
    p = projected({k: v for k, v in measured.items() if k != "search"}, 20_000, 297, bench, measured["search"])
    assert p["import"]["s"] == pytest.approx(10 * 50) and p["import"]["cpu_s"] == pytest.approx(5 * 50)
    assert p["embed"]["s"] == pytest.approx(1_000_000 / 10) and p["embed"]["cpu_s"] == pytest.approx(1_000_000 / 5)
    assert p["dense_index"]["s"] == p["dense_index"]["cpu_s"] == 900.0  # the HNSW build measured at 1M
    assert p["bm25_index"]["s"] == 136.0
    # a question's dense search at 1M costs 1 ms more, its BM25 search 70 ms more
    assert p["design_dense"]["s"] == pytest.approx(30 + 297 * 1.0 / 1000)
    assert p["design_bm25"]["s"] == pytest.approx(30 + 297 * 70.0 / 1000)
    assert p["design_hybrid"]["s"] == pytest.approx(30 + 297 * 71.0 / 1000)
    assert p["pages"]["s"] == 60  # the pages grow with the questions, not the documents
    row = throughput_row(measured, 20_000, 297, bench)
    assert row["first_to_move"] == "embed"  # 200,000 CPU seconds, the most by far
    assert row["total_wall_s"] == pytest.approx(sum(v["wall_s"] for k, v in measured.items()
                                                    if k not in ("search", "chunk")))  # chunking measured apart


def test_the_throughput_table_and_the_readme_are_written_from_bench_json():
    t = BENCH["study_throughput"]
    assert t["documents"] == 20_000 and t["questions"] == 297 and t["target"] == 1_000_000
    assert set(f"design_{d}" for d in SEARCHES) <= set(t["steps"])
    assert t["steps"]["embed"]["texts"] > 0 and t["steps"]["pages"]["notebooks"]
    again = throughput_row(t["steps"], t["documents"], t["questions"], BENCH)  # projected from the figures at 1M now
    assert again["summary"] == t["summary"] and again["first_to_move"] == t["first_to_move"]
    assert again["projected_total_cpu_s"] == pytest.approx(t["projected_total_cpu_s"], rel=1e-9)
    for rel, (block, marks) in throughput_docs(BENCH, load_profile("offline")).items():
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert block and text[text.index(marks[0]):text.index(marks[1]) + len(marks[1])] == block, rel


def test_a_model_design_grows_by_the_searches_it_made_and_is_named(measured):
    """The agent's step (scripts/bench_study.py --llm-questions): its own questions and searches, its model's time
    kept as measured; the summary and the docs' words name it."""
    from lib.report.bench_docs import model_words

    bench = {"ann_1000000": {"chosen_hnsw": {"engine": "h", "k50": {"median_ms": 3.0}}, "engines": {"h": {"build_s": 9.0}}}}
    assert model_words({"steps": measured}) == "; the model designs were not run"
    measured["design_agent"] = step(400, 100, questions=40, searches=70, llm_calls=90, llm_s=350.0, backend="local",
                                    model="qwen")
    p = projected({k: v for k, v in measured.items() if k != "search"}, 20_000, 297, bench, measured["search"])
    assert p["design_agent"]["s"] == pytest.approx(400 + 70 * 1.0 / 1000)  # 70 dense searches, 1 ms more each at 1M
    assert p["design_dense"]["s"] == pytest.approx(30 + 297 * 1.0 / 1000)
    row = throughput_row(measured, 20_000, 297, bench)
    assert "the designs without a model and agent with the local model over 40 questions:" in row["summary"]
    assert model_words({"steps": measured}) == ("; agent with the local model (qwen) over the first 40 questions, run 1: "
                                                "90 calls, 70 searches, 10.0 s a question")
