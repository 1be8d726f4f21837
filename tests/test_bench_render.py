"""scripts/bench_render.py: the CPU time of every process a command starts, and its step written into
a benchmark file beside the steps already there; the speed table says what was measured."""
import json
import sys

from lib.config import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import bench_render  # noqa: E402


def test_the_cpu_of_the_children_is_counted_and_the_step_joins_the_benchmark_file(tmp_path):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"machine": {"threads": 2}, "steps": {"dense_query": {"summary": "38 ms"}}}))
    burn = [sys.executable, "-c", "import hashlib\nfor i in range(200000): hashlib.sha256(b'x' * 64).digest()"]
    assert bench_render.main(["--into", str(bench), "--", *burn]) == 0
    saved = json.loads(bench.read_text())
    assert saved["steps"]["dense_query"] == {"summary": "38 ms"} and saved["machine"] == {"threads": 2}
    step = saved["steps"]["report_rerender"]
    assert step["cpu_s"] > 0 and step["wall_s"] > 0 and "of CPU (user + system" in step["summary"]
    assert step["command"].endswith("digest()")


def test_the_speed_table_says_whether_the_rerender_was_measured_in_cpu(tmp_path):
    from lib.report.index_page import speed_section

    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"steps": {"report_rerender": {"wall_s": 30.2, "summary": "30 s"}}}))
    assert "wall time only" in speed_section(bench) and "its CPU time is not recorded" in speed_section(bench)
    bench.write_text(json.dumps({"steps": {"report_rerender": {"cpu_s": 250.0, "wall_s": 600.0,
                                                               "summary": "250 s of CPU"}}}))
    page = speed_section(bench)
    assert "CPU time of every process it started" in page and "250 s of CPU" in page and "wall time only" not in page


def test_the_speed_table_says_where_and_how_warm_the_rerender_was_measured(tmp_path):
    from lib.report.index_page import speed_section

    bench = tmp_path / "bench.json"
    how = "cold: the first make report of a fresh clone of commit abc1234, its .venv set up beforehand (not counted)"
    bench.write_text(json.dumps({"steps": {
        "report_rerender": {"cpu_s": 101.0, "wall_s": 108.0, "summary": "101 s of CPU", "how": how},
        "report_rerender_warm": {"cpu_s": 60.0, "wall_s": 63.0, "summary": "60 s of CPU", "how": "warm: again"}}}))
    page = speed_section(bench)
    assert how in page and "warm: again" in page and "101 s of CPU" in page and "60 s of CPU" in page
    # a figure measured before it said how: said to be the working copy's, caches warm, not a fresh clone
    bench.write_text(json.dumps({"steps": {"report_rerender": {"cpu_s": 54.0, "wall_s": 58.0, "summary": "54 s"}}}))
    assert "caches warm, not a fresh clone" in speed_section(bench)


def test_the_tests_bench_reads_make_tests_figures_and_the_speed_table_shows_them(tmp_path):
    """scripts/bench_tests.py: the pytest summary line and the slowest tests read from `make test`'s output, and
    the step it records shown by the index's speed table with what it is held to."""
    import bench_tests

    from lib.report.index_page import speed_section

    log = ("ruff check lib scripts tests\nAll checks passed!\n"
           "============================= slowest 15 durations ==============================\n"
           "121.97s setup    tests/test_newcomer.py::test_the_readme_worked_example\n"
           "8.67s call     tests/test_metrics.py::test_paired_permutation_agrees_with_ranx_compare_and_scipy\n"
           "=========================== short test summary info ============================\n"
           "SKIPPED [1] tests/test_x.py:3: no chromium\n"
           "=============== 850 passed, 21 skipped in 301.20s (0:05:01) ===============\n")
    figures = bench_tests.pytest_figures(log)
    assert figures["pytest"] == "850 passed, 21 skipped in 301.20s (0:05:01)"
    assert figures["slowest"] == [
        {"s": 121.97, "phase": "setup", "test": "tests/test_newcomer.py::test_the_readme_worked_example"},
        {"s": 8.67, "phase": "call", "test": "tests/test_metrics.py::test_paired_permutation_agrees_with_ranx_compare_and_scipy"}]
    assert bench_tests.pytest_figures("make: *** [Makefile] Error 2\n") == {"pytest": "", "slowest": [], "failed": []}
    quiet = ("SKIPPED [1] x\nFAILED tests/test_a.py::test_b - AssertionError: x\n"
             "15 failed, 896 passed, 30 skipped in 2090.41s (0:34:50)\nmake: *** [Makefile:147: test] Error 1\n")
    assert bench_tests.pytest_figures(quiet)["pytest"] == "15 failed, 896 passed, 30 skipped in 2090.41s (0:34:50)"
    assert bench_tests.pytest_figures(quiet)["failed"] == ["tests/test_a.py::test_b"]
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"steps": {"make_test": {"wall_s": 301.0, "cpu_s": 540.0,
                                                         "summary": "5.0 min wall, 540 s of CPU"}}}))
    table = speed_section(bench)
    assert "make test in a fresh clone, the install included" in table and "5.0 min wall, 540 s of CPU" in table
    assert "6 min wall on 2 quiet cores, 600 s of CPU" in table


def test_the_speed_table_shows_the_side_by_side_rerender_with_its_commits_and_machine(tmp_path):
    """scripts/bench_render.py --clone --base: the ratio of two commits' CPU, measured in one run, is shown with
    both commits and the machine it came from."""
    from lib.report.index_page import speed_section

    bench = tmp_path / "bench.json"
    row = {"base": "5b9b926", "commit": "abc1234", "machine": "AMD EPYC 7B13", "threads": 2, "goal_ratio": 0.6,
           "cold": {"ratio": 0.5}, "warm": {"ratio": 0.55}, "within_goal": True,
           "summary": "0.50x the CPU of 5b9b926 cold (70 s against 140 s), 0.55x warm"}
    bench.write_text(json.dumps({"steps": {"report_rerender_versus": row}}))
    page = speed_section(bench)
    assert "abc1234 against 5b9b926 on AMD EPYC 7B13" in page and "0.50x the CPU of 5b9b926 cold" in page
    assert "0.6x the earlier commit&#x27;s CPU" in page and "wall time only" not in page


def test_two_commits_are_measured_in_turn_in_fresh_clones_and_their_ratio_kept():
    """rerender_in_clone(base=...): a fresh clone of each commit (here the same one twice), the command run in
    each, base then commit in each pass; the versus step names both commits and the machine and holds the ratio
    of their CPU seconds."""
    from lib.report.bench import rerender_in_clone

    order = []
    burn = [sys.executable, "-c", "import hashlib\nfor i in range(100000): hashlib.sha256(b'x' * 64).digest()"]
    steps = rerender_in_clone(commit="HEAD", base="HEAD", command=burn, log=order.append)  # any clone has HEAD
    assert [line.split(" of ")[1].split(" (")[0] for line in order][:2] == [line.split(" of ")[1].split(" (")[0]
                                                                          for line in order][2:]
    assert [line.rsplit("(", 1)[1] for line in order] == ["cold)", "cold)", "warm)", "warm)"]
    row = steps["report_rerender_versus"]
    assert row["base"] == row["commit"] and row["machine"] and row["goal_ratio"] == 0.6
    for when in ("cold", "warm"):
        r = row[when]
        assert r["ratio"] == r["commit_cpu_s"] / r["base_cpu_s"] and r["base_cpu_s"] > 0
    assert steps["report_rerender"]["commit"] == row["commit"] and steps["report_rerender"]["changed"] == []
    assert f"the CPU of {row['base']} cold" in row["summary"] and row["machine"] in row["summary"]


def test_rounds_take_the_cold_pass_again_in_new_clones_and_keep_the_medians():
    """rerender_in_clone(rounds=3): three cold rounds, each in new fresh clones of both commits taken in turn, then
    one warm pass; the versus step holds each round and the medians of the CPU seconds."""
    import statistics

    from lib.report.bench import rerender_in_clone

    order = []
    burn = [sys.executable, "-c", "import hashlib\nfor i in range(50000): hashlib.sha256(b'x' * 64).digest()"]
    steps = rerender_in_clone(commit="HEAD", base="HEAD", command=burn, log=order.append, rounds=3)
    assert [line.rsplit("(", 1)[1] for line in order] == ["cold)"] * 6 + ["warm)"] * 2
    row = steps["report_rerender_versus"]
    rounds = row["cold"]["each_round"]
    assert row["rounds"] == 3 and len(rounds) == 3
    assert row["cold"]["base_cpu_s"] == statistics.median(r["base_cpu_s"] for r in rounds)
    assert row["cold"]["commit_cpu_s"] == statistics.median(r["commit_cpu_s"] for r in rounds)
    assert row["cold"]["ratio"] == row["cold"]["commit_cpu_s"] / row["cold"]["base_cpu_s"]
    assert steps["report_rerender"]["cpu_s"] == row["cold"]["commit_cpu_s"]  # the median round's own step
    assert "the median of 3 rounds" in row["summary"]
