"""Before any work: the live parts a profile names (the Anthropic API key, the Hugging Face Hub,
the arXiv API) and the local model of llm_backend 'local' are checked, so a profile that cannot
run stops within seconds with a clear message, never after embedding a collection, and never
falling back to the offline parts. A page's profile (:func:`notebook_profile`) is checked here too."""
from __future__ import annotations

import importlib.util
import os
import socket
import urllib.parse
from typing import Any

from .config import DEFAULT_PROFILE, NOTEBOOK_PARAMETERS, Profile, Settings, load_profile, parameter_value
from .errors import ProfileError
from .paths import shown_path
from .data.question_gen import question_backend
from .llm.local_backend import LOCAL_MODEL_FILE
from .llm import LLMError
from .llm.local_backend import install_command, local_model
from .designs import design_class

HUB_URL = "https://huggingface.co"
# the pages that read no question: the collection page imports or draws the documents (the questions a model
# is yet to write are needed by every other page)
QUESTION_FREE_PAGES = ("01_collection",)
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


def writes_questions_with_claude(profile) -> bool:
    """Whether the profile's questions are written (and reviewed) by Claude through the API."""
    if profile.settings["questions_source"] != "generate":
        return False

    return question_backend(profile) == "anthropic"


def needs(profile) -> list[str]:
    """The live parts a profile uses: 'anthropic', 'hub', 'arxiv'."""
    s = profile.settings
    out = []
    if s["llm_backend"] == "anthropic" or writes_questions_with_claude(profile):
        out.append("anthropic")
    if "huggingface-hub" in (s["embedder_backend"], s["reranker_backend"]):
        out.append("hub")
    if s["collection_source"] == "arxiv_api":
        out.append("arxiv")
    return out


def local_model_missing(find_spec=importlib.util.find_spec, model_file=None) -> str | None:
    """None when llama-cpp-python is importable and the joined model file exists; else what is missing
    (llama_cpp is looked up, not imported)."""
    model_file = LOCAL_MODEL_FILE if model_file is None else model_file
    missing = []
    if find_spec("llama_cpp") is None:
        missing.append("llama-cpp-python (module llama_cpp) is not installed")
    if not model_file.exists():
        missing.append(f"the model file {shown_path(model_file)} is not there")
    return " and ".join(missing) or None


def llm_problems(profile, check=reachable, local=None) -> list[str]:
    """What keeps the LLM designs' backend (``llm_backend``) from answering here, each with the command or
    setting that fixes it; empty when it can answer (``replay`` needs nothing live). ``local``: a check
    returning what is missing of the local model (default :func:`local_model_missing`)."""
    s = profile.settings
    problems = []
    if s["llm_backend"] == "local":
        try:
            spec = local_model(s["llm_model"])
        except LLMError as exc:
            problems.append(str(exc))
        else:
            why = local() if local is not None else local_model_missing(model_file=spec.file)
            if why:
                problems.append(f"llm_backend 'local' needs the local model, but {why}: run "
                                f"`{install_command(spec.name)}` first")
    elif s["llm_backend"] == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
        problems.append("ANTHROPIC_API_KEY is not set (llm_backend 'anthropic' needs a key)")
    elif s["llm_backend"] == "openai":
        url = s.get("openai_base_url") or os.environ.get("OPENAI_BASE_URL")
        if not url:
            problems.append("llm_backend 'openai' needs the server's address: set openai_base_url or OPENAI_BASE_URL")
        elif why := check(url):
            problems.append(f"the OpenAI-compatible server ({url}) cannot be reached: {why}")
    return problems


def problem_message(profile, problems: list[str]) -> str:
    """The one message for what keeps ``profile`` from running, ending with what runs without it: the
    profile's own recorded calls replayed, where its file replays them (``-p llm_backend`` left out),
    or, for a study of your own data, ``llm_backend=replay`` over the calls recorded in its folder."""
    backend = profile.settings["llm_backend"]
    if backend == "replay":
        other = ""
    elif profile.file_settings.get("llm_backend") == "replay":
        other = (f" Without llm_backend {backend!r} (`-p llm_backend`), profile {profile.name!r} replays its "
                 "recorded calls and needs no model.")
    elif profile.study_dir is not None:
        other = (" To re-render from the model calls already recorded in the study's folder instead, add "
                 "llm_backend=replay to SET.")
    else:
        other = ""
    return (f"profile {profile.name!r} cannot run here: " + "; ".join(problems)
            + ". It never falls back to the offline parts." + other)


def preflight(profile, check=reachable, local=None, llm=True, writer=True) -> list[str]:
    """Check every live part the profile needs, and with ``llm`` the LLM designs' backend
    (:func:`llm_problems`; ``local`` as there); raise one ProfileError listing all that are missing.
    Without ``llm`` the caller checks the backend itself, for the pages that ask the model
    (lib/report/execute.py :func:`runnable`); without ``writer`` the question writer's key is not needed
    (only pages that read no question run: :data:`QUESTION_FREE_PAGES`)."""
    problems = llm_problems(profile, check, local) if llm else []
    want = needs(profile)
    if (writer and writes_questions_with_claude(profile) and not os.environ.get("ANTHROPIC_API_KEY")
            and not any("ANTHROPIC_API_KEY" in p for p in problems)):
        problems.append("ANTHROPIC_API_KEY is not set (the question writer, Claude, needs a key)")
    if "hub" in want and os.environ.get("HF_HUB_OFFLINE") == "1":
        problems.append("HF_HUB_OFFLINE=1 is set, but the embedder or reranker comes from the Hugging Face Hub")
    elif "hub" in want and (why := check(HUB_URL)):
        problems.append(f"the Hugging Face Hub ({HUB_URL}) cannot be reached: {why}")
    if "arxiv" in want and (why := check(ARXIV_URL)):
        problems.append(f"the arXiv API ({ARXIV_URL}) cannot be reached: {why}")
    if problems:
        raise ProfileError(problem_message(profile, problems))
    return want


def pages_to_run(profile, names: list[str], designs_of: dict[str, tuple[str, ...]], check=reachable,
                 local=None) -> tuple[list[str], str | None]:
    """The notebooks of ``names`` that can run here, and a line naming those left out, or None: when the LLM
    designs' backend cannot answer (:func:`llm_problems`), the pages that run an LLM design
    (``designs_of``: notebook -> its designs, notebooks/index.tsv) are left out by name, with what
    enables them, and the others run. Raises the one ProfileError when no page asked for can run, when
    the questions are yet to be written by that model for a page that reads them (every page but the
    collection's: :data:`QUESTION_FREE_PAGES`), or when anything else is missing (:func:`preflight`)."""
    problems = llm_problems(profile, check, local)
    questions = any(n not in QUESTION_FREE_PAGES for n in names)  # the collection page alone runs without them
    writer_needs_it = (questions and profile.settings["questions_source"] == "generate"
                       and not writes_questions_with_claude(profile))
    preflight(profile, check, local, llm=writer_needs_it, writer=questions)
    if not problems:
        return list(names), None
    ask = [n for n in names if any(design_class(d).uses_llm for d in designs_of.get(n, ()))]
    run = [n for n in names if n not in ask]
    if not ask:
        return run, None
    if not run:
        raise ProfileError(problem_message(profile, problems))
    return run, (f"not run: {', '.join(ask)} (they ask the model, and {'; '.join(problems)}); "
                 f"the other {len(run)} page(s) run without it, and the same command runs these once the model "
                 "can answer")


def notebook_profile(namespace: dict[str, Any]) -> Profile:
    """The profile a notebook runs with: ``profile`` from its parameters, and every setting that
    papermill injected (``-f profiles/<name>.yaml`` or ``-p key value``) or that the parameters cell
    sets to something other than None, as an override (text read by :func:`parameter_value`). A plain
    value in the namespace that is no setting (a misspelt ``-p`` name) is an error naming it."""
    name = namespace.get("profile", DEFAULT_PROFILE)
    known = set(Settings.model_fields) | set(NOTEBOOK_PARAMETERS)
    unknown = sorted(k for k, v in namespace.items()
                     if not k.startswith("_") and k not in known and k not in ("In", "Out")
                     and isinstance(v, (str, int, float, bool, list, dict)) and not callable(v))
    if unknown:
        raise ProfileError(f"unknown parameter(s) {unknown}: not a setting of profile {name!r}; "
                           f"known settings: {', '.join(Settings.model_fields)}")
    values = {k: parameter_value(k, namespace[k]) for k in Settings.model_fields if k != "profile" and k in namespace}
    overrides = {k: v for k, v in values.items() if v is not None}
    profile = load_profile(name, **overrides).with_runs(namespace.get("runs"))
    if namespace.get("design") is not None:  # a page led by another design than its own
        profile.asked = {**profile.asked, "design": namespace["design"]}
    preflight(profile, llm=False)  # the LLM designs check their backend when built (lib/llm)
    return profile
