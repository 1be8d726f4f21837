"""The retrieval designs, one file per design family, all behind the ``Design`` protocol and one
``Result`` record (``base.py``). ``REGISTRY`` is the one list of designs, in the report's order:
adding a design is one file here and one line below. ``PROBES`` are designs run to measure another
(the agent's decision tree), never scored as designs."""
from __future__ import annotations

from .agent import AgentDesign
from .agent_rerank import AgentRerankDesign
from .agent_tree import AgentTreeDesign
from .bm25 import BM25Design
from .base import DEPTH, Design, LLMUse, Parts, Question, Result
from .dense import DenseDesign
from .escalate import EscalateDesign
from .hybrid import HybridDesign, HybridRerankDesign
from .loop import LoopDesign, LoopQuestionFirstDesign
from .multiquery import MultiQueryDesign
from .query_strategies import DecomposeDesign, HydeDesign
from .rerank import RerankDesign

REGISTRY: dict[str, type] = {
    "dense": DenseDesign,
    "rerank": RerankDesign,
    "multiquery": MultiQueryDesign,
    "agent": AgentDesign,
    "bm25": BM25Design,
    "hybrid": HybridDesign,
    "hybrid_rerank": HybridRerankDesign,
    "agent_rerank": AgentRerankDesign,
    "escalate": EscalateDesign,
    "loop": LoopDesign,
    "loop_question_first": LoopQuestionFirstDesign,
    "decompose": DecomposeDesign,
    "hyde": HydeDesign,
}
BASELINE = "dense"
# designs that record what a scored design would have done, read by the evaluation and never scored or
# tabled as designs of their own (run them by name: scripts/run_designs.py PROFILE agent_tree 1)
PROBES: dict[str, type] = {"agent_tree": AgentTreeDesign}

__all__ = ["BASELINE", "DEPTH", "Design", "LLMUse", "PROBES", "Parts", "Question", "REGISTRY", "Result", "design_class",
           "design_names", "llm_design_names"]


def design_names() -> list[str]:
    return list(REGISTRY)


def llm_design_names() -> list[str]:
    return [n for n, c in REGISTRY.items() if c.uses_llm]


def design_class(name: str) -> type:
    try:
        return {**REGISTRY, **PROBES}[name]
    except KeyError:
        raise ValueError(f"unknown design {name!r}; one of {design_names() + list(PROBES)}") from None
