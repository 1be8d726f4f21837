"""First-turn requests through the Message Batches API, against recorded batch responses.

The SDK's own client runs over a scripted HTTP transport that answers like the API: ``POST
/v1/messages/batches`` with tests/data/anthropic_batch_create.json, ``GET .../{id}`` with the
in-progress then the ended batch, and ``GET .../{id}/results`` with the JSON lines of
tests/data/anthropic_batch_results.jsonl (results out of order; their ``custom_id`` placeholders
``req-<i>`` are filled with the keys of the requests the test sent).
"""
import json
from pathlib import Path

import anthropic
import httpx2
import pytest

from lib.designs import Question
from lib.designs.agent import AgentDesign
from lib.designs.multiquery import MultiQueryDesign
from lib.llm import LLMError, LLMRequest, RecordedLLM, RecordStore
from lib.llm.anthropic_backend import AnthropicBackend
from lib.llm.base import load_prices
from lib.llm.batches import STATE_FILE, first_turn_requests, prefetch_first_turns, run_batch
from lib.llm.cost import BudgetExceeded
from tests.fakes import FakeClient, ListSearcher, mock_sdk_client

DATA = Path(__file__).parent / "data"
HAIKU = "claude-haiku-5-5"
BATCH_URL = "https://api.anthropic.com/v1/messages/batches"


def fixture(name):
    return json.loads((DATA / f"anthropic_batch_{name}.json").read_text())


def results_lines():
    return [json.loads(line) for line in (DATA / "anthropic_batch_results.jsonl").read_text().splitlines()]


class BatchAPI:
    """Scripted Message Batches endpoints: records what was sent; ``polls`` in-progress answers
    before the batch has ended; ``results`` builds the result lines from the sent custom_ids."""

    def __init__(self, polls=1, results=None, fail_retrieve=0):
        self.created, self.retrieved, self.polls, self.fail_retrieve = [], 0, polls, fail_retrieve
        self.results = results or self.recorded_results

    @staticmethod
    def recorded_results(sent):
        lines = []
        for line in results_lines():
            i = int(line["custom_id"].split("-")[1])
            if i < len(sent):
                lines.append({**line, "custom_id": sent[i]["custom_id"]})
        return lines

    def handler(self, request):
        url = str(request.url)
        if request.method == "POST" and url == BATCH_URL:
            self.created.append(json.loads(request.content)["requests"])
            return httpx2.Response(200, json=fixture("create"))
        if request.method == "GET" and url.endswith("/results"):
            body = "".join(json.dumps(line) + "\n" for line in self.results(self.created[-1]))
            return httpx2.Response(200, content=body.encode(), headers={"content-type": "application/binary"})
        if request.method == "GET" and url.startswith(BATCH_URL + "/"):
            self.retrieved += 1
            if self.fail_retrieve:
                self.fail_retrieve -= 1
                raise KeyboardInterrupt("the run was stopped while waiting")  # an interruption, not an API error
            return httpx2.Response(200, json=fixture("retrieve_in_progress" if self.retrieved <= self.polls
                                                     else "retrieve_ended"))
        raise AssertionError(f"unexpected {request.method} {url}")


def batch_llm(tmp_path, api):
    backend = AnthropicBackend(HAIKU, client=mock_sdk_client(api.handler, max_retries=0))
    return RecordedLLM(backend, RecordStore(tmp_path), backend_name="anthropic", model=HAIKU)


def requests(n=4):
    return [LLMRequest("rewrite", "You rewrite research questions.", (("user", f"Question: q{i}"),), 200, 0.3, 1,
                       label=f"q{i:03d}") for i in range(n)]


def test_a_batch_is_sent_polled_read_and_recorded(tmp_path):
    api, waits = BatchAPI(polls=2), []
    llm = batch_llm(tmp_path, api)
    reqs = requests()
    summary = run_batch(reqs + reqs[:1], llm, poll_s=30, sleep=waits.append)  # a repeated request goes once
    # one batch, every request's parameters as a live call would send them, keyed by the request key
    assert len(api.created) == 1
    sent = api.created[0]
    assert [r["custom_id"] for r in sent] == [r.key() for r in reqs]
    assert sent[0]["params"] == llm.backend.build_params(reqs[0])
    assert sent[0]["params"]["thinking"] == {"type": "disabled"} and "temperature" not in sent[0]["params"]
    # polled until it ended (in progress when created and on 2 polls, then ended; results() reads it once more)
    assert waits == [30, 30, 30] and api.retrieved == 4
    assert summary["sent"] == 4 and summary["recorded"] == 2 and summary["expired"] == 1
    assert list(summary["errored"]) == [reqs[2].key()] and "invalid_request_error" in summary["errored"][reqs[2].key()]
    assert summary["batch_ids"] == ["msgbatch_01Hq8vTz3RkW6nYpC2LmXdJf"]
    # the succeeded results are recorded like any call, at batch price; the others are not
    r0 = llm.store.get(reqs[0])["response"]
    assert r0["batch"] is True and r0["latency_s"] == 0.0 and r0["stop_reason"] == "end_turn"
    p = load_prices()[HAIKU]
    assert r0["cost_usd"] == pytest.approx((118 * p["batch_input_per_mtok"] + 25 * p["batch_output_per_mtok"]) / 1e6)
    assert llm.store.get(reqs[2]) is None and llm.store.get(reqs[3]) is None
    # a replay answers from the record without any call
    replay = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:anthropic", model=HAIKU)
    assert replay.complete(reqs[1]).text.startswith("rollout budget allocation for LLM agents")
    assert replay.complete(reqs[1]).batch


def test_a_rerun_sends_only_what_is_not_recorded(tmp_path):
    run_batch(requests(), batch_llm(tmp_path, BatchAPI(polls=0)), sleep=lambda s: None)
    api = BatchAPI(polls=0, results=lambda sent: [])
    summary = run_batch(requests(), batch_llm(tmp_path, api), sleep=lambda s: None)
    assert [r["custom_id"] for r in api.created[0]] == [r.key() for r in requests()[2:]]
    assert (summary["recorded_before"], summary["sent"]) == (2, 2)
    # once everything is recorded, nothing is sent at all
    everything = BatchAPI()
    llm = batch_llm(tmp_path, everything)
    message = anthropic.types.Message.model_validate(results_lines()[1]["result"]["message"])
    for r in requests()[2:]:
        llm.store.put(r, llm.backend.response_from_message(message, 0.0, batch=True))
    summary = run_batch(requests(), llm)
    assert (summary["sent"], summary["recorded_before"], everything.created) == (0, 4, [])


def test_an_interrupted_batch_is_resumed_not_sent_again(tmp_path):
    api = BatchAPI(polls=0, fail_retrieve=1)
    with pytest.raises(KeyboardInterrupt):
        run_batch(requests(), batch_llm(tmp_path, api), poll_s=5, sleep=lambda s: None)
    state = [json.loads(line) for line in (tmp_path / STATE_FILE).read_text().splitlines()]
    assert len(state) == 1 and state[0]["batch_id"] == "msgbatch_01Hq8vTz3RkW6nYpC2LmXdJf"
    assert state[0]["keys"] == [r.key() for r in requests()]
    # the rerun polls the open batch and reads its results; the failures go in a new batch
    again = BatchAPI(polls=0)
    again.created = list(api.created)  # the API still has the first batch
    summary = run_batch(requests(), batch_llm(tmp_path, again), sleep=lambda s: None)
    assert (summary["resumed"], summary["sent"], summary["recorded"]) == (1, 2, 4)  # 2 from each batch
    assert all(batch_llm(tmp_path, BatchAPI()).store.get(r) is not None for r in requests())
    assert [[r["custom_id"] for r in c] for c in again.created[1:]] == [[r.key() for r in requests()[2:]]]
    state = [json.loads(line) for line in (tmp_path / STATE_FILE).read_text().splitlines()]
    assert [(e["batch_id"], e.get("done", False)) for e in state][:2] == [("msgbatch_01Hq8vTz3RkW6nYpC2LmXdJf", False),
                                                                         ("msgbatch_01Hq8vTz3RkW6nYpC2LmXdJf", True)]


def test_a_batch_over_max_cost_usd_is_not_sent(tmp_path):
    api = BatchAPI()
    with pytest.raises(BudgetExceeded, match="max_cost_usd"):
        run_batch(requests(), batch_llm(tmp_path, api), max_cost_usd=1e-9)
    assert api.created == []


def test_a_batch_needs_the_anthropic_backend(tmp_path):
    replay = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:anthropic", model=HAIKU)
    with pytest.raises(LLMError, match="Message Batches need the anthropic backend"):
        run_batch(requests(), replay)


# ------------------------------------------------------------------------------ the designs' first turns
TITLES = {i: f"Title {i}" for i in "abcdefgh"}
QUESTIONS = [Question("q001", "how do agents search?", "c"), Question("q002", "what limits rollout budgets?", "g")]
LISTS = {"how do agents search?": list("abcdef"), "what limits rollout budgets?": list("ghabcd")}


def answering_results(sent):
    """Succeeded results for every request sent: 3 rewrites for multiquery, a stop for the agent."""
    template = results_lines()[1]["result"]["message"]
    out = []
    for r in sent:
        text = "first rewrite\nsecond rewrite\nthird rewrite" if "rewrite" in r["params"]["system"] \
            else '{"decision":"stop"}'
        out.append({"custom_id": r["custom_id"], "result": {"type": "succeeded", "message": {
            **template, "content": [{"type": "text", "text": text}]}}})
    return out


def test_first_turn_requests_are_the_designs_own():
    llm = RecordedLLM(AnthropicBackend(HAIKU, client=FakeClient()), RecordStore(Path("/nonexistent")),
                      backend_name="anthropic", model=HAIKU)
    searcher = ListSearcher(LISTS)
    agent = AgentDesign(searcher, llm, TITLES, "anthropic", k=50)
    mq = MultiQueryDesign(searcher, llm, "anthropic")
    assert first_turn_requests(mq, QUESTIONS, [1, 2]) == [mq.request(q, r) for r in (1, 2) for q in QUESTIONS]
    assert first_turn_requests(agent, QUESTIONS, 1) == [agent.request(q, [q.text], [LISTS[q.text]], 1) for q in QUESTIONS]
    assert searcher.calls == [q.text for q in QUESTIONS]  # the first dense search, once a question
    assert first_turn_requests(AgentDesign(searcher, llm, TITLES, "anthropic", max_searches=1), QUESTIONS, 1) == []


def test_prefetch_batches_the_first_turns_and_the_designs_replay_them(tmp_path):
    api = BatchAPI(polls=0, results=answering_results)
    llm = batch_llm(tmp_path, api)
    searcher = ListSearcher(LISTS)
    designs = [MultiQueryDesign(searcher, llm, "anthropic"), AgentDesign(searcher, llm, TITLES, "anthropic")]
    out = prefetch_first_turns(designs, QUESTIONS, [1, 2], sleep=lambda s: None)
    assert out["designs"] == {"multiquery": 4, "agent": 4} and out["skipped"] == []
    assert len(api.created) == 1 and len(api.created[0]) == 8  # one batch for the model
    assert out["batches"][HAIKU]["recorded"] == 8
    # the designs now answer from the record: no live call (the client would fail on /v1/messages)
    for q in QUESTIONS:
        for run in (1, 2):
            m, a = designs[0].retrieve(q, run), designs[1].retrieve(q, run)
            assert m.queries[1:] == ["first rewrite", "second rewrite", "third rewrite"] and m.cost_usd > 0
            assert a.stop_reason == "stop" and a.llm_calls == 1
    # and a second prefetch sends nothing
    assert prefetch_first_turns(designs, QUESTIONS, [1, 2])["batches"][HAIKU]["sent"] == 0


def test_prefetch_skips_designs_without_the_anthropic_backend(tmp_path):
    replay = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:local", model="qwen")
    out = prefetch_first_turns([MultiQueryDesign(ListSearcher(LISTS), replay, "local")], QUESTIONS, 1)
    assert out == {"designs": {}, "batches": {}, "skipped": ["multiquery"]}
