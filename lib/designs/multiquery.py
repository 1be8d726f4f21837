"""Multi-query: the LLM writes 3 versions of the question; the original and the 3 versions are
searched and the 4 lists fused by reciprocal rank fusion (k = 60; Cormack et al. 2009).
A refused reply is not used (the question alone is searched); a reply cut at max_tokens loses its
cut last line; either way the result's stop_reason records it."""
from __future__ import annotations

import re
import time

from ..llm import LLMRequest, RecordedLLM, prompts
from ..llm.base import MAX_TOKENS, REFUSAL
from ..search.fusion import rrf
from .base import DEPTH, EMBEDDER_SETTINGS, LLM_SETTINGS, LLMUse, Question, Result

_NUMBERING = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|\(\d+\))\s*")


def parse_rewrites(text: str, question: str, n: int = 3) -> list[str]:
    """The first ``n`` distinct non-empty lines, numbering and quotes stripped, the original excluded."""
    out: list[str] = []
    seen = {question.strip().lower()}
    for line in text.splitlines():
        q = _NUMBERING.sub("", line).strip().strip('"').strip()
        if q and q.lower() not in seen:
            seen.add(q.lower())
            out.append(q)
        if len(out) == n:
            break
    return out


class MultiQueryDesign:
    name = "multiquery"
    uses_llm = True
    record_kind = "rewrite"
    settings = EMBEDDER_SETTINGS + LLM_SETTINGS

    def __init__(self, searcher, llm: RecordedLLM, style: str, k: int = 50, rrf_k: int = 60,
                 n_rewrites: int = 3, temperature: float = 0.0, provenance: dict | None = None,
                 corpus: prompts.Corpus = prompts.ARXIV):
        self.searcher, self.llm, self.style, self.k, self.rrf_k = searcher, llm, style, k, rrf_k
        self.n_rewrites, self.temperature, self.provenance = n_rewrites, temperature, provenance or {}
        self.system = prompts.rewrite_system(corpus)

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "MultiQueryDesign":
        p = parts.profile
        return cls(parts.searcher, parts.llm(), parts.prompt_style(), k=p.dense_k, rrf_k=p.rrf_k,
                   temperature=p.llm_temperature, provenance=provenance, corpus=parts.corpus())

    def request(self, question: Question, run: int) -> LLMRequest:
        user = prompts.REWRITE_USER.format(question=question.text)
        if self.style == "local":
            ex = prompts.REWRITE_USER.format(question=prompts.REWRITE_EXAMPLE_Q)
            msgs = (("user", ex), ("assistant", prompts.REWRITE_EXAMPLE_A), ("user", user))
            return LLMRequest("rewrite", self.system, msgs, 120, self.temperature, run,
                              prompts.REWRITE_GRAMMAR, label=question.qid)
        return LLMRequest("rewrite", self.system, (("user", user),), 200, self.temperature, run,
                          label=question.qid)

    follow_up_calls = 0  # one rewrite call a question

    def first_requests(self, questions: list[Question], runs: list[int]) -> list[LLMRequest]:
        """Every question's rewrite request (for batching and cost projection)."""
        return [self.request(q, run) for run in runs for q in questions]

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = LLMUse(self.llm)
        text = use(self.request(question, run))
        stop = use.stop_reason
        if stop == REFUSAL:  # a refused reply is not used (any partial text is discarded)
            text = ""
        elif stop == MAX_TOKENS:  # the last line was cut off: keep the complete lines only
            text = "\n".join(text.splitlines()[:-1])
        rewrites = parse_rewrites(text, question.text, self.n_rewrites)
        queries = [question.text] + rewrites
        lists = [[h.id for h in hits] for hits in self.searcher.search_many(queries, self.k)]
        fused = [d for d, _ in rrf(lists, self.rrf_k)][:DEPTH]
        reason = "" if len(rewrites) == self.n_rewrites else f"only {len(rewrites)} usable rewrites"
        if stop in (REFUSAL, MAX_TOKENS):  # recorded: the stop reason, then what could be used
            reason = stop + (f"; {reason}" if reason else "")
        res = Result(question.qid, self.name, run, fused, len(queries), queries, 0.0, stop_reason=reason,
                     provenance=self.provenance)
        return use.fill(res, start)
