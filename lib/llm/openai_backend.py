"""Any model behind an OpenAI-compatible chat completions server (vLLM, llama.cpp's server,
llama-cpp-python's, Ollama, a gateway, or OpenAI's own API) through the official ``openai`` SDK,
whose own retries (with backoff, honouring ``retry-after``) and timeouts handle rate limits,
overloads and dropped connections.

A request is sent as ``chat.completions.create``: the system prompt as a ``system`` message, the
(role, content) messages, ``max_tokens``, ``temperature`` and ``seed`` (:meth:`LLMRequest.seed`,
so repeated runs differ and each is reproducible where the server honours seeds). Two protocols,
chosen by the request as the designs build it:

* **native tool calls** (requests without a grammar: the ``anthropic`` prompt style). Tools in the
  Messages API's shape (name, description, input_schema) become ``tools=[{"type": "function",
  "function": {name, description, parameters}}]`` with ``tool_choice`` "auto" (one call a turn:
  ``parallel_tool_calls`` false) or "none"; an assistant turn's ``tool_use`` blocks become its
  ``tool_calls`` (arguments as JSON text), a user turn's ``tool_result`` blocks become ``role:
  "tool"`` messages (then its text, as a user message), thinking blocks are left out. The reply's
  ``tool_calls`` come back as ``[{"id", "name", "input"}]`` and, with its text, as content blocks in
  the Messages API's shape (:func:`lib.llm.tools.assistant_blocks` sends them back next turn).
* **the local prompt** (requests with a GBNF grammar: the ``local`` prompt style). The request
  goes as the local backend sends it (:func:`lib.llm.tools.chat_messages` for a tool-calling turn: the
  conversation as text, the tools described by the prompt, none sent natively; a tool call is the
  reply's one JSON object ``{"tool": NAME, ...}``, :func:`lib.llm.tools.parse_json_call`), and its
  reply is kept to the request's contract (:mod:`lib.llm.contract`) by the route ``constraint`` names:
  ``grammar`` sends the GBNF (``grammar`` in the body: llama.cpp's servers); ``json_schema`` sends the
  contract's schema as ``response_format: {"type": "json_schema", "json_schema": {"name", "schema",
  "strict": true}}`` (vLLM, SGLang, OpenAI); ``json_object`` as ``{"type": "json_object", "schema": ...}``
  (llama-cpp-python's server); ``none`` sends none (the prompt alone shapes the reply). Under a schema
  the worked examples' replies are shown in the schema's JSON, ``max_tokens`` grows by what that JSON
  costs, and the reply is read back into the grammar's form (the server's own text kept as
  ``server_text``); a grammar no contract states (the tool-calling loop's) is sent only by the grammar
  route. To llama.cpp's servers (the grammar and json_object routes) the local backend's sampling goes
  too: ``repeat_penalty`` 1.0 (llama-cpp-python's server would apply 1.1) and, at temperature 0,
  ``top_k`` 1.

The reply: the text (``message.content``), ``finish_reason`` as the Messages API's stop reason
("stop" -> "end_turn", "length" -> "max_tokens", "tool_calls" -> "tool_use", "content_filter" or a
``refusal`` -> "refusal"), usage (cached prompt tokens, ``prompt_tokens_details.cached_tokens``, as
cache reads), the cost at list price when ``lib/llm/prices.json`` has the model (else 0.0: a
self-hosted model has no fee), and the latency measured around the call. Errors the SDK raises
once its retries are spent, or at once for a 4xx, become :class:`LLMError` with the server's message.

Source: the SDK's ``chat.completions.create`` and its ``ChatCompletion`` type; llama.cpp's server
README (``grammar``); vLLM's structured outputs; llama-cpp-python 0.3.36's server (``response_format``
``json_object`` with ``schema``; its sampling defaults in ``llama_cpp/server/types.py``).
"""
from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from ..errors import redacted
from .base import REFUSAL, LLMError, LLMRequest, LLMResponse, cost_usd, load_prices
from .contract import CONSTRAINTS, SCHEMA_CONSTRAINTS, Contract, constraint_of, contract_for
from .tools import THINKING_TYPES, assistant_turns, chat_messages, chat_text, parse_json_call, tool_use_block

PLACEHOLDER_KEY = "not-needed"   # sent when no key is given: a local server needs none
# the local backend's sampling, in llama.cpp's request fields (its servers' own defaults differ: repeat_penalty 1.1)
LLAMA_SAMPLING = {"repeat_penalty": 1.0}
LLAMA_ROUTES = ("grammar", "json_object")
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use",
                "content_filter": REFUSAL}


class OpenAIBackend:
    """A model behind an OpenAI-compatible server.

    ``base_url`` (e.g. ``http://127.0.0.1:8000/v1``) falls back to ``OPENAI_BASE_URL``; without
    either the backend refuses to start rather than send the study's prompts to a default host.
    ``api_key`` falls back to the environment variable ``api_key_env`` (``OPENAI_API_KEY``); a local
    server needs no real key, so without one the placeholder ``"not-needed"`` is sent (a server that
    checks keys answers 401, reported as such). ``timeout_s`` and ``max_retries`` go to the SDK's
    client. ``constraint`` is the route that keeps a local-prompt request to its contract (grammar,
    json_schema, json_object or none); ``send_grammar`` (the older setting) means ``grammar``. ``prices``
    replaces the price table; ``http_client`` (an ``httpx2.Client``) replaces the SDK's own.

    :meth:`complete` answers one request; :meth:`complete_many` answers a list with up to
    ``concurrency`` requests in flight at once (threads), in request order. The designs call
    ``complete`` one turn at a time; a run answers up to ``openai_concurrency`` questions at once,
    each in a thread of its own (:func:`lib.pipeline.concurrent_questions`), so a server that
    batches requests serves them together.
    """

    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 120.0, max_retries: int = 4,
                 concurrency: int = 4, constraint: str | None = None, send_grammar: bool = False,
                 prices: dict | None = None, http_client: Any = None):
        if concurrency < 1:
            raise LLMError(f"openai {model}: concurrency must be at least 1, got {concurrency}")
        if constraint not in CONSTRAINTS + (None,):
            raise LLMError(f"openai {model}: constraint must be one of {', '.join(CONSTRAINTS)}, got {constraint!r}")
        self.model, self.concurrency = model, int(concurrency)
        self.constraint = constraint_of(constraint, send_grammar)
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not self.base_url:
            raise LLMError(f"llm_backend 'openai' ({model}) needs the server's base URL: the profile's "
                           "openai_base_url or OPENAI_BASE_URL in the environment (e.g. http://127.0.0.1:8000/v1)")
        self.prices = prices if prices is not None else load_prices()
        try:
            import openai  # the OpenAI SDK is optional (only the OpenAI-compatible backend needs it)
        except ImportError as exc:
            raise LLMError("llm_backend 'openai' needs the openai package (pip install openai)") from exc
        key = api_key or os.environ.get(api_key_env) or PLACEHOLDER_KEY
        self.client = openai.OpenAI(api_key=key, base_url=self.base_url, timeout=timeout_s, max_retries=max_retries,
                                    http_client=http_client)

    # ------------------------------------------------------------------ the request
    def contract(self, request: LLMRequest) -> Contract | None:
        """The contract a request is sent under: its grammar's, on a schema route (else None)."""
        return contract_for(request.grammar) if self.constraint in SCHEMA_CONSTRAINTS else None

    def applied(self, request: LLMRequest) -> str:
        """The constraint a request is sent under: the route's, or none (no grammar, the route none, or a
        grammar no contract states on a schema route)."""
        if not request.grammar or self.constraint == "none":
            return "none"
        if self.constraint == "grammar" or self.contract(request) is not None:
            return self.constraint
        return "none"

    def build_params(self, request: LLMRequest) -> dict[str, Any]:
        """The ``chat.completions.create`` arguments for a request (see the module's two protocols)."""
        local = bool(request.grammar)
        contract = self.contract(request)
        if local:
            messages = [{**m, "content": _example(m["content"], contract)} if m["role"] == "assistant" else m
                        for m in chat_messages(request.system, request.messages)]
        else:
            messages = ([{"role": "system", "content": request.system}] if request.system else []) + \
                       [m for role, content in request.messages for m in _openai_messages(role, content)]
        params: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": request.max_tokens,
                                  "temperature": request.temperature, "seed": request.seed()}
        if request.tools is not None and not local:
            params["tools"] = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                                 "parameters": t["input_schema"]}}
                               for t in request.tools]
            params["tool_choice"] = request.tool_choice
            if request.tool_choice == "auto":
                params["parallel_tool_calls"] = False  # one call a turn, as the local protocol
        applied = self.applied(request)
        extra: dict[str, Any] = {}
        if applied == "grammar":
            extra["grammar"] = request.grammar
        elif contract is not None:
            params["max_tokens"] = request.max_tokens + contract.extra_tokens
            params["response_format"] = (
                {"type": "json_schema", "json_schema": {"name": contract.name, "schema": contract.schema, "strict": True}}
                if applied == "json_schema" else {"type": "json_object", "schema": contract.schema})
        if applied in LLAMA_ROUTES:
            extra.update(self.sampling(request))
        if extra:
            params["extra_body"] = extra
        return params

    @staticmethod
    def sampling(request: LLMRequest) -> dict[str, Any]:
        """The local backend's sampling in llama.cpp's fields (sent to llama.cpp's servers)."""
        return {**LLAMA_SAMPLING, **({"top_k": 1} if request.temperature == 0 else {})}

    # ------------------------------------------------------------------ the reply
    def response_from_completion(self, completion: Any, request: LLMRequest, latency_s: float) -> LLMResponse:
        """An :class:`LLMResponse` from the SDK's ``ChatCompletion``."""
        choices = getattr(completion, "choices", None)  # a reply of another shape is read without validation
        if not isinstance(choices, list) or not choices or not hasattr(choices[0], "message"):
            raise LLMError(redacted(f"openai {self.model}: the server at {self.base_url} sent no completion (no "
                                    f"choices) for a {request.kind!r} request: {str(completion)[:200]!r}"))
        choice = completion.choices[0]
        msg = choice.message
        text = server_text = msg.content or ""
        contract = self.contract(request)
        if contract is not None:  # the schema's JSON, read back into the grammar's form (kept as sent when it is not)
            text = contract.read(server_text) or server_text
        finish = str(choice.finish_reason or "")
        stop = STOP_REASONS.get(finish, finish)
        details = None
        refusal = getattr(msg, "refusal", None)
        if refusal:
            stop, details = REFUSAL, {"type": "refusal", "explanation": refusal}
        elif finish == "content_filter":
            details = {"type": "refusal", "explanation": "content_filter"}
        calls, content = [], []
        if request.grammar:  # the local protocol: a call is the reply's JSON object
            if request.tools is not None:
                call = parse_json_call(text, f"call_{assistant_turns(request.messages) + 1}")
                calls = [call] if call else []
        else:
            calls, bad = _tool_calls(msg)
            if bad:
                details = {"type": "malformed_tool_arguments", "calls": bad}
            if calls:
                content = ([{"type": "text", "text": text}] if text else []) + [tool_use_block(c) for c in calls]
        if calls and stop not in ("max_tokens", REFUSAL):
            stop = "tool_use"
        reasoning = getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None)  # vLLM, llama.cpp
        thinking = [{"type": "thinking", "thinking": reasoning}] if isinstance(reasoning, str) and reasoning else []
        usage = completion.usage
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        tout = int(getattr(usage, "completion_tokens", 0) or 0)
        cached = int(getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0)
        tin = prompt - cached  # tokens_in is the uncached input, as the Messages API counts it
        cost = cost_usd(self.model, tin, tout, self.prices, cache_read=cached) if self.model in self.prices else 0.0
        applied = self.applied(request)
        settings = {"prompt": "local" if request.grammar else "anthropic", "constraint": applied,
                    **({"sampling": self.sampling(request)} if applied in LLAMA_ROUTES else {})}
        return LLMResponse(text=text, tokens_in=tin, tokens_out=tout, latency_s=latency_s, cost_usd=cost,
                           model=self.model, backend=self.name, stop_reason=stop, stop_details=details,
                           thinking=thinking, cache_read_tokens=cached, api_settings=settings, tool_calls=calls,
                           content=content, decoding="server", server_text=server_text if server_text != text else "")

    def complete(self, request: LLMRequest) -> LLMResponse:
        params = self.build_params(request)
        start = time.perf_counter()
        try:
            completion = self.client.chat.completions.create(**params)
        except json.JSONDecodeError as exc:  # the SDK reads the reply's body as JSON: the text it read is kept
            came = f"a reply that is not JSON: {exc.doc[:200]!r}" if exc.doc.strip() else "an empty reply"
            raise LLMError(redacted(f"openai {self.model}: the server at {self.base_url} sent {came} (is it an "
                                    "OpenAI-compatible server?)")) from exc
        except Exception as exc:  # what the SDK raises once its retries are spent, or at once for a 4xx
            hint = f" (is the server running at {self.base_url}?)" if "Connection" in type(exc).__name__ else ""
            raise LLMError(redacted(f"openai {self.model}: {type(exc).__name__}: {exc}{hint}")) from exc
        return self.response_from_completion(completion, request, time.perf_counter() - start)

    def complete_many(self, requests: Sequence[LLMRequest],
                      complete: Callable[[LLMRequest], LLMResponse] | None = None) -> list[LLMResponse]:
        """Answer every request, up to ``concurrency`` at once (threads), in request order.
        ``complete`` (default :meth:`complete`) answers one; :meth:`RecordedLLM.complete_many`
        passes its own, which replays or records each. The first error, in request order, is
        raised once every request has finished (the answers already recorded stay recorded)."""
        complete = complete or self.complete
        requests = list(requests)
        if len(requests) <= 1 or self.concurrency == 1:
            return [complete(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            futures = [pool.submit(complete, r) for r in requests]
        return [f.result() for f in futures]


def _example(reply: str, contract: Contract | None) -> str:
    """A worked example's reply as the route asks the model to write it: in the schema's JSON under a
    schema route, else as written."""
    return contract.json_text(reply) if contract is not None and contract.valid(reply) else reply


def _openai_messages(role: str, content: Any) -> list[dict[str, Any]]:
    """One (role, content) message as chat completions messages: a string as it is; content blocks
    as an assistant turn with its ``tool_calls``, or as one ``tool`` message per tool result and
    then the turn's text as a user message; thinking blocks left out."""
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    texts, calls, results = [], [], []
    for b in content:
        kind = b.get("type")
        if kind == "text":
            texts.append(b["text"])
        elif kind == "tool_use":
            calls.append({"id": b["id"], "type": "function",
                          "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}})
        elif kind == "tool_result":
            results.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": chat_text((b,))})
        elif kind not in THINKING_TYPES:
            raise LLMError(f"openai: content block of type {kind!r} cannot be sent to a chat completions server")
    text = "\n\n".join(t for t in texts if t)
    if role == "assistant":
        msg: dict[str, Any] = {"role": "assistant", "content": text}  # "", not null: some servers want a string
        if calls:
            msg["tool_calls"] = calls
        return [msg]
    if calls:
        raise LLMError(f"openai: a {role!r} turn cannot hold tool_use blocks")
    return results + ([{"role": role, "content": text}] if text or not results else [])


def _tool_calls(msg: Any) -> tuple[list[dict], list[dict]]:
    """The reply's function calls as ``{"id", "name", "input"}``, and those whose arguments were
    not a JSON object (kept with empty input, so the loop answers them with a tool error)."""
    calls, bad = [], []
    for tc in getattr(msg, "tool_calls", None) or ():
        fn = getattr(tc, "function", None)
        if fn is None:  # a custom (non-function) tool call: never requested here
            continue
        try:
            args = json.loads(fn.arguments or "{}")
        except json.JSONDecodeError:
            args = None
        if not isinstance(args, dict):
            bad.append({"id": tc.id, "arguments": fn.arguments})
            args = {}
        calls.append({"id": tc.id, "name": fn.name, "input": args})
    return calls, bad
