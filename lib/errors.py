"""The project's own errors: each names the file, row and field (or the setting) that is wrong."""
from __future__ import annotations

import contextlib
import re
import sys
from typing import Iterator, TextIO


class DataError(ValueError):
    """Bad input data; the message names the file, row and field."""


class ProfileError(ValueError):
    """A profile file, a setting or a parameter override is missing or malformed."""


class ModelUnavailable(RuntimeError):
    """A profile's model cannot be loaded (no network, no package); never silently replaced."""


class EngineError(RuntimeError):
    """A search engine (``retriever: milvus``) cannot be reached, does not answer in time, or holds a
    collection that does not fit the study; the message names the setting."""


# a URL's user:password@ part, and a query parameter that carries a secret (?api_key=..., &token=...)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@:'\"]+):([^/\s@'\"]*)@")
_URL_SECRET_PARAM = re.compile(r"(?i)([?&](?:api[_-]?key|key|token|access[_-]?token|password|passwd|pwd|secret)=)[^&\s'\"#]+")


def redacted(text: object) -> str:
    """``text`` with the credentials a URL carries replaced by ``***``: the password of ``scheme://user:password@host``
    and the value of a secret query parameter (``api_key``, ``token``, ``password``, ...). Every message that may
    hold a server address (an unreachable server, a settings table, a failed page) passes through it."""
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{m.group(2)}:***@", str(text))
    return _URL_SECRET_PARAM.sub(lambda m: f"{m.group(1)}***", text)


class RedactedStream:
    """A text stream (the terminal's stdout or stderr) whose every write passes through :func:`redacted`; all else
    (``flush``, ``fileno``, ``isatty``, ...) is the stream's own."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redacted(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


@contextlib.contextmanager
def redacted_output() -> Iterator[None]:
    """The one choke point of a command's words: while inside, everything written to ``sys.stdout`` and
    ``sys.stderr`` (its errors, the lines naming pages not run, a traceback, a library's log) passes through
    :func:`redacted`; every script's ``main`` runs inside it (:func:`lib.progress.interruptible`)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (s if isinstance(s, RedactedStream) else RedactedStream(s) for s in saved)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
