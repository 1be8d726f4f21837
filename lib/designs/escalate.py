"""Bounded agentic escalation, the production pattern: answer with ``hybrid_rerank``; only when a
confidence signal on that first pass is below a threshold (both chosen on the dev set, never on the
bundled questions; ``scripts/select_escalation.py``) does the article's agent step in, under hard
per-question bounds (sub-queries, LLM calls, tokens, cost). Each search the agent asks for is itself
a hybrid search with the rerank step; the first pass and every escalated list are fused by RRF
(k = 60; Cormack et al. 2009), so a paper a sub-query puts first can rise without a rerank against
the question pushing it back down.

Signals, all read off the first pass (no model call):
``margin``     fused rerank score of rank 1 minus that of rank 2 (z-units; a close call is weak);
``top_score``  fused rerank score of rank 1 (how far the top paper stands out of the candidates);
``dense_top``  dense cosine of the question with the rank-1 paper (an absolute match strength).
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass

from ..llm import LLMRequest
from ..llm.base import cost_usd
from ..search.fusion import rrf
from .agent import AgentDesign, next_query
from .base import DEPTH, LLMUse, Question, Result
from .hybrid import HybridRerankDesign
from ..llm.base import load_prices

SIGNALS = ("margin", "top_score", "dense_top")
FIRST_PASS_KEPT = 10  # first-pass ids kept in the record (enough for recall@5, MRR@10 and helped/hurt)


def signals(scores: list[float], dense_top: float) -> dict[str, float]:
    """The confidence signals of one first pass (its fused scores, best first)."""
    return {"margin": round(scores[0] - scores[1], 6) if len(scores) > 1 else float("inf"),
            "top_score": round(scores[0], 6) if scores else float("-inf"),
            "dense_top": round(dense_top, 6)}


@dataclass
class Bounds:
    """Hard per-question limits on one escalation (profile settings ``escalate_max_*``)."""

    max_queries: int = 2          # sub-queries the agent may add to the first search
    max_llm_calls: int = 2
    max_tokens: int = 3000        # input + output tokens over the escalation
    max_cost_usd: float = 0.02

    def stop_before(self, use: LLMUse, request: LLMRequest, model: str, prices: dict | None) -> str:
        """Why the next call may not be made ("" when it may): the calls made, or the tokens or
        cost it could bring (its prompt as large as the last one's, its reply at ``max_tokens``)."""
        if use.calls >= self.max_llm_calls:
            return "llm call cap"
        last_in = use.last.tokens_in if use.last is not None else 0
        if use.tin + use.tout + last_in + request.max_tokens > self.max_tokens:
            return "token budget"
        if use.last is not None and use.last.cost_usd:
            step = cost_usd(model, last_in, request.max_tokens, prices) if prices is not None else use.last.cost_usd
            if use.cost + step > self.max_cost_usd:
                return "cost budget"
        return ""


def request_id(question: Question, run: int, inputs: dict) -> str:
    """A stable id of one escalation (question, run and settings), kept with the result so its
    recorded LLM calls can be found and replayed."""
    blob = json.dumps({"qid": question.qid, "text": question.text, "run": run, **inputs}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class EscalateDesign:
    name = "escalate"
    uses_llm = True
    record_kind = "escalate"
    may_answer_without_llm = True  # a question its signal does not escalate needs no model call
    uses_bm25 = True  # its first pass is hybrid_rerank's
    settings = HybridRerankDesign.settings + tuple(
        s for s in AgentDesign.settings if s not in HybridRerankDesign.settings and s != "agent_max_searches") + (
        "escalate_signal", "escalate_threshold", "escalate_max_queries", "escalate_max_llm_calls",
        "escalate_max_tokens", "escalate_max_cost_usd")

    def __init__(self, first: HybridRerankDesign, agent: AgentDesign, signal: str, threshold: float,
                 bounds: Bounds, rrf_k: int = 60, prices: dict | None = None, provenance: dict | None = None):
        if signal not in SIGNALS:
            raise ValueError(f"escalate_signal: {signal!r} is not one of {SIGNALS}")
        self.first, self.agent, self.signal, self.threshold = first, agent, signal, float(threshold)
        self.bounds, self.rrf_k, self.prices, self.provenance = bounds, rrf_k, prices, provenance or {}

    @property
    def llm(self):
        return self.agent.llm

    @property
    def follow_up_calls(self) -> int:
        return self.bounds.max_llm_calls - 1

    def first_pass(self, question: Question) -> tuple[list[str], list[float], dict[str, float]]:
        """The hybrid + rerank answer, its fused scores and its confidence signals."""
        ids, scores = self.first.search(question.text)
        dense_top = self.first.searcher.scores_for(question.text, ids[:1])[0] if ids else float("-inf")
        return ids, scores, signals(scores, dense_top)

    def first_requests(self, questions: list[Question], runs: list[int]) -> list[LLMRequest]:
        """The first agent request of every question the signal escalates (for cost projection
        and batching); the first pass itself needs no model."""
        out = []
        for q in questions:
            ids, _, sig = self.first_pass(q)
            if sig[self.signal] < self.threshold:
                out += [self.agent.request(q, [q.text], [ids], run, kind=self.record_kind) for run in runs]
        return out

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "EscalateDesign":
        p = parts.profile
        bounds = Bounds(p.escalate_max_queries, p.escalate_max_llm_calls, p.escalate_max_tokens, p.escalate_max_cost_usd)
        prices = None
        if parts.llm_source() == "anthropic":
            prices = load_prices()
        return cls(HybridRerankDesign.from_parts(parts, provenance), AgentDesign.from_parts(parts, provenance),
                   p.escalate_signal, p.escalate_threshold, bounds, p.rrf_k, prices, provenance)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = LLMUse(self.agent.llm)
        first_ids, _, sig = self.first_pass(question)
        escalated = sig[self.signal] < self.threshold
        details = {"signals": sig, "signal": self.signal, "threshold": self.threshold, "escalated": escalated,
                   "first_pass": first_ids[:FIRST_PASS_KEPT]}
        queries, lists, reason = [question.text], [first_ids], "confident"
        if escalated:
            settings = {k: self.provenance.get(k) for k in self.settings}
            details["request_id"] = request_id(question, run, settings)
            details["llm_requests"] = []
            reason = "query cap"
            while len(queries) <= self.bounds.max_queries:
                request = self.agent.request(question, queries, lists, run, kind=self.record_kind)
                why = self.bounds.stop_before(use, request, self.agent.llm.model, self.prices)
                if why:
                    reason = why
                    break
                details["llm_requests"].append(request.key()[:16])
                value, why = next_query(use, use(request), queries)
                if value is None:
                    reason = why
                    break
                queries.append(value)
                lists.append(self.first.search(value)[0])
        ranked = [d for d, _ in rrf(lists, self.rrf_k)][:DEPTH] if len(lists) > 1 else first_ids[:DEPTH]
        res = Result(question.qid, self.name, run, ranked, 2 * len(queries), queries, 0.0, stop_reason=reason,
                     provenance=self.provenance, details=details)
        return use.fill(res, start)
