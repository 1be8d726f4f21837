"""Where the repository is, and how a path is shown in the report: the one module every layer may
import (it imports nothing of lib), so the profile loader, the model backends and the checks before a
run share it without importing each other."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def shown_path(path: Path) -> str:
    """A path as the report shows it: relative to the repository when inside it, else as given."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
