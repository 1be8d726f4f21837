"""The replies the LLM designs ask a model for, each stated once (a *contract*), and the routes that
make a model keep it.

A contract is one reply shape: the agent's decision (``{"match": K, "decision": "stop"}`` or ``{"match":
0, "decision": "search", "query": "..."}``), the decision tree's forced search (its search branch alone),
multi-query's three lines, decomposition's one to three lines and HyDE's paragraph. Each holds the same
replies in three forms:

* the GBNF grammar of :mod:`lib.llm.prompts` (unchanged: the local backend's requests carry it and are
  keyed by it), which the local backend and llama.cpp's servers read;
* a JSON schema of the same replies (structured outputs): an object whose fields are the grammar's;
  lines become ``{"queries": [...]}`` with as many items as the grammar has lines, a paragraph
  ``{"passage": "..."}``;
* and back: a schema reply read into the grammar's form, and the grammar's form written as the schema's
  JSON; the grammar itself (read by :mod:`lib.llm.grammar_text`) checks a reply of either route.

A reply in the schema's JSON is read back into the grammar's form (:meth:`Contract.from_json`), so
every design reads one form whatever the route. The routes (setting ``openai_constraint``,
:data:`CONSTRAINTS`): ``grammar`` (the GBNF as llama.cpp's servers take it, ``grammar`` in the body),
``json_schema`` (``response_format: {"type": "json_schema", "json_schema": {...}}``: vLLM, SGLang,
OpenAI's structured outputs), ``json_object`` (``response_format: {"type": "json_object", "schema":
{...}}``: llama-cpp-python's server, which takes a schema only in that form) and ``none`` (no
constraint: the article's prompt, as Claude gets it). The first three send the local prompt (its worked
examples; under a schema the examples' replies are shown in the schema's JSON, the form the model must
write) and measure what the shipped local points measure; ``none`` measures what the article's prompt
gets, which is another point (:func:`comparable`).

Sources: llama.cpp's GBNF guide (grammars/README.md); vLLM's structured outputs
(docs/features/structured_outputs.md: ``response_format`` with ``json_schema``); llama-cpp-python
0.3.36's ``llama_chat_format`` (``json_object`` with ``schema``, turned into a grammar).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

import jsonschema

from . import prompts
from .grammar_text import GrammarText

CONSTRAINTS = ("grammar", "json_schema", "json_object", "none")
SCHEMA_CONSTRAINTS = ("json_schema", "json_object")
# the routes that keep a contract: the local prompt is sent with them
CONTRACT_CONSTRAINTS = ("grammar",) + SCHEMA_CONSTRAINTS
PROMPTS = {"local": "the local prompt (worked examples)", "anthropic": "the article's prompt"}
CONSTRAINT_WORDS = {"grammar": "a GBNF grammar", "json_schema": "a JSON schema (response_format json_schema)",
                    "json_object": "a JSON schema (response_format json_object)", "none": "no constraint"}
# what the shipped points were measured under: the local models with the local prompt and its grammar
SHIPPED_ROUTE = ("local", "grammar")

# ---------------------------------------------------------------- the decision tree's forced search
_ROOT = "root ::= stop | search"
if _ROOT not in prompts.AGENT_GRAMMAR:  # the search-only grammar is the agent's with its stop branch closed
    raise ImportError("lib.llm.prompts.AGENT_GRAMMAR no longer starts with 'root ::= stop | search'; "
                      "lib/llm/contract.py derives the search-only grammar from that rule")
SEARCH_ONLY_GRAMMAR = prompts.AGENT_GRAMMAR.replace(_ROOT, "root ::= search")


@dataclass(frozen=True)
class Contract:
    """One reply shape in its three forms (module docstring)."""

    name: str                              # the schema's name (json_schema's ``name``)
    grammar: str                           # the GBNF, as lib.llm.prompts writes it
    schema: dict                           # the same replies as JSON
    from_json: Callable[[Any], str]        # a reply in the schema's JSON (parsed), in the grammar's form
    as_json: Callable[[str], Any]          # a reply in the grammar's form, as the schema's JSON
    extra_tokens: int = 0                  # what the JSON around a reply costs in tokens beyond the grammar's

    def valid(self, text: str) -> bool:
        """Whether ``text`` is a reply the grammar allows (its automaton, :mod:`lib.llm.grammar_text`)."""
        automaton = _automaton(self.grammar)
        reply = automaton.start()
        return reply.feed(text or "") and automaton.accept in reply.states

    def fits(self, obj: Any) -> bool:
        """Whether a parsed JSON reply is one the schema allows."""
        return jsonschema.Draft202012Validator(self.schema).is_valid(obj)

    def read(self, text: str) -> str | None:
        """A schema reply's text in the grammar's form; None when it is not JSON the schema allows."""
        try:
            obj = json.loads(text or "", strict=False)  # a raw line break in a string is read, then removed
        except json.JSONDecodeError:
            return None
        return self.from_json(obj) if self.fits(obj) else None

    def json_text(self, text: str) -> str:
        """A reply in the grammar's form written as the schema's JSON (a worked example's reply)."""
        return json.dumps(self.as_json(text), ensure_ascii=False)


@lru_cache(maxsize=16)
def _automaton(grammar: str) -> GrammarText:
    return GrammarText(grammar)


def _one_line(text: str) -> str:
    """A string of a JSON reply on one line (the grammars allow no line break in it)."""
    return " ".join(str(text).split())


# ---------------------------------------------------------------- the agent's decision
def _decision_text(obj: dict) -> str:
    if obj["decision"] == "stop":
        return json.dumps({"match": obj["match"], "decision": "stop"})
    return json.dumps({"match": 0, "decision": "search", "query": _one_line(obj["query"])}, ensure_ascii=False)


_STOP = {"type": "object", "properties": {"match": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
                                          "decision": {"type": "string", "const": "stop"}},
         "required": ["match", "decision"], "additionalProperties": False}
_SEARCH = {"type": "object", "properties": {"match": {"type": "integer", "const": 0},
                                            "decision": {"type": "string", "const": "search"},
                                            "query": {"type": "string", "minLength": 3, "maxLength": 120}},
           "required": ["match", "decision", "query"], "additionalProperties": False}
AGENT = Contract("agent_decision", prompts.AGENT_GRAMMAR, {"anyOf": [_STOP, _SEARCH]}, _decision_text, json.loads)
SEARCH_ONLY = Contract("agent_search", SEARCH_ONLY_GRAMMAR, _SEARCH, _decision_text, json.loads)


# ---------------------------------------------------------------- lines and a paragraph
def _lines(name: str, grammar: str, fewest: int, most: int, shortest: int, longest: int) -> Contract:
    """``fewest`` to ``most`` lines of ``shortest`` to ``longest`` characters, none a line break: as
    ``{"queries": [...]}``."""
    schema = {"type": "object", "properties": {"queries": {
        "type": "array", "minItems": fewest, "maxItems": most,
        "items": {"type": "string", "minLength": shortest, "maxLength": longest}}},
        "required": ["queries"], "additionalProperties": False}
    return Contract(name, grammar, schema,
                    lambda obj: "\n".join(_one_line(q) for q in obj["queries"]),
                    lambda text: {"queries": text.split("\n")}, extra_tokens=4 + 2 * most)


REWRITE = _lines("rewrites", prompts.REWRITE_GRAMMAR, 3, 3, 8, 120)
DECOMPOSE = _lines("parts", prompts.DECOMPOSE_GRAMMAR, 1, 3, 8, 160)
HYDE = Contract("passage", prompts.HYDE_GRAMMAR,
                {"type": "object", "properties": {"passage": {"type": "string", "minLength": 40, "maxLength": 900}},
                 "required": ["passage"], "additionalProperties": False},
                lambda obj: _one_line(obj["passage"]), lambda text: {"passage": text},
                extra_tokens=8)

CONTRACTS = {c.grammar: c for c in (AGENT, SEARCH_ONLY, REWRITE, DECOMPOSE, HYDE)}


def contract_for(grammar: str | None) -> Contract | None:
    """The contract of a request's grammar; None for none, or for a grammar no contract states (the
    tool-calling loop's, whose tools stay tool calls)."""
    return CONTRACTS.get(grammar) if grammar else None


# ---------------------------------------------------------------- what a run was measured under
def constraint_of(constraint: str | None, send_grammar: bool = False) -> str:
    """The route of ``openai_constraint``; unset, the older ``openai_send_grammar`` says it (grammar, or none)."""
    if constraint is None:
        return "grammar" if send_grammar else "none"
    if constraint not in CONSTRAINTS:
        raise ValueError(f"openai_constraint must be one of {', '.join(CONSTRAINTS)}, got {constraint!r}")
    return constraint


def prompt_for(constraint: str) -> str:
    """The prompt style that goes with a route: the local prompt with a contract, the article's without."""
    return "local" if constraint in CONTRACT_CONSTRAINTS else "anthropic"


def served_route(settings: dict) -> tuple[str, str] | None:
    """(prompt style, constraint) a profile's served model is asked under; None when its LLM designs do not
    ask a served model (``llm_backend`` openai, or replaying one)."""
    source = settings.get("llm_record_backend") if settings.get("llm_backend") == "replay" else settings.get("llm_backend")
    if source != "openai":
        return None
    constraint = constraint_of(settings.get("openai_constraint"), bool(settings.get("openai_send_grammar")))
    return prompt_for(constraint), constraint


def comparison_words(style: str, constraint: str) -> str:
    """Whether a point measured under this route stands beside the shipped ones, in words."""
    if comparable(style, constraint):
        return "comparable with the shipped points (the local prompt under its contract)"
    return (f"not comparable with the shipped points, measured under {route_words(*SHIPPED_ROUTE)}: the point "
            "measures the prompt and its constraint as much as the model")


def route_of_provenance(prov: dict) -> tuple[str, str]:
    """(prompt style, constraint) of a saved result from its provenance: the local model's runs were
    constrained by its grammar, Claude's by nothing; a served model's by the
    ``openai_constraint`` its provenance names (a schema route), else by its grammar under the local
    prompt and by nothing under the article's."""
    style = str(prov.get("prompt_style") or "")
    source = prov.get("llm_source")
    if source == "local":
        return style or "local", "grammar"
    if source == "openai" and prov.get("openai_constraint"):
        return style, str(prov["openai_constraint"])
    return style, "grammar" if style == "local" else "none"


def route_of_results(results) -> tuple[str, str] | None:
    """(prompt style, constraint) of a saved run of an LLM design (its results' provenance: one run, one
    route); None for a run with no result or no model."""
    first = next(iter(results), None)
    prov = getattr(first, "provenance", None) or {}
    return route_of_provenance(prov) if prov.get("llm_source") else None


def route_of_response(response: dict) -> tuple[str, str]:
    """(prompt style, constraint) of one recorded reply (a record's ``response``): a served reply says it in
    its ``api_settings`` (older ones: ``grammar`` sent or not); the local model's is its grammar."""
    settings = response.get("api_settings") or {}
    if response.get("backend") == "local":
        return "local", "grammar"
    if "constraint" in settings:
        return str(settings.get("prompt", "")), str(settings["constraint"])
    if "grammar" in settings:
        return "local", "grammar" if settings["grammar"] == "sent" else "none"
    return "anthropic", "none"


def comparable(style: str, constraint: str) -> bool:
    """Whether a point measured under this prompt and constraint stands beside the shipped points (the local
    prompt under its contract, by whichever route kept it)."""
    return style == SHIPPED_ROUTE[0] and constraint in CONTRACT_CONSTRAINTS


def route_fields(route: tuple[str, str] | None) -> dict:
    """A judged point's ``measured_under`` (its route in words) and ``comparable`` (with the shipped points); a run
    with no model route is neither marked nor set apart."""
    if route is None:
        return {"measured_under": "", "comparable": True}
    return {"measured_under": route_words(*route), "comparable": comparable(*route)}


def route_words(style: str, constraint: str) -> str:
    """E.g. "the local prompt (worked examples), a JSON schema (response_format json_schema)"."""
    return f"{PROMPTS.get(style, style or 'an unknown prompt')}, {CONSTRAINT_WORDS.get(constraint, constraint)}"
