"""The four retrieval designs behind one interface, and resumable runs.

Every design answers ``retrieve(question, run) -> Result``; one :class:`Result` per question and
run is appended to ``results/<design>/run<k>.jsonl`` as soon as it is computed.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol, Sequence

from tqdm import tqdm

from . import prompts
from .fusion import rrf
from .index import DenseSearcher
from .llm import LLMRequest, RecordedLLM

DEPTH = 50  # ids kept per result (recall@5 and MRR@10 need 10)


@dataclass
class Question:
    qid: str
    text: str
    source_id: str
    style: str = ""


@dataclass
class Result:
    """One design's answer to one question in one run."""

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

    @classmethod
    def from_json(cls, obj: dict) -> "Result":
        return cls(**obj)


class Design(Protocol):
    name: str

    def retrieve(self, question: Question, run: int = 1) -> Result: ...


class _LLMUse:
    """Adds up one question's LLM calls."""

    def __init__(self, llm: RecordedLLM):
        self.llm, self.calls, self.tin, self.tout, self.cost, self.latency = llm, 0, 0, 0, 0.0, 0.0
        self.wall = 0.0  # time actually spent waiting here (about 0 when replayed)
        self.replies: list[str] = []

    def __call__(self, request: LLMRequest) -> str:
        t0 = time.perf_counter()
        r = self.llm.complete(request)
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


class DenseDesign:
    """The baseline: embed the question, return the nearest abstracts."""

    name = "dense"

    def __init__(self, searcher: DenseSearcher, k: int = DEPTH, provenance: dict | None = None):
        self.searcher, self.k, self.provenance = searcher, k, provenance or {}

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        hits = self.searcher.search(question.text, self.k)
        return Result(question.qid, self.name, run, [h.id for h in hits], 1, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)


class RerankDesign:
    """Dense top ``k`` reordered by a cross-encoder reading question and abstract together
    (Nogueira & Cho 2019, "Passage Re-ranking with BERT")."""

    name = "rerank"

    def __init__(self, searcher: DenseSearcher, scorer, texts: dict[str, str], k: int = 50,
                 provenance: dict | None = None):
        self.searcher, self.scorer, self.texts, self.k = searcher, scorer, texts, k
        self.provenance = provenance or {}

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        ids = [h.id for h in self.searcher.search(question.text, self.k)]
        scores = self.scorer.score(question.text, ids, [self.texts[i] for i in ids])
        ranked = [i for _, i in sorted(zip(scores, ids), key=lambda t: (-t[0], t[1]))]
        return Result(question.qid, self.name, run, ranked, 1, [question.text],
                      round(time.perf_counter() - start, 4), provenance=self.provenance)


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
    """The LLM writes 3 versions of the question; 4 dense searches fused by RRF (k = 60)."""

    name = "multiquery"

    def __init__(self, searcher: DenseSearcher, llm: RecordedLLM, style: str, k: int = 50, rrf_k: int = 60,
                 n_rewrites: int = 3, temperature: float = 0.0, provenance: dict | None = None):
        self.searcher, self.llm, self.style, self.k, self.rrf_k = searcher, llm, style, k, rrf_k
        self.n_rewrites, self.temperature, self.provenance = n_rewrites, temperature, provenance or {}

    def request(self, question: Question, run: int) -> LLMRequest:
        user = prompts.REWRITE_USER.format(question=question.text)
        if self.style == "local":
            ex = prompts.REWRITE_USER.format(question=prompts.REWRITE_EXAMPLE_Q)
            msgs = (("user", ex), ("assistant", prompts.REWRITE_EXAMPLE_A), ("user", user))
            return LLMRequest("rewrite", prompts.REWRITE_SYSTEM, msgs, 120, self.temperature, run,
                              prompts.REWRITE_GRAMMAR)
        return LLMRequest("rewrite", prompts.REWRITE_SYSTEM, (("user", user),), 200, self.temperature, run)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = _LLMUse(self.llm)
        rewrites = parse_rewrites(use(self.request(question, run)), question.text, self.n_rewrites)
        queries = [question.text] + rewrites
        lists = [[h.id for h in hits] for hits in self.searcher.search_many(queries, self.k, progress=False)]
        fused = [d for d, _ in rrf(lists, self.rrf_k)][:DEPTH]
        reason = "" if len(rewrites) == self.n_rewrites else f"only {len(rewrites)} usable rewrites"
        res = Result(question.qid, self.name, run, fused, len(queries), queries, 0.0, stop_reason=reason,
                     provenance=self.provenance)
        return use.fill(res, start)


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


class AgentDesign:
    """Search, show the LLM the top-5 titles, let it stop or search again (at most
    ``max_searches`` searches); all lists fused by RRF (k = 60). Every query is kept."""

    name = "agent"

    def __init__(self, searcher: DenseSearcher, llm: RecordedLLM, titles: dict[str, str], style: str,
                 k: int = 50, rrf_k: int = 60, max_searches: int = 3, temperature: float = 0.0,
                 provenance: dict | None = None):
        self.searcher, self.llm, self.titles, self.style = searcher, llm, titles, style
        self.k, self.rrf_k, self.max_searches = k, rrf_k, max_searches
        self.temperature, self.provenance = temperature, provenance or {}

    def request(self, question: Question, queries: list[str], top_ids: list[str], run: int) -> LLMRequest:
        titles = "\n".join(f"{i}. {self.titles[d]}" for i, d in enumerate(top_ids[:5], start=1))
        user = prompts.AGENT_USER.format(question=question.text, queries=prompts.searches_so_far(queries),
                                         titles=titles)
        if self.style == "local":
            msgs: tuple = tuple(m for u, a in prompts.AGENT_EXAMPLES for m in (("user", u), ("assistant", a)))
            return LLMRequest("agent", prompts.AGENT_LOCAL_SYSTEM, msgs + (("user", user),), 64, self.temperature,
                              run, prompts.AGENT_GRAMMAR)
        return LLMRequest("agent", prompts.AGENT_SYSTEM, (("user", user),), 100, self.temperature, run)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = _LLMUse(self.llm)
        queries = [question.text]
        lists = [[h.id for h in self.searcher.search(question.text, self.k)]]
        reason = "cap"
        while len(queries) < self.max_searches:
            decision, value = parse_decision(use(self.request(question, queries, lists[-1], run)))
            if decision == "stop":
                reason = "stop"
                break
            if decision == "malformed":
                reason = f"malformed: {value}"
                break
            if not value:
                reason = "empty query"
                break
            if value.strip().lower() in {q.strip().lower() for q in queries}:
                reason = "repeated query"
                break
            queries.append(value)
            lists.append([h.id for h in self.searcher.search(value, self.k)])
        fused = [d for d, _ in rrf(lists, self.rrf_k)][:DEPTH]
        res = Result(question.qid, self.name, run, fused, len(queries), queries, 0.0, stop_reason=reason,
                     provenance=self.provenance)
        return use.fill(res, start)


# --------------------------------------------------------------------------- runs
def run_path(results_dir: Path, design: str, run: int) -> Path:
    return Path(results_dir) / design / f"run{run}.jsonl"


def read_results(path: Path) -> list[Result]:
    """Results already saved; a torn last line (an interrupted write) is dropped from the file."""
    path = Path(path)
    if not path.exists():
        return []
    good: list[Result] = []
    keep_bytes = 0
    with open(path, "rb") as fh:
        data = fh.read()
    for line in data.splitlines(keepends=True):
        try:
            if not line.endswith(b"\n"):
                raise ValueError("no newline")
            good.append(Result.from_json(json.loads(line)))
        except (ValueError, TypeError):
            break
        keep_bytes += len(line)
    if keep_bytes < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(keep_bytes)
    return good


def run_design(design: Design, questions: Sequence[Question], run: int, results_dir: Path,
               progress: bool = True) -> list[Result]:
    """Answer every question not yet in ``results/<design>/run<run>.jsonl``, appending as it goes.

    Questions already answered are skipped, so a killed run resumes with nothing lost or repeated.
    Returns the run's results in question order.
    """
    return run_designs([design], questions, run, results_dir, progress)[design.name]


def run_designs(designs: Sequence[Design], questions: Sequence[Question], run: int, results_dir: Path,
                progress: bool = True) -> dict[str, list[Result]]:
    """Several designs question by question (so partial runs cover the same questions), each
    appending to its own ``results/<design>/run<run>.jsonl`` and skipping what it already has."""
    done: dict[str, dict[str, Result]] = {}
    handles = {}
    for d in designs:
        path = run_path(results_dir, d.name, run)
        path.parent.mkdir(parents=True, exist_ok=True)
        done[d.name] = {r.qid: r for r in read_results(path)}
        handles[d.name] = open(path, "a", encoding="utf-8")
    todo = [q for q in questions if any(q.qid not in done[d.name] for d in designs)]
    label = "+".join(d.name for d in designs)
    try:
        for q in tqdm(todo, desc=f"{label} run {run}", unit="q", disable=not progress):
            for d in designs:
                if q.qid in done[d.name]:
                    continue
                res = d.retrieve(q, run)
                fh = handles[d.name]
                fh.write(json.dumps(asdict(res), ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
                done[d.name][q.qid] = res
    finally:
        for fh in handles.values():
            fh.close()
    return {d.name: [done[d.name][q.qid] for q in questions if q.qid in done[d.name]] for d in designs}


def write_trec(results: Iterable[Result], path: Path, tag: str) -> Path:
    """A TREC run file (qid Q0 docid rank score tag) that ranx and ir_measures read."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for r in results:
            n = len(r.ranked_ids)
            for rank, doc in enumerate(r.ranked_ids, start=1):
                fh.write(f"{r.qid} Q0 {doc} {rank} {n - rank + 1} {tag}\n")
    return path
