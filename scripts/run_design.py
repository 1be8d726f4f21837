"""Run (or resume) one design for a profile from the command line: run_design.py PROFILE DESIGN [RUN ...]"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import torch  # noqa: E402

from lib import pipeline  # noqa: E402
from lib.config import load_profile  # noqa: E402

torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))
profile = load_profile(sys.argv[1], llm_backend=os.environ.get("LLM_BACKEND"))
runs = [int(a) for a in sys.argv[3:]] or None
pipeline.run(profile, sys.argv[2], runs=runs)
