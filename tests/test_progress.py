"""Progress of long steps (lib/progress.py): shown in the terminal with the time left, never in a
rendered page."""
import json
import os
import subprocess
import sys
import textwrap

import nbformat
import pytest

from lib import progress

FAKE_STEP = "fake long step"
CELL = f"""
import time
from lib.progress import bar
for _ in bar(range(3), desc={FAKE_STEP!r}, unit="step", mininterval=0):
    time.sleep(0.05)
print("cell done")
"""


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(progress, "_STREAM", {})
    return monkeypatch


def test_a_bar_writes_its_count_and_time_left_where_progress_is_sent(fresh, tmp_path):
    log = tmp_path / "progress.log"
    fresh.setenv("PROGRESS_TO", str(log))
    fresh.setenv("TQDM_DISABLE", "1")  # the Makefile's setting, for other libraries' bars: not these
    for _ in progress.bar(range(4), desc=FAKE_STEP, mininterval=0):
        pass
    text = log.read_text()
    assert FAKE_STEP in text and "4/4" in text and "<" in text  # tqdm's "elapsed<remaining"


def test_progress_can_be_turned_off(fresh, capsys):
    fresh.setenv("PROGRESS_TO", "off")
    assert progress.terminal() is None
    with progress.to_terminal() as shown:
        assert not shown
    for _ in progress.bar(range(3), desc=FAKE_STEP):
        pass
    assert FAKE_STEP not in capsys.readouterr().err


def test_a_notebook_step_shows_progress_in_the_terminal_and_not_in_the_page(tmp_path):
    """A notebook run as `make report` runs it (lib/report/execute.py: papermill in the project's
    kernel): the bar reaches the runner's stderr (the terminal), the executed page holds none of it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(CELL)]
    (tmp_path / "nb").mkdir()
    nbformat.write(nb, tmp_path / "nb" / "p.ipynb")
    runner = textwrap.dedent(f"""
        from pathlib import Path
        from lib.report.execute import run_notebooks
        done, failed = run_notebooks(["p"], Path({str(tmp_path / 'nb')!r}), Path({str(tmp_path / 'out')!r}),
                                     Path({str(tmp_path / 'failed')!r}), {{}}, log=lambda line: None)
        assert done == ["p"], failed
    """)
    env = {k: v for k, v in os.environ.items() if k != "PROGRESS_TO"}
    env["TQDM_DISABLE"] = "1"
    proc = subprocess.run([sys.executable, "-c", runner], cwd=progress.__file__.rsplit("/lib/", 1)[0],
                          capture_output=True, text=True, env=env, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert FAKE_STEP in proc.stderr and "3/3" in proc.stderr  # the terminal got the bar
    outputs = json.dumps([c.get("outputs", []) for c in nbformat.read(tmp_path / "out" / "p.ipynb", as_version=4).cells])
    assert "cell done" in outputs  # the cell ran and its own output is on the page
    assert FAKE_STEP not in outputs and "3/3" not in outputs  # the bar is not
