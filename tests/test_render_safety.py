"""Rendering the report safely, on scratch folders: only notebooks whose run completed in this command
become pages (through the Makefile's `report` and `notebook` targets, on small real notebooks),
a notebook with an error output is never rendered, pages are the same bytes when a notebook is
executed again, a page that cannot be written is the project's error naming it (the page that was
there kept whole), and `make bench` writes the committed results/bench.json only when asked."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from lib.config import ROOT
from lib.report.render import ReportError, render, run_problem, stable_ids

OLD_PAGE = "<html>the page a completed run rendered</html>"


def _load(script: str):
    spec = importlib.util.spec_from_file_location(f"_script_{script}", ROOT / "scripts" / f"{script}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _styled(df: pd.DataFrame) -> str:
    """A Styler table as a kernel displays it: a fresh random uuid, CSS rules on its cells' ids."""
    return df.style.hide(axis="index").highlight_max(color="yellow")._repr_html_()


def _interactive(df: pd.DataFrame) -> str:
    import itables

    return itables.to_html_datatable(df, connected=False)


def executed_notebook(status: str = "completed", error: bool = False):
    """An executed notebook as papermill leaves it, its outputs made now (so with new random ids)."""
    df = pd.DataFrame({"design": ["dense", "agent"], "recall@5": [0.91, 0.88]})
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"exception": error or None}
    cells = [nbformat.v4.new_markdown_cell("## Scores"),
             nbformat.v4.new_code_cell("display(table.style)", outputs=[
                 nbformat.v4.new_output("display_data", data={"text/html": _styled(df), "text/plain": "<Styler>"}),
                 nbformat.v4.new_output("display_data", data={"text/html": _styled(df.iloc[::-1]), "text/plain": "<Styler>"})]),
             nbformat.v4.new_code_cell("itables.show(table)", outputs=[
                 nbformat.v4.new_output("display_data", data={"text/html": _interactive(df), "text/plain": "df"})]),
             nbformat.v4.new_code_cell("print('done')", outputs=[nbformat.v4.new_output("stream", name="stdout", text="done\n")])]
    if error:
        cells[-1].outputs = [nbformat.v4.new_output("error", ename="KeyError", evalue="'mrr_at_10'",
                                                    traceback=["Traceback ...", "KeyError: 'mrr_at_10'"])]
    for i, c in enumerate(cells):
        c["id"] = f"cell-{i}"  # as in the paired notebooks: fixed cell ids
        c.metadata["papermill"] = {"status": "completed", "exception": False}
    if error:
        cells[-1].metadata["papermill"] = {"status": "failed", "exception": True}
    if status != "completed":  # killed: papermill saved the cell it was running and those after it pending
        cells[-2].metadata["papermill"]["status"] = "running"
        cells[-1].metadata["papermill"]["status"] = "pending"
        cells[-1].outputs = []
    nb.cells = cells
    return nb


def write_nb(path: Path, **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(executed_notebook(**kw), path)
    return path


def ids(page: str) -> list[str]:
    return re.findall(r'\bid="([^"]*)"', page)


# ------------------------------------------------------------------- deterministic pages


def test_a_notebook_executed_twice_renders_to_the_same_bytes(tmp_path):
    a = write_nb(tmp_path / "run1" / "10_scores.ipynb")
    b = write_nb(tmp_path / "run2" / "10_scores.ipynb")
    assert a.read_bytes() != b.read_bytes(), "the two executions should carry different random ids"
    pa, pb = render(a, tmp_path / "html1"), render(b, tmp_path / "html2")
    assert pa.read_bytes() == pb.read_bytes()
    again = render(a, tmp_path / "html3")
    assert again.read_bytes() == pa.read_bytes()
    page = pa.read_text()
    # the random ids are gone, and the stable ones are still unique within the page
    outputs = "".join(o.get("data", {}).get("text/html", "") for c in nbformat.read(a, as_version=4).cells
                      for o in c.get("outputs", []))
    random = re.findall(r'<table id="(T_[0-9a-f]{5}|itables_[0-9a-f_]{36})"', outputs)
    assert len(random) == 3
    for raw in random:
        assert raw not in page, f"random id {raw} left in the page"
    page_ids = ids(page)
    assert len(page_ids) == len(set(page_ids))
    tables = re.findall(r'<table[^>]*\bid="([^"]+)"', page)
    assert len(tables) == 3 and len(set(tables)) == 3
    # the Styler's CSS still points at its cells, and itables' script at its table
    for sel in re.findall(r"#(T_[0-9a-f]{5}_row\d+_col\d+)", page):
        assert sel in page_ids, f"CSS rule {sel} matches no cell"
    it = [t for t in tables if t.startswith("itables_")]
    assert it and f'getElementById("{it[0]}")' in page


def test_stable_ids_number_ids_by_order_and_leave_the_rest_alone():
    page = ('<style>#T_9f3ab_row0_col0 {color: red}</style><table id="T_9f3ab"><td id="T_9f3ab_row0_col0">x</td></table>'
            '<table id="T_0c1de"></table><div id="itables_53a68688_e14d_4f5e_83b2_3d7f0c7b6b18"></div>'
            '<script>get("itables_53a68688_e14d_4f5e_83b2_3d7f0c7b6b18")</script>'
            '<h2 id="Summary-of-the-saved-runs">T_9f3abc is text</h2>')
    out = stable_ids(page)
    assert out == ('<style>#T_00001_row0_col0 {color: red}</style><table id="T_00001"><td id="T_00001_row0_col0">x</td>'
                   '</table><table id="T_00002"></table><div id="itables_00000000_0000_0000_0000_000000000003"></div>'
                   '<script>get("itables_00000000_0000_0000_0000_000000000003")</script>'
                   '<h2 id="Summary-of-the-saved-runs">T_9f3abc is text</h2>')
    assert stable_ids(out) == out



def test_stable_ids_follow_the_id_attributes_not_a_chance_match_earlier_in_the_text():
    # a Styler's five hex digits met by chance in an image's data before its table: the numbering still follows
    # the tables' order, so two executions of one page number it alike
    page = ('<img src="data:image/png;base64,iVBORw0KGgo0c1de9f3ab"/><table id="T_9f3ab"></table>'
            '<table id="T_0c1de"></table><style>#T_0c1de_row0_col0 {color: red}</style>')
    assert stable_ids(page) == ('<img src="data:image/png;base64,iVBORw0KGgo0c1de9f3ab"/><table id="T_00001"></table>'
                                '<table id="T_00002"></table><style>#T_00002_row0_col0 {color: red}</style>')

# ------------------------------------------------------------------- notebooks that did not complete


@pytest.mark.parametrize("kw, why", [({"error": True}, "KeyError"), ({"status": "killed"}, "running")])
def test_a_notebook_whose_run_did_not_complete_is_never_rendered(tmp_path, kw, why):
    nb = write_nb(tmp_path / "run" / "10_scores.ipynb", **kw)
    out = tmp_path / "report"
    out.mkdir()
    (out / "10_scores.html").write_text(OLD_PAGE)
    assert why in run_problem(nbformat.read(nb, as_version=4))
    with pytest.raises(ReportError, match=r"10_scores\.ipynb: not rendered") as exc:
        render(nb, out)
    assert why in str(exc.value)
    assert (out / "10_scores.html").read_text() == OLD_PAGE
    assert sorted(p.name for p in out.iterdir()) == ["10_scores.html"]


def test_a_completed_notebook_passes_the_check(tmp_path):
    assert run_problem(nbformat.read(write_nb(tmp_path / "a.ipynb"), as_version=4)) is None


# ------------------------------------------------------------------- writes that fail


def test_an_unwritable_page_is_an_error_naming_it(tmp_path):
    nb = write_nb(tmp_path / "run" / "03_dense.ipynb")
    out = tmp_path / "report"
    (out / "03_dense.html").mkdir(parents=True)  # a folder where the page goes
    (out / "03_dense.html" / "keep").write_text("x")
    with pytest.raises(ReportError, match=r"03_dense\.html: cannot write the page"):
        render(nb, out)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, not a folder")
    with pytest.raises(ReportError, match=r"blocked/03_dense\.html: cannot write the page"):
        render(nb, blocked)


def test_a_full_disk_keeps_the_page_that_was_there(tmp_path):
    nb = write_nb(tmp_path / "run" / "03_dense.ipynb")
    out = tmp_path / "report"
    out.mkdir()
    page = out / "03_dense.html"
    page.write_text(OLD_PAGE)
    # the atomic write's scratch file (lib/io.py write_bytes) leads to /dev/full: every write is ENOSPC
    scratch = out / f".03_dense.html.{os.getpid()}.tmp"
    scratch.symlink_to("/dev/full")
    with pytest.raises(ReportError, match=r"03_dense\.html: cannot write the page \(No space left on device\)"):
        render(nb, out)
    assert not scratch.exists() and not scratch.is_symlink(), "the write did not go through its scratch file"
    assert page.read_text() == OLD_PAGE


def test_build_report_exits_non_zero_naming_the_page_it_cannot_write(tmp_path, capsys):
    build_report = _load("build_report")
    report = tmp_path / "results" / "report"
    write_nb(report / "03_dense.ipynb")
    (report / "03_dense.html").mkdir()
    (report / "03_dense.html" / "keep").write_text("x")
    args = ["offline", "-p", "results_dir", str(tmp_path / "results")]
    assert build_report.main(args + ["--completed", "03_dense"]) == 1
    err = capsys.readouterr().err
    assert f"error: {report / '03_dense.html'}: cannot write the page" in err
    assert "Traceback" not in err


def test_build_report_renders_only_the_completed_notebooks_it_is_given(tmp_path, capsys):
    build_report = _load("build_report")
    report = tmp_path / "results" / "report"
    write_nb(report / "03_dense.ipynb")
    write_nb(report / "10_scores.ipynb", error=True)  # left by an earlier failed run
    write_nb(report / "11_failures.ipynb")  # completed, but not in this command
    args = ["offline", "-p", "results_dir", str(tmp_path / "results")]
    assert build_report.main(args + ["--completed", "03_dense"]) == 0
    assert sorted(p.name for p in report.glob("*.html")) == ["03_dense.html"]
    # asked to render the one with an error output: refused, and the command fails
    (report / "10_scores.html").write_text(OLD_PAGE)
    assert build_report.main(args + ["--completed", "10_scores"]) == 1
    assert "10_scores.ipynb: not rendered, its run did not complete: cell 4 raised KeyError" in capsys.readouterr().err
    assert (report / "10_scores.html").read_text() == OLD_PAGE
    # a failed run's notebook, kept elsewhere: reported with its error and its path, nothing rendered
    failed = write_nb(tmp_path / "failed" / "11_failures.ipynb", error=True)
    assert build_report.main(args + ["--completed", "--failed", str(failed)]) == 1
    err = capsys.readouterr().err
    assert f"11_failures: the run did not complete: cell 4 raised KeyError: 'mrr_at_10'; its executed notebook: {failed}" in err
    assert not (report / "11_failures.html").exists()


# ------------------------------------------------------------------- the Makefile's report and notebook targets

def small_notebooks(folder: Path, fail: str = "") -> None:
    """The report's notebooks as small real ones (a title, a parameters cell, one line of work), run by
    the real papermill and kernel: each named in ``fail`` raises KeyError('mrr_at_10') instead."""
    from lib.report.index_page import notebook_titles

    folder.mkdir(parents=True, exist_ok=True)
    for name, title in notebook_titles().items():
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "agentic-rag-evidence", "display_name": "agentic-rag-evidence",
                                     "language": "python"}
        params = nbformat.v4.new_code_cell('profile = "offline"')
        params.metadata["tags"] = ["parameters"]
        # each page starts from nothing of the page before it (the kernel is shared, its names are not)
        work = ("raise KeyError('mrr_at_10')" if name in fail.split()
                else "import os\nassert 'leaked' not in dir()\nleaked = 1\nprint('kernel', os.getpid())")
        nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}"), params, nbformat.v4.new_code_cell(work)]
        for i, c in enumerate(nb.cells):
            c["id"] = f"cell-{i}"
        nbformat.write(nb, folder / f"{name}.ipynb")


@pytest.fixture
def make(tmp_path):
    """`make TARGET ...` in the repository on small real notebooks (:func:`small_notebooks`), into
    scratch folders only."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("agentic-rag-evidence")
    except NoSuchKernel:
        pytest.skip("the project's kernel is not registered (make setup registers it)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    results = tmp_path / "results"
    shipped = {p: p.stat().st_mtime_ns for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}

    def run(target: str, fail: str = "", **variables) -> subprocess.CompletedProcess:
        small_notebooks(tmp_path / "notebooks", fail)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        words = [f"{k}={v}" for k, v in {"BIN": bin_dir, "FAILED_DIR": tmp_path / "failed",
                                         "NOTEBOOK_DIR": tmp_path / "notebooks",
                                         "PARAMS": f"-p results_dir {results}", **variables}.items()]
        return subprocess.run(["make", "--no-print-directory", "-o", "setup", "-o", "sync", target, *words], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=300)

    run.report = results / "report"
    run.failed = tmp_path / "failed" / str(results / "report").lstrip("/")
    yield run
    after = {p: p.stat().st_mtime_ns for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}
    assert after == shipped, "a scratch run wrote into the shipped report/ or figures/"


def test_make_notebook_renders_only_the_notebook_that_completed(make):
    report = make.report
    # a failed `make notebook NB=10`: reported with its error and the path of its executed notebook, exit non-zero
    report.mkdir(parents=True)
    (report / "10_scores.html").write_text(OLD_PAGE)
    r = make("notebook", fail="10_scores", NB="10")
    assert r.returncode != 0
    kept = make.failed / "10_scores.ipynb"
    assert kept.exists() and not (report / "10_scores.ipynb").exists()
    assert re.search(rf"10_scores: the run did not complete: cell \d+ raised KeyError: 'mrr_at_10'; its executed notebook: "
                     rf"{re.escape(str(kept))}", r.stderr), r.stderr
    assert (report / "10_scores.html").read_text() == OLD_PAGE
    # the next successful `make notebook NB=03` renders 03 alone: the failed 10 stays unrendered, exit 0
    r = make("notebook", NB="03")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith(f"{report}/03_dense.html")
    assert (report / "03_dense.ipynb").exists() and not (make.failed / "03_dense.ipynb").exists()
    assert "<title>3. Dense search</title>" in (report / "03_dense.html").read_text()
    assert (report / "10_scores.html").read_text() == OLD_PAGE
    # an executed notebook left in the report folder by an older (killed) run is not rendered either
    write_nb(report / "11_failures.ipynb", status="killed")
    assert make("notebook", NB="01").returncode == 0
    assert sorted(p.name for p in report.glob("*.html")) == ["01_collection.html", "03_dense.html", "10_scores.html"]


def test_make_notebook_with_parameters_over_the_shipped_results_never_writes_report(make):
    """`make notebook NB=03 PARAMS="-p n_runs 1"` reads the shipped results and renders into a folder of its
    own (the fixture checks that report/ and figures/ are untouched); `-p n_runs true` is refused first
    (tests/test_probes.py)."""
    import shutil

    from lib.config import profile_from_args

    own = profile_from_args(["offline", "-p", "n_runs", "1"]).pages_base
    assert own.is_relative_to(ROOT / "results" / "parameters")
    shutil.rmtree(own, ignore_errors=True)
    try:
        r = make("notebook", NB="03", PARAMS="-p n_runs 1")
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().endswith(f"{own.relative_to(ROOT)}/report/03_dense.html")
        assert (own / "report" / "03_dense.html").exists()
    finally:
        shutil.rmtree(own, ignore_errors=True)


def test_make_report_stops_at_a_failed_notebook_and_renders_the_completed_ones(make):
    r = make("report", fail="02_questions", NOTEBOOKS="01_collection 02_questions 03_dense")
    assert r.returncode != 0
    assert "== 01_collection" in r.stdout and "== 02_questions" in r.stdout and "== 03_dense" not in r.stdout
    assert sorted(p.name for p in make.report.glob("*.html")) == ["01_collection.html"]
    assert f"its executed notebook: {make.failed / '02_questions.ipynb'}" in r.stderr
    assert not (make.report / "02_questions.ipynb").exists()
    r = make("report", AGAIN="1", NOTEBOOKS="01_collection 02_questions 03_dense")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in make.report.glob("*.html")) == ["01_collection.html", "02_questions.html", "03_dense.html"]
    assert "kept:" not in r.stdout  # AGAIN=1: every page executed, 01 too (its inputs are those of the first run)
    # the three ran in one kernel, each without the names of the one before, its cells counted from 1
    executed = [nbformat.read(make.report / f"{n}.ipynb", as_version=4) for n in ("01_collection", "02_questions", "03_dense")]
    printed = {json.dumps(nb.cells[-1].outputs[0]["text"]) for nb in executed}
    assert len(printed) == 1 and "kernel" in printed.pop()
    assert [[c.execution_count for c in nb.cells if c.cell_type == "code"] for nb in executed] == [[1, 2, 3]] * 3
    assert not list(make.failed.glob("*.ipynb"))
    pages = {p.name: p.read_bytes() for p in make.report.glob("*.html")}
    r = make("report", NOTEBOOKS="01_collection 02_questions 03_dense")
    assert r.returncode == 0 and r.stdout.count("kept:") == 3  # nothing changed: no page executed again
    assert {p.name: p.read_bytes() for p in make.report.glob("*.html")} == pages


# ------------------------------------------------------------------- make bench


def test_bench_writes_the_committed_figures_only_when_asked(tmp_path, monkeypatch):
    bench = _load("bench")  # importing runs nothing: the bench is main()
    assert bench.output_path([]) == ROOT / "build" / "bench.json"
    assert bench.output_path(["--report"]) == ROOT / "build" / "bench.json"
    assert bench.output_path(["--save", "--report-only"]) == ROOT / "results" / "bench.json"
    # a --*-only run keeps the figures of the file it writes to, else the committed ones
    monkeypatch.setattr(bench, "SCRATCH", tmp_path / "bench.json")
    assert bench.kept_from(["--report-only"]) == ROOT / "results" / "bench.json"
    (tmp_path / "bench.json").write_text(json.dumps({"steps": {}}))
    assert bench.kept_from(["--report-only"]) == tmp_path / "bench.json"
    assert bench.kept_from(["--save", "--report-only"]) == ROOT / "results" / "bench.json"


@pytest.mark.parametrize("variables, saved", [([], False), (["SAVE=1"], True), (["ARGS=--save"], True), (["SAVE=0"], False)])
def test_make_bench_passes_save_only_when_asked(tmp_path, variables, saved):
    """make hands SAVE and ARGS to the bench through the environment; the bench reads --save from there."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").write_text('#!/bin/sh\nprintf "%s\\n%s\\n" "$BENCH_ARGS" "$BENCH_SAVE"\n')
    (fake / "python").chmod(0o755)
    r = subprocess.run(["make", "--no-print-directory", "-o", "setup", "bench", f"BIN={fake}", *variables],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    args, save = r.stdout.splitlines()[-2:]
    got = _load("bench").command_line([], {"BENCH_ARGS": args, "BENCH_SAVE": save})
    assert ("--save" in got) == saved


def test_the_notebooks_get_the_parameters_papermills_command_line_would_inject():
    """`-f` the profile's file, then each `-p NAME VALUE` typed as papermill's command line types it."""
    import yaml

    from lib.report.execute import notebook_parameters

    file = ROOT / "profiles" / "offline.yaml"
    got = notebook_parameters(file, ["-p", "n_runs", "1", "-p", "rerank_weights", "{dense: 1.0}",
                                     "-p", "llm_temperature", "0.5", "-p", "question_form", "short"])
    assert got == {**yaml.safe_load(file.read_text()), "n_runs": 1, "rerank_weights": "{dense: 1.0}",
                   "llm_temperature": 0.5, "question_form": "short"}
    with pytest.raises(ValueError, match="expected -p NAME VALUE"):
        notebook_parameters(file, ["-p", "n_runs"])


# ------------------------------------------------------------------- a user's data runs no code

# what a hostile corpus puts in every field: a script, an event handler on an element, and a quote that
# would end an attribute and open an event handler; in ids (which hold no whitespace) the same without spaces
PAYLOADS = ('<script>alert(1)</script>', '<img src=x onerror=alert(1)>', '" onmouseover="x')
ID_PAYLOADS = ('<script>alert(1)</script>', '<img/src=x/onerror=alert(1)>', '"/onmouseover="x')
PAYLOAD = " ".join(PAYLOADS)


def injected(page: str) -> list[str]:
    """The elements and attributes a page's data put there: a script whose code is the payload's, an
    image whose source is the payload's, any ``on*`` event-handler attribute (the pages have none of
    their own), each as the HTML parser read it."""
    from html.parser import HTMLParser

    found: list[str] = []

    class Scan(HTMLParser):
        script: list[str] | None = None

        def handle_starttag(self, tag, attrs):
            found.extend(f"<{tag} {k}={v!r}>" for k, v in attrs if k.lower().startswith("on"))
            if tag == "img" and ("src", "x") in attrs:
                found.append(f"<img {attrs}>")
            if tag == "script":
                self.script = []

        def handle_data(self, data):
            if self.script is not None:
                self.script.append(data)

        def handle_endtag(self, tag):
            if tag == "script" and self.script is not None:
                if "".join(self.script).strip() == "alert(1)":  # the payload's own script (not a table's data)
                    found.append(f"<script>{''.join(self.script)}</script>")
                self.script = None

    Scan().feed(page)
    return found


def payload_frame() -> pd.DataFrame:
    return pd.DataFrame({"qid": [f"q1{p}" for p in ID_PAYLOADS], "question": [PAYLOAD] * 3, "score": [0.5, 1.0, 0.25],
                         f"field {PAYLOADS[1]}": [PAYLOADS[0], ["a", PAYLOADS[1]], None]},
                        index=[f"row {p}" for p in PAYLOADS])


def test_the_parser_check_finds_what_an_unescaped_table_injects():
    """The check can fail: pandas' Styler, as it writes a table by default, injects every payload."""
    raw = payload_frame().style.to_html()
    found = injected(raw)
    assert any(f.startswith("<script>") for f in found) and any(f.startswith("<img") for f in found)
    assert any("onerror" in f for f in found)


def test_the_one_table_renderer_escapes_cells_headers_and_index():
    from lib.report.display import escaped, safe_table, styled

    df = payload_frame()
    for html_text in (safe_table(df).to_html(), safe_table(df, index=True).to_html(),
                      safe_table(df).format({"score": "{:.1%}"}, na_rep="—").to_html(),  # a format of its own
                      styled(df).to_html(), df.pipe(escaped).to_html(escape=False)):
        assert injected(html_text) == [], html_text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html_text and "onerror=alert(1)" in html_text
    assert "50.0%" in safe_table(df).format({"score": "{:.1%}"}).to_html()  # numbers stay numbers
    assert escaped(df).loc[escaped(df).index[0], "score"] == 0.5


def test_markdown_from_a_users_text_is_text_on_the_rendered_page(tmp_path):
    """Markdown outputs built with markdown_text / markdown_code and a table from the renderer, rendered
    by the report's own renderer (nbconvert): the page holds the payloads as text, no element of theirs."""
    from IPython.display import Markdown

    from lib.report.display import markdown_code, markdown_text, safe_table

    md = (f"**{markdown_text('q1' + PAYLOADS[1])}**: *{markdown_text(PAYLOAD)}* "
          f"{markdown_text('[link](javascript:alert(1)) <b>b</b>')} file {markdown_code('a`b' + PAYLOADS[0])}")
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"exception": None}
    cells = [nbformat.v4.new_markdown_cell("## A study"),
             nbformat.v4.new_code_cell("display(Markdown(md))", outputs=[nbformat.v4.new_output(
                 "display_data", data={"text/markdown": Markdown(md).data, "text/plain": "<Markdown>"})]),
             nbformat.v4.new_code_cell("display(safe_table(df))", outputs=[nbformat.v4.new_output(
                 "display_data", data={"text/html": safe_table(payload_frame())._repr_html_(), "text/plain": "df"})])]
    for i, c in enumerate(cells):
        c["id"] = f"cell-{i}"
        c.metadata["papermill"] = {"status": "completed", "exception": False}
    nb.cells = cells
    path = tmp_path / "run" / "02_questions.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    page = render(path, tmp_path / "html").read_text(encoding="utf-8")
    found = injected(page)
    assert found == [], found
    assert not [h for h in re.findall(r'href="([^"]*)"', page) if "alert" in h]  # the Markdown link in the data is text
    assert page.count("onerror=alert(1)") >= 3  # the payloads are on the page, as text


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "papermill").exists(), reason="needs the project's .venv (make setup)")
def test_a_study_whose_every_field_carries_payloads_renders_no_injected_element(tmp_path):
    """`make study` on documents (ids, titles, texts, metadata values and a metadata field's name) and
    questions (ids, texts) that all carry script and event-handler payloads: its collection and questions
    pages, where every field is shown, and the loop's page (a stub model: its step-by-step trace shows the
    question and the papers read) hold them as text only (parsed with html.parser); the shipped study is
    untouched. (A study name cannot carry one: it is refused, tests/test_probes.py.)"""
    import csv

    from lib.config import STUDIES_DIR

    words = ["pump seal", "warranty parts", "humming noise", "filter cleaning", "power supply", "valve pressure"]
    tag = f"tag{PAYLOADS[1]}"  # a metadata field whose very name carries a payload
    docs = [{"doc_id": f"d{i}{ID_PAYLOADS[i % 3]}", "title": f"{w} {PAYLOAD}", "owner": f"team {PAYLOAD}", tag: PAYLOADS[i % 3],
             "body": f"About the {w}. {PAYLOAD} " + f"The {w} needs care. " * 20} for i, w in enumerate(words)]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    with open(tmp_path / "questions.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["qid", "question", "source_id"])
        w.writerows([f"q{i}{ID_PAYLOADS[i % 3]}", f"what about the {x}? {PAYLOAD}", docs[i]["doc_id"]]
                    for i, x in enumerate(words[:4]))
    name = "render-safety-payloads"
    folder = STUDIES_DIR / name
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    before = {p: p.stat().st_mtime_ns for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}
    try:
        done = subprocess.run(["make", "--no-print-directory", "-o", "setup", "-o", "sync", "study",
                               f"DOCS={tmp_path / 'docs.jsonl'}", f"QUESTIONS={tmp_path / 'questions.csv'}",
                               f"NAME={name}", "FIELDS=id=doc_id,text=body", f"METADATA=owner,{tag}",
                               "NOTEBOOKS=01_collection 02_questions 09_loop", "PARAMS=-p loop_backend scripted",
                               "SET=llm_backend=replay"],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        report = next(folder.glob("results/**/report"))  # the stub model's runs: the study's variant folder
        pages = sorted(report.glob("*.html"))
        assert {p.name for p in pages} >= {"01_collection.html", "02_questions.html", "09_loop.html"}
        shown = 0
        for page in pages:
            text = page.read_text(encoding="utf-8")
            assert injected(text) == [], f"{page.name}: {injected(text)[:5]}"
            shown += text.count("&lt;script&gt;alert(1)&lt;/script&gt;")
        questions = (report / "02_questions.html").read_text(encoding="utf-8")
        assert "what about the pump seal?" in questions and "onerror=alert(1)" in questions
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in (report / "09_loop.html").read_text(encoding="utf-8")
        assert shown > 10
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    after = {p: p.stat().st_mtime_ns for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}
    assert after == before
