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


def checked_profile(words: list[str]):
    """The profile of ``PROFILE [-p NAME VALUE ...]``, validated, its live parts and local model checked
    (:class:`ProfileError` with the project's message otherwise)."""
    profile = profile_from_args(words)
    preflight(profile)
    return profile


def shown(path: Path) -> Path:
    """A folder as the Makefile names it: relative to the repository when inside it."""
    path = Path(path)
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def main(argv: list[str]) -> int:
    try:
        profile = checked_profile(argv)
    except ProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(shown(profile.report_dir))
    return 0


if __name__ == "__main__":
    from lib.progress import interruptible

    sys.exit(interruptible(main, sys.argv[1:]))  # what it prints passes through the one redaction
