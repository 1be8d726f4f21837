"""The Anthropic backend without a key or a network: a fake client stands in for the SDK's.

The fake's ``messages.create(**params)`` returns the SDK's own ``anthropic.types.Message`` built
from a reply body in the Messages API's shape (tests/data/anthropic_*.json), and raises the SDK's
own error classes where a test asks for errors.
"""
import json
from pathlib import Path

import anthropic
import httpx2
import pytest

import lib.llm.anthropic_backend as llm_mod
import lib.llm.records as records_mod
from lib.llm.anthropic_backend import AnthropicBackend
from tests.fakes import FakeClient, reply_body
from lib.llm import (LLMError, LLMRequest, RecordedLLM, RecordStore, ReplayMiss, make_llm,
                     records_dir)

DATA = Path(__file__).parent / "data"
MODEL = "claude-haiku-4-5"
API_URL = "https://api.anthropic.com/v1/messages"


REQUEST = LLMRequest(kind="question", system="You write test questions.",
                     messages=(("user", "Write one question about this paper."),), max_tokens=300)


def test_request_parameters_are_the_messages_api_call():
    client = FakeClient(reply_body("question_tutor_json"))
    AnthropicBackend(MODEL, client=client).complete(REQUEST)
    assert client.messages.calls == [{
        "model": MODEL, "max_tokens": 300, "system": "You write test questions.",
        "messages": [{"role": "user", "content": "Write one question about this paper."}],
    }]
    assert "thinking" not in client.messages.calls[0] and "temperature" not in client.messages.calls[0]


def test_no_system_key_without_a_system_prompt():
    backend = AnthropicBackend(MODEL, client=FakeClient())
    params = backend.build_params(LLMRequest(kind="rewrite", system="", messages=(("user", "hi"),),
                                             max_tokens=50, temperature=0.7))
    assert params == {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}]}


def test_usage_text_and_cost_from_the_price_table():
    body = reply_body("question_tutor_json")
    response = AnthropicBackend(MODEL, client=FakeClient(body)).complete(REQUEST)
    prices = json.loads((Path(llm_mod.__file__).with_name("prices.json")).read_text())[MODEL]
    assert response.text == body["content"][0]["text"]
    assert (response.tokens_in, response.tokens_out) == (431, 62)
    assert response.cost_usd == pytest.approx(431 / 1e6 * prices["input_per_mtok"]
                                              + 62 / 1e6 * prices["output_per_mtok"])
    assert response.cost_usd == pytest.approx(431e-6 * 1.0 + 62e-6 * 5.0)  # the dated haiku-4-5 list price
    assert (response.model, response.backend, response.replayed) == (MODEL, "anthropic", False)
    assert response.latency_s >= 0


def test_only_text_blocks_make_the_reply_text():
    body = reply_body("question_tutor_json")
    body["content"] = [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
                       {"type": "text", "text": "part one, "}, {"type": "text", "text": "part two"}]
    assert AnthropicBackend(MODEL, client=FakeClient(body)).complete(REQUEST).text == "part one, part two"


def sdk_client(responses, max_retries=6):
    """The SDK's own client over a scripted HTTP transport: its retry logic runs for real."""
    seen = []

    def handler(request):
        seen.append(request)
        status, headers, body = responses.pop(0)
        return httpx2.Response(status, headers=headers, json=body)

    client = anthropic.Anthropic(api_key="sk-test", max_retries=max_retries,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    return client, seen


def error_body(kind):
    return {"type": "error", "error": {"type": kind, "message": kind}}


def test_the_sdk_retries_a_rate_limit_and_an_overload_honouring_retry_after():
    client, seen = sdk_client([(429, {"retry-after-ms": "5"}, error_body("rate_limit_error")),
                               (529, {"retry-after-ms": "5"}, error_body("overloaded_error")),
                               (200, {}, reply_body("question_tutor_json"))])
    response = AnthropicBackend(MODEL, client=client).complete(REQUEST)
    assert response.tokens_out == 62 and len(seen) == 3
    assert json.loads(seen[0].content)["model"] == MODEL


def test_gives_up_when_the_sdk_retries_are_spent():
    client, seen = sdk_client([(429, {"retry-after-ms": "1"}, error_body("rate_limit_error"))] * 3, max_retries=2)
    with pytest.raises(LLMError, match="RateLimitError"):
        AnthropicBackend(MODEL, client=client).complete(REQUEST)
    assert len(seen) == 3


def test_a_400_raises_at_once():
    client, seen = sdk_client([(400, {}, error_body("invalid_request_error")), (200, {}, reply_body("question_tutor_json"))])
    with pytest.raises(LLMError, match="BadRequestError") as info:
        AnthropicBackend(MODEL, client=client).complete(REQUEST)
    assert isinstance(info.value.__cause__, anthropic.BadRequestError) and len(seen) == 1


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        AnthropicBackend(MODEL)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        make_llm("anthropic", MODEL)


def test_a_model_without_a_price_is_refused():
    with pytest.raises(LLMError, match="prices.json"):
        AnthropicBackend("claude-unknown-9", client=FakeClient())


def test_recorded_calls_replay_without_the_client(tmp_path):
    client = FakeClient(reply_body("question_tutor_json"), reply_body("question_drift_fixed"))
    llm = RecordedLLM(AnthropicBackend(MODEL, client=client), RecordStore(tmp_path), backend_name="anthropic",
                      model=MODEL)
    first = llm.complete(REQUEST)
    second = llm.complete(REQUEST)
    assert len(client.messages.calls) == 1
    assert second.replayed and not first.replayed
    assert (second.text, second.tokens_in, second.tokens_out, second.cost_usd) == \
        (first.text, first.tokens_in, first.tokens_out, first.cost_usd)

    other_run = LLMRequest(**{**REQUEST.__dict__, "run": 2})
    assert other_run.key() != REQUEST.key()
    third = llm.complete(other_run)
    assert len(client.messages.calls) == 2 and not third.replayed
    assert third.text == reply_body("question_drift_fixed")["content"][0]["text"]

    # a new process (fresh store on the same folder, a client that must not be called) replays both
    again = RecordedLLM(AnthropicBackend(MODEL, client=FakeClient()), RecordStore(tmp_path),
                        backend_name="anthropic", model=MODEL)
    assert again.complete(REQUEST).text == first.text
    assert again.complete(other_run).text == third.text
    assert len((tmp_path / "question.jsonl").read_text().splitlines()) == 2


def test_replay_reads_what_the_anthropic_backend_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(records_mod, "RECORDS_DIR", tmp_path)
    client = FakeClient(reply_body("question_tutor_json"))
    recorder = RecordedLLM(AnthropicBackend(MODEL, client=client), RecordStore(records_dir("anthropic", MODEL)),
                           backend_name="anthropic", model=MODEL)
    recorded = recorder.complete(REQUEST)
    replay = make_llm("replay", MODEL, record_backend="anthropic")
    response = replay.complete(REQUEST)
    assert response.replayed and response.text == recorded.text and response.cost_usd == recorded.cost_usd


def test_replay_miss_on_an_empty_store(tmp_path, monkeypatch):
    monkeypatch.setattr(records_mod, "RECORDS_DIR", tmp_path)
    replay = make_llm("replay", MODEL, record_backend="anthropic")
    from dataclasses import replace

    with pytest.raises(ReplayMiss, match="no recorded 'question' response for question q007, run 1") as info:
        replay.complete(replace(REQUEST, label="q007"))
    assert str(tmp_path / f"anthropic__{MODEL}" / "question.jsonl") in str(info.value)  # the recording file
    assert "llm_backend local" in str(info.value) and "anthropic" in str(info.value)  # how to record it
    assert isinstance(info.value, LLMError)
