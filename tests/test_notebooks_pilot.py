"""The pilot notebooks end to end, as `make report PROFILE=pilot` runs them (papermill, the
project's kernel), into a scratch folder: every notebook executes without error and the run
writes nothing into the shipped report or figures."""
import json
import os

import pytest

from lib.config import ROOT
from lib.report.index_page import notebook_titles


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    import papermill as pm
    from jupyter_client.kernelspec import NoSuchKernel, KernelSpecManager

    try:
        KernelSpecManager().get_kernel_spec("agentic-rag-evidence")
    except NoSuchKernel:
        pytest.skip("the project's kernel is not registered (make setup registers it)")
    os.environ["PYTHONPATH"] = str(ROOT)  # as the Makefile exports it, for the kernel
    tmp = tmp_path_factory.mktemp("pilot-nb")
    shipped = {p: p.stat().st_mtime for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}
    params = {"profile": "pilot", "data_dir": str(tmp / "data"), "results_dir": str(tmp / "results")}
    out = {}
    for name in notebook_titles():
        out[name] = tmp / f"{name}.ipynb"
        pm.execute_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"), str(out[name]), parameters=params,
                            kernel_name="agentic-rag-evidence", cwd=str(ROOT / "notebooks"), progress_bar=False)
    after = {p: p.stat().st_mtime for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}
    return tmp, out, shipped, after


def test_every_pilot_notebook_runs_and_leaves_the_shipped_report_alone(executed):
    tmp, out, shipped, after = executed
    for name, path in out.items():
        nb = json.loads(path.read_text())
        errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert after == shipped, "a pilot run wrote into report/ or figures/"
    assert (tmp / "results" / "summary.json").exists() and (tmp / "results" / "figures").is_dir()


def test_the_rendered_pilot_report_reads_as_a_report(executed):
    """The HTML as a reader gets it: charts inline where the notebooks draw them, no stderr boxes,
    no injected parameters, no tables cut with '…', titles in words, and every link resolves."""
    import re

    from lib.config import load_profile
    from lib.report.index_page import build_index
    from lib.report.render import render

    tmp, out, _, _ = executed
    html_dir = tmp / "html"
    html_dir.mkdir()
    pages = {name: render(path, html_dir).read_text() for name, path in out.items()}
    cfg = load_profile("pilot", data_dir=str(tmp / "data"), results_dir=str(tmp / "results"))
    figs = [cfg.figures_dir / f"pilot_{k}.png" for k in ("scores", "deltas")]
    index = build_index(html_dir, tmp / "results", "pilot", figs).read_text()
    titles = notebook_titles()
    for name, page in pages.items():
        assert f"<title>{titles[name]}</title>" in page
        assert "output_stderr" not in page, f"{name}: stderr shown"
        assert "injected-parameters" not in page and "Parameters" not in page
        assert not re.search(r"<td>\s*…\s*</td>|<th>\s*…\s*</th>", page), f"{name}: a table is cut"
        assert 'href="index.html"' in page
        # interactive tables load the library embedded in the page, never from the network
        assert "unpkg.com/dt_for_itables" not in page, f"{name}: an interactive table needs the internet"
    for name in ("01_collection", "02_questions", "10_scores"):
        assert "data:image/png;base64" in pages[name], f"{name}: no inline chart"
    for link in re.findall(r'(?:href|src)="([^"#:]+)"', index) + [
            x for p in pages.values() for x in re.findall(r'href="([^"#:]+\.(?:html|csv))"', p)]:
        assert (html_dir / link).exists() or (cfg.report_dir / link).exists(), f"broken link {link}"
    for name in titles:
        assert f'href="{name}.html"' in index
