"""Execute the report's notebooks and render those that completed: the Makefile's `report`,
`notebook` and `study` targets.

Usage: python scripts/run_notebooks.py --profile-file FILE --out FOLDER --failed FOLDER
                                       [--notebooks-dir DIR] NAME ... -- PROFILE [-p NAME VALUE ...]

Each NAME is executed by papermill from DIR/NAME.ipynb (default notebooks/) with the parameters of
FILE and the ``-p`` words, all in one kernel reset before each notebook (lib/report/execute.py), into
the --failed folder, and moved into the --out folder (the profile's report folder) when it completed;
the first that fails stops the run. The completed ones are then rendered and the index rebuilt by
scripts/build_report.py (whose exit status this returns: 0 when every page was written, 1 when a
notebook failed or a page could not be written, 2 on a bad profile or parameter).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_report  # noqa: E402

from lib.config import ROOT  # noqa: E402
from lib.report.execute import notebook_parameters, run_notebooks  # noqa: E402


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("error: run_notebooks.py needs `-- PROFILE [-p NAME VALUE ...]` after the notebooks", file=sys.stderr)
        return 2
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="run_notebooks.py")
    parser.add_argument("--profile-file", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--failed", required=True, type=Path)
    parser.add_argument("--notebooks-dir", type=Path, default=ROOT / "notebooks")
    parser.add_argument("names", nargs="+")
    args = parser.parse_args(argv[:cut])
    words = argv[cut + 1:]
    try:
        parameters = notebook_parameters(args.profile_file, words[1:])
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for folder in (args.out, args.failed):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"error: {folder}: cannot create the folder ({exc.strerror or exc})", file=sys.stderr)
            return 1
    from jupyter_client.kernelspec import NoSuchKernel

    try:
        completed, failed = run_notebooks(args.names, args.notebooks_dir.resolve(), args.out, args.failed, parameters)
    except NoSuchKernel as exc:
        print(f"error: the project's kernel is not registered ({exc}): `make setup` registers it", file=sys.stderr)
        return 2
    return build_report.main([*words, "--completed", *completed, "--failed", *map(str, failed)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
