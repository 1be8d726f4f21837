"""A served model answering several questions at once (:func:`lib.pipeline.concurrent_questions`): every
request a run one question at a time would send, sent several at a time, recorded in that run's order, and
the run then replayed.

The SDK's own client runs over a scripted HTTP transport (``httpx2.MockTransport``, as in
tests/test_llm_openai.py) that answers like a model behind a chat completions server: each reply
is the recorded completion tests/data/openai_rewrite_plain.json with its text written from the
request (the rewrites of the question asked; the agent's decision, a search after its first search
for some questions, else a stop), after a short delay, while the transport counts the requests in
flight at once. Errors are the recorded 400 of tests/data/openai_error_invalid_request.json.
"""
import json
import threading
import time
from collections import Counter

import httpx2
import pytest

from lib.designs import Question
from lib.designs.agent import AgentDesign
from lib.designs.dense import DenseDesign
from lib.designs.multiquery import MultiQueryDesign
from lib.llm import LLMError, RecordedLLM, RecordStore, prompts
from lib.llm.batches import first_turn_requests
from lib.pipeline import concurrent_questions
from lib.runs import run_designs
from tests.fakes import ListSearcher
from tests.test_llm_openai import MODEL, backend, body, error

QUESTIONS = [Question("q001", "how do agents search?", "c"), Question("q002", "what limits rollout budgets?", "g"),
             Question("q003", "which benchmarks test retrieval?", "e")]
RUNS = [1, 2]
REWRITES = {q.text: [f"{q.text[:-1]}, rewrite {i}" for i in (1, 2, 3)] for q in QUESTIONS}
FOLLOW_UP = {"how do agents search?": "agent search policies", "which benchmarks test retrieval?": "retrieval suites"}
IDS = list("abcdefghijkl")
QUERIES = [q.text for q in QUESTIONS] + [r for rs in REWRITES.values() for r in rs] + list(FOLLOW_UP.values())
LISTS = {query: (IDS[2 * i % len(IDS):] + IDS[:2 * i % len(IDS)])[:8] for i, query in enumerate(QUERIES)}
TITLES = {i: f"Title {i}" for i in IDS}
DELAY_S = 0.05


def answer(params: dict) -> str:
    """What the scripted model replies to a request (its system prompt says which design asks)."""
    system, user = params["messages"][0]["content"], params["messages"][-1]["content"]
    question = next(t for t in REWRITES if t in user)
    if system == prompts.REWRITE_SYSTEM:
        return "\n".join(REWRITES[question])
    assert system == prompts.AGENT_SYSTEM, system[:60]
    if "Search 2:" in user or question not in FOLLOW_UP:
        return '{"decision": "stop"}'
    return json.dumps({"decision": "search", "query": FOLLOW_UP[question]})


class ModelServer:
    """Answers every request after ``delay_s`` (``fail``: seed -> (delay_s, message) answers that
    request with the recorded 400 instead), keeping each request body and counting those in flight."""

    def __init__(self, delay_s: float = DELAY_S, fail: dict | None = None):
        self.delay_s, self.fail = delay_s, fail or {}
        self.lock, self.seen, self.inflight, self.most, self.finished = threading.Lock(), [], 0, 0, 0

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        params = json.loads(request.content)
        with self.lock:
            self.seen.append(params)
            self.inflight += 1
            self.most = max(self.most, self.inflight)
        try:
            failure = self.fail.get(params["seed"])
            time.sleep(failure[0] if failure else self.delay_s)
            if failure:
                status, headers, payload = error("invalid_request")
                payload["error"]["message"] = failure[1]
                return httpx2.Response(status, headers=headers, json=payload)
            reply = body("rewrite_plain")
            reply["choices"][0]["message"]["content"] = answer(params)
            return httpx2.Response(200, json=reply)
        finally:
            with self.lock:
                self.inflight -= 1
                self.finished += 1


def build(tmp_path, server: ModelServer, concurrency: int, **kwargs):
    """The designs as the pipeline builds them: one recorded LLM over the backend, shared."""
    llm = RecordedLLM(backend(server, concurrency=concurrency, **kwargs), RecordStore(tmp_path / "records"),
                      backend_name="openai", model=MODEL)
    searcher = ListSearcher(LISTS)
    return llm, [DenseDesign(searcher), MultiQueryDesign(searcher, llm, "anthropic"),
                 AgentDesign(searcher, llm, TITLES, "anthropic")]


def first_turns(designs) -> list:
    return [r for d in designs[1:] for r in first_turn_requests(d, QUESTIONS, RUNS)]


def bodies(params: list[dict]) -> Counter:
    """Request bodies as a multiset (order aside: threads send them in any order)."""
    return Counter(json.dumps(p, sort_keys=True) for p in params)


def run_all(designs, results_dir) -> dict:
    """The real run path (:func:`lib.runs.run_designs`, as :func:`lib.pipeline.run_many` calls it)."""
    out = {}
    for k in RUNS:
        for name, results in run_designs(designs, QUESTIONS, k, results_dir, progress=False).items():
            out[name, k] = [(r.qid, r.ranked_ids, r.queries, r.stop_reason, r.llm_calls, r.replies, r.tokens_in,
                             r.tokens_out) for r in results]
    return out


def record_keys(llm) -> dict[str, list[str]]:
    """The record files' keys, in the order they were written, by kind."""
    return {kind: [json.loads(line)["key"] for line in llm.store.file(kind).read_text().splitlines()]
            for kind in ("rewrite", "agent") if llm.store.file(kind).exists()}


def sequential(tmp_path):
    """The same designs answered one question after another (no concurrency): its server, LLM and results."""
    server = ModelServer(delay_s=0.0)
    llm, designs = build(tmp_path / "one_at_a_time", server, concurrency=1)
    return server, llm, run_all(designs, tmp_path / "one_at_a_time" / "results")


def test_questions_are_answered_several_at_once_and_recorded_in_the_order_of_one_at_a_time(tmp_path):
    server = ModelServer()
    llm, designs = build(tmp_path / "many", server, concurrency=3)
    results_dir = tmp_path / "many" / "results"
    n = concurrent_questions(designs, QUESTIONS, RUNS, results_dir, 3, progress=False)
    assert n == len(QUESTIONS) * len(RUNS) and 1 < server.most <= 3
    one_server, one_llm, one_results = sequential(tmp_path)
    # every request of the run (follow-up decisions included) was asked, each once, as a run one at a time asks
    assert bodies(server.seen) == bodies(one_server.seen)
    assert record_keys(llm) == record_keys(one_llm)  # and recorded in its order
    # the run then replays every reply: no request more, the same results
    asked = len(server.seen)
    assert run_all(designs, results_dir) == one_results and len(server.seen) == asked
    assert concurrent_questions(designs, QUESTIONS, RUNS, results_dir, 3, progress=False) == 0  # all saved


def test_one_at_a_time_when_openai_concurrency_is_1(tmp_path):
    server = ModelServer(delay_s=0.01)
    _, designs = build(tmp_path, server, concurrency=1)
    assert concurrent_questions(designs, QUESTIONS, RUNS, tmp_path / "results", 1, progress=False) == 0
    assert server.seen == []


def test_a_question_saved_already_is_not_asked_again(tmp_path):
    server = ModelServer()
    _, designs = build(tmp_path, server, concurrency=3)
    run_designs(designs, QUESTIONS[:2], 1, tmp_path / "results", progress=False)
    asked = len(server.seen)
    todo = [(q, 1) for q in QUESTIONS[2:]] + [(q, 2) for q in QUESTIONS]
    assert concurrent_questions(designs, QUESTIONS, RUNS, tmp_path / "results", 3, progress=False) == len(todo)
    # a rewrite and a first decision for each, and a second decision where the agent searched again
    assert len(server.seen) - asked == sum(2 + (q.text in FOLLOW_UP) for q, _ in todo)


def test_an_error_is_raised_once_the_others_have_finished_and_their_replies_stay_recorded_in_order(tmp_path):
    _, probe = build(tmp_path / "probe", ModelServer(), concurrency=3)
    agent_first = first_turn_requests(probe[2], QUESTIONS, RUNS)
    early, late = agent_first[1], agent_first[4]  # q002 run 1, q002 run 2; the later one fails first, at once
    fail = {early.seed(): (2 * DELAY_S, f"rejected: {early.label} run {early.run}"),
            late.seed(): (0.0, f"rejected: {late.label} run {late.run}")}
    server = ModelServer(fail=fail)
    llm, designs = build(tmp_path, server, concurrency=3, max_retries=0)
    with pytest.raises(LLMError, match="BadRequestError: Error code: 400") as info:
        concurrent_questions(designs, QUESTIONS, RUNS, tmp_path / "results", 3, progress=False)
    # the first error in question order, raised once every question had been answered
    assert f"rejected: {early.label} run {early.run}" in str(info.value)
    assert server.finished == len(server.seen) and server.inflight == 0
    # the other questions' replies are recorded, in the order of a run one at a time; the failed questions' none
    _, one_llm, _ = sequential(tmp_path)
    failed = {(early.label, early.run), (late.label, late.run)}
    kept = {kind: [k for k in keys if asked_by(one_llm.store.records(kind)[k]) not in failed]
            for kind, keys in record_keys(one_llm).items()}
    assert record_keys(llm) == kept and all(len(keys) < len(record_keys(one_llm)[k]) for k, keys in kept.items())
    # a rerun asks the server for the failed questions only
    again = ModelServer()
    _, designs2 = build(tmp_path, again, concurrency=3)
    concurrent_questions(designs2, QUESTIONS, RUNS, tmp_path / "results", 3, progress=False)
    assert {p["seed"] for p in again.seen} >= {early.seed(), late.seed()}
    runs = {r.seed(): r.run for r in first_turns(designs2)}  # q002's two requests are both first turns
    assert {(question_of(p["messages"][-1]["content"]), runs[p["seed"]]) for p in again.seen} == failed


def question_of(text: str) -> str:
    return next(q.qid for q in QUESTIONS if q.text in text)


def asked_by(rec: dict) -> tuple[str, int]:
    """(question, run) of a record."""
    return question_of(str(rec["request"]["messages"][-1])), rec["run"]


def test_a_first_read_of_the_record_cannot_drop_an_answer_another_thread_records(tmp_path, monkeypatch):
    """Concurrent first turns read the record while other threads add to it: a thread still reading
    the file for the first time must not replace the answer another thread's ``put`` has just added
    (the read and the fill of the in-memory record happen under the store's lock)."""
    import lib.llm.records as records
    from lib.llm.base import LLMRequest, LLMResponse

    store = RecordStore(tmp_path / "records")
    request = LLMRequest(kind="rewrite", system="s", messages=(("user", "q"),), max_tokens=5)
    reading, release, real_read = threading.Event(), threading.Event(), records.read_jsonl
    calls = []

    def slow_first_read(path, *args, **kw):
        calls.append(path)
        rows = list(real_read(path, *args, **kw))
        if len(calls) == 1:  # the first reader holds its (empty) copy of the file while another thread records
            reading.set()
            release.wait(timeout=1.0)
        return rows

    monkeypatch.setattr(records, "read_jsonl", slow_first_read)
    reader = threading.Thread(target=store.records, args=("rewrite",))
    reader.start()
    assert reading.wait(timeout=5)
    writer = threading.Thread(target=store.put, args=(request, LLMResponse("answer", 1, 1, 0.1, 0.0, MODEL, "openai")))
    writer.start()
    time.sleep(0.2)
    release.set()
    reader.join(timeout=5)
    writer.join(timeout=5)
    assert store.get(request) is not None, "the answer recorded during the first read is lost from memory"
    assert len(real_read(store.file("rewrite"))) == 1
