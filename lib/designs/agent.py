"""The article's agent: search, show the LLM the top-5 titles, let it stop or search again (at most
``max_searches`` searches); all lists fused by RRF (k = 60). Every query it writes is kept.
A reply that stops on a refusal or at max_tokens ends the search; the result's stop_reason names it."""
from __future__ import annotations

import json
import re
import time

from ..llm import LLMRequest, RecordedLLM, prompts
from ..llm.base import INCOMPLETE_STOPS
from ..search.fusion import rrf
from .base import DEPTH, EMBEDDER_SETTINGS, LLM_SETTINGS, LLMUse, Question, Result

_JSON_OBJ = re.compile(r"\{.*\}", re.S)


def parse_decision(text: str) -> tuple[str, str]:
    """Read the agent's reply: ("stop", ""), ("search", query) or ("malformed", reason)."""
    m = _JSON_OBJ.search(text or "")
    if not m:
        return "malformed", "no JSON object in reply"
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError:
        return "malformed", "reply is not valid JSON"
    if not isinstance(obj, dict):
        return "malformed", "reply is not a JSON object"
    decision = obj.get("decision")
    if decision == "stop":
        return "stop", ""
    if decision == "search":
        query = obj.get("query")
        if not isinstance(query, str):
            return "malformed", "search without a query string"
        return "search", query.strip()
    return "malformed", f"unknown decision {decision!r}"


def next_query(use: LLMUse, reply: str, queries: list[str]) -> tuple[str | None, str]:
    """What one decision reply means for the search: (the new query, "") to search again, or
    (None, why the search ends): a refusal or max_tokens, stop, a malformed reply, an empty or a
    repeated query (the agent's and escalate's one reading of a reply)."""
    if use.stop_reason in INCOMPLETE_STOPS:  # a refusal or a reply cut at max_tokens: stop, named
        return None, use.stop_reason
    decision, value = parse_decision(reply)
    if decision == "stop":
        return None, "stop"
    if decision == "malformed":
        return None, f"malformed: {value}"
    if not value:
        return None, "empty query"
    if value.strip().lower() in {q.strip().lower() for q in queries}:
        return None, "repeated query"
    return value, ""


class AgentDesign:
    name = "agent"
    uses_llm = True
    record_kind = "agent"
    settings = EMBEDDER_SETTINGS + LLM_SETTINGS + ("agent_max_searches",)

    def __init__(self, searcher, llm: RecordedLLM, titles: dict[str, str], style: str,
                 k: int = 50, rrf_k: int = 60, max_searches: int = 3, temperature: float = 0.0,
                 provenance: dict | None = None):
        self.searcher, self.llm, self.titles, self.style = searcher, llm, titles, style
        self.k, self.rrf_k, self.max_searches = k, rrf_k, max_searches
        self.temperature, self.provenance = temperature, provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "AgentDesign":
        p = parts.profile
        return cls(parts.searcher, parts.llm(), parts.titles(), parts.prompt_style(), k=p.dense_k, rrf_k=p.rrf_k,
                   max_searches=p.agent_max_searches, temperature=p.llm_temperature, provenance=provenance)

    def request(self, question: Question, queries: list[str], top_ids: list[str], run: int,
                kind: str = "agent") -> LLMRequest:
        """The agent's prompt for the next decision (``kind`` names the record it is kept in)."""
        titles = "\n".join(f"{i}. {self.titles[d]}" for i, d in enumerate(top_ids[:5], start=1))
        user = prompts.AGENT_USER.format(question=question.text, queries=prompts.searches_so_far(queries),
                                         titles=titles)
        if self.style == "local":
            msgs: tuple = tuple(m for u, a in prompts.AGENT_EXAMPLES for m in (("user", u), ("assistant", a)))
            return LLMRequest(kind, prompts.AGENT_LOCAL_SYSTEM, msgs + (("user", user),), 64, self.temperature,
                              run, prompts.AGENT_GRAMMAR, label=question.qid)
        return LLMRequest(kind, prompts.AGENT_ANTHROPIC_SYSTEM, (("user", prompts.agent_anthropic_user(user)),),
                          100, self.temperature, run, label=question.qid)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = LLMUse(self.llm)
        queries = [question.text]
        lists = [[h.id for h in self.searcher.search(question.text, self.k)]]
        reason = "cap"
        while len(queries) < self.max_searches:
            value, why = next_query(use, use(self.request(question, queries, lists[-1], run)), queries)
            if value is None:
                reason = why
                break
            queries.append(value)
            lists.append([h.id for h in self.searcher.search(value, self.k)])
        fused = [d for d, _ in rrf(lists, self.rrf_k)][:DEPTH]
        res = Result(question.qid, self.name, run, fused, len(queries), queries, 0.0, stop_reason=reason,
                     provenance=self.provenance)
        return use.fill(res, start)
