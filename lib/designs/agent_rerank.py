"""The article's agent with its fused list reranked: the agent searches as in ``agent.py`` (the same
requests, so the same recorded answers), then its fused top ``rerank_k`` is reordered by the
profile's rerank step against the question as written. Tests the anti-pattern of expanding
queries without reranking what they bring back."""
from __future__ import annotations

import time

from .agent import AgentDesign
from .base import Question, Result
from .rerank import RerankDesign, rerank


class AgentRerankDesign:
    name = "agent_rerank"
    uses_llm = True
    record_kind = AgentDesign.record_kind
    settings = AgentDesign.settings + tuple(s for s in RerankDesign.settings if s not in AgentDesign.settings)

    def __init__(self, agent: AgentDesign, reranker, texts: dict[str, str], k: int = 50, provenance: dict | None = None):
        self.agent, self.reranker, self.texts, self.k = agent, reranker, texts, k
        self.provenance = provenance or {}

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "AgentRerankDesign":
        return cls(AgentDesign.from_parts(parts, provenance), parts.reranker(), parts.texts(), parts.profile.rerank_k,
                   provenance)

    @property
    def llm(self):
        return self.agent.llm

    @property
    def follow_up_calls(self) -> int:
        return self.agent.follow_up_calls

    def first_requests(self, questions: list[Question], runs: list[int]) -> list:
        """The agent's first decisions (the same requests, so one recorded answer serves both)."""
        return self.agent.first_requests(questions, runs)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        res = self.agent.retrieve(question, run)
        start = time.perf_counter()
        ids = res.ranked_ids[: self.k]
        res.ranked_ids = rerank(self.reranker, question.text, ids, self.agent.searcher.scores_for(question.text, ids),
                                self.texts)
        res.design, res.provenance = self.name, self.provenance
        res.latency_s = round(res.latency_s + time.perf_counter() - start, 4)
        return res
