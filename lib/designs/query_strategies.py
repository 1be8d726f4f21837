"""Query strategies practitioners try when one search is not enough, each asking the model once, up
front (beyond the article):

- ``decompose``: sub-question decomposition (LlamaIndex's sub-question query engine; Self-Ask, Press et
  al. 2022; least-to-most prompting, Zhou et al. 2022). The model writes one search query per part of
  the question (1-3); the question and each part are searched and the lists fused by reciprocal rank
  fusion (k = 60; Cormack et al. 2009), as multi-query fuses its rewrites.
- ``hyde``: Hypothetical Document Embeddings (Gao et al. 2022). The model writes a short abstract of a
  paper that would answer the question; dense search embeds it, and the search vector is the mean of
  the question's and the abstract's vectors (the paper's estimate with N = 1, the query counted as one
  more hypothesis).

A refused reply is not used (the question alone is searched); a reply cut at max_tokens keeps what is
complete (decomposition its complete lines, HyDE its text); the result's stop_reason records either.
"""
from __future__ import annotations

import time

from ..llm import LLMRequest, RecordedLLM, prompts
from ..llm.base import MAX_TOKENS, REFUSAL
from ..search.fusion import rrf
from .base import DEPTH, EMBEDDER_SETTINGS, LLM_SETTINGS, LLMUse, Question, Result
from .multiquery import parse_rewrites


def _usable(text: str, stop: str, lines: bool) -> str:
    """The part of a reply a design may use: nothing when refused; when cut at max_tokens, the complete
    lines (``lines``) or the text as written."""
    if stop == REFUSAL:
        return ""
    if stop == MAX_TOKENS and lines:
        return "\n".join(text.splitlines()[:-1])
    return text


def _reason(stop: str, reason: str) -> str:
    if stop in (REFUSAL, MAX_TOKENS):
        return stop + (f"; {reason}" if reason else "")
    return reason


class _OneCallDesign:
    """A design that asks the model once per question, with the question alone in the user turn."""

    uses_llm = True
    settings = EMBEDDER_SETTINGS + LLM_SETTINGS
    follow_up_calls = 0  # one call a question
    kind = ""
    max_tokens = 0
    local_max_tokens = 0
    user = ""
    grammar = ""

    def __init__(self, searcher, llm: RecordedLLM, style: str, k: int = 50, rrf_k: int = 60,
                 temperature: float = 0.0, provenance: dict | None = None, corpus: prompts.Corpus = prompts.ARXIV):
        self.searcher, self.llm, self.style, self.k, self.rrf_k = searcher, llm, style, k, rrf_k
        self.temperature, self.provenance, self.corpus = temperature, provenance or {}, corpus
        self.system = self.system_prompt(corpus)

    @classmethod
    def from_parts(cls, parts, provenance: dict):
        p = parts.profile
        return cls(parts.searcher, parts.llm(), parts.prompt_style(), k=p.dense_k, rrf_k=p.rrf_k,
                   temperature=p.llm_temperature, provenance=provenance, corpus=parts.corpus())

    @staticmethod
    def system_prompt(corpus: prompts.Corpus) -> str:
        raise NotImplementedError

    def examples(self) -> tuple[tuple[str, str], ...]:
        return ()

    def request(self, question: Question, run: int) -> LLMRequest:
        user = self.user.format(question=question.text)
        if self.style == "local":
            msgs: tuple = ()
            for q, a in self.examples():
                msgs += (("user", self.user.format(question=prompts.worded(q, self.corpus))),
                         ("assistant", prompts.worded(a, self.corpus)))
            return LLMRequest(self.kind, self.system, msgs + (("user", user),), self.local_max_tokens,
                              self.temperature, run, self.grammar, label=question.qid)
        return LLMRequest(self.kind, self.system, (("user", user),), self.max_tokens, self.temperature, run,
                          label=question.qid)

    def first_requests(self, questions: list[Question], runs: list[int]) -> list[LLMRequest]:
        """Every question's request (for batching and cost projection)."""
        return [self.request(q, run) for run in runs for q in questions]


class DecomposeDesign(_OneCallDesign):
    name = "decompose"
    record_kind = kind = "decompose"
    max_tokens = local_max_tokens = prompts.DECOMPOSE_MAX_TOKENS
    user = prompts.DECOMPOSE_USER
    grammar = prompts.DECOMPOSE_GRAMMAR
    max_parts = 3

    @staticmethod
    def system_prompt(corpus: prompts.Corpus) -> str:
        return prompts.decompose_system(corpus)

    def examples(self) -> tuple[tuple[str, str], ...]:
        return prompts.DECOMPOSE_EXAMPLES

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = LLMUse(self.llm)
        text = use(self.request(question, run))
        stop = use.stop_reason
        parts = parse_rewrites(_usable(text, stop, lines=True), question.text, self.max_parts)
        queries = [question.text] + parts
        lists = [[h.id for h in hits] for hits in self.searcher.search_many(queries, self.k)]
        fused = [d for d, _ in rrf(lists, self.rrf_k)][:DEPTH]
        reason = "" if parts else "no usable part: the question alone"
        res = Result(question.qid, self.name, run, fused, len(queries), queries, 0.0,
                     stop_reason=_reason(stop, reason), provenance=self.provenance,
                     details={"parts": len(parts)})
        return use.fill(res, start)


class HydeDesign(_OneCallDesign):
    name = "hyde"
    record_kind = kind = "hyde"
    max_tokens = local_max_tokens = prompts.HYDE_MAX_TOKENS
    user = prompts.HYDE_USER
    grammar = prompts.HYDE_GRAMMAR

    @staticmethod
    def system_prompt(corpus: prompts.Corpus) -> str:
        return prompts.hyde_system(corpus)

    def examples(self) -> tuple[tuple[str, str], ...]:
        return ((prompts.HYDE_EXAMPLE_Q, prompts.HYDE_EXAMPLE_A),)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = LLMUse(self.llm)
        text = use(self.request(question, run))
        stop = use.stop_reason
        passage = " ".join(_usable(text, stop, lines=False).split())
        texts = [question.text] + ([passage] if passage else [])
        ranked = [h.id for h in self.searcher.search_mean(texts, self.k)][:DEPTH]
        reason = "" if passage else "no usable passage: the question alone"
        # queries: what was embedded (the question, then the hypothetical abstract); one search
        res = Result(question.qid, self.name, run, ranked, 1, texts, 0.0, stop_reason=_reason(stop, reason),
                     provenance=self.provenance)
        return use.fill(res, start)
