"""Claude through the official SDK (the article profile's backend), as the Messages API works for
Claude Haiku 5.5 and Claude Sonnet 5.5:

* no sampling parameters (``temperature``, ``top_p``, ``top_k`` return 400 on these models; the
  request's temperature is for the local backend only);
* no assistant prefill (a request must end with a user turn);
* thinking set per model: ``thinking: {"type": ...}`` and ``output_config: {"effort": ...}``;
  Haiku 5.5 takes ``disabled`` (at effort low/medium/high), Sonnet 5.5 rejects ``disabled`` and
  ``enabled`` and its lowest setting is ``between_tools`` (no up-front thinking) with effort ``low``;
* the reply read from its content blocks by type (text joined; thinking blocks kept for the record);
* ``stop_reason`` (``refusal``, ``max_tokens``) and ``stop_details`` kept in the response;
* cost from the usage the API returns, cache tokens included;
* tool use (the tool-calling loop): ``tools`` and ``tool_choice`` sent with a tool-calling turn
  (``auto``, one call a turn, or ``none`` for the forced final answer), ``tool_use`` blocks read as
  tool calls, and a turn that calls a tool kept whole, thinking blocks unchanged, to be sent back
  with its ``tool_result`` blocks (https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview).

Sources: https://platform.claude.com/docs/en/models/haiku-5-5/migration-guide,
https://platform.claude.com/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5,
https://platform.claude.com/docs/en/build-with-claude/prompt-engineering/prompting-claude-haiku-5-5.
"""
from __future__ import annotations

import os
import time
from typing import Any

from .base import LLMError, LLMRequest, LLMResponse, cost_usd, load_prices

THINKING_TYPES = ("disabled", "adaptive", "between_tools")
EFFORTS = ("low", "medium", "high", "xhigh", "max")

# per model: the settings used when none are given, and the ones the API refuses with a 400
# (checked here, before a paid call). "effort": None sends no effort (the model's default).
MODEL_SETTINGS: dict[str, dict[str, Any]] = {
    "claude-haiku-5-5": {"thinking": "disabled", "effort": None, "rejects_thinking": (),
                         # thinking "disabled" works only at effort low, medium, high (default medium)
                         "disabled_needs_effort": ("low", "medium", "high")},
    "claude-sonnet-5-5": {"thinking": "between_tools", "effort": "low", "rejects_thinking": ("disabled",)},
}
_UNSET = object()


def model_defaults(model: str) -> dict[str, Any]:
    """The thinking and effort a model is called with when the profile gives none."""
    s = MODEL_SETTINGS.get(model, {})
    return {"thinking": s.get("thinking"), "effort": s.get("effort")}


def check_settings(model: str, thinking: str | None, effort: str | None) -> None:
    """Refuse, before any call, a thinking/effort combination the API answers with a 400."""
    if thinking is not None and thinking not in THINKING_TYPES:
        raise LLMError(f"anthropic {model}: unknown thinking type {thinking!r} (one of {', '.join(THINKING_TYPES)}; "
                       "manual thinking budgets are not accepted by the current models)")
    if effort is not None and effort not in EFFORTS:
        raise LLMError(f"anthropic {model}: unknown effort {effort!r} (one of {', '.join(EFFORTS)})")
    rules = MODEL_SETTINGS.get(model, {})
    if thinking in rules.get("rejects_thinking", ()):
        raise LLMError(f"anthropic {model}: thinking {{'type': {thinking!r}}} returns 400 on this model; "
                       "its lowest thinking setting is 'between_tools' with effort 'low'")
    allowed = rules.get("disabled_needs_effort")
    if thinking == "disabled" and allowed and effort is not None and effort not in allowed:
        raise LLMError(f"anthropic {model}: thinking 'disabled' works only at effort {', '.join(allowed)} "
                       f"(got {effort!r}); the API returns 400 otherwise")


class AnthropicBackend:
    """Claude through the official SDK, whose own retries (with backoff, honouring ``retry-after``)
    handle rate limits, overloads, timeouts and connection errors; bounded max_tokens.

    ``thinking`` ("disabled" | "adaptive" | "between_tools") and ``effort`` ("low" ... "max") are
    the profile's settings; left out, the model's entry in :data:`MODEL_SETTINGS` applies (none
    for a model not listed: nothing is sent and the API's default holds). ``tool_choice`` is the
    tool choice a tool-calling loop sends with its tools: only ``auto`` (forced tool use returns
    400 on Sonnet 5.5).

    The API key is read from ``ANTHROPIC_API_KEY`` by the SDK and never written anywhere.
    """

    name = "anthropic"

    def __init__(self, model: str, client: Any = None, max_retries: int = 6, timeout_s: float = 60.0,
                 prices: dict | None = None, thinking: Any = _UNSET, effort: Any = _UNSET,
                 tool_choice: str = "auto"):
        self.model = model
        self.prices = prices if prices is not None else load_prices()
        if model not in self.prices:
            raise LLMError(f"lib/llm/prices.json: no price for model {model!r}")
        defaults = model_defaults(model)
        self.thinking = defaults["thinking"] if thinking is _UNSET else thinking
        self.effort = defaults["effort"] if effort is _UNSET else effort
        check_settings(model, self.thinking, self.effort)
        if tool_choice != "auto":
            raise LLMError(f"anthropic {model}: tool_choice {tool_choice!r} is not supported here; only 'auto' "
                           "(forced tool use returns 400 on Claude Sonnet 5.5)")
        self.tool_choice = tool_choice
        if client is None:
            if not os.environ.get("ANTHROPIC_API_KEY"):
                raise LLMError("llm_backend 'anthropic' needs ANTHROPIC_API_KEY in the environment "
                               "(profile 'article'); use profile 'offline' to replay recorded runs")
            import anthropic  # the Anthropic SDK is optional (only the live backend needs it)

            client = anthropic.Anthropic(max_retries=max_retries, timeout=timeout_s)
        self.client = client

    @property
    def api_settings(self) -> dict[str, Any]:
        """What this backend sends besides the prompt (kept with every recorded response)."""
        return {"thinking": self.thinking, "effort": self.effort}

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The Messages API parameters for a request: no sampling parameters, no grammar, the
        profile's thinking and effort; a request that does not end with a user turn (an assistant
        prefill, which returns 400 on the current models) is refused."""
        if not request.messages or request.messages[-1][0] != "user":
            raise LLMError(f"anthropic {self.model}: a {request.kind!r} request must end with a user turn "
                           "(assistant prefill returns 400 on the current models)")
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": role, "content": content if isinstance(content, str) else [dict(b) for b in content]}
                         for role, content in request.messages],
        }
        if request.system:
            params["system"] = request.system
        if self.thinking is not None:
            params["thinking"] = {"type": self.thinking}
        if self.effort is not None:
            params["output_config"] = {"effort": self.effort}
        if request.tools is not None:
            params.update(self.tool_params([dict(t) for t in request.tools], request.tool_choice, one_call=True))
        return params

    def tool_params(self, tools: list[dict], choice: str | None = None, one_call: bool = False) -> dict[str, Any]:
        """What a tool-calling loop adds to :meth:`build_params`: its tools with the profile's
        automatic choice; ``one_call`` allows one call a turn (``disable_parallel_tool_use``: every
        turn one step, as in the local model's protocol); ``choice`` "none" asks for an answer
        without a call (the loop's forced final answer; the tools stay defined, as the conversation
        holds calls)."""
        if not tools:
            return {}
        choice = choice or self.tool_choice
        tool_choice: dict[str, Any] = {"type": choice}
        if one_call and choice != "none":
            tool_choice["disable_parallel_tool_use"] = True
        return {"tools": tools, "tool_choice": tool_choice}

    def response_from_message(self, msg: Any, latency_s: float, batch: bool = False) -> LLMResponse:
        """An :class:`LLMResponse` from the SDK's ``Message``: text blocks joined, thinking blocks
        kept, stop reason and details, usage (cache tokens included) and its list-price cost."""
        text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", None) == "text")
        thinking = [_block_dict(b) for b in msg.content
                    if getattr(b, "type", None) in ("thinking", "redacted_thinking")]
        calls = [{"id": b.id, "name": b.name, "input": _block_dict(b.input) if b.input is not None else {}}
                 for b in msg.content if getattr(b, "type", None) == "tool_use"]
        # a turn that calls tools is sent back as it came (thinking blocks unchanged) with the results
        content = [_param_dict(b) for b in msg.content] if calls else []
        usage = msg.usage
        tin, tout = int(usage.input_tokens or 0), int(usage.output_tokens or 0)
        cache_read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        cache_write = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        by_ttl = getattr(usage, "cache_creation", None)
        write_1h = int(getattr(by_ttl, "ephemeral_1h_input_tokens", 0) or 0) if by_ttl is not None else 0
        details = getattr(msg, "stop_details", None)
        cost = cost_usd(self.model, tin, tout, self.prices, cache_write=cache_write - write_1h,
                        cache_write_1h=write_1h, cache_read=cache_read, batch=batch)
        return LLMResponse(text=text, tokens_in=tin, tokens_out=tout, latency_s=latency_s, cost_usd=cost,
                           model=self.model, backend=self.name, stop_reason=str(msg.stop_reason or ""),
                           stop_details=_block_dict(details) if details is not None else None, thinking=thinking,
                           cache_write_tokens=cache_write, cache_read_tokens=cache_read, batch=batch,
                           api_settings=self.api_settings, tool_calls=calls, content=content, decoding="server")

    def complete(self, request: LLMRequest) -> LLMResponse:
        params = self.build_params(request)
        start = time.perf_counter()
        try:
            msg = self.client.messages.create(**params)
        except Exception as exc:  # what the SDK raises once its retries are spent, or at once for a 4xx
            raise LLMError(f"anthropic {self.model}: {type(exc).__name__}: {exc}") from exc
        return self.response_from_message(msg, time.perf_counter() - start)


def _block_dict(block: Any) -> dict:
    """A content block or detail object as plain JSON (the SDK's models, or a dict as given)."""
    if isinstance(block, dict):
        return dict(block)
    dump = getattr(block, "model_dump", None)
    return dump(mode="json", exclude_none=False) if dump else dict(vars(block))


def _param_dict(block: Any) -> dict:
    """A returned content block as a request block: its fields without the empty ones (what the
    API returned, to be sent back unchanged)."""
    if isinstance(block, dict):
        return {k: v for k, v in block.items() if v is not None}
    return block.model_dump(mode="json", exclude_none=True)


def profile_backend_kwargs(profile: Any, role: str = "llm") -> dict[str, Any]:
    """The profile's thinking and effort for a role, as :class:`AnthropicBackend` keyword arguments:
    ``llm`` (multiquery and the agent: ``llm_thinking``, ``llm_effort``, ``llm_tool_choice``) or
    ``question`` (writing and review: ``question_thinking``, ``question_effort``). A setting left
    null is left out, so the model's default in :data:`MODEL_SETTINGS` applies."""
    if role not in ("llm", "question"):
        raise ValueError(f"role must be 'llm' or 'question', got {role!r}")
    s = profile.settings if hasattr(profile, "settings") else dict(profile)
    kwargs = {"thinking": s.get(f"{role}_thinking"), "effort": s.get(f"{role}_effort")}
    if role == "llm":
        kwargs["tool_choice"] = s.get("llm_tool_choice")
    return {k: v for k, v in kwargs.items() if v is not None}
