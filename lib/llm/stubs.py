"""Two stand-in models for the tool-calling loop (profile setting ``loop_backend``), for the tests
and for trying the loop with no model. They read the conversation as every backend gets it and
answer at once, deterministically; usage is counted as characters / 4, latency is 0, and nothing
is recorded (a rerun computes the same answers again).

``scripted``: search the question as written, read the top hit, answer citing it (three turns,
one citation); asked for a final answer sooner, it cites the paper it read, else the top hit.
``echo``: never calls a tool: it repeats the question as its answer, so the loop ends on its
first turn with nothing retrieved.
"""
from __future__ import annotations

import json
import math
import re

from .base import LLMRequest, LLMResponse
from .prompts import LOOP_USER
from .tools import chat_messages, json_call_text, tool_names

_ID_IN_RESULT = re.compile(r"\[([^\]\s]+)\]")
_QUESTION = re.compile("^" + re.escape(LOOP_USER.split("{question}")[0]) + r"(.*)$", re.M)


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class _Stub:
    name = model = ""

    def _response(self, request: LLMRequest, text: str = "", call: dict | None = None) -> LLMResponse:
        prompt = json.dumps(chat_messages(request.system, request.messages), ensure_ascii=False)
        prompt += json.dumps(request.tools or [], ensure_ascii=False)
        out = json_call_text(call["name"], call["input"]) if call else text
        return LLMResponse(text=text, tokens_in=_tokens(prompt), tokens_out=_tokens(out), latency_s=0.0, cost_usd=0.0,
                           model=self.model, backend=self.name, stop_reason="tool_use" if call else "end_turn",
                           tool_calls=[call] if call else [], decoding="scripted")


def _question(request: LLMRequest) -> str:
    """The question of the conversation: the last user turn written as text that states one."""
    for role, content in reversed(request.messages):
        if role == "user":
            text = content if isinstance(content, str) else "\n".join(
                b.get("text", "") for b in content if b.get("type") == "text")
            m = _QUESTION.search(text)
            if m:
                return m.group(1).strip()
    raise ValueError(f"stub model: no '{LOOP_USER}' turn in the {request.kind!r} conversation")


def _read_argument(request: LLMRequest) -> str:
    """The read tool's argument, as the request's tools name it (paper_id for arXiv papers)."""
    read = next((t for t in request.tools or () if t.get("name") == "read"), None)
    return (read or {}).get("input_schema", {}).get("required", ["paper_id"])[0]


class ScriptedLoopModel(_Stub):
    """Search, read the top hit, answer citing it."""

    name = model = "scripted"

    def complete(self, request: LLMRequest) -> LLMResponse:
        calls, results = [], []  # this question's tool calls and their results (the examples are strings)
        for role, content in request.messages:
            if isinstance(content, str):
                continue
            for b in content:
                if b.get("type") == "tool_use":
                    calls.append(b)
                elif b.get("type") == "tool_result":
                    results.append(b.get("content") if isinstance(b.get("content"), str) else "")
        turn = len(calls) + 1
        arg = _read_argument(request)
        read = [c["input"].get(arg) for c in calls if c["name"] == "read"]
        top = [_ID_IN_RESULT.search(r).group(1) for c, r in zip(calls, results)
               if c["name"] == "search" and _ID_IN_RESULT.search(r)]
        if request.tool_choice == "auto" and not calls:
            return self._response(request, call={"id": f"stub_{turn}", "name": "search",
                                                 "input": {"query": _question(request)}})
        if request.tool_choice == "auto" and calls[-1]["name"] == "search" and top and not read:
            return self._response(request, call={"id": f"stub_{turn}", "name": "read", "input": {arg: top[-1]}})
        cited = (read or top)[-1:] if (read or top) else []
        if "answer" in tool_names(request.tools):  # the local protocol answers with a call
            return self._response(request, call={"id": f"stub_{turn}", "name": "answer", "input": {"ids": cited}})
        return self._response(request, text="The answer.\nCited: " + ", ".join(cited))


class EchoModel(_Stub):
    """Never calls a tool: the question, repeated, is its answer."""

    name = model = "echo"

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self._response(request, text=_question(request))


STUBS = {"scripted": ScriptedLoopModel, "echo": EchoModel}


class StubLLM:
    """A stub model in place of the recorded LLM: it answers directly (no record, no replay)."""

    store = None

    def __init__(self, stub):
        self.backend, self.name, self.model = stub, f"stub:{stub.name}", stub.model

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.backend.complete(request)


def stub_llm(name: str) -> StubLLM:
    try:
        return StubLLM(STUBS[name]())
    except KeyError:
        raise ValueError(f"unknown loop_backend {name!r}; one of {sorted(STUBS)}") from None
