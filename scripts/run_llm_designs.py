"""Run (or resume) multiquery and agent together, question by question, recording every call.

Usage: python scripts/run_llm_designs.py [profile] [run ...]   (llm_backend from the profile
unless LLM_BACKEND is set, e.g. LLM_BACKEND=local)
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.config import load_profile  # noqa: E402
from lib.designs import run_designs, write_trec  # noqa: E402

args = sys.argv[1:]
profile = load_profile(args[0] if args else "offline", llm_backend=os.environ.get("LLM_BACKEND"))
runs = [int(a) for a in args[1:]] or [1]
papers = pipeline.collection(profile)
qs = pipeline.scored_questions(profile, papers)
search = pipeline.searcher(profile, papers)
designs = [pipeline.make_design(n, profile, search, papers) for n in pipeline.LLM_DESIGNS]
for k in runs:
    out = run_designs(designs, qs, k, pipeline.results_dir(profile))
    for name, res in out.items():
        write_trec(res, pipeline.results_dir(profile) / name / f"run{k}.trec", f"{name}-run{k}")
