"""Write the report's index page from the saved scores and the rendered notebooks.

Usage: python scripts/build_report.py PROFILE [-p NAME VALUE ...]  (into the profile's report folder)
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.config import ROOT, profile_from_args  # noqa: E402
from lib.report.index_page import build_index  # noqa: E402

cfg = profile_from_args(sys.argv[1:])
figs = [cfg.figures_dir / f"{cfg.name}_scores.png", cfg.figures_dir / f"{cfg.name}_deltas.png"]
out = build_index(cfg.report_dir, pipeline.results_dir(cfg), cfg.name, figs, bench=ROOT / "results" / "bench.json")
print(out)
