"""What every design shares: the question it answers, the one result record it returns, the
``Design`` protocol, the parts a design is built from, and the tally of one question's LLM use."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..llm import LLMRequest, RecordedLLM

DEPTH = 50  # ids kept per result (recall@5 and MRR@10 need 10)


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    source_id: str
    style: str = ""


@dataclass
class Result:
    """One design's answer to one question in one run (one line of ``run<k>.jsonl``).

    ``inputs`` is the key of everything the answer depends on (question text, source, design
    settings, models, backend, run); a saved result is reused only when it matches.
    """

    qid: str
    design: str
    run: int
    ranked_ids: list[str]
    searches: int
    queries: list[str]
    latency_s: float
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    llm_latency_s: float = 0.0
    stop_reason: str = ""
    replies: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    inputs: str = ""
    details: dict[str, Any] = field(default_factory=dict)  # a design's own measures (escalation, citations, ...)
    trace: list[dict[str, Any]] = field(default_factory=list)  # step-by-step record (the tool-calling loop)

    @classmethod
    def from_json(cls, obj: dict) -> "Result":
        return cls(**obj)


class Parts(Protocol):
    """What a design is built from (``lib.pipeline`` provides it from a profile; parts are made
    only when a design asks for them)."""

    profile: Any
    papers: list[dict]
    searcher: Any

    def titles(self) -> dict[str, str]: ...

    def texts(self) -> dict[str, str]: ...

    def llm(self) -> RecordedLLM: ...

    def prompt_style(self) -> str: ...

    def corpus(self) -> Any: ...  # what the prompts call the documents (lib.llm.prompts.Corpus)

    def scorer(self) -> Any: ...

    def reranker(self) -> Any: ...


class Design(Protocol):
    """A retrieval design: ``retrieve(question, run) -> Result``.

    ``settings`` names the profile settings its results depend on (they go into every result's
    provenance and inputs key); ``uses_llm`` marks designs that run several times.
    """

    name: ClassVar[str]
    uses_llm: ClassVar[bool]
    settings: ClassVar[tuple[str, ...]]

    @classmethod
    def from_parts(cls, parts: Parts, provenance: dict) -> "Design": ...

    def retrieve(self, question: Question, run: int = 1) -> Result: ...


EMBEDDER_SETTINGS = ("embedder", "embedder_backend", "dense_k")
LLM_SETTINGS = ("llm_model", "llm_record_backend", "llm_temperature", "rrf_k")


class LLMUse:
    """Adds up one question's LLM calls."""

    def __init__(self, llm: RecordedLLM):
        self.llm, self.calls, self.tin, self.tout, self.cost, self.latency = llm, 0, 0, 0, 0.0, 0.0
        self.wall = 0.0  # time actually spent waiting here (about 0 when replayed)
        self.replies: list[str] = []
        self.last = None  # the last response, for its stop reason

    @property
    def last_decoding(self) -> str:
        """How the last response was decoded (:attr:`lib.llm.base.LLMResponse.decoding`)."""
        return str(getattr(self.last, "decoding", "") or "")

    @property
    def stop_reason(self) -> str:
        """The last response's stop reason ("" when the backend gives none)."""
        return str(getattr(self.last, "stop_reason", "") or "")

    def __call__(self, request: LLMRequest) -> str:
        t0 = time.perf_counter()
        r = self.last = self.llm.complete(request)
        self.wall += time.perf_counter() - t0
        self.calls += 1
        self.tin += r.tokens_in
        self.tout += r.tokens_out
        self.cost += r.cost_usd
        self.latency += r.latency_s  # recorded latency: the model's time when it was first called
        self.replies.append(r.text)
        return r.text

    def fill(self, result: Result, started: float) -> Result:
        """Usage into the result; latency = own compute time + the model's recorded time, so a
        replayed run reports what the live call cost."""
        result.latency_s = round(time.perf_counter() - started - self.wall + self.latency, 4)
        result.llm_calls, result.tokens_in, result.tokens_out = self.calls, self.tin, self.tout
        result.cost_usd, result.llm_latency_s, result.replies = round(self.cost, 8), round(self.latency, 4), self.replies
        return result
