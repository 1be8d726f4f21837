"""The smoke setting: the pilot profile end to end from bundled data, real models and the
recorded LLM responses, checked against the expected scores (fails on drift: the 2CR practice).
The pilot is the one the pilot notebooks draw and run (shared, so drawn and run once)."""
import json

import pytest

from lib import pipeline
from lib.report import queries
from lib.evaluation import scores
from lib.data.collection import make_collection
from lib.config import ROOT, load_profile


@pytest.fixture(scope="module")
def pilot(request, tmp_path_factory):
    """The pilot run once: by the pilot notebooks (tests/conftest.py pilot_run: the bundled collection,
    each design's notebook runs it) where the project's kernel is registered, else here, in this
    process, drawn from the snapshot into an empty scratch folder."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("agentic-rag-evidence")
        tmp = request.getfixturevalue("pilot_run")[0]
    except NoSuchKernel:
        tmp = tmp_path_factory.mktemp("pilot")
    cfg = load_profile("pilot", data_dir=str(tmp / "data"), results_dir=str(tmp / "results"))
    make_collection(cfg)  # drawn here unless notebook 1 drew it with the same inputs (then read back)
    return cfg


def test_pilot_scores_match_expected(pilot):
    for design in pipeline.design_names():  # resumes the saved runs: runs whatever is not saved yet
        pipeline.run(pilot, design, progress=False)
    summary = queries.summary_for_profile(pilot)
    drift = scores.check_drift(summary, ROOT / "results" / "pilot" / "expected_scores.json")
    expected = json.loads((ROOT / "results" / "pilot" / "expected_scores.json").read_text())
    assert set(summary["design"]) == set(expected["designs"]), "a design is missing from the smoke run"
    assert (drift.status == "ok").all(), f"scores drifted from results/pilot/expected_scores.json:\n{drift}"
    for _, row in summary.iterrows():
        assert row["questions"] == expected["designs"][row["design"]]["questions"]
