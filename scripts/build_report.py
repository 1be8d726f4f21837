"""Render the executed notebooks of a run to HTML and write its index page.

Usage: python scripts/build_report.py PROFILE [-p NAME VALUE ...]  (in the profile's report folder:
`report/` for the shipped run, else beside the run's results)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.config import ROOT, profile_from_args, shown_path  # noqa: E402
from lib.report import plots  # noqa: E402
from lib.report.index_page import build_index  # noqa: E402
from lib.report.render import render  # noqa: E402

cfg = profile_from_args(sys.argv[1:])
for nb in sorted(cfg.report_dir.glob("*.ipynb")):
    render(nb, cfg.report_dir)
figs = [cfg.figures_dir / f"{cfg.name}_{k}.png" for k in ("conditions", "frontier", "scores", "deltas")]
if (pipeline.results_dir(cfg) / "summary.json").exists():
    conditions = pipeline.condition_table(cfg)
    if not conditions.empty:
        plots.conditions_chart(conditions, figs[0])
        plots.frontier_chart(conditions, figs[1])
    out = build_index(cfg.report_dir, pipeline.results_dir(cfg), cfg.name, figs, bench=ROOT / "results" / "bench.json",
                      conditions=conditions)
    print(shown_path(out))
