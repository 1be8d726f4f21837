"""The Anthropic backend without a key or a network: a fake client stands in for the SDK's.

The fake's ``messages.create(**params)`` returns the SDK's own ``anthropic.types.Message`` built
from a reply body in the Messages API's current shape (tests/data/anthropic_*.json: content blocks
by type, ``stop_reason`` and ``stop_details``, usage with cache tokens). Rate limits and overloads
go through the SDK's own client over a scripted HTTP transport, so its retries (honouring
``retry-after``) run for real.
"""
import json
from dataclasses import asdict, replace
from pathlib import Path

import anthropic
import httpx2
import pytest

import lib.llm.anthropic_backend as llm_mod
import lib.llm.records as records_mod
from lib.config import load_profile
from lib.designs import Question
from lib.designs.agent import AgentDesign
from lib.designs.multiquery import MultiQueryDesign
from lib.llm import LLMError, LLMRequest, LLMResponse, RecordedLLM, RecordStore, ReplayMiss, make_llm, prompts, records_dir
from lib.llm.anthropic_backend import AnthropicBackend, model_defaults, profile_backend_kwargs
from lib.llm.base import cost_usd, load_prices
from tests.fakes import FakeClient, ListSearcher, NoSleep, error_fixture, mock_sdk_client, reply_body

DATA = Path(__file__).parent / "data"
HAIKU, SONNET = "claude-haiku-5-5", "claude-sonnet-5-5"
PRICES = json.loads((Path(llm_mod.__file__).with_name("prices.json")).read_text())

REQUEST = LLMRequest(kind="question", system="You write test questions.",
                     messages=(("user", "Write one question about this paper."),), max_tokens=300)


# ------------------------------------------------------------------------------ request parameters
def test_sonnet_request_is_its_lowest_thinking_setting_and_no_sampling():
    client = FakeClient(reply_body("question_tutor_json"))
    AnthropicBackend(SONNET, client=client).complete(REQUEST)
    assert client.messages.calls == [{
        "model": SONNET, "max_tokens": 300, "system": "You write test questions.",
        "messages": [{"role": "user", "content": "Write one question about this paper."}],
        "thinking": {"type": "between_tools"}, "output_config": {"effort": "low"},
    }]
    assert not {"temperature", "top_p", "top_k"} & set(client.messages.calls[0])


def test_haiku_request_has_thinking_off_and_no_sampling():
    backend = AnthropicBackend(HAIKU, client=FakeClient())
    params = backend.build_params(LLMRequest(kind="rewrite", system="", messages=(("user", "hi"),),
                                             max_tokens=50, temperature=0.7))
    assert params == {"model": HAIKU, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}],
                      "thinking": {"type": "disabled"}}  # no system key without a system prompt, no effort
    assert backend.api_settings == {"thinking": "disabled", "effort": None}


def test_a_model_without_settings_gets_no_thinking_parameter():
    params = AnthropicBackend("claude-haiku-4-5", client=FakeClient()).build_params(REQUEST)
    assert "thinking" not in params and "output_config" not in params


def test_settings_the_api_refuses_are_refused_before_any_call():
    with pytest.raises(LLMError, match="returns 400 on this model.*between_tools"):
        AnthropicBackend(SONNET, client=FakeClient(), thinking="disabled")
    with pytest.raises(LLMError, match="only at effort low, medium, high"):
        AnthropicBackend(HAIKU, client=FakeClient(), thinking="disabled", effort="max")
    with pytest.raises(LLMError, match="unknown thinking type 'enabled'"):
        AnthropicBackend(HAIKU, client=FakeClient(), thinking="enabled")
    with pytest.raises(LLMError, match="only 'auto'"):
        AnthropicBackend(HAIKU, client=FakeClient(), tool_choice="any")
    assert AnthropicBackend(HAIKU, client=FakeClient()).tool_params([{"name": "search"}])["tool_choice"] == \
        {"type": "auto"}


def test_an_assistant_prefill_is_refused():
    client = FakeClient(reply_body("agent_stop"))
    prefill = LLMRequest(kind="agent", system="s", messages=(("user", "q"), ("assistant", "{")), max_tokens=50)
    with pytest.raises(LLMError, match="must end with a user turn"):
        AnthropicBackend(HAIKU, client=client).complete(prefill)
    assert client.messages.calls == []


def test_the_article_profile_names_the_models_and_their_settings():
    art = load_profile("article")
    assert (art.llm_model, art.question_model) == (HAIKU, SONNET)
    assert (art.llm_thinking, art.llm_effort, art.llm_tool_choice) == ("disabled", None, "auto")
    assert (art.question_thinking, art.question_effort) == ("between_tools", "low")
    assert art.prices_read_on == PRICES[HAIKU]["date"] == PRICES[SONNET]["date"]
    assert profile_backend_kwargs(art, "llm") == {"thinking": "disabled", "tool_choice": "auto"}
    assert profile_backend_kwargs(art, "question") == {"thinking": "between_tools", "effort": "low"}
    # the profile's settings are the models' defaults, so make_llm (which passes none) calls them alike
    assert model_defaults(HAIKU) == {"thinking": "disabled", "effort": None}
    assert model_defaults(SONNET) == {"thinking": "between_tools", "effort": "low"}
    for profile in ("offline", "pilot", "dev"):  # the new settings have defaults
        assert load_profile(profile).max_cost_usd is None and load_profile(profile).llm_batch is False


# ------------------------------------------------------------------------------ replies
def test_usage_text_and_cost_from_the_price_table():
    body = reply_body("question_tutor_json")
    response = AnthropicBackend(SONNET, client=FakeClient(body)).complete(REQUEST)
    p = PRICES[SONNET]
    assert response.text == body["content"][0]["text"]
    assert (response.tokens_in, response.tokens_out, response.stop_reason) == (431, 62, "end_turn")
    assert response.cost_usd == pytest.approx(431 / 1e6 * p["input_per_mtok"] + 62 / 1e6 * p["output_per_mtok"])
    assert response.cost_usd == pytest.approx(431e-6 * 2.0 + 62e-6 * 10.0)  # Sonnet 5.5's list price
    assert (response.model, response.backend, response.replayed, response.batch) == (SONNET, "anthropic", False, False)
    assert response.api_settings == {"thinking": "between_tools", "effort": "low"}
    assert response.latency_s >= 0


def test_cache_tokens_are_priced_from_the_usage():
    body = reply_body("agent_stop")
    body["usage"].update(cache_creation_input_tokens=1000, cache_read_input_tokens=4000,
                         cache_creation={"ephemeral_5m_input_tokens": 600, "ephemeral_1h_input_tokens": 400})
    r = AnthropicBackend(HAIKU, client=FakeClient(body)).complete(REQUEST)
    p = PRICES[HAIKU]
    expected = (412 * p["input_per_mtok"] + 7 * p["output_per_mtok"] + 600 * p["cache_write_5m_per_mtok"]
                + 400 * p["cache_write_1h_per_mtok"] + 4000 * p["cache_read_per_mtok"]) / 1e6
    assert (r.cache_write_tokens, r.cache_read_tokens) == (1000, 4000)
    assert r.cost_usd == pytest.approx(expected)


def test_batch_and_long_prompt_prices():
    p = PRICES[HAIKU]
    assert cost_usd(HAIKU, 1000, 100, batch=True) == pytest.approx((1000 * 0.05 + 100 * 0.25) / 1e6)
    assert cost_usd(HAIKU, 1000, 100, batch=True) == pytest.approx(cost_usd(HAIKU, 1000, 100) / 2)
    long = p["long_prompt"]  # a prompt over 100,000 tokens is billed at the long rates throughout
    assert cost_usd(HAIKU, 150_000, 100) == pytest.approx((150_000 * long["input_per_mtok"]
                                                           + 100 * long["output_per_mtok"]) / 1e6)
    assert cost_usd(HAIKU, 99_000, 100, cache_read=2_000) == pytest.approx(
        (99_000 * long["input_per_mtok"] + 100 * long["output_per_mtok"] + 2_000 * long["cache_read_per_mtok"]) / 1e6)


def test_every_price_names_its_source_and_date():
    prices = load_prices()
    for model in (HAIKU, SONNET):
        p = prices[model]
        assert p["source"].startswith("https://platform.claude.com/docs/en/models/") and p["date"] == "2026-11-30"
        for rate in ("input", "output", "cache_write_5m", "cache_write_1h", "cache_read", "batch_input", "batch_output"):
            assert p[f"{rate}_per_mtok"] > 0
        assert p["batch_input_per_mtok"] == p["input_per_mtok"] / 2 and p["batch_output_per_mtok"] == p["output_per_mtok"] / 2
    assert (prices[HAIKU]["input_per_mtok"], prices[HAIKU]["output_per_mtok"]) == (0.10, 0.50)
    assert (prices[SONNET]["input_per_mtok"], prices[SONNET]["output_per_mtok"]) == (2.0, 10.0)


def test_text_is_read_by_block_type_and_thinking_blocks_are_kept(tmp_path):
    body = reply_body("agent_thinking")
    backend = AnthropicBackend(HAIKU, client=FakeClient(body), thinking="adaptive", effort="low")
    llm = RecordedLLM(backend, RecordStore(tmp_path), backend_name="anthropic", model=HAIKU)
    agent_request = replace(REQUEST, kind="agent")
    r = llm.complete(agent_request)
    assert r.text == body["content"][1]["text"]  # the thinking block comes first: not the answer
    assert r.thinking == [body["content"][0]] and r.tokens_out == 142
    assert backend.build_params(REQUEST)["thinking"] == {"type": "adaptive"}
    # the record keeps the thinking block and the settings; a replay gives them back
    rec = json.loads((tmp_path / "agent.jsonl").read_text())
    assert rec["response"]["thinking"] == [body["content"][0]] and "replayed" not in rec["response"]
    assert rec["response"]["api_settings"] == {"thinking": "adaptive", "effort": "low"}
    again = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:anthropic", model=HAIKU).complete(agent_request)
    assert again.replayed and again.thinking == r.thinking and again.stop_reason == "end_turn"


def test_a_refusal_is_recorded_with_its_details(tmp_path):
    body = reply_body("question_refusal")
    llm = RecordedLLM(AnthropicBackend(SONNET, client=FakeClient(body)), RecordStore(tmp_path),
                      backend_name="anthropic", model=SONNET)
    r = llm.complete(REQUEST)
    assert (r.text, r.stop_reason, r.tokens_out, r.incomplete) == ("", "refusal", 0, True)
    assert r.stop_details["category"] == "frontier_llm"
    rec = json.loads((tmp_path / "question.jsonl").read_text())["response"]
    assert rec["stop_reason"] == "refusal" and rec["stop_details"]["type"] == "refusal"


def test_records_written_before_the_new_fields_still_replay(tmp_path):
    old = LLMResponse("text", 10, 2, 0.5, 0.001, "qwen", "local")
    fields = {k: v for k, v in asdict(old).items()
              if k in ("text", "tokens_in", "tokens_out", "latency_s", "cost_usd", "model", "backend")}
    (tmp_path / "question.jsonl").write_text(json.dumps({"key": REQUEST.key(), "kind": "question", "run": 1,
                                                         "request": {}, "response": fields}) + "\n")
    r = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:local", model="qwen").complete(REQUEST)
    assert r.replayed and (r.stop_reason, r.thinking, r.batch, r.incomplete) == ("", [], False, False)


# ------------------------------------------------------------------------------ the designs on Haiku 5.5 replies
Q = Question("q001", "How should LLM search agents spend a limited rollout budget?", "2607.06223")
TITLES = {i: f"Title {i}" for i in ["a", "b", "c", "d", "e", "f", "x1", "x2", "x3", "x4", "x5", "x6"]}


def haiku(tmp_path, *replies):
    client = FakeClient(*replies)
    return RecordedLLM(AnthropicBackend(HAIKU, client=client), RecordStore(tmp_path), backend_name="anthropic",
                       model=HAIKU), client


def test_the_agent_sends_the_articles_system_prompt_and_every_search_so_far(tmp_path):
    llm, client = haiku(tmp_path, "agent_stop")
    r = AgentDesign(ListSearcher({Q.text: ["a", "b", "c", "d", "e", "f"]}), llm, TITLES, "anthropic").retrieve(Q)
    sent = client.messages.calls[0]
    assert r.stop_reason == "stop" and r.llm_calls == 1
    assert sent["messages"][-1]["role"] == "user" and len(sent["messages"]) == 1
    assert sent["system"] == prompts.AGENT_SYSTEM and sent["max_tokens"] == 150
    assert sent["messages"][-1]["content"].startswith(f'Question: {Q.text}\n\nSearch 1: "{Q.text}"\n  - ')
    assert sent["thinking"] == {"type": "disabled"} and "temperature" not in sent


def test_the_agent_stops_on_a_refusal_and_names_it(tmp_path):
    llm, client = haiku(tmp_path, "agent_refusal")
    s = ListSearcher({Q.text: ["a", "b", "c", "d", "e", "f"]})
    r = AgentDesign(s, llm, TITLES, "anthropic").retrieve(Q)
    assert (r.stop_reason, r.searches, r.llm_calls, r.replies) == ("refusal", 1, 1, [""])
    assert r.ranked_ids == ["a", "b", "c", "d", "e", "f"] and s.calls == [Q.text]


def test_the_agent_stops_at_max_tokens_and_names_it(tmp_path):
    cut = reply_body("agent_thinking")
    cut["content"] = [{"type": "text", "text": '{"decision":"search","query":"rollout budget alloc'}]
    cut["stop_reason"] = "max_tokens"
    llm, client = haiku(tmp_path, cut)
    r = AgentDesign(ListSearcher({}), llm, TITLES, "anthropic").retrieve(Q)
    assert (r.stop_reason, r.searches, r.llm_calls) == ("max_tokens", 1, 1)


def test_the_agent_searches_on_after_a_reply_with_thinking(tmp_path):
    llm, client = haiku(tmp_path, "agent_thinking", "agent_stop")
    r = AgentDesign(ListSearcher({}), llm, TITLES, "anthropic").retrieve(Q)
    assert r.stop_reason == "stop" and r.searches == 2 and r.llm_calls == 2
    assert r.queries[1] == "rollout budget allocation by information gain for LLM search agents"
    assert r.tokens_out == 142 + 7


def test_multiquery_records_a_refusal_and_searches_the_question_alone(tmp_path):
    refusal = reply_body("agent_refusal")
    llm, client = haiku(tmp_path, refusal)
    s = ListSearcher({Q.text: ["a", "b"]})
    r = MultiQueryDesign(s, llm, "anthropic").retrieve(Q)
    assert (r.stop_reason, r.queries, r.searches) == ("refusal; only 0 usable rewrites", [Q.text], 1)
    assert client.messages.calls[0]["messages"][-1]["role"] == "user"


def test_multiquery_keeps_the_complete_lines_of_a_reply_cut_at_max_tokens(tmp_path):
    llm, client = haiku(tmp_path, "rewrite_max_tokens")
    r = MultiQueryDesign(ListSearcher({}), llm, "anthropic").retrieve(Q)
    assert r.stop_reason == "max_tokens; only 2 usable rewrites"
    assert r.queries[1:] == ["information gain rollout policy for multi-turn LLM agents",
                             "adaptive tree-structured rollouts in agentic reinforcement learning"]


def test_multiquery_on_a_complete_reply(tmp_path):
    llm, client = haiku(tmp_path, "rewrite_three")
    r = MultiQueryDesign(ListSearcher({}), llm, "anthropic").retrieve(Q)
    assert r.stop_reason == "" and r.searches == 4
    assert r.cost_usd == pytest.approx((121 * 0.10 + 33 * 0.50) / 1e6)


# ------------------------------------------------------------------------------ the SDK's own retries
def sdk_client(responses, max_retries=6):
    """The SDK's own client over a scripted HTTP transport: its retry logic runs for real."""
    seen = []

    def handler(request):
        seen.append(request)
        status, headers, body = responses.pop(0)
        return httpx2.Response(status, headers=headers, json=body)

    return mock_sdk_client(handler, max_retries), seen


@pytest.fixture
def no_sleep(monkeypatch):
    waits = NoSleep()
    monkeypatch.setattr(anthropic._base_client.time, "sleep", waits)
    return waits


def test_the_sdk_retries_a_rate_limit_then_succeeds_honouring_retry_after(no_sleep):
    client, seen = sdk_client([error_fixture("rate_limit"), (200, {}, reply_body("question_tutor_json"))])
    response = AnthropicBackend(SONNET, client=client).complete(REQUEST)
    assert response.tokens_out == 62 and len(seen) == 2
    assert no_sleep.waits == [2.0]  # the recorded retry-after: 2
    sent = json.loads(seen[0].content)
    assert sent["model"] == SONNET and sent["thinking"] == {"type": "between_tools"}
    assert sent["output_config"] == {"effort": "low"} and "temperature" not in sent


def test_the_sdk_retries_an_overload_then_succeeds_honouring_retry_after(no_sleep):
    client, seen = sdk_client([error_fixture("overloaded"), (200, {}, reply_body("agent_stop"))])
    response = AnthropicBackend(HAIKU, client=client).complete(replace(REQUEST, kind="agent"))
    assert response.text == '{"decision":"stop"}' and len(seen) == 2
    assert no_sleep.waits == [3.0]


def test_gives_up_when_the_sdk_retries_are_spent(no_sleep):
    client, seen = sdk_client([error_fixture("rate_limit")] * 3, max_retries=2)
    with pytest.raises(LLMError, match="RateLimitError"):
        AnthropicBackend(SONNET, client=client).complete(REQUEST)
    assert len(seen) == 3 and no_sleep.waits == [2.0, 2.0]


def test_a_400_raises_at_once(no_sleep):
    client, seen = sdk_client([error_fixture("invalid_request"), (200, {}, reply_body("question_tutor_json"))])
    with pytest.raises(LLMError, match="BadRequestError") as info:
        AnthropicBackend(SONNET, client=client).complete(REQUEST)
    assert isinstance(info.value.__cause__, anthropic.BadRequestError) and len(seen) == 1 and no_sleep.waits == []


# ------------------------------------------------------------------------------ keys, prices, records
def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        AnthropicBackend(HAIKU)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY"):
        make_llm("anthropic", HAIKU)


def test_a_model_without_a_price_is_refused():
    with pytest.raises(LLMError, match="prices.json"):
        AnthropicBackend("claude-unknown-9", client=FakeClient())


def test_recorded_calls_replay_without_the_client(tmp_path):
    client = FakeClient(reply_body("question_tutor_json"), reply_body("question_drift_fixed"))
    llm = RecordedLLM(AnthropicBackend(SONNET, client=client), RecordStore(tmp_path), backend_name="anthropic",
                      model=SONNET)
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
    again = RecordedLLM(AnthropicBackend(SONNET, client=FakeClient()), RecordStore(tmp_path),
                        backend_name="anthropic", model=SONNET)
    assert again.complete(REQUEST).text == first.text
    assert again.complete(other_run).text == third.text
    assert len((tmp_path / "question.jsonl").read_text().splitlines()) == 2


def test_replay_reads_what_the_anthropic_backend_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(records_mod, "RECORDS_DIR", tmp_path)
    client = FakeClient(reply_body("question_tutor_json"))
    recorder = RecordedLLM(AnthropicBackend(SONNET, client=client), RecordStore(records_dir("anthropic", SONNET)),
                           backend_name="anthropic", model=SONNET)
    recorded = recorder.complete(REQUEST)
    replay = make_llm("replay", SONNET, record_backend="anthropic")
    response = replay.complete(REQUEST)
    assert response.replayed and response.text == recorded.text and response.cost_usd == recorded.cost_usd


def test_replay_miss_on_an_empty_store(tmp_path, monkeypatch):
    monkeypatch.setattr(records_mod, "RECORDS_DIR", tmp_path)
    replay = make_llm("replay", HAIKU, record_backend="anthropic")
    with pytest.raises(ReplayMiss, match="no recorded 'question' response for question q007, run 1") as info:
        replay.complete(replace(REQUEST, label="q007"))
    assert str(tmp_path / f"anthropic__{HAIKU}" / "question.jsonl") in str(info.value)  # the recording file
    assert "llm_backend local" in str(info.value) and "anthropic" in str(info.value)  # how to record it
    assert isinstance(info.value, LLMError)
