"""Execute the report's notebooks and render those that completed: the Makefile's `report`,
`notebook` and `study` targets.

Usage: python scripts/run_notebooks.py --profile-file FILE [--failed-root DIR] [--notebooks-dir DIR]
                                       [--print-page] NAME ... -- PROFILE [-p NAME VALUE ...]

The profile and its ``-p`` values are checked first, as scripts/check_settings.py checks them (exit 2
with the project's message). Each NAME is then executed by papermill from DIR/NAME.ipynb (default
notebooks/) with the parameters of FILE and the ``-p`` words, all in one kernel reset before each
notebook (lib/report/execute.py), into the failed-run folder (--failed-root, default build/failed,
then the report folder's path) and moved into the profile's report folder when it completed; the
first that fails stops the run; a page executed before a later page saved runs is executed again at the end
(lib/report/execute.py), so a first run and its rerun give the same pages. The completed ones are then
rendered and the index rebuilt by
scripts/build_report.py (whose exit status this returns: 0 when every page was written, 1 when a
notebook failed or a page could not be written or a page left a design unscored, which is printed, 2 on a
bad profile or parameter). --print-page
prints the page's path when one notebook was asked for and its page was written.

--from-env (the Makefile's `notebook` and `study` targets): what the user typed is read from the
environment, never from a shell line, so no quote, `$(...)`, backtick or `;` in it is run: RUN_PROFILE
(the profile or study name; its file found as lib.config.profile_file finds it), RUN_PARAMS (the `-p
NAME VALUE` words, split as a shell splits words, never run), RUN_EXTEND ("1": add `-p extend_shipped
true`), RUN_NB (a notebook number or name prefix: exactly one notebook must match) or RUN_NOTEBOOK_NAMES
(notebook names separated by spaces), RUN_NOTEBOOK_DIR and RUN_FAILED_ROOT (when set), RUN_AGAIN ("1": --again).

A page whose executed notebook was computed from the same inputs (every file a page reads by content, the code,
the packages, its notebook and parameters: lib.report.inputs, lib.report.execute.page_key) is kept, not executed
again; --again (`make report AGAIN=1`) executes every page named.
"""
from __future__ import annotations

import argparse
import atexit
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from lib.config import ROOT, profile_file, shown_path  # noqa: E402
from lib.data.study import lock_study  # noqa: E402
from lib.errors import ProfileError  # noqa: E402
from lib.io import LockedError  # noqa: E402
from lib.report.execute import notebook_parameters, run_notebooks, unscored_lines  # noqa: E402


def notebook_named(prefix: str, notebooks_dir: Path) -> str:
    """The one notebook of ``notebooks_dir`` whose name starts with ``prefix`` (``03``, ``03_dense``)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", prefix):
        raise ValueError(f"NB: a notebook number or name (letters, digits, '_' and '-'), got {prefix!r}")
    found = sorted(p.stem for p in notebooks_dir.glob(f"{prefix}*.ipynb"))
    if len(found) != 1:
        known = ", ".join(sorted(p.stem for p in notebooks_dir.glob("*.ipynb")))
        raise ValueError(f"NB={prefix}: {'no notebook' if not found else 'several notebooks: ' + ', '.join(found)} "
                         f"in {shown_path(notebooks_dir)} (known: {known})")
    return found[0]


def from_environment(environ, notebooks_dir: Path) -> tuple[list[str], list[str], list[str]]:
    """The command line the Makefile would have pasted, read from ``environ`` (module docstring):
    (the options, the notebook names, the words after ``--``). Raises ValueError naming the variable."""
    name = environ.get("RUN_PROFILE") or "offline"
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,80}", name):
        raise ValueError(f"PROFILE: a profile or study name is at most 80 letters, digits, '-' and '_', got {name!r}")
    try:
        params = shlex.split(environ.get("RUN_PARAMS") or "")
    except ValueError as exc:
        raise ValueError(f"PARAMS: cannot be read as '-p NAME VALUE' words ({exc}): {environ.get('RUN_PARAMS')!r}") from None
    if (environ.get("RUN_EXTEND") or "").strip() == "1":
        params += ["-p", "extend_shipped", "true"]
    options = ["--profile-file", str(profile_file(name))]
    if environ.get("RUN_NOTEBOOK_DIR"):
        options += ["--notebooks-dir", environ["RUN_NOTEBOOK_DIR"]]
        notebooks_dir = Path(environ["RUN_NOTEBOOK_DIR"])
    if environ.get("RUN_FAILED_ROOT"):
        options += ["--failed-root", environ["RUN_FAILED_ROOT"]]
    if (environ.get("RUN_AGAIN") or "").strip() == "1":
        options += ["--again"]
    if environ.get("RUN_NB"):
        names = [notebook_named(environ["RUN_NB"].strip(), notebooks_dir)]
    else:
        names = (environ.get("RUN_NOTEBOOK_NAMES") or "").split()
        if not names:
            raise ValueError("NOTEBOOKS: no notebook named")
    return options, names, [name, *params]


def main(argv: list[str]) -> int:
    if "--from-env" in argv:
        rest = [a for a in argv if a != "--from-env"]
        try:
            options, names, words = from_environment(os.environ, ROOT / "notebooks")
        except (ValueError, ProfileError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        argv = [*options, *rest, *names, "--", *words]
    if "--" not in argv:
        print("error: run_notebooks.py needs `-- PROFILE [-p NAME VALUE ...]` after the notebooks", file=sys.stderr)
        return 2
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="run_notebooks.py")
    parser.add_argument("--profile-file", required=True)
    parser.add_argument("--failed-root", type=Path, default=Path("build/failed"))
    parser.add_argument("--notebooks-dir", type=Path, default=ROOT / "notebooks")
    parser.add_argument("--print-page", action="store_true")
    parser.add_argument("--again", action="store_true")
    parser.add_argument("names", nargs="+")
    args = parser.parse_args(argv[:cut])
    words = argv[cut + 1:]
    import build_report  # the checks and the run's libraries, loaded once the command line is read
    from check_settings import shown

    from lib.config import profile_from_args
    from lib.preflight import pages_to_run
    from lib.report.index_numbers import notebook_designs

    try:
        profile = profile_from_args(words)
        # the pages that ask a model that cannot answer here are left out by name; the others run
        names, left_out = pages_to_run(profile, args.names, notebook_designs())
        parameters = notebook_parameters(args.profile_file, words[1:])
        lock_study(profile)  # one run of a study at a time, held until this process ends; a second is refused
    except (ProfileError, OSError, ValueError, LockedError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = shown(profile.report_dir)
    failed_dir = args.failed_root / str(out).lstrip("/")
    from jupyter_client.kernelspec import NoSuchKernel

    from lib.report.chart_files import DRAWN_DIR, KEPT_LOG, kept_line  # the charts kept within tolerance are named in this file

    handle, kept_log = tempfile.mkstemp(prefix="kept-charts-", suffix=".tsv")
    os.close(handle)
    atexit.register(Path(kept_log).unlink, missing_ok=True)
    os.environ[KEPT_LOG] = kept_log  # read by the kernel (started below) and by the render in this process
    drawn = tempfile.TemporaryDirectory(prefix="drawn-charts-")  # the charts this command drew, for the index
    atexit.register(drawn.cleanup)
    os.environ[DRAWN_DIR] = drawn.name
    try:
        from lib.config import ENV_OVERRIDES  # the environment's settings are inputs of the pages
        from lib.report.inputs import PAGE_ENV, inputs_digest, page_folders  # a page of the same inputs is kept
        from lib.report.queries import saved_runs_state  # a page executed before the last run was saved runs again
        from lib.report.kernel import ensure_kernel  # the kernel starts this venv's interpreter, repaired if not

        for note in ensure_kernel():
            print(f"kernel: {note}", file=sys.stderr)

        if left_out:
            print(left_out, file=sys.stderr)
        # the environment the pages read is an input too: the settings it overrides, a server's address, the
        # keys (only the digest of the whole is kept), and any variable a setting names (api_key_env, ...)
        named = [v for k, v in profile.settings.items() if k.endswith("_env") and isinstance(v, str)]
        folders, skipped = page_folders(profile)
        inputs = inputs_digest({"words": words, "parameters": parameters,
                                "env": {k: os.environ.get(k) for k in [*ENV_OVERRIDES, *PAGE_ENV, *named]}},
                               folders=folders, skipped=skipped)
        completed, failed = run_notebooks(names, args.notebooks_dir.resolve(), out, failed_dir, parameters,
                                          state=lambda: saved_runs_state(profile), inputs=inputs, again=args.again)
    except NoSuchKernel as exc:
        print(f"error: the project's kernel is not registered ({exc}): `make setup` registers it", file=sys.stderr)
        return 2
    except OSError as exc:  # a report or failed-run folder that cannot be made, a notebook that cannot be moved there
        where = shown(Path(exc.filename)) if exc.filename else out
        print(f"error: {where}: cannot write ({exc.strerror or exc}); the pages already written are unchanged",
              file=sys.stderr)
        return 1
    status = build_report.main([*words, "--completed", *completed, "--failed", *map(str, failed)])
    kept = kept_line(Path(kept_log))
    if kept:  # charts drawn within tolerance of the files there: kept, and said in one line
        print(kept)
    problems = [f"{name}: {line}" for name in completed for line in unscored_lines(out / f"{name}.ipynb")]
    for line in problems:  # a design left unscored is said here too, not only on its page
        print(f"not scored: {line}", file=sys.stderr)
    if problems:
        status = max(status, 1)
    if args.print_page and status == 0 and len(names) == 1:
        print(f"{out}/{args.names[0]}.html")
    return status


if __name__ == "__main__":
    from lib.progress import interruptible

    sys.exit(interruptible(main, sys.argv[1:]))  # Ctrl-C: one line, no traceback
