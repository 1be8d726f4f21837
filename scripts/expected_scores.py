"""Write results/.../expected_scores.json from the saved runs (a deliberate, reviewed step)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.evaluation import scores  # noqa: E402
from lib.config import load_profile  # noqa: E402
from lib.io import write_json  # noqa: E402

cfg = load_profile(sys.argv[1] if len(sys.argv) > 1 else "offline")
summary = pipeline.summary_for_profile(cfg)
write_json(pipeline.results_dir(cfg) / "expected_scores.json", scores.expected_from(summary, cfg.name))
print(summary[["design", "runs", "questions", "recall_at_5", "mrr_at_10"]])
