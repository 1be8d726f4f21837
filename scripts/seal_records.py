"""Seal the LLM record folders: write each folder's digests.json, the reply digest of every record written
before records stored their own (lib/llm/records.py ``seal``), so that a reply edited by hand is named when
read. Records written since carry their digest; run this again after adding records with an older version.

Usage: python scripts/seal_records.py [FOLDER ...]   (default: every folder under data/llm_records/)
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import shown_path  # noqa: E402
from lib.llm.records import RECORDS_DIR, seal  # noqa: E402


def main(argv: list[str]) -> int:
    folders = [Path(a) for a in argv] or sorted(p for p in RECORDS_DIR.iterdir() if p.is_dir())
    for folder in folders:
        if not folder.is_dir():
            print(f"error: {folder}: no such folder", file=sys.stderr)
            return 2
        print(shown_path(seal(folder)))
    return 0


if __name__ == "__main__":
    from lib.progress import interruptible

    sys.exit(interruptible(main, sys.argv[1:]))
