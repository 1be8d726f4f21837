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
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import ROOT, profile_from_args, shown_path  # noqa: E402
from lib.errors import DataError, ProfileError  # noqa: E402
from lib.report.render import ReportError, read_executed, render, run_problem  # noqa: E402

LISTS = ("--completed", "--failed")


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


def write_index(cfg) -> Path | None:
    """The charts and the index page, from the saved results; None when the run has no summary yet.

    The charts, the page and its figures are made in a scratch folder and written into place
    atomically, so a failed write leaves the files that were there whole."""
    from lib import pipeline
    from lib.io import write_bytes
    from lib.report import plots
    from lib.report.index_page import build_index, notebook_titles

    if not (pipeline.results_dir(cfg) / "summary.json").exists():
        return None
    figs = [cfg.figures_dir / f"{cfg.name}_{k}.png" for k in ("conditions", "frontier", "scores", "deltas")]
    conditions = pipeline.condition_table(cfg)
    with tempfile.TemporaryDirectory(prefix="index-") as tmp:
        scratch = Path(tmp)
        if not conditions.empty:
            for chart, fig in ((plots.conditions_chart, figs[0]), (plots.frontier_chart, figs[1])):
                chart(conditions, scratch / "charts" / fig.name)
                write_bytes(fig, (scratch / "charts" / fig.name).read_bytes())
        for nb in notebook_titles():  # the index links the pages that exist in the report folder
            if (cfg.report_dir / f"{nb}.html").exists():
                (scratch / f"{nb}.html").touch()
        built = build_index(scratch, pipeline.results_dir(cfg), cfg.name, figs, bench=ROOT / "results" / "bench.json",
                            conditions=conditions)
        for f in sorted((scratch / "figures").glob("*")):
            write_bytes(cfg.report_dir / "figures" / f.name, f.read_bytes())
        return write_bytes(cfg.report_dir / built.name, built.read_bytes())


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
    for name in lists["--completed"]:
        try:
            render(cfg.report_dir / f"{Path(name).stem}.ipynb", cfg.report_dir)
        except ReportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
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
    if out is not None:
        print(shown_path(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
