"""The CPU time of re-rendering the report: `make report` from the saved runs (no model call), run
as a child process, measured as the user + system CPU time of every process it started
(``resource.getrusage(RUSAGE_CHILDREN)`` before and after, which counts the kernel, papermill and
the render alike) beside its wall time. CPU time, unlike wall time, does not grow when other jobs
share the cores, so it is the figure held to the goal (2 minutes of CPU).

Usage: python scripts/bench_render.py [--clone [--base REV [--rounds N]]] [--into PATH] [-- COMMAND ...]

Prints the measurement as JSON; ``--into PATH`` also writes it into that benchmark file (a
``make bench`` output such as build/bench.json or results/bench.json) as the step
``report_rerender``, keeping every other step. ``COMMAND`` replaces `make report` (for example one
page: ``-- make notebook NB=03``).

``--clone``: the figure the report's speed table shows, as a reader who times `make report` on a fresh
clone would get it: `make report` in a fresh clone of the commit (its .venv set up beforehand, not
counted), first cold (``report_rerender``), then again warm (``report_rerender_warm``); each step also
lists the files the run left different from the commit (none: the render reproduced every committed
file byte for byte). Exits 1 when a run left any.

``--base REV`` (with ``--clone``): a fresh clone of REV rendered the same way in the same run, the two commits
taken in turn in each pass, and the step ``report_rerender_versus``: both commits' CPU seconds, cold and warm,
their ratio and the machine (the machine varies between runs; a ratio measured side by side does not). The
goal: at most 0.6x the base's CPU. ``--rounds N`` (with ``--base``): the cold pass N times, each in new fresh clones
of both commits taken in turn, and the medians kept (one render's CPU time varies by a tenth from run to run on a
shared machine); the warm pass once."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.report.bench import measure, rerender_in_clone  # noqa: E402

def main(argv: list[str]) -> int:
    command = ["make", "report"]
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1:]
    into = Path(argv[argv.index("--into") + 1]) if "--into" in argv else None
    base = argv[argv.index("--base") + 1] if "--base" in argv else None
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 1
    steps = rerender_in_clone(base=base, rounds=rounds) if "--clone" in argv else {"report_rerender": measure(command)}
    print(json.dumps(steps, indent=1))
    if into is not None:
        bench = json.loads(into.read_text(encoding="utf-8")) if into.exists() else {"steps": {}}
        bench.setdefault("steps", {}).update(steps)
        into.write_text(json.dumps(bench, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"written into {into} as the step(s) {', '.join(steps)}")
    changed = sorted({line for step in steps.values() for line in step.get("changed", [])})
    if changed:
        print("the render left files different from the commit:\n" + "\n".join(changed), file=sys.stderr)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
