"""Placing a model on page 12's chart (scripts/place_model.py), with the project's local model's recorded
calls: the decision tree is replayed from its record for the first questions, and the accuracies and the
prediction printed are those of the saved tree for the same questions."""
import importlib.util
from pathlib import Path

import pytest

from lib.config import ROOT, load_profile
from lib.evaluation import judges
from lib.runs import read_results

SCRIPT = ROOT / "scripts" / "place_model.py"
SAVED_TREE = ROOT / "results" / "agent_tree" / "run1.jsonl"


def script():
    spec = importlib.util.spec_from_file_location("place_model", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not SAVED_TREE.exists(), reason="no saved decision tree in results/agent_tree")
def test_place_a_recorded_model_on_the_chart(tmp_path):
    pm = script()
    profile = load_profile("offline", question_limit=3, llm_backend="replay", results_dir=str(tmp_path))
    lines: list[str] = []
    rows = pm.place(profile, out=lines.append)
    model = rows[(rows.point == "model") & (rows.metric == "mrr_at_10")].iloc[0]
    assert model.questions == 3
    # the same accuracies as the saved tree's first three questions
    saved = [r for r in read_results(SAVED_TREE)][:3]
    dense = {r.qid: list(r.ranked_ids) for r in read_results(ROOT / "results" / "dense" / "run1.jsonl")}
    from lib import pipeline

    parts = pipeline.ProfileParts(profile, progress=False)
    chains = judges.condition_chains(saved, pipeline.scored_questions(profile, parts.papers), dense)
    first, second = judges.accuracy(chains)
    assert (model.p_stop_1, model.shown_1) == (pytest.approx(first["p_stop"]), first["shown"])
    assert (model.p_stop_2, model.shown_2) == (pytest.approx(second["p_stop"]), second["shown"])
    assert any("stop accuracy" in line and "predicts" in line for line in lines)
    # what the point measures: the local prompt under its grammar, as the shipped points
    assert "Measured under the local prompt (worked examples), a GBNF grammar: comparable with the shipped points" \
        in "\n".join(lines)
    # each accuracy with its count, the break-even, the better-rate, and where the shipped models sit
    mine = next(line for line in lines if line.startswith("Qwen2.5-Coder 1.5B, full questions (3 questions)"))
    assert f"stop accuracy {first['p_stop']:.0%} (n {first['shown']}) then" in mine
    assert "Break-even: " in mine and "Better-rate: " in mine
    assert sum(line.startswith("On page 12, beside it: ") and "Break-even" in line for line in lines) == 2
    assert (Path(tmp_path) / "agent_tree" / "run1.jsonl").exists()
    # the served placement reads the same rows: its point and accuracies at each decision, with their counts
    p = served_placement().point(rows)
    assert p["questions"] == 3 and p["p_stop_1"] is not None and p["shown_1"] >= 1
    assert served_placement().accuracies(p).startswith("stop ") and "(n " in served_placement().accuracies(p)


def test_bad_input_is_one_line(capsys, monkeypatch):
    pm = script()
    assert pm.main(["0"]) == 2 and "N must be a whole number" in capsys.readouterr().err
    assert pm.main(["3", "llm_backend"]) == 2 and "is not KEY=VALUE" in capsys.readouterr().err
    assert pm.main(["3", "llm_backend=replay"]) == 2 and "llm_backend=openai" in capsys.readouterr().err
    assert pm.main(["3", "no_such_setting=1"]) == 2 and "no_such_setting" in capsys.readouterr().err


def served_placement():
    spec = importlib.util.spec_from_file_location("served_placement", ROOT / "scripts" / "served_placement.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_served_placement_compares_each_reply_with_the_local_one_of_the_same_request(tmp_path):
    """scripts/served_placement.py (the 40-question placement of a served copy): a served reply is matched to the
    local reply of the same request by its key; the points agree when each lies in the other's range."""
    from lib.llm import LLMRequest, LLMResponse, RecordStore

    sp = served_placement()
    local, served = RecordStore(tmp_path / "local"), RecordStore(tmp_path / "served")
    asked = [LLMRequest("agent", "s", (("user", f"question {i}"),), 64, 0.3, 1, "root ::= x") for i in range(4)]
    for i, r in enumerate(asked[:3]):
        local.put(r, LLMResponse(f"reply {i}", 10, 5, 2.0, 0.0, "m", "local", decoding="fast"))
    for i, r in enumerate(asked):
        served.put(r, LLMResponse("other" if i == 1 else f"reply {i}", 10, 5, 4.0, 0.0, "m", "openai"))
    c = sp.compare_replies(tmp_path / "served", local)
    assert (c["same"], c["differ"], c["not_asked_locally"]) == (2, 1, 1)
    assert c["examples"][0]["served"] == "other" and c["examples"][0]["local"] == "reply 1"
    assert (c["served_median_s"], c["local_median_s"]) == (4.0, 2.0)
    a = {"predicted": 0.0, "predicted_low": -0.02, "predicted_high": 0.02}
    assert sp.within(a, {"predicted": 0.01, "predicted_low": -0.01, "predicted_high": 0.03}, "predicted")
    assert not sp.within(a, {"predicted": 0.05, "predicted_low": 0.03, "predicted_high": 0.07}, "predicted")
    assert sp.main(["3", "regex"]) == 2
    # two replies that differ: in the query only (the same decision and match), or in the decision
    stop, search = '{"match": 0, "decision": "stop"}', '{"match": 0, "decision": "search", "query": "%s"}'
    assert sp.how_they_differ(search % "a b", search % "a c") == "other_query"
    assert sp.how_they_differ(stop, search % "a") == "other_decision"
    assert sp.how_they_differ('{"match": 2, "decision": "stop"}', stop) == "other_decision"
    assert sp.how_they_differ("a\nb", "a\nc") == "other_decision"  # not a decision: counted as another choice
    assert c["other_decision"] == 1 and c["other_query"] == 0


def test_the_recorded_served_placement_lands_on_the_local_point_and_the_docs_quote_it():
    """results/served_placement.json (scripts/served_placement.py 40 json_object grammar, the shipped 1.5B model
    served by llama-cpp-python's server): by every route the served point lies within the local backend's ranges
    and the local point within the served ones, the replies are all counted, and docs/speed.md's block is written
    from it and from results/bench.json."""
    import json

    from lib.report.served_docs import SERVED_BLOCK, SERVED_PLACEMENT, served_block

    placement = json.loads(SERVED_PLACEMENT.read_text(encoding="utf-8"))
    assert placement["questions"] == 40 and set(placement["routes"]) == {"json_object", "grammar"}
    sp = served_placement()
    for route, row in placement["routes"].items():
        assert row["comparable"] and row["predicted_within_ranges"] and row["actual_within_ranges"], route
        assert sp.within(row["point"], placement["local"], "predicted") and row["point"]["questions"] == 40
        c = row["replies"]
        assert c["differ"] == c["other_query"] + c["other_decision"] and c["same"] > c["differ"]
        runs = ROOT / row["results"] / "agent_tree" / "run1.jsonl"
        assert runs.exists() and sp.run_seconds(runs.parent.parent) == row["run_s"]
    bench = json.loads((ROOT / "results" / "bench.json").read_text(encoding="utf-8"))["steps"]
    doc = (ROOT / "docs" / "speed.md").read_text(encoding="utf-8")
    block = doc[doc.index(SERVED_BLOCK[0]):doc.index(SERVED_BLOCK[1]) + len(SERVED_BLOCK[1])]
    assert block == served_block(bench, placement)
    assert "| served, json_object |" in block and "predicted yes and run yes" in block
