"""Write report/index.html from the saved scores and the rendered notebooks."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.report.index_page import build_index  # noqa: E402

name = sys.argv[1] if len(sys.argv) > 1 else "offline"
cfg = load_profile(name)
figs = [ROOT / "figures" / f"{name}_scores.png", ROOT / "figures" / f"{name}_deltas.png"]
out = build_index(ROOT / "report", pipeline.results_dir(cfg), name, figs, bench=ROOT / "results" / "bench.json")
print(out.relative_to(ROOT))
