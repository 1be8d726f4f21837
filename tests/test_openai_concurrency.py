"""The OpenAI-compatible backend's concurrent first-turn prefetch (:func:`lib.pipeline.concurrent_first_turns`),
as :mod:`tests.test_batches` tests the Claude batch prefetch.

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
from lib.pipeline import concurrent_first_turns
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


def test_the_first_turns_are_sent_several_at_once_and_each_is_recorded(tmp_path):
    server = ModelServer()
    llm, designs = build(tmp_path, server, concurrency=3)
    expected = first_turns(designs)
    assert len(expected) == 2 * len(QUESTIONS) * len(RUNS)  # multiquery's rewrites, the agent's first decisions
    n = concurrent_first_turns(designs, QUESTIONS, RUNS)
    # exactly the first turns, each once, as the backend sends that request; the dense design sends none
    assert n == len(server.seen) == len(expected)
    assert bodies(server.seen) == bodies([llm.backend.build_params(r) for r in expected])
    assert 1 < server.most <= 3
    # each answer is recorded under its own request (not another thread's)
    for r in expected:
        rec = llm.store.get(r)
        assert rec is not None and rec["response"]["text"] == answer(llm.backend.build_params(r))
        assert rec["response"]["backend"] == "openai" and rec["run"] == r.run


def test_one_at_a_time_when_openai_concurrency_is_1(tmp_path):
    server = ModelServer(delay_s=0.01)
    _, designs = build(tmp_path, server, concurrency=1)
    assert concurrent_first_turns(designs, QUESTIONS, RUNS) == len(server.seen) == len(first_turns(designs))
    assert server.most == 1


def test_the_run_then_replays_the_first_turns_and_asks_only_the_later_ones(tmp_path):
    server = ModelServer()
    llm, designs = build(tmp_path / "prefetched", server, concurrency=3)
    concurrent_first_turns(designs, QUESTIONS, RUNS)
    prefetched = list(server.seen)
    server.seen.clear()
    results = run_all(designs, tmp_path / "prefetched" / "results")
    # the run sent no first turn again: only the agent's second decisions, after its follow-up search
    later = server.seen
    assert later and not bodies(later) & bodies(prefetched)
    assert all(p["messages"][0]["content"] == prompts.AGENT_SYSTEM and "Search 2:" in p["messages"][-1]["content"]
               for p in later)
    assert len(later) == len(FOLLOW_UP) * len(RUNS)
    # the same designs without the prefetch: the same requests in all, the same results
    plain_server = ModelServer(delay_s=0.0)
    _, plain = build(tmp_path / "plain", plain_server, concurrency=3)
    plain_results = run_all(plain, tmp_path / "plain" / "results")
    assert bodies(plain_server.seen) == bodies(prefetched) + bodies(later)
    assert results == plain_results
    # and the recorded answers were used: multiquery searched the rewrites, the agent its follow-ups
    for k in RUNS:
        mq = dict((r[0], r[2]) for r in results["multiquery", k])
        agent = dict((r[0], r[2]) for r in results["agent", k])
        for q in QUESTIONS:
            assert mq[q.qid] == [q.text] + REWRITES[q.text]
            assert agent[q.qid] == [q.text] + ([FOLLOW_UP[q.text]] if q.text in FOLLOW_UP else [])
    # a second prefetch answers everything from the record
    server.seen.clear()
    assert concurrent_first_turns(designs, QUESTIONS, RUNS) == len(prefetched) and server.seen == []
    assert all(llm.store.get(r) is not None for r in first_turns(designs))


def test_an_error_is_raised_once_the_others_have_finished_and_their_answers_stay_recorded(tmp_path):
    _, probe = build(tmp_path / "probe", ModelServer(), concurrency=3)
    agent_first = first_turn_requests(probe[2], QUESTIONS, RUNS)
    early, late = agent_first[1], agent_first[4]  # in request order; the later one fails first, at once
    fail = {early.seed(): (2 * DELAY_S, f"rejected: {early.label} run {early.run}"),
            late.seed(): (0.0, f"rejected: {late.label} run {late.run}")}
    server = ModelServer(fail=fail)
    llm, designs = build(tmp_path, server, concurrency=3, max_retries=0)
    expected = first_turns(designs)
    with pytest.raises(LLMError, match="BadRequestError: Error code: 400") as info:
        concurrent_first_turns(designs, QUESTIONS, RUNS)
    # the first error in request order, raised after every request had been answered
    assert f"rejected: {early.label} run {early.run}" in str(info.value)
    assert len(server.seen) == server.finished == len(expected) and server.inflight == 0
    failed = {early.key(), late.key()}
    assert [r.key() for r in expected if llm.store.get(r) is None] == [early.key(), late.key()]
    assert all(llm.store.get(r)["response"]["text"] == answer(llm.backend.build_params(r))
               for r in expected if r.key() not in failed)
    # the record is on disk: a rerun sends only the two that failed
    again = ModelServer()
    llm2, designs2 = build(tmp_path, again, concurrency=3)
    assert concurrent_first_turns(designs2, QUESTIONS, RUNS) == len(expected)
    assert bodies(again.seen) == bodies([llm2.backend.build_params(r) for r in (early, late)])


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
