"""Validate a profile and papermill `-p NAME VALUE` overrides before any notebook runs (each value
read as the notebook will receive it), check the live parts and the local model it needs, and
print the folder its rendered notebooks go to.

Usage: python scripts/check_settings.py PROFILE [-p NAME VALUE ...]
Exits 2 with the project's own message on an unknown profile, an unknown setting, a bad value,
`-p profile` (use PROFILE=name) or a backend that is not installed.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import ROOT, profile_from_args  # noqa: E402
from lib.errors import ProfileError  # noqa: E402
from lib.preflight import preflight  # noqa: E402

try:
    profile = profile_from_args(sys.argv[1:])
    preflight(profile)
except ProfileError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)
out = profile.report_dir
print(out.relative_to(ROOT) if out.is_relative_to(ROOT) else out)
