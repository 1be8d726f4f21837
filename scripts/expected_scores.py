"""Write expected_scores.json beside the saved runs of every condition of a profile, from what is
saved now (a deliberate, reviewed step after an intended change: `make expected`).

Usage: python scripts/expected_scores.py [PROFILE]   (`make expected PROFILE=...` passes it as RUN_PROFILE)
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.report import queries  # noqa: E402
from lib.config import load_profile  # noqa: E402
from lib.evaluation import scores  # noqa: E402
from lib.io import write_json  # noqa: E402

cfg = load_profile(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("RUN_PROFILE") or "offline")  # make: RUN_PROFILE
for name, cp in queries.condition_profiles(cfg).items():
    summary = queries.summary_for_profile(cp)
    if summary.empty:
        continue
    write_json(pipeline.results_dir(cp) / "expected_scores.json", scores.expected_from(summary, cp.name))
    print(name, summary[["design", "runs", "questions", "recall_at_5", "mrr_at_10"]].round(4).to_string(), sep="\n")
