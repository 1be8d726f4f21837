"""How long `make test` takes a newcomer: a fresh clone of the commit (no .venv: the install is part of it), with
the project's folder of offline data beside it where there is one (../shared, as CI lays it out), then `make
test` in it, measured as its wall time and the user + system CPU time of every process it started
(``resource.getrusage(RUSAGE_CHILDREN)``: pip, the kernels, every test worker), with the machine's load average
before and after (other jobs on the cores inflate the wall time, not the CPU time). The goal: 6 minutes of wall
time on 2 quiet cores and 600 s of CPU.

Usage: python scripts/bench_tests.py [--into PATH] [--keep] [--commit REV]

Prints the measurement as JSON and writes it into PATH (default results/bench.json, the file the index's speed
table reads) as the step ``make_test``, keeping every other step; the pytest summary line and its slowest tests
(`make test` prints them: --durations) go with it. ``--keep`` leaves the clone in place (its path is printed).
Exits with `make test`'s status."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.paths import ROOT  # noqa: E402
from lib.report.bench import children_cpu, cpu_model  # noqa: E402

GOAL_WALL_S, GOAL_CPU_S = 360.0, 600.0
STEP = "make_test"


def pytest_figures(log: str) -> dict:
    """The pytest summary line ("838 passed, 19 skipped in 301.2s"), its slowest tests and the tests that failed,
    from `make test`'s output."""
    said = r"^(?:=+ )?(\d+ (?:passed|failed|error)[^=\n]*? in [\d.]+s(?: \([\d:]+\))?)(?: =+)?$"  # -q or not
    summary = next((m.group(1) for m in re.finditer(said, log, re.M)), "")
    slowest = [{"s": float(m.group(1)), "phase": m.group(2), "test": m.group(3)}
               for m in re.finditer(r"^([\d.]+)s (setup|call|teardown)\s+(\S+)$", log, re.M)]
    failed = [m.group(1) for m in re.finditer(r"^(?:FAILED|ERROR) (\S+)", log, re.M)]  # make test's -rfE lines
    return {"pytest": summary, "slowest": slowest, "failed": failed}


def bench_tests(commit: str = "HEAD", keep: bool = False) -> tuple[dict, int]:
    """`make test` in a fresh clone of ``commit``: (the step's figures, make's exit status)."""
    sha = subprocess.run(["git", "rev-parse", "--short", commit], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix="bench-tests-"))
    clone = tmp / "repo"
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        subprocess.run(["git", "checkout", "--quiet", sha], cwd=clone, check=True)
        if (ROOT.parent / "shared").is_dir():  # beside the clone, as beside the repository (and in CI)
            (tmp / "shared").symlink_to(ROOT.parent / "shared")
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        load_before = os.getloadavg()
        cpu0, t0 = children_cpu(), time.perf_counter()
        with open(tmp / "make-test.log", "w", encoding="utf-8") as out:
            done = subprocess.run(["make", "test"], cwd=clone, env=env, stdout=out, stderr=subprocess.STDOUT)
        wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
        load_after = os.getloadavg()
        log = (tmp / "make-test.log").read_text(encoding="utf-8", errors="replace")
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    figures = pytest_figures(log)
    verdict = ("within" if wall <= GOAL_WALL_S and cpu <= GOAL_CPU_S else "over") + " the goal (6 min wall, 600 s CPU)"
    step = {"wall_s": wall, "cpu_s": cpu, "ok": done.returncode == 0, "exit": done.returncode, "commit": sha,
            "threads": os.cpu_count(), "cpu": cpu_model(), "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in load_after], "command": "make test", **figures,
            "how": f"make test in a fresh clone of commit {sha} (git clone, no .venv: the install included), "
                   "wall time and the CPU time of every process it started, user + system",
            "summary": f"{wall / 60:.1f} min wall, {cpu:.0f} s of CPU (install included; {verdict}) on {os.cpu_count()} "
                       f"threads, load {load_before[0]:.1f} before and {load_after[0]:.1f} after; "
                       f"{figures['pytest'] or 'no pytest summary: make test stopped first'}"}
    if keep:
        step["clone"] = str(clone)
    if done.returncode != 0:
        print(log[-4000:], file=sys.stderr)
    return step, done.returncode


def main(argv: list[str]) -> int:
    into = Path(argv[argv.index("--into") + 1]) if "--into" in argv else ROOT / "results" / "bench.json"
    commit = argv[argv.index("--commit") + 1] if "--commit" in argv else "HEAD"
    step, status = bench_tests(commit, keep="--keep" in argv)
    print(json.dumps(step, indent=1))
    bench = json.loads(into.read_text(encoding="utf-8")) if into.exists() else {"steps": {}}
    bench.setdefault("steps", {})[STEP] = step
    into.write_text(json.dumps(bench, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written into {into} as the step {STEP}: {step['summary']}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
