"""Regenerate the README's first screen (the answer, between the ANSWER markers, with the headline
figure) and its results table (between the RESULTS markers) from the saved runs: the same numbers
as the report index (``make report`` does this too for the shipped report)."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.report import queries  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.report.index_page import readme_answer, readme_results, update_readme, without_idle_escalate  # noqa: E402

cfg = load_profile(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("RUN_PROFILE") or "offline")  # make: RUN_PROFILE
conditions, _ = without_idle_escalate(queries.condition_table(cfg), cfg)  # as the index shows it
figure = cfg.figures_dir / f"{cfg.name}_headline.png"
answer = readme_answer(conditions, cfg, Path(os.path.relpath(figure, ROOT)).as_posix() if figure.exists() else None)
results = readme_results(conditions, pipeline.results_dir(cfg), cfg)
update_readme(answer, results)
print(answer + "\n\n" + results)
