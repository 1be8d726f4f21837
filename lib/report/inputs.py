"""What `make report` computes its pages and tables from, as digests: the project's code (:func:`code_digest`) and
every file a page may read (:func:`inputs_digest`). A page whose inputs, notebook and parameters are those of its
last run is not executed again (``lib.report.execute``), as Jupyter Book's ``execute_notebooks: cache``
(jupyter-cache) keeps a notebook's outputs by its content; a table kept on disk is keyed by the code that computes
it (``lib.report.queries.stored_table``).

Files are read by content (a page rewrites its CSVs and charts with the same bytes, which a modification time
would not tell), each digest kept in build/cache/file-digests.json by path, size and modification time, so only a
changed file is read again; a file over :data:`BIG` (the local model's weights) is taken by size and time alone.
The executed notebooks and rendered pages (``report`` folders), locks and temporary files are outputs, not inputs.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Iterable

from ..io import write_text
from ..paths import ROOT

FOLDERS = ("data", "results", "figures", "profiles", "models", "notebooks")  # what the shipped report's pages read
SKIPPED_DIRS = {"report", "build", "__pycache__", ".ipynb_checkpoints", ".git"}
SKIPPED_SUFFIXES = (".lock", ".tmp", ".ipynb", ".pyc")
# the environment variables the project reads besides the settings' own (lib.config.ENV_OVERRIDES) and those a
# setting names (``*_env``): a page's inputs
PAGE_ENV = ("ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY", "HF_HUB_OFFLINE")
BIG = 256 << 20  # bytes: larger files are taken by size and modification time
MEMO = ROOT / "build" / "cache" / "file-digests.json"
_CODE: list[str] = []


def code_digest() -> str:
    """Every module of the project's ``lib/``, by content (taken once a process)."""
    if not _CODE:
        h = hashlib.sha256()
        for f in sorted((ROOT / "lib").rglob("*.py")):
            h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes())
        _CODE.append(h.hexdigest())
    return _CODE[0]


def input_files(root: Path = ROOT, folders: Iterable[str] = FOLDERS, skipped: Iterable[Path] = ()) -> list[Path]:
    """The files under ``folders`` a page may read (module docstring: outputs left out), but under ``skipped``
    (folders of other runs: a study's, a parameterised run's), sorted."""
    out, skipped = [], {Path(p).resolve() for p in skipped}
    for folder in folders:
        for here, dirs, files in os.walk(root / folder):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and (Path(here) / d).resolve() not in skipped)
            out += [Path(here) / f for f in files if not f.startswith(".") and not f.endswith(SKIPPED_SUFFIXES)]
    return sorted(out)


def file_digests(files: Iterable[Path], memo: Path = MEMO) -> dict[str, str]:
    """Each file's digest (sha256 of its bytes; size and time for a file over :data:`BIG`), read again only when
    its size or modification time differs from the memo's; the memo is rewritten when anything changed."""
    try:
        known = json.loads(memo.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    out, changed = {}, False
    for f in files:
        st = f.stat()
        name = str(f)
        seen = known.get(name)
        if seen and seen[0] == st.st_size and seen[1] == st.st_mtime_ns:
            out[name] = seen[2]
            continue
        if st.st_size > BIG:
            value = f"size {st.st_size} time {st.st_mtime_ns}"
        else:
            h = hashlib.sha256()
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
            value = h.hexdigest()
        out[name], changed = value, True
        known[name] = [st.st_size, st.st_mtime_ns, value]
    if changed:
        write_text(memo, json.dumps({k: v for k, v in known.items() if k in out}, sort_keys=True))
    return out


def page_folders(profile) -> tuple[list[str], list[Path]]:
    """The folders a profile's pages read (:data:`FOLDERS`; a study's own folder in place of the shipped
    results) and those left out under them: the parameterised runs' folders but this run's own."""
    folders = [f for f in FOLDERS if f != "results" or profile.study_dir is None]
    if profile.study_dir is not None:
        folders.append(os.path.relpath(profile.study_dir, ROOT))
    parameters = ROOT / "results" / "parameters"
    own = Path(profile.pages_base).resolve()
    skipped = [p for p in (parameters.iterdir() if parameters.is_dir() else []) if p.resolve() != own]
    return folders, skipped


def packages() -> list[str]:
    """The interpreter and every installed distribution with its version."""
    return [sys.version] + sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())


def inputs_digest(extra: object = None, root: Path = ROOT, memo: Path = MEMO, folders: Iterable[str] = FOLDERS,
                  skipped: Iterable[Path] = ()) -> str:
    """One digest of what the pages are computed from: every input file by content (:func:`file_digests`) under
    ``folders`` but ``skipped``, the code (:func:`code_digest`), the interpreter and packages, and ``extra`` (the
    command's settings)."""
    files = file_digests(input_files(root, folders, skipped), memo)
    state = {"files": {os.path.relpath(k, root): v for k, v in files.items()}, "code": code_digest(),
             "packages": packages(), "extra": extra}
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()
