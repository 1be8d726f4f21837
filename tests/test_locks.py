"""Two processes never write one run file, nor run one study, at once: the second is refused with the
holder named (pid, host, command, since when), and a killed holder leaves no lock behind (fcntl
locks are released by the kernel when a process ends)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from lib.config import ROOT, STUDIES_DIR, load_profile
from lib.data.study import lock_study
from lib.designs import Question
from lib.designs.dense import DenseDesign
from lib.io import LockedError
from lib.runs import read_results, run_design
from tests.fakes import ListSearcher

QS = [Question(f"q{i:03d}", f"question {i}", "a") for i in range(1, 4)]

# a writer that answers its first question slowly: it holds the run file's lock while it waits
SLOW_WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from lib.designs import Question
    from lib.designs.dense import DenseDesign
    from lib.runs import run_design
    from tests.fakes import ListSearcher

    class Slow(ListSearcher):
        def search(self, query, k):
            print("writing", flush=True)
            time.sleep(120)
            return super().search(query, k)

    qs = [Question(f"q{{i:03d}}", f"question {{i}}", "a") for i in range(1, 4)]
    run_design(DenseDesign(Slow({{}}), provenance={{"profile": "t", "dense_k": 50}}), qs, 1, {folder!r}, progress=False)
""")

HOLD_STUDY = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from lib.config import load_profile
    from lib.data.study import lock_study
    lock_study(load_profile({name!r}))
    print("held", flush=True)
    time.sleep(120)
""")


def start(code: str) -> subprocess.Popen:
    """A holder process, returned once it says it holds the lock."""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    line = proc.stdout.readline()
    assert line.strip() in ("writing", "held"), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc


def kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def dense():
    return DenseDesign(ListSearcher({}), provenance={"profile": "t", "dense_k": 50})


def test_a_second_writer_of_a_run_file_is_refused_naming_the_holder_and_a_killed_one_leaves_no_lock(tmp_path):
    proc = start(SLOW_WRITER.format(root=str(ROOT), folder=str(tmp_path)))
    try:
        with pytest.raises(LockedError) as err:
            run_design(dense(), QS, 1, tmp_path, progress=False)
        msg = str(err.value)
        assert "run1.jsonl: another run is writing this file" in msg
        assert f"pid {proc.pid} on {socket.gethostname()}" in msg and "running `-c`" in msg and " UTC" in msg
    finally:
        kill(proc)
    # the killed writer's lock went with it: the next run writes every question
    run_design(dense(), QS, 1, tmp_path, progress=False)
    assert [r.qid for r in read_results(tmp_path / "dense" / "run1.jsonl")] == [q.qid for q in QS]
    assert (tmp_path / "dense" / "run1.jsonl.lock").read_text() == ""  # released: it names no holder


@pytest.fixture
def study(tmp_path):
    """A study of the test's own (a two-document file), removed afterwards."""
    name = "test-locks"
    shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "text": f"text {i}"}) + "\n" for i in (1, 2)))
    done = subprocess.run([sys.executable, "scripts/new_study.py", "--name", name, "--docs", str(docs),
                           "--set", "llm_backend=replay"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    yield name
    shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)


def test_a_second_run_of_one_study_is_refused_naming_the_holder_and_a_killed_one_leaves_no_lock(study, capsys):
    sys.path.insert(0, str(ROOT / "scripts"))
    import run_notebooks

    proc = start(HOLD_STUDY.format(root=str(ROOT), name=study))
    try:
        profile_file = str(STUDIES_DIR / study / "profile.yaml")
        status = run_notebooks.main(["--profile-file", profile_file, "01_collection", "--", study])
        err = capsys.readouterr().err
        assert status == 2 and f"study {study!r} is being run by another process" in err
        assert f"pid {proc.pid} on {socket.gethostname()}" in err and "since" in err
        with pytest.raises(LockedError, match=f"pid {proc.pid}"):
            lock_study(load_profile(study))
    finally:
        kill(proc)
    held = lock_study(load_profile(study))  # the killed run's lock went with it
    assert held is not None and lock_study(load_profile(study)) is held  # held once a process
    assert json.loads((STUDIES_DIR / study / "study.lock").read_text())["pid"] == os.getpid()
    held.release()
    assert lock_study(load_profile("offline")) is None  # the shipped profiles are not studies
