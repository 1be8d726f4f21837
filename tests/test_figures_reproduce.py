"""A fresh render reproduces the committed charts on any machine, whatever its matplotlib settings: held to their
data and to an image tolerance, not to their bytes (lib/report/chart_files.py place_png). In a clean clone of the
commit, the index's three charts (the README's headline figure among them) are redrawn from the table make report
drew them from (report/tables/index_charts.csv, written beside them) with the render's own code
(scripts/build_report.py draw_index_charts), under a matplotlibrc that sets other fonts, sizes and hinting: each
shows the data its committed PNG says it shows (the digest of the table and texts it carries) and is within
TOLERANCE of it (matplotlib's compare_images). A chart drawn again with the same data within tolerance keeps
the file already there, and the page shows the file as it is, so neither changes on a machine whose CPU rounds a
few pixels differently; one with other data, or beyond tolerance, is written."""
import base64
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from lib.config import ROOT
from lib.report import chart_files, plots
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


def test_the_index_charts_redrawn_from_their_table_in_a_clean_clone_show_the_committed_data_within_tolerance(tmp_path):
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
    for key, path in drawn.items():
        new = open(path, "rb").read()
        assert chart_files.png_digest(new) is not None, key
        for committed in (clone / "figures" / f"offline_{key}.png", clone / "report" / "figures" / f"offline_{key}.png"):
            old = committed.read_bytes()
            assert chart_files.png_digest(old) == chart_files.png_digest(new), f"{committed.relative_to(clone)}: other data"
            rms = chart_files.within_tolerance(old, new)
            assert rms is not None, f"{committed.relative_to(clone)}: beyond tolerance {chart_files.TOLERANCE}"


def _pixels_moved(png: bytes, n: int) -> bytes:
    """The same chart with its first ``n`` pixels turned black, as a CPU that rounds a few edge pixels
    differently draws it: its data digest kept."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGBA")
    for i in range(n):
        image.putpixel((i % image.width, i // image.width), (0, 0, 0, 255))
    buf = io.BytesIO()
    image.save(buf, format="png")
    return chart_files.with_comment(buf.getvalue(), chart_files.DIGEST + chart_files.png_digest(png))


def test_a_chart_drawn_again_with_its_data_within_tolerance_keeps_the_file_and_the_page_shows_the_file(tmp_path,
                                                                                                     monkeypatch):
    """place_png keeps the file there when the new PNG shows the same data within tolerance (and says so in the
    file KEPT_LOG names, which make report turns into one line); other data or a difference beyond tolerance is
    written; the figure a notebook shows is the file as placed."""
    table = pd.DataFrame({"condition": ["full questions"] * 2, "design": ["dense", "agent"],
                          "latency_median_s": [0.02, 3.1], "mrr_at_10": [0.61, 0.57], "mrr_at_10_min": [np.nan, 0.55],
                          "mrr_at_10_max": [np.nan, 0.6], "llm_calls": [0, 2.1], "tokens": [0, 900]})
    path = tmp_path / "frontier.png"
    plots.frontier_chart(table, path)
    committed = path.read_bytes()
    assert chart_files.png_digest(committed) is not None
    log = tmp_path / "kept.tsv"
    monkeypatch.setenv(chart_files.KEPT_LOG, str(log))
    # drawn again on this machine: the same bytes
    assert chart_files.place_png(committed, path) == "same"
    # another CPU: five pixels differ, the same data: the file there is kept, and named
    other_cpu = _pixels_moved(committed, 5)
    assert other_cpu != committed and chart_files.within_tolerance(committed, other_cpu) is not None
    assert chart_files.place_png(other_cpu, path) == "kept" and path.read_bytes() == committed
    line = chart_files.kept_line(log)
    assert line.startswith("charts kept as they were: 1 drawn here") and "frontier.png" in line
    # the chart redrawn (same data, same machine) is the kept file, and the page shows that file
    fig = plots.frontier_chart(table, path)
    assert path.read_bytes() == committed
    assert base64.b64decode(chart_files.shown_png(fig)) == committed
    # other data (one score moved by 0.001, a pixel or less): written, whatever the pixels
    moved = table.assign(mrr_at_10=[0.611, 0.57])
    plots.frontier_chart(moved, path)
    assert path.read_bytes() != committed and chart_files.png_digest(path.read_bytes()) != chart_files.png_digest(committed)
    # the same data beyond tolerance (a damaged file): written
    path.write_bytes(committed)
    assert chart_files.place_png(_pixels_moved(committed, 5000), path) == "written"
    # the same for a chart whose digest is its drawn data (no table given): a changed label is other data
    plots.scores_chart(pd.DataFrame({"design": ["dense", "bm25"], "run": [1, 1], "recall_at_5": [0.5, 0.4],
                                     "mrr_at_10": [0.4, 0.3]}), tmp_path / "s.png")
    first = (tmp_path / "s.png").read_bytes()
    plots.scores_chart(pd.DataFrame({"design": ["dense", "bm25"], "run": [1, 1], "recall_at_5": [0.5, 0.4],
                                     "mrr_at_10": [0.4, 0.3]}), tmp_path / "s.png", names=str.upper)
    assert chart_files.png_digest((tmp_path / "s.png").read_bytes()) != chart_files.png_digest(first)
