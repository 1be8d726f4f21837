"""The article's agent, as its code runs it: search with the question; after each search show the
LLM the question and every search so far (each query with its top-5 titles) and let it stop or
write a new query (at most ``max_searches`` searches); all lists fused by RRF (k = 60, ties by
first appearance). The loop ends unless the reply is a search with a non-empty query that differs
from the current one (the article's rule), whatever the reply's stop reason: a reply cut at
max_tokens or a refusal that still holds a valid new query searches on, as in the article's code;
one that ends the loop is recorded under that stop reason. Every query it writes is kept."""
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
    (None, why the search ends). The article's rule: stop, a malformed reply, a missing or empty
    query, or a query equal to the current one (whitespace stripped) ends it; a repeat of an
    earlier query does not. The rule reads the reply's text whatever its stop reason, as the
    article's code does: a reply cut at max_tokens (or a refusal) that holds a valid new query
    searches on; one that ends the search is named by that stop reason, not by what its text
    lacked (the agent's and escalate's one reading of a reply)."""
    decision, value = parse_decision(reply)
    if decision == "stop":
        why = "stop"
    elif decision == "malformed":
        why = f"malformed: {value}"
    elif not value:
        why = "empty query"
    elif value == queries[-1].strip():
        why = "repeated query"
    else:
        return value, ""
    return None, use.stop_reason if use.stop_reason in INCOMPLETE_STOPS else why


class AgentDesign:
    name = "agent"
    uses_llm = True
    record_kind = "agent"
    settings = EMBEDDER_SETTINGS + LLM_SETTINGS + ("agent_max_searches",)

    def __init__(self, searcher, llm: RecordedLLM, titles: dict[str, str], style: str,
                 k: int = 50, rrf_k: int = 60, max_searches: int = 3, temperature: float = 0.0,
                 provenance: dict | None = None, corpus: prompts.Corpus = prompts.ARXIV):
        self.searcher, self.llm, self.titles, self.style = searcher, llm, titles, style
        self.system = (prompts.agent_local_system if style == "local" else prompts.agent_system)(corpus)
        self.examples = prompts.agent_examples(corpus)
        self.k, self.rrf_k, self.max_searches = k, rrf_k, max_searches
        self.temperature, self.provenance = temperature, provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "AgentDesign":
        p = parts.profile
        return cls(parts.searcher, parts.llm(), parts.titles(), parts.prompt_style(), k=p.dense_k, rrf_k=p.rrf_k,
                   max_searches=p.agent_max_searches, temperature=p.llm_temperature, provenance=provenance,
                   corpus=parts.corpus())

    def request(self, question: Question, queries: list[str], lists: list[list[str]], run: int,
                kind: str = "agent") -> LLMRequest:
        """The agent's prompt for the next decision: the question and every search so far (each
        query with the titles of its list's top 5); ``kind`` names the record it is kept in."""
        user = prompts.agent_user(question.text, [(q, [self.titles[d] for d in ids[:5]])
                                                  for q, ids in zip(queries, lists)])
        if self.style == "local":
            msgs: tuple = tuple(m for u, a in self.examples for m in (("user", u), ("assistant", a)))
            return LLMRequest(kind, self.system, msgs + (("user", user),),
                              prompts.AGENT_LOCAL_MAX_TOKENS, self.temperature, run, prompts.AGENT_GRAMMAR,
                              label=question.qid)
        return LLMRequest(kind, self.system, (("user", user),), prompts.AGENT_MAX_TOKENS,
                          self.temperature, run, label=question.qid)

    @property
    def follow_up_calls(self) -> int:
        """Decisions a question may need after its first (for cost projection)."""
        return max(0, self.max_searches - 2)

    def first_requests(self, questions: list[Question], runs: list[int]) -> list[LLMRequest]:
        """Every question's first decision (for batching and cost projection): it needs the top ids
        of the first search, the question as written, as ``retrieve`` does."""
        if self.max_searches < 2:  # the loop never asks the model
            return []
        top = {q.qid: [h.id for h in self.searcher.search(q.text, self.k)] for q in questions}
        return [self.request(q, [q.text], [top[q.qid]], run) for run in runs for q in questions]

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = LLMUse(self.llm)
        queries = [question.text]
        lists = [[h.id for h in self.searcher.search(question.text, self.k)]]
        reason = "cap"
        while len(queries) < self.max_searches:
            value, why = next_query(use, use(self.request(question, queries, lists, run)), queries)
            if value is None:
                reason = why
                break
            queries.append(value)
            lists.append([h.id for h in self.searcher.search(value, self.k)])
        fused = [d for d, _ in rrf(lists, self.rrf_k)][:DEPTH]
        res = Result(question.qid, self.name, run, fused, len(queries), queries, 0.0, stop_reason=reason,
                     provenance=self.provenance)
        return use.fill(res, start)
