"""Tool use across backends. A tool-calling conversation is kept in the Messages API's shape
(content blocks ``text``, ``tool_use``, ``tool_result`` and thinking blocks; the Anthropic backend
sends it as it is), and the chat-template backends (the local model) read it as text: a tool call
is the one JSON object ``{"tool": NAME, ...arguments}`` its grammar lets it write, a tool result
is the result's text in a user turn, and thinking blocks are left out.

Source: https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use (the
tool_use / tool_result blocks, ``stop_reason: "tool_use"``, thinking blocks passed back)."""
from __future__ import annotations

import json
from typing import Any, Iterable

THINKING_TYPES = ("thinking", "redacted_thinking")


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def tool_use_block(call: dict) -> dict:
    return {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["input"]}


def tool_result_block(tool_use_id: str, text: str, is_error: bool = False) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text}
    if is_error:
        block["is_error"] = True
    return block


def assistant_blocks(response: Any) -> tuple[dict, ...]:
    """The assistant turn to send back after a reply: its content blocks exactly as returned
    (thinking blocks included, unchanged) when the backend gives them, else its tool calls (or
    its text, when it called none) as blocks."""
    if getattr(response, "content", None):
        return tuple(dict(b) for b in response.content)
    if response.tool_calls:
        return tuple(tool_use_block(c) for c in response.tool_calls)
    return (text_block(response.text),)


def json_call_text(name: str, arguments: dict) -> str:
    """A tool call as the local model writes it: ``{"tool": "search", "query": "..."}``."""
    return json.dumps({"tool": name, **arguments}, ensure_ascii=False)


def parse_json_call(text: str, call_id: str) -> dict | None:
    """A tool call from a reply that is one JSON object with a ``tool`` name (None otherwise)."""
    try:
        obj = json.loads((text or "").strip())
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("tool"), str) or not obj["tool"]:
        return None
    name = obj.pop("tool")
    return {"id": call_id, "name": name, "input": obj}


def malformed_calls(response: Any, local: bool) -> list[dict]:
    """The tool calls of a reply whose arguments are not a JSON object, as ``{"id", "arguments"}``:
    those the backend marked (``stop_details`` of type ``malformed_tool_arguments``: a native call's
    arguments text), or, in the local protocol (``local``), a reply that opens a JSON object but is
    not valid JSON (a call the model could not finish writing; a reply cut at max_tokens is not one:
    it is named by its own stop reason). Empty when every call is well formed."""
    details = getattr(response, "stop_details", None) or {}
    if details.get("type") == "malformed_tool_arguments":
        return [dict(c) for c in details.get("calls") or ()]
    text = (getattr(response, "text", "") or "").strip()
    if local and text.startswith("{") and not getattr(response, "tool_calls", None):
        try:
            json.loads(text)
        except json.JSONDecodeError:
            return [{"id": None, "arguments": text}]
    return []


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or () if isinstance(b, dict))


def chat_text(content: Any) -> str:
    """One message's content as plain text for a chat template: text as it is, a tool call as its
    JSON object, a tool result as its text; thinking blocks left out."""
    if isinstance(content, str):
        return content
    parts = []
    for b in content:
        kind = b.get("type")
        if kind == "text":
            parts.append(b["text"])
        elif kind == "tool_use":
            parts.append(json_call_text(b["name"], b.get("input") or {}))
        elif kind == "tool_result":
            parts.append(_result_text(b.get("content")))
        elif kind in THINKING_TYPES:
            continue
        else:
            raise ValueError(f"content block of type {kind!r} cannot be rendered as text")
    return "\n\n".join(p for p in parts if p)


def chat_messages(system: str, messages: Iterable[tuple[str, Any]]) -> list[dict[str, str]]:
    """A request's system prompt and messages as chat-template messages (role, text)."""
    out = [{"role": "system", "content": system}] if system else []
    return out + [{"role": role, "content": chat_text(content)} for role, content in messages]


def tool_names(tools: Iterable[dict] | None) -> list[str]:
    return [t["name"] for t in tools or ()]


def assistant_turns(messages: Iterable[tuple[str, Any]]) -> int:
    """How many assistant turns a conversation holds (numbers the next tool call's id)."""
    return sum(1 for role, _ in messages if role == "assistant")
