"""What a newcomer meets first: the README's worked example on a clean clone with no local model (the
pages that ask the model left out by name with the command that enables them, the others run, and the
same command run again resumes), and the notebook list's designs, which decide what is left out."""
import re

import pytest

from lib.config import ROOT, load_profile
from lib.errors import ProfileError
from lib.preflight import pages_to_run
from lib.report.index_numbers import notebook_designs, notebook_titles

LLM_PAGES = ["05_multiquery", "06_agent", "08_escalate", "09_loop", "13_query_strategies"]


def test_the_notebook_list_names_the_designs_each_notebook_runs():
    """notebooks/index.tsv's third column is what each notebook's design_page cells run (none for the pages
    that only read saved runs: page 12 asks no model), so a page that asks a model is known before it runs."""
    designs = notebook_designs()
    assert list(designs) == list(notebook_titles())
    for name, listed in designs.items():
        code = (ROOT / "notebooks" / f"{name}.py").read_text(encoding="utf-8")
        called = re.findall(r'design_page\(\w+(?:\(globals\(\)\))?, "(\w+)"', code)
        called += [d for group in re.findall(r"for name in \(([^)]*)\)\)?\}", code) for d in re.findall(r'"(\w+)"', group)]
        if "design_page(cfg, lead" in code:  # the loop page leads with the loop chosen on dev
            called.append("loop_question_first")
        assert tuple(called) == listed, name


def test_pages_that_ask_a_missing_model_are_left_out_by_name_with_the_command():
    profile = load_profile("offline", llm_backend="local")
    names = list(notebook_titles())
    run, said = pages_to_run(profile, names, notebook_designs(), local=lambda: "the model file is not there")
    assert run == [n for n in names if n not in LLM_PAGES]
    assert said.startswith("not run: " + ", ".join(LLM_PAGES)) and "run `make local-llm` first" in said
    assert pages_to_run(profile, names, notebook_designs(), local=lambda: None) == (names, None)
    # only pages that ask the model: refused as a whole, naming the fix, not the profile already in use
    with pytest.raises(ProfileError, match=r"make local-llm.*replays its recorded calls") as info:
        pages_to_run(profile, ["06_agent"], notebook_designs(), local=lambda: "the model file is not there")
    assert "use profile 'offline'" not in str(info.value)
    # another backend that cannot answer: the setting that fixes it
    openai = load_profile("offline", llm_backend="openai", llm_model="m", openai_base_url=None)
    run, said = pages_to_run(openai, ["03_dense", "06_agent"], notebook_designs())
    assert run == ["03_dense"] and "set openai_base_url or OPENAI_BASE_URL" in said


def test_the_readme_worked_example_runs_on_a_clean_clone_without_a_model_and_again(worked_example):
    """The README's `make study DOCS=examples/beir-dev ...` on a clean clone of the commit, with no local model
    (a clone has none: models/*.gguf is joined by `make local-llm`; tests/conftest.py worked_example): it exits 0,
    naming the pages it left out and `make local-llm`; run again, it exits 0 and resumes (nothing is computed
    twice); the clone's `git status` stays clean."""
    command = worked_example.command
    assert command[:2] == ["make", "study"] and "DOCS=examples/beir-dev" in command
    for done in worked_example.runs:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "not run: " + ", ".join(LLM_PAGES) in done.stderr and "`make local-llm`" in done.stderr
        assert "running over TCP" not in done.stdout + done.stderr
    first, again = worked_example.runs
    report = worked_example.report
    assert {p.stem for p in report.glob("*.html")} == {"index", *(n for n in notebook_titles() if n not in LLM_PAGES)}
    assert "dense run 1" in first.stderr and "dense run 1" not in again.stderr  # resumed: dense not run again
    assert worked_example.status == "", worked_example.status


def test_the_python_is_checked_before_anything_installs():
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from check_python import problem

    assert problem((3, 11, 7), "/usr/bin/python3") is None
    said = problem((3, 12, 1), "/usr/bin/python3")
    assert "needs Python 3.11" in said and "is Python 3.12.1" in said and "make PY=python3.11 setup" in said
    assert "remove .venv first" in problem((3, 10, 2), "/x/.venv/bin/python")
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("$(VENV)/.setup-done: requirements.txt")[1]
    assert recipe.index("scripts/check_python.py") < recipe.index("-m venv") < recipe.index("pip install")


def test_the_model_ids_the_docs_name_are_models_the_project_knows():
    """Every Claude id in the README and docs/ is one the Anthropic backend has settings for, and every local
    model id one `make local-llm` installs."""
    from lib.llm.anthropic_backend import MODEL_SETTINGS
    from lib.llm.local_backend import LOCAL_MODELS

    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for model in re.findall(r"\bclaude-[a-z]+-[0-9][0-9a-z-]*", text):
            assert model in MODEL_SETTINGS, f"{path.name}: {model}"
        for model in re.findall(r"\bqwen2\.5-coder-[0-9.]+b-instruct[a-z0-9_.-]*", text):
            assert model.rstrip(".") in LOCAL_MODELS, f"{path.name}: {model}"
