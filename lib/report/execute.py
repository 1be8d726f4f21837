"""The report's notebooks executed as `make report` runs them: papermill, the project's kernel, the
parameters papermill injects (``-f`` the profile's file, then each ``-p NAME VALUE`` read as papermill's
command line reads it), in order, stopping at the first that fails.

All the notebooks of one command run in **one kernel**, its namespace reset before each notebook
(IPython's ``%reset -f``, open figures closed): every page still starts from nothing of the pages
before it, but the libraries and models are loaded once a report instead of once a page (a fresh
kernel per page spent about 10 s of CPU on imports and model loads before its first line of work).
What a module keeps for the process is keyed by its inputs (the snapshot's papers by file and
digest), and a page's own state (the interactive-table library, put into each page once) starts
again with the page (:func:`lib.report.pages.new_page`).

Each notebook is executed into ``failed_dir`` and moved into ``out_dir`` only when its run completed,
so a failed or killed run never leaves an executed notebook where the report is rendered from. The executed
notebook is written once its run ends, completed or failed with the error in its cell (not before and after
every cell, papermill's default, which rewrote the whole notebook some fifty times a page); a run killed
outright leaves none, which `make report` says.

A page reads the whole study's saved runs (the index's Holm family: every design, measure and condition),
so a page executed before a later page of the same command saved its runs (or one that saved the runs of
several designs one after another) would show a smaller family than the rerun of the same command: with
``state`` (what the pages read, e.g. the saved run files' sizes), every page that started or ended with
another state than the command's last is executed again once at the end, so the first run of a study and
its rerun give the same pages."""
from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import Callable, Sequence
import hashlib
import tempfile

import nbformat

from ..errors import redacted
import json
from ..progress import UNSCORED

KERNEL = "agentic-rag-evidence"
# run in the kernel before each notebook: its names gone, its cells counted from 1 again (as a fresh
# kernel counts them: the pages show In [n]; a new history session, so a page executed again in the kernel
# writes no line number its first execution wrote), its figures closed, the page's own state new; then what
# survives the reset (the libraries, the models, the memos) is moved out of the garbage collector's sight
# (gc.freeze: %reset's own two full collections, and those Python runs on its own while a page computes,
# then walk only what the pages make, not the half a million objects of torch, pandas and matplotlib)
RESET = """get_ipython().run_line_magic('reset', '-f')
get_ipython().execution_count = 1
get_ipython().history_manager.new_session()
import sys as _sys
import matplotlib.pyplot as _plt
_plt.close('all')
if 'lib.report.pages' in _sys.modules:
    _sys.modules['lib.report.pages'].new_page()
import gc as _gc
_gc.freeze()
del _sys, _plt, _gc
"""


def notebook_parameters(profile_file: str | Path | None, words: Sequence[str] = ()) -> dict:
    """The parameters papermill's command line would inject for ``-f profile_file -p NAME VALUE ...``:
    the file's settings, then each ``-p`` value typed as papermill types it (``_resolve_type``)."""
    from papermill.cli import _resolve_type  # papermill is heavy and only running a notebook needs it
    from papermill.iorw import read_yaml_file  # papermill is heavy and only running a notebook needs it

    params = dict(read_yaml_file(str(profile_file)) or {}) if profile_file else {}
    words = list(words)
    while words:
        if words[0] != "-p" or len(words) < 3:
            raise ValueError(f"expected -p NAME VALUE, got {' '.join(words)!r}")
        params[words[1]] = _resolve_type(words[2])
        words = words[3:]
    return params


class SharedKernel:
    """One started kernel of ``kernel_name`` (cwd ``cwd``) that papermill runs every notebook in."""

    def __init__(self, kernel_name: str = KERNEL, cwd: Path | None = None):
        from jupyter_client.manager import AsyncKernelManager  # the Jupyter machinery is only needed to run a notebook
        from jupyter_core.utils import run_sync  # the Jupyter machinery is only needed to run a notebook

        self._run = run_sync
        # the kernel talks over local (IPC) sockets in a folder of its own, not over TCP: nothing listens on
        # a port, and the kernel has no "running over TCP without encryption" warning to print
        self._sockets = tempfile.TemporaryDirectory(prefix="kernel-")
        self.km = AsyncKernelManager(kernel_name=kernel_name, transport="ipc", ip=str(Path(self._sockets.name) / "k"))
        self._run(self.km.start_kernel)(cwd=str(cwd) if cwd else None)

    def reset(self) -> None:
        """The kernel's namespace emptied and its figures closed (an error here is raised)."""
        async def go():
            kc = self.km.client()
            kc.start_channels()
            try:
                await kc.wait_for_ready(timeout=60)
                reply = await kc.execute_interactive(RESET, store_history=False, timeout=60,
                                                     output_hook=lambda msg: None)
            finally:
                kc.stop_channels()
            if reply["content"]["status"] != "ok":
                raise RuntimeError(f"the kernel could not be reset: {reply['content'].get('evalue')}")
        self._run(go)()

    def shutdown(self) -> None:
        try:
            self._run(self.km.shutdown_kernel)(now=True)
        finally:
            self._sockets.cleanup()

    def __enter__(self) -> "SharedKernel":
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


INPUTS_KEY = "agentic_rag_evidence"  # an executed notebook's metadata: {"inputs": what its run was computed from}


def page_key(inputs: str, notebook: Path, parameters: dict) -> str:
    """What one page's run is computed from: the command's inputs (:func:`lib.report.inputs.inputs_digest`),
    the notebook's content and the parameters injected."""
    state = [inputs, hashlib.sha256(Path(notebook).read_bytes()).hexdigest(), parameters]
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()


def recorded_key(executed: Path) -> str | None:
    """The inputs an executed notebook's run was computed from (:data:`INPUTS_KEY`), or None."""
    try:
        return json.loads(Path(executed).read_text(encoding="utf-8"))["metadata"].get(INPUTS_KEY, {}).get("inputs")
    except (OSError, ValueError, KeyError, AttributeError):
        return None


def mark(executed: Path, key: str) -> None:
    """Record in an executed notebook what its run was computed from."""
    nb = nbformat.read(str(executed), as_version=4)
    nb.metadata[INPUTS_KEY] = {"inputs": key}
    nbformat.write(nb, str(executed))


def run_notebooks(names: Sequence[str], notebooks_dir: Path, out_dir: Path, failed_dir: Path, parameters: dict,
                  kernel_name: str = KERNEL, cwd: Path | None = None,
                  log: Callable[[str], None] | None = None,
                  state: Callable[[], object] | None = None,
                  inputs: str | None = None, again: bool = False) -> tuple[list[str], list[Path]]:
    """Execute ``notebooks_dir/<name>.ipynb`` for each name in order, in one kernel (module docstring)
    started in ``cwd`` (default: this process's folder, as papermill's command line starts it): each
    into ``failed_dir`` first, moved into ``out_dir`` when it completed. Stops at the first that
    fails, naming its error on stderr. With ``state``, the completed pages executed before the state
    last changed are executed again, once, in order (module docstring). With ``inputs`` (what the command
    computes from, :func:`lib.report.inputs.inputs_digest`), a page whose executed notebook in ``out_dir`` was
    computed from the same inputs, notebook and parameters (:func:`page_key`) is kept, not executed again (with
    ``again``, every page is executed, and marked), and the kernel is started only for a page that is; a page is
    marked only when it read what the command started from. Returns (the names that completed, the executed
    notebooks of the runs that did not)."""
    import papermill as pm  # papermill is heavy and only running a notebook needs it
    from papermill.exceptions import PapermillExecutionError  # papermill is heavy and only running a notebook needs it

    log = log or (lambda line: print(line, flush=True))
    logging.getLogger("papermill").setLevel(logging.ERROR)
    notebooks_dir, out_dir, failed_dir = (Path(p).resolve() for p in (notebooks_dir, out_dir, failed_dir))
    out_dir.mkdir(parents=True, exist_ok=True)
    failed_dir.mkdir(parents=True, exist_ok=True)
    completed: list[str] = []
    failed: list[Path] = []
    seen: dict[str, tuple] = {}  # the state when each page started and when it ended

    kernels: list[SharedKernel] = []  # started for the first page executed
    initial = state() if state is not None else None  # what the pages read when the command started

    def execute(name: str, stale: bool = False) -> bool:
        target = failed_dir / f"{name}.ipynb"
        before = state() if state is not None else None
        key = page_key(inputs, notebooks_dir / f"{name}.ipynb", parameters) if inputs is not None else None
        if key is not None and not (again or stale) and recorded_key(out_dir / f"{name}.ipynb") == key:
            log("   kept: its inputs, notebook and parameters are those of its last run")
            if state is not None:
                seen[name] = (before, state())
            return True
        if not kernels:
            kernels.append(SharedKernel(kernel_name, cwd=Path(cwd or Path.cwd())))
        kernel = kernels[0]
        try:
            kernel.reset()
            target.unlink(missing_ok=True)  # no executed notebook of an earlier run is taken for this one's
            # written when the run ends, completed or failed (papermill's default also rewrites the whole
            # notebook before and after every cell: a tenth of a page's time)
            pm.execute_notebook(str(notebooks_dir / f"{name}.ipynb"), str(target), parameters=parameters,
                                kernel_name=kernel_name, km=kernel.km, progress_bar=False,
                                request_save_on_cell_execute=False)
        except (PapermillExecutionError, RuntimeError, OSError) as exc:
            why = f"{exc.ename}: {exc.evalue}" if isinstance(exc, PapermillExecutionError) else f"{type(exc).__name__}: {exc}"
            print(f"{name}: {redacted(why)}", file=sys.stderr)  # no password of a server's address
            failed.append(target)
            return False
        after = state() if state is not None else None
        if key is not None and before == after == initial:  # read what the command started from: kept next time
            mark(target, key)
        shutil.move(str(target), str(out_dir / f"{name}.ipynb"))
        if state is not None:
            seen[name] = (before, after)
        return True

    try:
        for name in names:
            log(f"== {name}")
            if not execute(name):
                break
            completed.append(name)
        if state is not None:
            last = state()
            # a page that read a state other than the last: before a later page saved runs, or while it saved
            # its own runs one design after another (a page that runs several designs)
            stale = [n for n in completed if seen.get(n) != (last, last)]
            if stale:
                log(f"== again, with every run this command saved (the same family on every page): {' '.join(stale)}")
            for name in stale:
                log(f"== {name}")
                if not execute(name, stale=True):  # its first execution is no page of this state: not rendered
                    completed.remove(name)
                    break
    finally:
        if kernels:
            kernels[0].shutdown()
    return completed, failed


def unscored_lines(notebook: Path) -> list[str]:
    """The lines an executed notebook marked as leaving a design unscored (``lib.progress.unscored``), in order."""

    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    return [str(o["metadata"][UNSCORED]) for c in nb.get("cells", []) for o in c.get("outputs", [])
            if UNSCORED in (o.get("metadata") or {})]
