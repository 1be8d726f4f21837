"""The README's commands leave the shipped study (data/, results/, figures/, report/, models/)
byte-identical unless their documented purpose is to extend it: where each command's profile sends
what it writes, and one command really run on a clean clone, whose `git status` must stay clean."""
import shutil
import subprocess

import pytest

from lib.config import ROOT, profile_from_args
from lib.data.papers import read_collection

SHIPPED = ("data", "results", "figures", "report", "models")


def ignored(path) -> bool:
    """Whether git ignores a path (what a run writes there never shows as a change)."""
    rel = path.relative_to(ROOT)
    return subprocess.run(["git", "check-ignore", "-q", str(rel)], cwd=ROOT).returncode == 0


# the README's `make notebook` examples (PROFILE, PARAMS) and the result-changing runs a user tries
CASES = {
    "NB=01 PROFILE=pilot": ["pilot"],
    'NB=03 PARAMS="-p question_form short"': ["offline", "-p", "question_form", "short"],
    'NB=06 PARAMS="-p llm_backend local -p runs 4"': ["offline", "-p", "llm_backend", "local", "-p", "runs", "4"],
    "NB=10": ["offline"],
    'NB=01 PARAMS="-p n_papers 2500"': ["offline", "-p", "n_papers", "2500"],
    'NB=03 PARAMS="-p dense_k 20"': ["offline", "-p", "dense_k", "20"],
    'NB=02 PARAMS="-p questions_source generate"': ["offline", "-p", "questions_source", "generate"],
}


@pytest.mark.parametrize("command", CASES)
def test_each_command_writes_only_where_it_may(command):
    p = profile_from_args(CASES[command])
    assert not p.settings["extend_shipped"] and (p.own_dir is None) == (not p.own_overrides())
    if p.own_dir is not None:  # a study of its own: everything it writes is in its own, ignored folder
        for where in (p.results_dir, p.data_dir, p.report_dir, p.figures_dir, p.own_dir / "cache",
                      p.own_dir / "llm_records"):
            assert where.is_relative_to(p.own_dir) or where == ROOT / p.settings["data_dir"], (command, where)
        assert ignored(p.results_dir / "x.jsonl"), (command, p.results_dir)
        if "n_papers" in p.overrides:
            assert p.data_dir.is_relative_to(p.own_dir)  # another draw never rewrites the shipped collection
    else:  # the shipped study: it may only re-read and re-render; new results are refused
        assert not p.extends_shipped
    if "runs" in CASES[command]:
        assert p.own_dir is not None and "runs" in p.own_overrides()  # a new run number is a study of its own


def test_extend_is_the_one_switch():
    p = profile_from_args(["offline", "-p", "extend_shipped", "true", "-p", "runs", "4"])
    assert p.extends_shipped and p.own_dir is None and p.results_dir == ROOT / "results"


def test_a_draw_on_a_clean_clone_leaves_git_status_clean(tmp_path):
    """`make notebook NB=01 PROFILE=pilot PARAMS="-p n_papers 320"` on a clean clone: a new draw of
    its own, while every tracked file stays as it was and nothing new appears outside ignored folders."""
    if not (ROOT / ".venv" / "bin" / "papermill").exists() or shutil.which("git") is None:
        pytest.skip("needs the project's .venv (make setup) and git")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", head], cwd=clone, check=True)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    run = subprocess.run(["make", "-o", "setup", "-o", "sync", "notebook", "NB=01", "PROFILE=pilot",
                          "PARAMS=-p n_papers 320"], cwd=clone, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", ".", ":!.venv"],
                            cwd=clone, capture_output=True, text=True).stdout
    assert status == "", f"the command changed the shipped study:\n{status}"
    drawn = list((clone / "results" / "pilot" / "variants").glob("*/data/collection.jsonl"))
    assert len(drawn) == 1 and sum(1 for _ in open(drawn[0])) == 320
    # the draw from the snapshot reproduces the bundled pilot's sources and their TF-IDF lookalikes
    # (the same seed and sources; only the random fill grows with n_papers)
    def picked(path):
        return sorted((r["id"], r["role"]) for r in read_collection(path) if r["role"] != "filler")

    bundled = picked(ROOT / "data" / "pilot" / "collection.jsonl")
    assert {role for _, role in bundled} == {"source", "lookalike"} and len(bundled) >= 20
    assert picked(drawn[0]) == bundled


def test_the_readme_opens_with_the_question_the_scoped_answer_the_figure_then_the_two_commands():
    """The order a new reader needs: the question, the answer with its scope first, the figure, the two
    commands; then the results, the designs and the fidelity table. Every design the README describes
    has a row in its results table or is named under it with why; the chosen loop is stated once."""
    import re

    from lib.designs import design_names

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    order = ["**Does an agent that can search again find better evidence than plain search?**",
             "<!-- ANSWER START -->\nScope: the language model here is", "![", "<!-- ANSWER END -->",
             "## The two commands", "make report", "make test", "| design | what it does |", "<!-- RESULTS START -->",
             "<!-- FIDELITY START -->"]
    where = [text.find(x) for x in order]
    assert -1 not in where and where == sorted(where), list(zip(order, where))
    answer = text.split("<!-- ANSWER START -->\n", 1)[1].split("<!-- ANSWER END -->")[0]
    first = answer.split(". ")[0]
    assert "1.5B" in first and "not the article's Claude Haiku" in first and "2,000" in first and "top 5" in first
    results = text.split("<!-- RESULTS START -->", 1)[1].split("<!-- RESULTS END -->")[0]
    table = text.split("| design | what it does |", 1)[1].split("\n\n", 1)[0]  # the designs table, to its blank line
    described = re.findall(r"^\| \**([a-z_0-9]+)\** \|", table, re.M)
    assert set(described) == set(design_names())
    for d in described:
        assert re.search(rf"^\| {re.escape(d)}\b", results, re.M) or re.search(rf"\b{d}(?: \([^)]*\))?: ", results), d
    assert text.count("**the loop chosen on dev**") == 1
