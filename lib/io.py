"""Files the project writes and reads back: atomic writes, the one JSON-lines reader (strict), appends
that survive an interruption, and a lock that keeps two writers out of one file."""
from __future__ import annotations

import codecs
import fcntl
import gzip
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .errors import DataError
import hashlib
import socket
import sys
import zlib
from datetime import datetime, timezone

import orjson


def digest(obj: Any, n: int = 16) -> str:
    """A short sha256 of a JSON value (keys sorted): the content digest the inputs keys and caches use. The bytes
    hashed are json.dumps's (keys sorted, compact, UTF-8); a value orjson writes byte for byte alike
    (:func:`_orjson_alike`) is written by orjson, about eight times as fast (the snapshot's 63,903 papers)."""
    if _orjson_alike(obj):
        try:
            return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:n]
        except (orjson.JSONEncodeError, TypeError):  # a lone surrogate, nesting over orjson's depth
            pass
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:n]


def _orjson_alike(obj: Any) -> bool:
    """Whether ``obj`` holds only what orjson writes as json.dumps does (keys sorted, ``ensure_ascii=False``,
    compact): strings, integers of 64 bits, booleans, None, and lists, tuples and dicts of string keys of those.
    A float is written otherwise (``1e-05`` against ``1e-5``), and anything else is json.dumps's ``default``."""
    stack = [obj]
    while stack:
        o = stack.pop()
        kind = type(o)
        if kind is str or kind is bool or o is None:
            continue
        if kind is int:
            if not -(1 << 63) <= o < (1 << 64):
                return False
        elif kind is list or kind is tuple:
            stack.extend(o)
        elif kind is dict:
            if not all(type(k) is str for k in o):
                return False
            stack.extend(o.values())
        else:
            return False
    return True


def content_digest(path: Path) -> str:
    """sha256 of a file's bytes, or of a folder's files (names and bytes, sorted; the digest file
    itself left out)."""
    path = Path(path)
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name != DIGEST_FILE) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode() + b"\x00")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 22):
                h.update(chunk)
    return h.hexdigest()


DIGEST_FILE = "content.sha256"


def read_once(memo: dict, path: Path, read: Callable[[Path], Any], *also: Path) -> Any:
    """``read(path)``, kept in ``memo`` for this process by the file's content (:func:`content_digest`; and that of
    ``also``, files the reading depends on), so the pages of one `make report` read each version of a file once; a
    file written since is read again, whatever its size and time say. The value is shared: read it, never change it."""
    path = Path(path)
    key = (str(path.resolve()), *(content_digest(f) if Path(f).is_file() else None for f in (path, *also)))
    if key not in memo:
        for old in [k for k in memo if k[0] == key[0]]:  # an earlier version of the file
            del memo[old]
        memo[key] = read(path)
    return memo[key]


def digest_path(path: Path) -> Path:
    """Where a cache's content digest is kept: inside a folder, beside a file."""
    path = Path(path)
    return path / DIGEST_FILE if path.is_dir() else path.with_name(path.name + ".sha256")


def seal(path: Path) -> None:
    """Record a cache's content digest (after writing it)."""
    write_text(digest_path(path), content_digest(path) + "\n")


def verified(path: Path) -> bool:
    """Whether a cache's content matches the digest recorded when it was written (no digest: False)."""
    d = digest_path(path)
    try:
        return d.read_text().strip() == content_digest(path)
    except OSError:
        return False


def read_cache(path: Path, load: Callable[[Path], Any], what: str, errors: tuple = (OSError, ValueError)) -> Any:
    """A cache file's content (``load(path)``) when it exists and matches the digest recorded when it
    was written; else None, and a damaged or unreadable one is named (what it held is recomputed)."""
    path = Path(path)
    if not path.exists():
        return None
    if not verified(path):
        print(f"{path}: {what} cache does not match its recorded digest (changed or damaged); "
              f"recomputing the {what} it held")
        return None
    try:
        return load(path)
    except errors as exc:
        print(f"{path}: unreadable {what} cache ({type(exc).__name__}: {exc}); recomputing the {what} it held")
        return None


def write_bytes(path: Path, data: bytes) -> Path:
    """Write a file atomically: a temporary file beside it, renamed into place (never half-written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path, text: str) -> Path:
    """Write a text file atomically (UTF-8)."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any) -> Path:
    """Write JSON atomically, keys sorted, one trailing newline."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str, ensure_ascii=False) + "\n")


def write_jsonl(path: Path, objs: Iterable[Any]) -> Path:
    """Write a whole JSON-lines file atomically."""
    return write_text(path, "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs))


def iter_jsonl(path: Path, *, torn_tail_ok: bool = False, missing_ok: bool = False,
               objects: bool = True) -> Iterator[tuple[int, Any]]:
    """The project's one JSON-lines reader: ``(line number, value)`` for every non-blank line of a
    file, numbered from 1, streamed (a name ending in ``.gz`` is read through gzip); never writes.

    Lines are split on ``\\n`` only (a JSON string may hold U+2028 raw); a ``\\r`` before it and a
    UTF-8 byte-order mark at the start are allowed. A bad line is a :class:`DataError` naming the file,
    the line and the problem: bytes that are not UTF-8, text that is not JSON, or (``objects``) a value
    that is not a JSON object. An unterminated last line is read like any other, unless
    ``torn_tail_ok``: then it is an append cut off by an interruption (which the resuming writer
    repairs, :func:`repair_torn_tail`) and is left out. A missing file is a DataError, or holds no
    lines with ``missing_ok``.
    """
    path = Path(path)
    if not path.is_file():
        if missing_ok and not path.exists():
            return
        raise DataError(f"{path}: no such file")
    gz = path.name.endswith(".gz")
    no = 0
    try:
        with (gzip.open if gz else open)(path, "rb") as fh:
            for no, raw in enumerate(fh, start=1):
                if torn_tail_ok and not raw.endswith(b"\n"):
                    break  # only the last line can lack its newline
                if no == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8):]
                if raw.strip():
                    yield no, _json_line(path, no, raw, objects)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        if not gz:
            raise
        raise DataError(f"{path}: line {no + 1}: the gzip stream is damaged ({exc})") from None


def _json_line(path: Path, no: int, raw: bytes, objects: bool) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: line {no}: byte {raw[exc.start]:#04x} is not UTF-8 ({exc.reason}); save the file "
                        "as UTF-8") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: line {no}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if objects and not isinstance(value, dict):
        raise DataError(f"{path}: line {no}: expected a JSON object, got {type(value).__name__}")
    return value


def read_jsonl(path: Path, parse: Callable[[Any], Any] = lambda o: o, *, torn_tail_ok: bool = False,
               objects: bool = False) -> list:
    """Every line of a JSON-lines file (:func:`iter_jsonl`; a missing file holds none), each passed
    through ``parse``; a value ``parse`` rejects is a :class:`DataError` naming the file and line.
    ``objects`` is off by default: the reranker's score cache holds ``[id, score]`` pairs."""
    return [_parsed(path, no, value, parse)
            for no, value in iter_jsonl(path, torn_tail_ok=torn_tail_ok, missing_ok=True, objects=objects)]


def _parsed(path: Path, no: int, value: Any, parse: Callable[[Any], Any]) -> Any:
    try:
        return parse(value)
    except (ValueError, TypeError, KeyError) as exc:
        raise DataError(f"{path}: line {no}: not a valid record ({type(exc).__name__}: {exc})") from exc


def torn_tail(path: Path, block: int = 1 << 16) -> int:
    """Bytes after the last newline of a file (an append that was cut off), 0 if none. Reads from
    the end only, so the check before every append costs one block, not the whole file."""
    path = Path(path)
    size = path.stat().st_size if path.exists() else 0
    if not size:
        return 0
    with open(path, "rb") as fh:
        end = size
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            nl = fh.read(end - start).rfind(b"\n")
            if nl >= 0:
                return size - (start + nl + 1)
            end = start
    return size


def repair_torn_tail(path: Path) -> int:
    """Cut an unterminated last line off a JSON-lines file (writers only); returns bytes removed."""
    n = torn_tail(path)
    if n:
        with open(path, "r+b") as fh:
            fh.truncate(path.stat().st_size - n)
    return n


class LockedError(RuntimeError):
    """Another process holds the lock (a writer of the same file, a run of the same study); the
    message names it: pid, host, command and since when."""


class HeldLock:
    """An exclusive ``fcntl.flock`` on a lock file, held until :meth:`release` or the process ends
    (the kernel releases it then, even for a killed process: no lock is left stuck). The holder's
    pid, host, command and start time are written into the file, so a refused process can name it."""

    def __init__(self, path: Path, fh):
        self.path, self.fh = path, fh

    def release(self) -> None:
        if self.fh is None:
            return
        try:
            self.fh.truncate(0)  # the file no longer names a holder
        finally:
            fcntl.flock(self.fh, fcntl.LOCK_UN)
            self.fh.close()
            self.fh = None

    def __enter__(self) -> "HeldLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def holder(lock: Path) -> str:
    """Who holds a lock, in words, from what it wrote into the lock file."""
    try:
        info = json.loads(Path(lock).read_text(encoding="utf-8"))
        return f"pid {info['pid']} on {info['host']}, running `{info['command']}` since {info['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not written its details yet"


def acquire(lock: Path, refused: str, wait: bool = False) -> HeldLock:
    """Take the lock file ``lock`` (:class:`HeldLock`); without ``wait``, a lock already held is a
    :class:`LockedError` at once: ``refused``, then the holder named."""
    lock = Path(lock)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fh = open(os.open(lock, os.O_RDWR | os.O_CREAT, 0o644), "r+", encoding="utf-8")  # not truncated: the holder's details stay
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        fh.close()
        raise LockedError(f"{refused} (held by {holder(lock)}; lock {lock})") from None
    command = " ".join(sys.argv) or sys.executable
    fh.truncate(0)
    fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": command[:300],
                         "since": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")}))
    fh.flush()
    return HeldLock(lock, fh)


@contextmanager
def locked(path: Path, wait: bool = False) -> Iterator[None]:
    """An exclusive lock on ``<path>.lock`` for the time of a write (:func:`acquire`), so two writers
    never append to one file at once. Without ``wait`` a file already locked is an error at once,
    naming the process that writes it."""
    lock = Path(path).with_name(Path(path).name + ".lock")
    with acquire(lock, f"{path}: another run is writing this file; wait for it to finish", wait):
        yield


class Appender:
    """Appends JSON lines, each flushed and synced, so an interrupted run loses at most the line
    being written (which :func:`repair_torn_tail` removes before the next append)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(self.path, "a", encoding="utf-8")

    def write(self, obj: Any) -> None:
        self.write_all([obj])

    def write_all(self, objs: Iterable[Any]) -> None:
        """Lines written together and synced once."""
        self.fh.write("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs))
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()

    def __enter__(self) -> "Appender":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_utf8(path: Path, what: str = "file", unit: str = "line") -> str:
    """A text file's contents, UTF-8 with or without a byte-order mark; a missing file is named as
    ``what``, and a decoding error names the file, the ``unit`` (line or row) and the byte."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such {what}")
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        at = data[:exc.start].count(b"\n") + 1
        raise DataError(f"{path}: {unit} {at}: byte {data[exc.start]:#04x} is not UTF-8 ({exc.reason}); save the file "
                        "as UTF-8") from None
