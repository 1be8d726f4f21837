"""Progress of the long steps (embedding, BM25 and HNSW builds, each design's run, LLM calls), with
the estimated time left, in the terminal and never in a rendered page.

The bars are tqdm's, written to :func:`terminal`:

* in a notebook kernel (``make report``, papermill): the kernel's ``sys.stderr`` is ipykernel's
  ``OutStream``, which sends what it gets to the page, and which also captures whatever is written
  to file descriptor 2. Its ``fileno()`` is the copy it made of the kernel's original stderr before
  capturing it: the stderr the kernel inherited from the process that started it (the notebook
  runner, writing to the terminal). Progress is written there, so it reaches the terminal and not
  the page;
* elsewhere (a script), the process's stderr;
* ``PROGRESS_TO`` in the environment overrides both: ``off`` shows no progress, any other value is
  a file appended to (e.g. ``/dev/tty``, or a log another process follows).

The Makefile's ``TQDM_DISABLE=1`` keeps other libraries' own bars off (they write to ``sys.stderr``,
i.e. the page); the bars made here pass ``disable`` explicitly, which tqdm lets win over that setting.
A stream that is not a terminal (a CI log) gets a line at most every 30 s.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import traceback
from typing import Any, Iterable, Iterator, TextIO

from .errors import redacted_output

_STREAM: dict[str, TextIO | None] = {}


def _kernel_terminal_fd() -> int | None:
    """The kernel's original stderr (ipykernel's copy of fd 2), when running in a kernel that captures fd 2."""
    err = sys.stderr
    if type(err).__module__.startswith("ipykernel"):
        fd = getattr(err, "_original_stdstream_copy", None)
        if fd is not None:
            return fd
        return 2 if sys.__stderr__ is not None else None  # fd 2 not captured: it is the terminal's
    return None


def terminal() -> TextIO | None:
    """The stream progress is written to (module docstring), or None when progress is off."""
    where = os.environ.get("PROGRESS_TO", "").strip()
    kernel_fd = None if where else _kernel_terminal_fd()
    key = f"{where}|{kernel_fd}|{id(sys.stderr)}"
    if key not in _STREAM:
        stream: TextIO | None
        if where.lower() in ("off", "0", "none"):
            stream = None
        elif where:
            try:
                stream = open(where, "a", buffering=1, encoding="utf-8")
            except OSError:  # no terminal (/dev/tty without one): no progress rather than a failure
                stream = None
        elif kernel_fd is not None:
            stream = io.TextIOWrapper(io.FileIO(os.dup(kernel_fd), "w"), encoding="utf-8", line_buffering=True,
                                      write_through=True)
        else:
            stream = sys.stderr
        _STREAM[key] = stream
    return _STREAM[key]


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def bar(iterable: Iterable | None = None, *, total: float | None = None, desc: str = "", unit: str = "it",
        disable: bool = False, **kwargs: Any):
    """A tqdm bar (count, rate, elapsed and estimated time left) written to :func:`terminal`."""
    from tqdm import tqdm  # tqdm is only needed when progress is shown

    stream = terminal()
    tty = stream is not None and _is_tty(stream)
    kwargs.setdefault("mininterval", 0.5 if tty else 30.0)
    kwargs.setdefault("dynamic_ncols", tty)
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=stream or io.StringIO(),
                disable=bool(disable or stream is None), **kwargs)


@contextlib.contextmanager
def to_terminal() -> Iterator[bool]:
    """Within it, ``sys.stderr`` is :func:`terminal` (for a library's own progress bars, which write to
    ``sys.stderr``); yields whether progress is shown at all (pass it as the library's show_progress)."""
    stream = terminal()
    if stream is None:
        yield False
        return
    with contextlib.redirect_stderr(stream):
        yield True


# the output metadata that marks a line on a page as a condition that left a design unscored
UNSCORED = "agentic-rag-evidence/unscored"


def unscored(text: str, markdown: str | None = None) -> None:
    """Say a condition that leaves a design unscored (a changed question, another writer of a run file, a
    recording that stops part-way) where the user sees it. In a notebook kernel it is shown on the page
    (``markdown`` when given, else ``text``) and marked there (output metadata ``UNSCORED``), so the notebook
    runner prints it in the terminal and exits non-zero (``lib.report.execute.unscored_lines``); elsewhere it
    is printed on stderr."""
    try:
        from IPython import get_ipython  # IPython is only needed inside a notebook

        shell = get_ipython()
    except ImportError:  # pragma: no cover - IPython is a dependency of the notebooks
        shell = None
    if shell is None or not hasattr(shell, "kernel"):
        print(text, file=sys.stderr, flush=True)
        return
    from IPython.display import display  # IPython is only needed inside a notebook

    data = {"text/plain": text, **({"text/markdown": markdown} if markdown else {})}
    display(data, raw=True, metadata={UNSCORED: text})


INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it
INTERRUPTED_LINE = "interrupted (Ctrl-C): what was saved so far is kept; the same command continues from there"


def interruptible(main, argv) -> int:
    """``main(argv)``'s exit status; Ctrl-C ends it with one line on stderr instead of a traceback (what was
    saved so far stays saved: runs and records are written as they are computed) and status 130. All it
    prints, an unexpected error's traceback included (status 1, as Python's), passes through the one
    redaction of a server's password (:func:`lib.errors.redacted_output`)."""
    with redacted_output():
        try:
            return main(argv)
        except KeyboardInterrupt:
            print(f"\n{INTERRUPTED_LINE}", file=sys.stderr, flush=True)
            return INTERRUPTED
        except Exception:
            traceback.print_exc()
            return 1
