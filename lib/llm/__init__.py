"""The LLM layer: backends behind one interface (``anthropic``: the article's models through the
official SDK; ``local``: a small GGUF model run by llama.cpp on the CPU; ``openai``: any model
behind an OpenAI-compatible server; ``replay``: recorded responses only), and a record of every
call, so reruns replay instead of calling a model again. Tool use (the tool-calling loop) is read
the same way by every backend (``tools``); two stub models stand in for a model in the tests and
in a try-out (``stubs``)."""
from __future__ import annotations

from .base import LLMError, LLMRequest, LLMResponse, ReplayMiss, cost_usd, load_prices
from .records import RecordedLLM, RecordStore, record_store, records_dir
from .contract import SCHEMA_CONSTRAINTS, constraint_of
from .anthropic_backend import AnthropicBackend
from .openai_backend import OpenAIBackend
from .local_backend import LocalBackend

__all__ = ["LLMError", "LLMRequest", "LLMResponse", "ReplayMiss", "RecordStore", "RecordedLLM", "cost_usd",
           "load_prices", "make_llm", "openai_settings", "record_store", "records_dir"]


def make_llm(backend: str, model: str, record_backend: str | None = None, records_root=None,
             **backend_settings) -> RecordedLLM:
    """The recorded LLM for a profile: ``replay`` reads the records of ``record_backend``;
    ``records_root`` (a study's own folder) records new calls there, never in the shipped record;
    ``backend_settings`` go to the live backend: thinking, effort and tool choice to the Anthropic
    one; base_url, api_key_env, concurrency, constraint, timeout_s and max_retries to the
    OpenAI-compatible one (:class:`~lib.llm.openai_backend.OpenAIBackend`), whose replies kept by a JSON
    schema are recorded apart (:func:`~lib.llm.records.records_dir`); replaying them takes its
    ``constraint`` too."""
    route = _route(backend_settings.get("constraint"), backend_settings.get("send_grammar", False))
    if backend == "replay":
        source = record_backend or "local"
        return RecordedLLM(None, record_store(source, model, records_root, route if source == "openai" else ""),
                           backend_name=f"replay:{source}", model=model)
    if backend == "anthropic":
        return RecordedLLM(AnthropicBackend(model, **backend_settings), record_store("anthropic", model, records_root),
                           backend_name="anthropic", model=model)
    if backend == "openai":
        return RecordedLLM(OpenAIBackend(model, **backend_settings), record_store("openai", model, records_root, route),
                           backend_name="openai", model=model)
    if backend == "local":
        return RecordedLLM(LocalBackend(model), record_store("local", model, records_root),
                           backend_name="local", model=model)
    raise LLMError(f"unknown llm_backend {backend!r} (replay | local | anthropic | openai)")


def _route(constraint: str | None, send_grammar: bool) -> str:
    """The record folder's route suffix of a constraint: a schema route's name, else none."""
    route = constraint_of(constraint, send_grammar)
    return route if route in SCHEMA_CONSTRAINTS else ""


def openai_settings(profile) -> dict:
    """The OpenAI-compatible backend's keyword arguments from a profile's ``openai_*`` settings."""
    return {"base_url": profile.openai_base_url, "api_key_env": profile.openai_api_key_env,
            "concurrency": profile.openai_concurrency,
            "constraint": constraint_of(profile.settings.get("openai_constraint"), profile.openai_send_grammar),
            "timeout_s": profile.openai_timeout_s, "max_retries": profile.openai_max_retries}
