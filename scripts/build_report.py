"""Render the executed notebooks that completed in this command to HTML and write the run's index page.

Usage: python scripts/build_report.py PROFILE [-p NAME VALUE ...] [--completed NAME ...] [--failed PATH ...]

--completed names the notebooks whose papermill run completed in this command; each is rendered from
``<report folder>/NAME.ipynb`` (the profile's report folder: `report/` for the shipped run, else beside
the run's results). Nothing else found there is rendered (a notebook left by an earlier failed or
killed run is never rendered), and neither is a notebook whose cells hold an error output.
--failed names the executed notebooks of runs that did not complete (kept outside the report folder,
as the Makefile leaves them): each is reported with its error and path. The index page is rebuilt
only when nothing failed. Exits 0 when every page was written, 1 when a notebook failed or a page
could not be rendered or written (the pages already there are kept whole), 2 on a bad profile or
parameter.

The pages written in this command (and, once the whole command succeeded, every page in the folder)
then link pages that exist: the folder's own, else the shipped report's (so a one-notebook rerun into
its own folder links the shipped pages of the notebooks it did not run); a link to a page that exists
nowhere becomes its text. When a notebook failed, the pages not written in this command are left
exactly as they were. For the shipped report the README's
generated answer and results table are rewritten from the same numbers as the index.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import ROOT, profile_from_args, shown_path  # noqa: E402
from lib.errors import DataError, ProfileError  # noqa: E402
from lib.report.render import ReportError, read_executed, render, run_problem  # noqa: E402

LISTS = ("--completed", "--failed")
CHART_TABLE = "index_charts.csv"  # in the report folder's tables/: what the index's charts are drawn from


def parse_args(argv: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The profile's words (``PROFILE [-p NAME VALUE ...]``) and the notebook lists after them."""
    profile, lists, current = [], {k: [] for k in LISTS}, None
    for word in argv:
        if word in LISTS:
            current = word
        elif current is None:
            profile.append(word)
        else:
            lists[current].append(word)
    return profile, lists


def failure_message(path: Path) -> str:
    """A notebook run that did not complete, in words: its error, and where its executed notebook is."""
    path = Path(path)
    if not path.exists():
        return f"{path.stem}: the run did not complete and wrote no executed notebook ({shown_path(path)})"
    try:
        why = run_problem(read_executed(path)) or "papermill stopped (see its message above)"
    except ReportError as exc:
        why = str(exc)
    return f"{path.stem}: the run did not complete: {why}; its executed notebook: {shown_path(path)} (not rendered)"


def page_links(folder: Path, shipped: Path = ROOT / "report") -> dict[str, str | None]:
    """Each notebook page (and the index) as a page in ``folder`` links it: the folder's own page, else
    the shipped report's (a path relative to ``folder``), else None (no page anywhere)."""
    from lib.report.index_page import notebook_titles

    out = {}
    for name in [*notebook_titles(), "index"]:
        if (folder / f"{name}.html").exists():
            out[name] = f"{name}.html"
        elif (shipped / f"{name}.html").exists():
            out[name] = os.path.relpath(shipped / f"{name}.html", folder)
        else:
            out[name] = None
    return out


_ANCHOR = re.compile(r"""<a\s+href="([^"#:?]+\.html)"([^>]*)>(.*?)</a>""", re.S)


def relink(page: Path, links: dict[str, str | None]) -> bool:
    """Point every link of ``page`` to a notebook page or the index at the page that exists
    (``page_links``); a link to a page that exists nowhere becomes its text. True when it changed."""
    text = page.read_text(encoding="utf-8")

    def fix(m):
        name = Path(m.group(1)).stem
        if name not in links:
            return m.group(0)
        target = links[name]
        return m.group(3) if target is None else f'<a href="{target}"{m.group(2)}>{m.group(3)}</a>'

    new = _ANCHOR.sub(fix, text)
    if new != text:
        from lib.io import write_text

        write_text(page, new)
    return new != text


def relink_folder(cfg, pages: list[Path] | None = None) -> None:
    """The given pages (by default every page of the run's report folder, once the whole command has
    succeeded) link pages that exist: the folder's own, else the shipped report's. A page that cannot
    be read or written is left as it is, with a warning."""
    if not cfg.report_dir.is_dir():
        return
    links = page_links(cfg.report_dir)
    for page in sorted(cfg.report_dir.glob("*.html")) if pages is None else pages:
        if not page.is_file():
            continue
        try:
            relink(page, links)
        except (OSError, UnicodeDecodeError) as exc:
            print(f"warning: {shown_path(page)}: its links were not checked ({exc})", file=sys.stderr)


def draw_index_charts(conditions, cfg, folder: Path) -> dict[str, Path]:
    """The index's three charts of ``conditions`` (the condition table, escalate left out where it never
    escalates) drawn into ``folder`` under the names the profile's figures have: headline, frontier,
    conditions -> the PNG drawn (a chart a page of this command drew from the same inputs is not drawn again:
    ``lib.report.chart_files.drawn_once``)."""
    from lib.report import plots
    from lib.report.article import article_figures, shows_article
    from lib.report.display import design_namer

    names = design_namer(cfg)
    charts = {"headline": (plots.headline_chart, {"article": article_figures() if shows_article(cfg) else None}),
              "frontier": (plots.frontier_chart, {}), "conditions": (plots.conditions_chart, {})}
    out = {}
    for key, (chart, kwargs) in charts.items():
        out[key] = folder / f"{cfg.name}_{key}.png"
        chart(conditions, out[key], names=names, reuse=True, **kwargs)
    return out


def write_index(cfg) -> Path | None:
    """The charts and the index page, from the saved results; None when the run has no summary yet.

    The charts, the page and its figures are made in a scratch folder and written into place
    atomically, so a failed write leaves the files that were there whole. For the shipped report
    the README's generated answer and results table are brought up to date too."""
    from lib import pipeline
    from lib.report import chart_files, queries
    from lib.io import write_bytes
    from lib.report.display import spreadsheet_safe
    from lib.report.index_page import (build_index, readme_answer, readme_results, runs_table, update_readme,
                                       without_idle_escalate)

    if not (pipeline.results_dir(cfg) / "summary.json").exists():
        return None
    figs = {k: cfg.figures_dir / f"{cfg.name}_{k}.png" for k in ("headline", "frontier", "conditions")}
    every = queries.condition_table(cfg)
    conditions, left_out = without_idle_escalate(every, cfg)  # escalate that never escalates repeats hybrid_rerank
    # the table the index's charts are drawn from, beside the pages' tables (tests/test_figures_reproduce.py
    # redraws the committed charts from it, byte for byte)
    write_bytes(cfg.report_dir / "tables" / CHART_TABLE, spreadsheet_safe(conditions).to_csv(index=False).encode("utf-8"))
    try:
        scored = queries.load_scored(cfg, results=False)  # its tables only: the pages kept them
    except DataError as exc:
        print(f"warning: the agent's table on the index is left out: {exc}", file=sys.stderr)
        scored = None
    with tempfile.TemporaryDirectory(prefix="index-") as tmp:
        scratch = Path(tmp)
        for key, drawn in draw_index_charts(conditions, cfg, scratch / "charts").items():
            chart_files.place_png(drawn.read_bytes(), figs[key])  # kept where the same data is drawn within tolerance
        links = page_links(cfg.report_dir)
        built = build_index(scratch, pipeline.results_dir(cfg), cfg, [figs["conditions"]],
                            bench=ROOT / "results" / "bench.json", conditions=conditions, headline=figs["headline"],
                            frontier=figs["frontier"], scored=scored, links=links, pages_dir=cfg.report_dir,
                            runs=runs_table(cfg, every), left_out=left_out)
        for f in sorted((scratch / "figures").glob("*")):
            chart_files.place_png(f.read_bytes(), cfg.report_dir / "figures" / f.name)
        out = write_bytes(cfg.report_dir / built.name, built.read_bytes())
    if cfg.shipped:
        figure = Path(os.path.relpath(figs["headline"], ROOT)).as_posix()
        if update_readme(readme_answer(conditions, cfg, figure), readme_results(conditions, pipeline.results_dir(cfg), cfg)):
            print("README.md: the answer and the results table brought up to date")
    return out


def main(argv: list[str]) -> int:
    words, lists = parse_args(argv)
    try:
        cfg = profile_from_args(words)
    except ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    status = 0
    for path in lists["--failed"]:
        print(f"error: {failure_message(Path(path))}", file=sys.stderr)
        status = 1
    written = []
    for name in lists["--completed"]:
        try:
            written.append(render(cfg.report_dir / f"{Path(name).stem}.ipynb", cfg.report_dir))
        except ReportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    relink_folder(cfg, written)  # the pages written now link pages that exist, whatever happens to the index
    if status:
        print(f"error: {shown_path(cfg.report_dir / 'index.html')} not rebuilt, as a notebook did not complete "
              "(the pages not rendered in this command are as they were)", file=sys.stderr)
        return status
    try:
        out = write_index(cfg)
    except OSError as exc:
        where = shown_path(Path(exc.filename)) if exc.filename else shown_path(cfg.report_dir)
        print(f"error: {where}: cannot write the index page or its figures ({exc.strerror or exc}); "
              "the pages already written are unchanged", file=sys.stderr)
        return 1
    except (DataError, ProfileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    relink_folder(cfg)
    if out is not None:
        print(shown_path(out))
    return 0


if __name__ == "__main__":
    from lib.progress import interruptible

    sys.exit(interruptible(main, sys.argv[1:]))  # Ctrl-C: one line, no traceback
