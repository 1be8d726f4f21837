"""The shipped local model served as a user would serve it: llama-cpp-python's OpenAI-compatible server
(``python -m llama_cpp.server``, pinned with the local model in requirements-local-llm.txt) on a free
loopback port, started and stopped by its PID. ``make bench`` times the served routes beside the local
fast path on it, the tests drive the OpenAI-compatible backend against it, and
``scripts/served_placement.py`` places the served copy on the same questions as the local backend.

With no chat format named, the server formats a request with the model's own chat template, as the local
backend does, so the prompt it evaluates is the local backend's; ``options`` adds the server's own flags
(``--chat_format chatml-function-calling`` for native tool calls, whose template escapes quotes).
Source: llama-cpp-python 0.3.36, ``llama_cpp/server`` (its settings and ``/v1/models``)."""
from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .base import LLMError

SERVER_PACKAGES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")


def missing_packages() -> list[str]:
    """The server's packages that are not installed (pip install llama-cpp-python[server])."""
    return [m for m in SERVER_PACKAGES if importlib.util.find_spec(m) is None]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(model_file: Path, alias: str, log_file: Path, threads: int | None = None, n_ctx: int = 2048,
          options: tuple[str, ...] = (), wait_s: float = 180.0) -> Iterator[str]:
    """Start the server on ``model_file`` (served as ``alias``), wait until it answers, yield its base URL
    (``http://127.0.0.1:<port>/v1``), and stop it by its PID. Its output goes to ``log_file``, whose tail an
    error quotes (a server that exits, or does not answer within ``wait_s``)."""
    if not Path(model_file).exists():
        raise LLMError(f"{Path(model_file).name} is not there (make local-llm joins it)")
    missing = missing_packages()
    if missing:
        raise LLMError(f"llama-cpp-python's server needs {', '.join(missing)} (pip install llama-cpp-python[server])")
    threads = threads or int(os.environ.get("LOCAL_LLM_THREADS", 0)) or min(2, os.cpu_count() or 1)
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file), "--model_alias", alias,
           "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads),
           "--logits_all", "false", *options, "--host", "127.0.0.1", "--port", str(port), "--verbose", "false"]
    log_file = Path(log_file)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + wait_s
        while True:
            if proc.poll() is not None:
                raise LLMError(f"llama_cpp.server exited with {proc.returncode}:\n{_tail(log_file)}")
            try:
                with urllib.request.urlopen(base + "/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise LLMError(f"llama_cpp.server did not answer within {wait_s:.0f} s:\n{_tail(log_file)}")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _tail(path: Path, n: int = 2000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""
