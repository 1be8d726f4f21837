"""Claude through the official SDK (the article profile's backend)."""
from __future__ import annotations

import os
import random
import time
from typing import Any, Callable

from .base import LLMError, LLMRequest, LLMResponse, cost_usd, load_prices


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
