"""Run (or resume) designs from the command line, question by question, recording every LLM call.

Usage: python scripts/run_designs.py PROFILE DESIGN[,DESIGN...] [RUN ...]
(e.g. `offline multiquery,agent 3` with LLM_BACKEND=local records run 3 of both LLM designs).
It adds to the profile's own folders (for the shipped profiles, the shipped study).
LLM_BACKEND, QUESTION_FORM, QUESTION_SET and COLLECTION_SCOPE override the profile's settings
(e.g. `COLLECTION_SCOPE=snapshot QUESTION_FORM=short` for the short questions over the whole snapshot).
"""
import os
import sys
from pathlib import Path

# OpenMP threads sleep rather than spin between computations (lib.llm.local_backend.passive_omp_threads): read
# once by the first OpenMP runtime loaded (torch's, which llama.cpp then shares), so set before any import
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.config import env_overrides, load_profile  # noqa: E402
from lib.io import LockedError  # noqa: E402

profile_name, designs, *runs = sys.argv[1:]
# this script's documented purpose is to extend the study it names: new results go into its folders
profile = load_profile(profile_name, extend_shipped=True, **env_overrides(os.environ))
try:
    pipeline.run_many(profile, designs.split(","), [int(r) for r in runs] or None)
except LockedError as exc:  # another process writes one of these run files: named, nothing written
    sys.exit(f"error: {exc}")
except KeyboardInterrupt:  # Ctrl-C: one line, no traceback; the run resumes where it stopped
    from lib.progress import INTERRUPTED, INTERRUPTED_LINE

    print(f"\n{INTERRUPTED_LINE}", file=sys.stderr)
    sys.exit(INTERRUPTED)
