"""The CPU time of re-rendering the report: `make report` from the saved runs (no model call), run
as a child process, measured as the user + system CPU time of every process it started
(``resource.getrusage(RUSAGE_CHILDREN)`` before and after, which counts the kernel, papermill and
the render alike) beside its wall time. CPU time, unlike wall time, does not grow when other jobs
share the cores, so it is the figure held to the goal (2 minutes of CPU).

Usage: python scripts/bench_render.py [--into PATH] [-- COMMAND ...]

Prints the measurement as JSON; ``--into PATH`` also writes it into that benchmark file (a
``make bench`` output such as build/bench.json or results/bench.json) as the step
``report_rerender``, keeping every other step. ``COMMAND`` replaces `make report` (for example one
page: ``-- make notebook NB=03``)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.report.bench import measure  # noqa: E402

def main(argv: list[str]) -> int:
    command = ["make", "report"]
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1:]
    into = Path(argv[argv.index("--into") + 1]) if "--into" in argv else None
    step = measure(command)
    print(json.dumps(step, indent=1))
    if into is not None:
        bench = json.loads(into.read_text(encoding="utf-8")) if into.exists() else {"steps": {}}
        bench.setdefault("steps", {})["report_rerender"] = step
        into.write_text(json.dumps(bench, indent=1) + "\n", encoding="utf-8")
        print(f"written into {into} as the step report_rerender")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
