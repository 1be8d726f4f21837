"""Before any work: the live parts a profile names (the Anthropic API key, the Hugging Face Hub,
the arXiv API) are checked, so a profile that cannot run stops within seconds with a clear
message, never after embedding a collection, and never falling back to the offline parts."""
from __future__ import annotations

import os
import socket
import time
import urllib.parse

from .errors import ProfileError

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
    if s["llm_backend"] == "anthropic" or s["questions_source"] == "generate":
        out.append("anthropic")
    if "huggingface-hub" in (s["embedder_backend"], s["reranker_backend"]):
        out.append("hub")
    if s["collection_source"] == "arxiv_api":
        out.append("arxiv")
    return out


def preflight(profile, check=reachable) -> list[str]:
    """Check every live part the profile needs; raise one ProfileError listing all that are missing."""
    problems = []
    start = time.monotonic()
    want = needs(profile)
    if "anthropic" in want and not os.environ.get("ANTHROPIC_API_KEY"):
        problems.append("ANTHROPIC_API_KEY is not set (the Anthropic API needs a key)")
    if "hub" in want and os.environ.get("HF_HUB_OFFLINE") == "1":
        problems.append("HF_HUB_OFFLINE=1 is set, but the embedder or reranker comes from the Hugging Face Hub")
    elif "hub" in want and (why := check(HUB_URL)):
        problems.append(f"the Hugging Face Hub ({HUB_URL}) cannot be reached: {why}")
    if "arxiv" in want and (why := check(ARXIV_URL)):
        problems.append(f"the arXiv API ({ARXIV_URL}) cannot be reached: {why}")
    if problems:
        raise ProfileError(f"profile {profile.name!r} cannot run here ({time.monotonic() - start:.1f} s to check): "
                           + "; ".join(problems) + ". It never falls back to the offline parts; use profile "
                           "'offline' to re-render from the saved runs.")
    return want
