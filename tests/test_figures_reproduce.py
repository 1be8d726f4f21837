"""A fresh render reproduces the committed charts byte for byte, whatever the machine's matplotlib settings:
in a clean clone of the commit, the index's three charts (the README's headline figure among them) are
redrawn from the table make report drew them from (report/tables/index_charts.csv, written beside them)
with the render's own code (scripts/build_report.py draw_index_charts), under a matplotlibrc that sets
other fonts, sizes and hinting, and compared with the committed PNGs. (The pages' other charts come from
the same lib/report/plots.py _save and its pinned style.)"""
import os
import subprocess
import sys

import pytest

from lib.config import ROOT
from lib.report.bench import fresh_clone

REDRAW = """
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, "scripts")
import build_report
from lib.config import load_profile

cfg = load_profile("offline")
table = pd.read_csv(cfg.report_dir / "tables" / build_report.CHART_TABLE)
for key, path in build_report.draw_index_charts(table, cfg, Path(sys.argv[1])).items():
    print(key, path)
"""
# a reader's own matplotlib settings, which the report's charts must not pick up
HOSTILE_RC = "font.family: serif\nfont.size: 14\nlines.linewidth: 3\ntext.hinting: none\nfigure.dpi: 72\naxes.grid: True\n"


def test_the_index_charts_redrawn_from_their_table_in_a_clean_clone_are_the_committed_bytes(tmp_path):
    if not (ROOT / ".git").exists():
        pytest.skip("needs the repository's git history (a clone of the commit)")
    clone = fresh_clone(tmp_path / "clone")
    if not (clone / "report" / "tables" / "index_charts.csv").exists():
        pytest.skip("report/tables/index_charts.csv is not in this commit yet: make report writes it beside the charts")
    rc = tmp_path / "mplconfig"
    rc.mkdir()
    (rc / "matplotlibrc").write_text(HOSTILE_RC, encoding="utf-8")
    out = tmp_path / "redrawn"
    env = {**os.environ, "PYTHONPATH": str(clone), "MPLCONFIGDIR": str(rc), "MPLBACKEND": "svg"}
    done = subprocess.run([sys.executable, "-c", REDRAW, str(out)], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    drawn = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert set(drawn) == {"headline", "frontier", "conditions"}
    differ = []
    for key, path in drawn.items():
        committed = [clone / "figures" / f"offline_{key}.png", clone / "report" / "figures" / f"offline_{key}.png"]
        differ += [str(c.relative_to(clone)) for c in committed if c.exists() and c.read_bytes() != open(path, "rb").read()]
    assert not differ, f"redrawn from their table, these differ from the commit: {differ}"
