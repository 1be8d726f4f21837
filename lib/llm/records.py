"""The record of every LLM call (request hash -> response, usage, latency), and the recorded LLM
that answers from it when it can: reruns replay instead of calling a model again."""
from __future__ import annotations

import hashlib
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Iterator, Sequence

from ..paths import ROOT
from ..io import Appender, locked, read_jsonl, read_once, repair_torn_tail, write_json
from .base import OPTIONAL_FIELDS, Backend, LLMRequest, LLMResponse, ReplayMiss

RECORDS_DIR = ROOT / "data" / "llm_records"
# the local backend's fast path (lib/llm/speculative.py) became its default at this time; records written
# before the response's ``decoding`` field existed say how they were decoded through their date
FAST_PATH_SINCE = "2026-12-02T21:29:32Z"


def decoding_of(rec: dict) -> str:
    """How a recorded reply was decoded: its response's ``decoding`` field, or for a local record
    written before that field, "token" before the fast path became the default and "fast" after."""
    response = rec.get("response", {})
    if response.get("decoding"):
        return str(response["decoding"])
    if response.get("backend") != "local":
        return "server" if response.get("backend") in ("anthropic", "openai") else ""
    return "fast" if str(rec.get("recorded_at", "")) >= FAST_PATH_SINCE else "token"


def response_digest(response: dict) -> str:
    """The digest of a recorded reply (its response's fields as saved), stored beside it when recorded."""
    return hashlib.sha256(json.dumps(response, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


# beside a folder's record files: the reply digests of the records written before the digest was stored
# with each record (kind -> key[:16] -> digest[:16]), written by :func:`seal`
SEAL = "digests.json"


def checked_record(rec: dict, sealed: dict[str, str] | None = None) -> dict:
    """A record as read back, checked: its key must be the key of its own request (a damaged or edited key
    would answer no request, and its run would be skipped as "not recorded"), and its reply must match the
    digest stored with it, or for a record written before the digest existed, the one its folder's
    ``digests.json`` holds for its key (``sealed``; a record in neither is read as it is). Raises ValueError
    or KeyError, which the reader names with the file and line."""
    if rec.get("request"):  # a record of the earliest shape saved no request: its key has nothing to be checked by
        LLMRequest.from_record(rec)
    stored = rec.get("response_digest")
    if stored is not None and stored != response_digest(rec["response"]):
        raise ValueError(f"record {str(rec['key'])[:12]}: its reply does not match the digest stored with it "
                         "(edited after it was recorded?)")
    sealed_digest = (sealed or {}).get(str(rec["key"])[:16]) if stored is None else None
    if sealed_digest is not None and sealed_digest != response_digest(rec["response"])[:16]:
        raise ValueError(f"record {str(rec['key'])[:12]}: its reply does not match its digest in {SEAL} beside "
                         "this file (edited after it was recorded?)")
    return rec


def record_checker(directory: Path, kind: str):
    """:func:`checked_record` with the folder's sealed digests of this kind (none when it has no seal): what every
    reader of a record file checks its records with (``lib.io.read_jsonl``'s check, which names file and line)."""
    seal_file = Path(directory) / SEAL
    sealed = json.loads(seal_file.read_text(encoding="utf-8")).get(kind, {}) if seal_file.exists() else {}
    return lambda rec: checked_record(rec, sealed)


def read_records(path: Path) -> list[dict]:
    """A record file's records (a torn last line left out), each checked as a replay checks it
    (:func:`record_checker`: its key, its reply's digest or its folder's seal; an edited reply is an error naming
    the file and line), read once per version of the file and its folder's seal in a process
    (:func:`lib.io.read_once`): the design pages' stores and page 12's tables read the same files. Shared: never
    change the list or its records."""
    path = Path(path)
    return read_once(_RECORDS, path, lambda p: read_jsonl(p, record_checker(p.parent, p.stem), torn_tail_ok=True),
                     path.parent / SEAL)


_RECORDS: dict[tuple, list[dict]] = {}  # read_records' files, by content


def seal(directory: Path) -> Path:
    """Write ``directory/digests.json``: the reply digest of every record there that carries none of its own
    (written before records stored one), by kind and key, so that a reply edited by hand in those is named
    when read too. Each file is read under its writers' lock; records appended later carry their own digest."""
    directory = Path(directory)
    out: dict[str, dict[str, str]] = {}
    for f in sorted(directory.glob("*.jsonl")):
        with locked(f, wait=True):
            recs = read_jsonl(f, torn_tail_ok=True)
        legacy = {str(r["key"])[:16]: response_digest(r["response"])[:16] for r in recs if "response_digest" not in r}
        if legacy:
            out[f.stem] = legacy
    return write_json(directory / SEAL, out)


class RecordStore:
    """Append-only JSON-lines store of calls, one file per backend/model and kind.

    Reading never writes: a bad line is an error naming the file and line, except an unterminated
    last line (an interrupted append), which is left out and cut off by the next append. Every record
    is checked as it is read (:func:`checked_record`): a key that is not its request's, or a reply that
    is not its digest's, is such an error too.
    """

    def __init__(self, directory: Path, base_dirs: tuple[Path, ...] = ()):
        self.directory = Path(directory)
        self.base_dirs = tuple(Path(d) for d in base_dirs)  # read only: their calls are replayed, never written
        self._cache: dict[str, dict[str, dict]] = {}
        self._lock = threading.RLock()  # put() reads the cache while holding it

    def file(self, kind: str) -> Path:
        return self.directory / f"{kind}.jsonl"

    def records(self, kind: str) -> dict[str, dict]:
        """Every recorded call of a kind, by request key (the base folders' first, then this folder's).
        Read once, under the store's lock: a thread's first read cannot replace the answers that another
        thread's :meth:`put` has just added (concurrent first turns read and write at once)."""
        with self._lock:
            if kind not in self._cache:
                files = [d / f"{kind}.jsonl" for d in self.base_dirs] + [self.file(kind)]
                self._cache[kind] = {rec["key"]: rec for f in files for rec in read_records(f)}
            return self._cache[kind]

    def get(self, request: LLMRequest) -> dict | None:
        return self.records(request.kind).get(request.key())

    def put(self, request: LLMRequest, response: LLMResponse) -> None:
        req = {"system": request.system, "messages": request.messages, "max_tokens": request.max_tokens,
               "temperature": request.temperature, "grammar": request.grammar}
        if request.tools is not None:  # a tool-calling turn
            req.update(tools=request.tools, tool_choice=request.tool_choice)
        saved = json.loads(json.dumps({k: v for k, v in asdict(response).items()  # as it reads back
                                       if k != "replayed" and (k not in OPTIONAL_FIELDS or v)}, ensure_ascii=False))
        rec = {"key": request.key(), "kind": request.kind, "run": request.run, "request": req,
               "response": saved, "response_digest": response_digest(saved),
               "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        path = self.file(request.kind)
        with self._lock, locked(path, wait=True):
            repair_torn_tail(path)
            with Appender(path) as out:
                out.write(rec)
            self.records(request.kind)[rec["key"]] = rec

    def count(self, kind: str) -> int:
        return len(self.records(kind))


def records_dir(backend: str, model: str, root: Path | None = None, route: str = "") -> Path:
    """``<backend>__<model>``; a served model's replies kept by a JSON schema (``route``: json_schema or
    json_object) go beside it in ``<backend>__<model>__<route>``: the same requests answered under another
    route are other replies, never replayed for them."""
    return Path(RECORDS_DIR if root is None else root) / (f"{backend}__{model.replace('/', '_')}"
                                                          + (f"__{route}" if route else ""))


def record_store(backend: str, model: str, root: Path | None = None, route: str = "") -> RecordStore:
    """The record of a backend and model (and route, :func:`records_dir`): the shipped one, or (``root``: a
    study's own folder) one that writes there and replays the shipped calls too, never writing them."""
    if root is None:
        return RecordStore(records_dir(backend, model, route=route))
    return RecordStore(records_dir(backend, model, root, route), base_dirs=(records_dir(backend, model, route=route),))


class RecordedLLM:
    """Answers from the record when it can; otherwise asks the backend and records the answer (or, within
    :meth:`held`, keeps it for :meth:`write` to record in the caller's order)."""

    def __init__(self, backend: Backend | None, store: RecordStore, *, backend_name: str, model: str):
        self.backend, self.store = backend, store
        self.name, self.model = backend_name, model
        self._held = threading.local()

    @contextmanager
    def held(self, lock: threading.Lock | None = None) -> Iterator[dict]:
        """Within (in this thread): a new answer is kept in the dict yielded (request key -> (request,
        response)), not recorded, and replayed from it when asked again, as from the record; ``lock``
        (held by the caller) is released while the backend answers, so that other threads run meanwhile.
        :meth:`write` records the kept answers: several questions answered at once are recorded in the
        order of a run that answers one after another."""
        self._held.answers, self._held.lock = {}, lock
        try:
            yield self._held.answers
        finally:
            self._held.answers = self._held.lock = None

    def write(self, answers: dict) -> int:
        """Record answers kept by :meth:`held`, in their order (those the record holds by now left out);
        returns how many were written."""
        n = 0
        for request, response in answers.values():
            if self.store.get(request) is None:
                self.store.put(request, response)
                n += 1
        return n

    def _ask(self, request: LLMRequest) -> LLMResponse:
        lock = getattr(self._held, "lock", None)
        if lock is None:
            return self.backend.complete(request)
        lock.release()
        try:
            return self.backend.complete(request)
        finally:
            lock.acquire()

    def complete(self, request: LLMRequest) -> LLMResponse:
        rec = self.store.get(request)
        if rec is not None:
            r = rec["response"]
            return LLMResponse(**{**r, "replayed": True, "decoding": decoding_of(rec)})
        answers = getattr(self._held, "answers", None)
        if answers is not None and request.key() in answers:
            return replace(answers[request.key()][1], replayed=True)
        if self.backend is None:
            where = self.store.file(request.kind)
            where = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
            about = f"question {request.label}, " if request.label else ""
            raise ReplayMiss(f"no recorded {request.kind!r} response for {about}run {request.run} in {where} "
                             "(the request differs from every recorded one: a changed question, prompt or setting). "
                             "Record it by running with llm_backend local (after `make local-llm`), anthropic "
                             "(with ANTHROPIC_API_KEY) or openai (an OpenAI-compatible server at openai_base_url), "
                             "e.g. make notebook NB=05 PARAMS=\"-p llm_backend local\"")
        response = self._ask(request)
        if answers is not None:
            answers[request.key()] = (request, response)
        else:
            self.store.put(request, response)
        return response

    def complete_many(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """Answer every request, in order, as :meth:`complete` does (replayed when recorded, else
        asked and recorded): through the backend's ``complete_many`` (several in flight at once)
        when it has one, else one after another."""
        many = getattr(self.backend, "complete_many", None)
        if many is None:
            return [self.complete(r) for r in requests]
        return many(requests, complete=self.complete)
