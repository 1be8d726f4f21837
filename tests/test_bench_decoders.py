"""The decoding paths `make bench` compares side by side (lib/report/bench.py decoder_choice): the chosen path is
the fastest within the goal ratio on both agent and loop calls, a path that failed or ran over is never chosen, and
docs/speed.md's table is the one the committed results/bench.json gives."""
import json

import pytest

from lib.config import ROOT
from lib.report.bench_docs import DECODER_BLOCK, decoder_block, decoder_choice, with_decoder_block


def steps(figures: dict[str, dict[str, tuple[float, float] | None]]) -> dict:
    """llm_call_<design> steps with (median s, ratio to the bound) per path; None: the path failed."""
    out = {}
    for design in ("agent", "multiquery", "loop"):
        row = {"replies": {"n": 4}, "loadavg_before": [1.0, 1, 1], "loadavg_after": [2.0, 1, 1]}
        for mode, fig in figures.items():
            row[mode] = ({"calls": [], "error": "RuntimeError: boom"} if fig is None else
                         {"median_s": fig[0] * (2 if design == "loop" else 1), "ratio_to_bound_evaluated": fig[1]})
            row["replies"][f"{mode}_equals_recorded"] = 3
        out[f"llm_call_{design}"] = row
    out["llm_llama_speed"] = {"pp_tokens_per_s": 100.0, "tg_tokens_per_s": 12.0}
    return out


def test_the_fastest_within_the_goal_is_chosen():
    s = steps({"fast": (1.0, 0.6), "prefix": (2.0, 1.1), "llguidance": (0.9, 1.3), "lookup": None})
    choice = decoder_choice(s, ["fast", "prefix", "llguidance", "lookup"], 1.2)
    assert choice["chosen"] == "fast"  # llguidance is faster but over 1.2x; lookup failed
    assert choice["within_goal"] == ["fast", "prefix"]
    assert choice["table"]["loop"]["fast"]["median_s"] == 2.0
    block = decoder_block({**s, "llm_decoders": choice})
    assert "**(chosen)**" in block and "failed" in block and "Failed: llama-cpp-python's LlamaPromptLookupDecoding" in block


def test_none_is_chosen_when_every_path_runs_over():
    s = steps({"fast": (1.0, 1.3), "prefix": (2.0, 1.25)})
    choice = decoder_choice(s, ["fast", "prefix"], 1.2)
    assert choice["chosen"] is None and "none within 1.2x" in choice["summary"]
    assert "No path stayed within 1.2x" in decoder_block({**s, "llm_decoders": choice})


def test_the_docs_table_is_the_committed_bench_run():
    bench = json.loads((ROOT / "results" / "bench.json").read_text())
    if "llm_decoders" not in bench["steps"]:
        pytest.skip("results/bench.json holds no decoding-path run (make bench ARGS='--llm-only --save')")
    doc = (ROOT / "docs" / "speed.md").read_text(encoding="utf-8")
    assert DECODER_BLOCK[0] in doc and DECODER_BLOCK[1] in doc
    assert with_decoder_block(doc, decoder_block(bench["steps"])) == doc


def test_the_engine_at_scale_table_is_the_committed_bench_run():
    """docs/engine.md's "Speed at scale" table is the one results/bench.json's --scale --engine run gives."""
    from lib.report.bench_docs import ENGINE_BLOCK, engine_scale_block, with_block

    bench = json.loads((ROOT / "results" / "bench.json").read_text())
    block = engine_scale_block(bench["steps"])
    if not block:
        pytest.skip("results/bench.json holds no Milvus run at 1M (make bench ARGS='--scale 1000000 --engine')")
    doc = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    assert with_block(doc, block, ENGINE_BLOCK) == doc
    assert "Milvus Lite HNSW (embedded)" in block and "faiss HNSW" in block  # side by side, one run
