"""Claude through the official SDK (the article profile's backend)."""
from __future__ import annotations

import os
import time
from typing import Any

from .base import LLMError, LLMRequest, LLMResponse, cost_usd, load_prices


class AnthropicBackend:
    """Claude through the official SDK, whose own retries (with backoff, honouring ``retry-after``)
    handle rate limits, overloads, timeouts and connection errors; bounded max_tokens.

    The API key is read from ``ANTHROPIC_API_KEY`` by the SDK and never written anywhere.
    """

    name = "anthropic"

    def __init__(self, model: str, client: Any = None, max_retries: int = 6, timeout_s: float = 60.0,
                 prices: dict | None = None):
        self.model = model
        self.prices = prices if prices is not None else load_prices()
        if model not in self.prices:
            raise LLMError(f"lib/llm/prices.json: no price for model {model!r}")
        if client is None:
            if not os.environ.get("ANTHROPIC_API_KEY"):
                raise LLMError("llm_backend 'anthropic' needs ANTHROPIC_API_KEY in the environment "
                               "(profile 'article'); use profile 'offline' to replay recorded runs")
            import anthropic

            client = anthropic.Anthropic(max_retries=max_retries, timeout=timeout_s)
        self.client = client

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The Messages API parameters for a request: no sampling parameters (the current models and
        SDK take none; the request's temperature is for the local backend), no thinking, no grammar."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": role, "content": content} for role, content in request.messages],
        }
        if request.system:
            params["system"] = request.system
        return params

    def complete(self, request: LLMRequest) -> LLMResponse:
        params = self.build_params(request)
        start = time.perf_counter()
        try:
            msg = self.client.messages.create(**params)
        except Exception as exc:  # what the SDK raises once its retries are spent, or at once for a 4xx
            raise LLMError(f"anthropic {self.model}: {type(exc).__name__}: {exc}") from exc
        latency = time.perf_counter() - start
        text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", "text") == "text")
        tin, tout = msg.usage.input_tokens, msg.usage.output_tokens
        return LLMResponse(text=text, tokens_in=tin, tokens_out=tout, latency_s=latency,
                           cost_usd=cost_usd(self.model, tin, tout, self.prices), model=self.model, backend=self.name)
