"""Page 12 renders for every folder shape a user can make (issue probes): a study of five questions whose only
LLM design is multi-query (no agent run, no tree), and a study with no LLM run at all (the README's worked example
without a model: tests/conftest.py worked_example)."""
import shutil
import subprocess

import pytest

from lib.config import ROOT, STUDIES_DIR

EXAMPLE = ROOT / "examples" / "beir-dev"
EXAMPLE_RECORDS = EXAMPLE / "llm_records"


def make(*words: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *words], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "papermill").exists(), reason="needs the project's .venv (make setup)")
def test_page_12_renders_for_multiquery_alone():
    name = "why-shapes-test"
    folder = STUDIES_DIR / name
    shutil.rmtree(folder, ignore_errors=True)
    try:
        if EXAMPLE_RECORDS.exists():
            shutil.copytree(EXAMPLE_RECORDS, folder / "results" / "llm_records")
        sets = "SET=question_limit=5 chunk_documents=false llm_backend=replay corpus_description=arxiv"
        done = make("study", f"DOCS={EXAMPLE.relative_to(ROOT)}", f"NAME={name}", sets,
                    "NOTEBOOKS=01_collection 03_dense 05_multiquery 12_why")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        page = (folder / "results" / "report" / "12_why.html").read_text(encoding="utf-8")
        assert "Multi-query" in page and "No decision tree saved" in page and "Traceback" not in page
        assert "Shapley" not in page
        # the page's tables are the study's own, beside its results (never the shipped folder's)
        assert (folder / "results" / "why_paths.csv").exists()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_page_12_renders_for_a_study_with_no_llm_run(worked_example):
    """The worked example run without a model (every LLM page left out): page 12 says there is no LLM run to split."""
    first = worked_example.runs[0]
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    page = (worked_example.report / "12_why.html").read_text(encoding="utf-8")
    assert "No complete run of the agent or multi-query in any condition" in page and "Traceback" not in page
