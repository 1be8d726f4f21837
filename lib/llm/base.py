"""What every LLM backend shares: a request (hashable, the run index included), a response with
usage, the errors, and list-price cost from the dated price file."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

PRICES_PATH = Path(__file__).with_name("prices.json")

# stop reasons on which a reply is not a usable answer: the designs and the question generator
# record them and go on (the agent stops, multiquery keeps what it can, a question row is marked)
REFUSAL, MAX_TOKENS = "refusal", "max_tokens"
INCOMPLETE_STOPS = (REFUSAL, MAX_TOKENS)
# LLMResponse fields added for tool use: a record holds them only when they are set
TOOL_FIELDS = ("tool_calls", "content", "prompt_tokens_reused")
# and every field a record holds only when it is set (those, and a served reply's own text where it was read
# into another form)
OPTIONAL_FIELDS = TOOL_FIELDS + ("server_text",)


class LLMError(RuntimeError):
    """A backend could not answer (after retries), or is not available."""


class ReplayMiss(LLMError):
    """The replay backend has no recorded response for a request."""


TOOL_CHOICES = ("auto", "none")


@dataclass(frozen=True)
class LLMRequest:
    """One model call. ``run`` makes repeated runs distinct requests (and seeds sampling).

    A tool-calling turn (the tool-calling loop) also carries ``tools`` (definitions in the Messages
    API's shape: name, description, input_schema) and ``tool_choice``; its messages' content may then
    be a tuple of content blocks (``text``, ``tool_use``, ``tool_result``, thinking blocks) in that
    API's shape, which every backend reads (``lib/llm/tools.py``)."""

    kind: str                      # "rewrite", "agent", "question", ...
    system: str
    messages: tuple[tuple[str, Any], ...]   # (role, content): content a string, or a tuple of content blocks
    max_tokens: int
    temperature: float = 0.0
    run: int = 1
    grammar: str | None = None     # GBNF grammar constraining the output (local backend only)
    label: str = field(default="", compare=False)  # which question asked (for messages; not in the key)
    tools: tuple[dict, ...] | None = None   # tool definitions: a tool-calling turn
    tool_choice: str | None = None          # with tools: "auto" (the model chooses) or "none" (answer, no call)

    def __post_init__(self):
        if self.tools is None and self.tool_choice is not None:
            raise ValueError(f"LLMRequest {self.kind!r}: tool_choice {self.tool_choice!r} without tools")
        if self.tools is not None:
            if self.tool_choice not in TOOL_CHOICES:
                raise ValueError(f"LLMRequest {self.kind!r}: tool_choice must be one of {TOOL_CHOICES}, "
                                 f"got {self.tool_choice!r}")
            if not all(isinstance(t, dict) and t.get("name") and "input_schema" in t for t in self.tools):
                raise ValueError(f"LLMRequest {self.kind!r}: every tool needs a name and an input_schema")

    def key(self) -> str:
        """Stable hash of everything that determines the answer, the run index included. Tools enter
        the hash only when set, so the key of every request without them is what it always was."""
        blob = {"kind": self.kind, "system": self.system, "messages": self.messages,
                "max_tokens": self.max_tokens, "temperature": self.temperature,
                "run": self.run, "grammar": self.grammar}
        if self.tools is not None:
            blob.update(tools=self.tools, tool_choice=self.tool_choice)
        text = json.dumps(blob, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @classmethod
    def from_record(cls, rec: dict) -> "LLMRequest":
        """The request a record was made for (``lib/llm/records.py``: its kind, run and request), with
        the same key; a record whose request does not give back its key is an error naming it."""
        r = rec["request"]
        messages = tuple((role, content if isinstance(content, str) else tuple(content)) for role, content in r["messages"])
        tools = r.get("tools")
        request = cls(rec["kind"], r["system"], messages, r["max_tokens"], r["temperature"], rec.get("run", 1),
                      r.get("grammar"), tools=None if tools is None else tuple(tools), tool_choice=r.get("tool_choice"))
        if request.key() != rec["key"]:
            raise ValueError(f"record {rec['key'][:12]} ({rec['kind']!r}): its request gives key {request.key()[:12]}")
        return request

    def __hash__(self) -> int:  # content blocks are dicts: hash by the key
        return hash(self.key())

    def seed(self) -> int:
        return int(self.key()[:8], 16)


@dataclass
class LLMResponse:
    """One answer. The fields after ``backend`` were added for the Messages API and default to
    empty, so records written before them (and the local backend's) read unchanged."""

    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    cost_usd: float
    model: str
    backend: str
    replayed: bool = False
    stop_reason: str = ""          # "end_turn", "max_tokens", "refusal", ... ("" when the backend gives none)
    stop_details: dict | None = None   # e.g. {"type": "refusal", "category": ..., "explanation": ...}
    thinking: list[dict] = field(default_factory=list)  # thinking / redacted_thinking blocks, as returned
    cache_write_tokens: int = 0    # usage.cache_creation_input_tokens
    cache_read_tokens: int = 0     # usage.cache_read_input_tokens
    batch: bool = False            # answered through the Message Batches API (batch price; latency_s 0)
    api_settings: dict = field(default_factory=dict)  # thinking / effort sent (not part of the request key)
    # tool-calling turns only (written to the record only when set, so other records keep their shape):
    tool_calls: list[dict] = field(default_factory=list)  # [{"id", "name", "input"}]: the tools the model called
    content: list[dict] = field(default_factory=list)     # the turn's content blocks as returned (thinking included),
                                                          # passed back unchanged in the next turn
    prompt_tokens_reused: int = 0  # local backend: prompt tokens whose KV state was reused from its previous call
    # how the reply was decoded: "fast" (the local backend's fast path, lib/llm/speculative.py), "token" (a token
    # at a time), "server" (a remote API's own); records written before the field say it through their date
    # (lib/llm/records.py decoding_of)
    decoding: str = ""
    # a served reply kept to its contract by a JSON schema: the server's own text, where ``text`` is that reply
    # read back into the grammar's form (lib/llm/contract.py); written to the record only when set
    server_text: str = ""

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the call: uncached, cache reads and cache writes."""
        return self.tokens_in + self.cache_read_tokens + self.cache_write_tokens

    @property
    def incomplete(self) -> bool:
        """True when the reply stopped on a refusal or at max_tokens."""
        return self.stop_reason in INCOMPLETE_STOPS


class Backend(Protocol):
    name: str
    model: str

    def complete(self, request: LLMRequest) -> LLMResponse: ...


def load_prices(path: Path = PRICES_PATH) -> dict[str, dict[str, Any]]:
    with open(path) as fh:
        return {k: v for k, v in json.load(fh).items() if not k.startswith("_")}


def price_of(model: str, prices: dict | None = None) -> dict[str, Any]:
    prices = prices if prices is not None else load_prices()
    if model not in prices:
        raise LLMError(f"lib/llm/prices.json: no price for model {model!r}; add it with its date and source")
    return prices[model]


def _rate(p: dict, name: str) -> float:
    """A per-million-token rate; the cache and batch rates fall back to the input/output rates
    (never lower than list price: a missing rate is charged in full)."""
    fallback = {"cache_write_5m_per_mtok": "input_per_mtok", "cache_write_1h_per_mtok": "input_per_mtok",
                "cache_read_per_mtok": "input_per_mtok", "batch_input_per_mtok": "input_per_mtok",
                "batch_output_per_mtok": "output_per_mtok"}
    value = p.get(name)
    return float(value if value is not None else p[fallback.get(name, name)])


def tier_for(p: dict, prompt_tokens: int) -> dict:
    """The price tier of one call: a model priced by prompt length (``long_prompt``: prompts over
    ``threshold_tokens``, cache reads and writes counted) bills the whole call at the long rates."""
    long = p.get("long_prompt")
    if long and prompt_tokens > long["threshold_tokens"]:
        return {**p, **long}
    return p


def cost_usd(model: str, tokens_in: int, tokens_out: int, prices: dict | None = None, *,
             cache_write: int = 0, cache_read: int = 0, batch: bool = False,
             cache_write_1h: int = 0) -> float:
    """List-price cost of one call from the dated table in ``lib/llm/prices.json``.

    ``tokens_in`` is ``usage.input_tokens`` (uncached input only); ``cache_write`` tokens are billed
    at the 5-minute cache-write rate (the API's default TTL) and ``cache_write_1h`` at the 1-hour
    rate; ``cache_read`` at the cache-hit rate; ``batch`` calls at the batch input/output rates.
    Cache tokens in a batch are billed at the standard cache rates (the conservative reading)."""
    p = tier_for(price_of(model, prices), tokens_in + cache_write + cache_write_1h + cache_read)
    rin, rout = ("batch_input_per_mtok", "batch_output_per_mtok") if batch else ("input_per_mtok", "output_per_mtok")
    return (tokens_in * _rate(p, rin) + tokens_out * _rate(p, rout) + cache_write * _rate(p, "cache_write_5m_per_mtok")
            + cache_write_1h * _rate(p, "cache_write_1h_per_mtok") + cache_read * _rate(p, "cache_read_per_mtok")) / 1e6
