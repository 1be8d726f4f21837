"""Before any work: the live parts a profile names (the Anthropic API key, the Hugging Face Hub,
the arXiv API) and the local model of llm_backend 'local' are checked, so a profile that cannot
run stops within seconds with a clear message, never after embedding a collection, and never
falling back to the offline parts."""
from __future__ import annotations

import importlib.util
import os
import socket
import time
import urllib.parse

from .errors import ProfileError
from .paths import shown_path

HUB_URL = "https://huggingface.co"
ARXIV_URL = "http://export.arxiv.org/api/query"
CONNECT_TIMEOUT_S = 4.0


def reachable(url: str, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """None when a TCP connection to the URL's host opens within ``timeout``; else why not."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"


def needs(profile) -> list[str]:
    """The live parts a profile uses: 'anthropic', 'hub', 'arxiv'."""
    s = profile.settings
    out = []
    if s["questions_source"] == "generate":  # who writes the questions (imported only when they are written)
        from .data.question_gen import question_backend

        writes_with_claude = question_backend(profile) == "anthropic"
    else:
        writes_with_claude = False
    if s["llm_backend"] == "anthropic" or writes_with_claude:
        out.append("anthropic")
    if "huggingface-hub" in (s["embedder_backend"], s["reranker_backend"]):
        out.append("hub")
    if s["collection_source"] == "arxiv_api":
        out.append("arxiv")
    return out


def local_model_missing(find_spec=importlib.util.find_spec, model_file=None) -> str | None:
    """None when llama-cpp-python is importable and the joined model file exists; else what is missing
    (llama_cpp is looked up, not imported)."""
    from .llm.local_backend import LOCAL_MODEL_FILE

    model_file = LOCAL_MODEL_FILE if model_file is None else model_file
    missing = []
    if find_spec("llama_cpp") is None:
        missing.append("llama-cpp-python (module llama_cpp) is not installed")
    if not model_file.exists():
        missing.append(f"the model file {shown_path(model_file)} is not there")
    return " and ".join(missing) or None


def preflight(profile, check=reachable, local=None) -> list[str]:
    """Check every live part the profile needs, and the local model for llm_backend 'local'
    (``local``: a check returning what is missing, default :func:`local_model_missing`);
    raise one ProfileError listing all that are missing."""
    problems = []
    start = time.monotonic()
    if profile.settings["llm_backend"] == "local":
        from .llm import LLMError
        from .llm.local_backend import install_command, local_model

        try:
            spec = local_model(profile.settings["llm_model"])
        except LLMError as exc:
            problems.append(str(exc))
        else:
            why = local() if local is not None else local_model_missing(model_file=spec.file)
            if why:
                problems.append(f"llm_backend 'local' needs the local model, but {why}: run "
                                f"`{install_command(spec.name)}` first")
    want = needs(profile)
    if "anthropic" in want and not os.environ.get("ANTHROPIC_API_KEY"):
        problems.append("ANTHROPIC_API_KEY is not set (the Anthropic API needs a key)")
    if "hub" in want and os.environ.get("HF_HUB_OFFLINE") == "1":
        problems.append("HF_HUB_OFFLINE=1 is set, but the embedder or reranker comes from the Hugging Face Hub")
    elif "hub" in want and (why := check(HUB_URL)):
        problems.append(f"the Hugging Face Hub ({HUB_URL}) cannot be reached: {why}")
    if profile.settings["llm_backend"] == "openai":
        url = profile.settings.get("openai_base_url") or os.environ.get("OPENAI_BASE_URL")
        if not url:
            problems.append("llm_backend 'openai' needs the server's address: set openai_base_url or OPENAI_BASE_URL")
        elif why := check(url):
            problems.append(f"the OpenAI-compatible server ({url}) cannot be reached: {why}")
    if "arxiv" in want and (why := check(ARXIV_URL)):
        problems.append(f"the arXiv API ({ARXIV_URL}) cannot be reached: {why}")
    if problems:
        raise ProfileError(f"profile {profile.name!r} cannot run here ({time.monotonic() - start:.1f} s to check): "
                           + "; ".join(problems) + ". It never falls back to the offline parts; use profile "
                           "'offline' to re-render from the saved runs.")
    return want
