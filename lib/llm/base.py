"""What every LLM backend shares: a request (hashable, the run index included), a response with
usage, the errors, and list-price cost from the dated price file."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

PRICES_PATH = Path(__file__).with_name("prices.json")


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
    label: str = field(default="", compare=False)  # which question asked (for messages; not in the key)

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
        raise LLMError(f"lib/llm/prices.json: no price for model {model!r}; add it with its date and source")
    p = prices[model]
    return tokens_in / 1e6 * p["input_per_mtok"] + tokens_out / 1e6 * p["output_per_mtok"]
