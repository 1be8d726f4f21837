"""The pilot notebooks end to end, as `make report PROFILE=pilot` runs them (papermill, the
project's kernel), into a scratch folder: every notebook executes without error and the run
writes nothing into the shipped report or figures. The notebooks are executed once, by the
session fixture pilot_run (tests/conftest.py: one kernel for the run, as `make report`), whose saved
runs the smoke test also scores."""
import json

from lib.report.index_page import notebook_titles


def test_every_pilot_notebook_runs_and_leaves_the_shipped_report_alone(pilot_run):
    tmp, out, shipped, after = pilot_run
    for name, path in out.items():
        nb = json.loads(path.read_text())
        errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert list(out) == list(notebook_titles()), "the run stopped before the last notebook"
    assert after == shipped, "a pilot run wrote into report/ or figures/"
    assert (tmp / "results" / "summary.json").exists() and (tmp / "results" / "figures").is_dir()


def test_the_rendered_pilot_report_reads_as_a_report(pilot_run):
    """The HTML as a reader gets it: charts inline where the notebooks draw them (each its saved file), no stderr boxes,
    no injected parameters, no tables cut with '…', titles in words, and every link resolves."""
    import base64
    import re

    from lib.config import load_profile
    from lib.report.index_page import build_index
    from lib.report.render import render

    tmp, out, _, _ = pilot_run
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
    saved = {p.read_bytes() for p in cfg.figures_dir.rglob("*.png")}
    for name in ("01_collection", "02_questions", "10_scores"):
        assert "data:image/png;base64" in pages[name], f"{name}: no inline chart"
        # each chart is shown as its saved file, byte for byte (a file kept within tolerance is what the page shows)
        shown = [base64.b64decode(b) for b in re.findall(r'<img[^>]*src="data:image/png;base64,([^"]+)"', pages[name])]
        assert shown and all(b in saved for b in shown), f"{name}: a chart shown is not its saved file"
    for link in re.findall(r'(?:href|src)="([^"#:]+)"', index) + [
            x for p in pages.values() for x in re.findall(r'href="([^"#:]+\.(?:html|csv))"', p)]:
        assert (html_dir / link).exists() or (cfg.report_dir / link).exists(), f"broken link {link}"
    for name in titles:
        assert f'href="{name}.html"' in index
