"""Execute the report's notebooks and render those that completed: the Makefile's `report`,
`notebook` and `study` targets.

Usage: python scripts/run_notebooks.py --profile-file FILE [--failed-root DIR] [--notebooks-dir DIR]
                                       [--print-page] NAME ... -- PROFILE [-p NAME VALUE ...]

The profile and its ``-p`` values are checked first, as scripts/check_settings.py checks them (exit 2
with the project's message). Each NAME is then executed by papermill from DIR/NAME.ipynb (default
notebooks/) with the parameters of FILE and the ``-p`` words, all in one kernel reset before each
notebook (lib/report/execute.py), into the failed-run folder (--failed-root, default build/failed,
then the report folder's path) and moved into the profile's report folder when it completed; the
first that fails stops the run. The completed ones are then rendered and the index rebuilt by
scripts/build_report.py (whose exit status this returns: 0 when every page was written, 1 when a
notebook failed or a page could not be written, 2 on a bad profile or parameter). --print-page
prints the page's path when one notebook was asked for and its page was written.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_report  # noqa: E402
from check_settings import checked_profile, shown  # noqa: E402

from lib.config import ROOT  # noqa: E402
from lib.data.study import lock_study  # noqa: E402
from lib.errors import ProfileError  # noqa: E402
from lib.io import LockedError  # noqa: E402
from lib.report.execute import notebook_parameters, run_notebooks  # noqa: E402


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("error: run_notebooks.py needs `-- PROFILE [-p NAME VALUE ...]` after the notebooks", file=sys.stderr)
        return 2
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="run_notebooks.py")
    parser.add_argument("--profile-file", required=True)
    parser.add_argument("--failed-root", type=Path, default=Path("build/failed"))
    parser.add_argument("--notebooks-dir", type=Path, default=ROOT / "notebooks")
    parser.add_argument("--print-page", action="store_true")
    parser.add_argument("names", nargs="+")
    args = parser.parse_args(argv[:cut])
    words = argv[cut + 1:]
    try:
        profile = checked_profile(words)
        parameters = notebook_parameters(args.profile_file, words[1:])
        lock_study(profile)  # one run of a study at a time, held until this process ends; a second is refused
    except (ProfileError, OSError, ValueError, LockedError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = shown(profile.report_dir)
    failed_dir = args.failed_root / str(out).lstrip("/")
    from jupyter_client.kernelspec import NoSuchKernel

    try:
        completed, failed = run_notebooks(args.names, args.notebooks_dir.resolve(), out, failed_dir, parameters)
    except NoSuchKernel as exc:
        print(f"error: the project's kernel is not registered ({exc}): `make setup` registers it", file=sys.stderr)
        return 2
    except OSError as exc:  # a report or failed-run folder that cannot be made, a notebook that cannot be moved there
        where = shown(Path(exc.filename)) if exc.filename else out
        print(f"error: {where}: cannot write ({exc.strerror or exc}); the pages already written are unchanged",
              file=sys.stderr)
        return 1
    status = build_report.main([*words, "--completed", *completed, "--failed", *map(str, failed)])
    if args.print_page and status == 0 and len(args.names) == 1:
        print(f"{out}/{args.names[0]}.html")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
