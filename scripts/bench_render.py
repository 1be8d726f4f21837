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
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import ROOT  # noqa: E402

GOAL_CPU_S = 120.0  # the re-render's goal: 2 minutes of CPU


def children_cpu() -> float:
    """User + system CPU seconds of every child process this process has waited for so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(command: list[str], cwd: Path = ROOT) -> dict:
    """Run ``command`` to completion and return its CPU seconds (user + system, every process it
    started), wall seconds and a summary in words; a command that fails raises CalledProcessError."""
    cpu0, t0 = children_cpu(), time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    verdict = "within" if cpu <= GOAL_CPU_S else "over"
    return {"cpu_s": cpu, "wall_s": wall, "threads": os.cpu_count(), "command": " ".join(command),
            "summary": f"{cpu:.0f} s of CPU (user + system, every process it started; {verdict} the 2-minute goal), "
                       f"{wall:.0f} s wall on {os.cpu_count()} threads"}


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
