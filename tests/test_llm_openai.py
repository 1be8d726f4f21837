"""The OpenAI-compatible backend: the real SDK over a scripted HTTP transport, then a real server.

Replies are recorded chat completions in the API's current shape (tests/data/openai_*.json),
served to the SDK's own client over ``httpx2.MockTransport``, so its request building, retries
(honouring ``retry-after``) and response parsing run for real; every test reads back the JSON
body the SDK sent. The last tests start llama-cpp-python's own OpenAI-compatible server on the
project's local model and drive it through the backend (skipped, saying what is missing, when the
model file or the server's packages are not installed).
"""
import importlib.util
import json
import os
import threading
from dataclasses import replace
from pathlib import Path

import httpx2
import openai
import pytest

from lib.config import ROOT
from lib.designs import Question
from lib.designs.agent import AgentDesign
from lib.designs.agent_tree import AgentTreeDesign
from lib.designs.loop import LoopDesign
from lib.designs.multiquery import MultiQueryDesign
from lib.llm import LLMError, LLMRequest, RecordedLLM, RecordStore, contract, make_llm, prompts, served
from lib.llm.base import cost_usd
from lib.llm.local_backend import DEFAULT_LOCAL_MODEL, LOCAL_MODEL_FILE, LocalBackend
from lib.llm.openai_backend import PLACEHOLDER_KEY, OpenAIBackend
from lib.llm.records import records_dir
from lib.llm.tools import assistant_blocks, chat_messages, text_block, tool_result_block, tool_use_block
from tests.fakes import ListSearcher, NoSleep

DATA = Path(__file__).parent / "data"
MODEL = "qwen2.5-7b-instruct"
BASE = "http://127.0.0.1:8000/v1"
Q = Question("q001", "Which paper detects dataset shift in deployed clinical models without labels?", "x2")
PAPERS = {f"x{i}": (f"Title {i}", f"Abstract of paper {i}.") for i in range(1, 7)}


def body(name: str) -> dict:
    return json.loads((DATA / f"openai_{name}.json").read_text(encoding="utf-8"))


def error(name: str) -> tuple[int, dict, dict]:
    d = json.loads((DATA / f"openai_error_{name}.json").read_text(encoding="utf-8"))
    return d["status"], d["headers"], d["body"]


class Server:
    """A scripted server: hands out (status, headers, body) in order and keeps every request."""

    def __init__(self, *responses):
        self.responses, self.seen = list(responses), []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(request)
        status, headers, payload = self.responses.pop(0)
        return httpx2.Response(status, headers=headers, json=payload)

    def sent(self, i: int = -1) -> dict:
        return json.loads(self.seen[i].content)


def ok(name: str) -> tuple[int, dict, dict]:
    return 200, {}, body(name)


def backend(handler, **kwargs) -> OpenAIBackend:
    return OpenAIBackend(MODEL, base_url=BASE, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                         **kwargs)


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def no_sleep(monkeypatch):
    waits = NoSleep()
    monkeypatch.setattr(openai._base_client.time, "sleep", waits)
    return waits


def rewrite_request(run: int = 1) -> LLMRequest:
    return MultiQueryDesign(ListSearcher({}), None, "anthropic").request(Q, run)


# ------------------------------------------------------------------------------ replies
def test_a_plain_reply_its_request_body_and_usage():
    server = Server(ok("rewrite_plain"))
    request = rewrite_request(run=2)
    r = backend(server).complete(request)
    sent = server.sent()
    assert server.seen[0].url == "http://127.0.0.1:8000/v1/chat/completions"
    assert server.seen[0].headers["authorization"] == f"Bearer {PLACEHOLDER_KEY}"  # a local server needs no key
    assert sent == {"model": MODEL, "max_tokens": 200, "temperature": 0.0, "seed": request.seed(),
                    "messages": [{"role": "system", "content": prompts.REWRITE_SYSTEM},
                                 {"role": "user", "content": prompts.REWRITE_USER.format(question=Q.text)}]}
    assert sent["seed"] != rewrite_request(run=1).seed()  # repeated runs sample differently
    assert r.text == body("rewrite_plain")["choices"][0]["message"]["content"]
    # prompt_tokens 1210 of which 1024 cached: the uncached part is tokens_in, as the Messages API counts
    assert (r.tokens_in, r.cache_read_tokens, r.prompt_tokens, r.tokens_out) == (186, 1024, 1210, 31)
    assert (r.stop_reason, r.backend, r.model, r.cost_usd, r.tool_calls, r.content) == \
        ("end_turn", "openai", MODEL, 0.0, [], [])  # a model without a list price costs nothing
    assert r.latency_s >= 0


def test_a_priced_model_is_costed_from_the_usage_with_cached_tokens_as_cache_reads():
    prices = {MODEL: {"input_per_mtok": 0.4, "output_per_mtok": 1.6, "cache_read_per_mtok": 0.1}}
    r = backend(Server(ok("rewrite_plain")), prices=prices).complete(rewrite_request())
    assert r.cost_usd == pytest.approx(cost_usd(MODEL, 186, 31, prices, cache_read=1024))
    assert r.cost_usd == pytest.approx((186 * 0.4 + 31 * 1.6 + 1024 * 0.1) / 1e6)


def test_a_reply_cut_at_max_tokens_is_kept_to_its_complete_lines_by_multiquery(tmp_path):
    server = Server(ok("rewrite_length"))
    llm = RecordedLLM(backend(server), RecordStore(tmp_path), backend_name="openai", model=MODEL)
    searcher = ListSearcher({})
    result = MultiQueryDesign(searcher, llm, "anthropic").retrieve(Q)
    assert llm.complete(rewrite_request()).stop_reason == "max_tokens"
    assert result.stop_reason == "max_tokens; only 1 usable rewrites"
    assert searcher.calls == [Q.text, "label-free detection of dataset shift in deployed clinical models"]


def test_a_refusal_is_named_with_its_explanation():
    r = backend(Server(ok("refusal"))).complete(rewrite_request())
    assert (r.text, r.stop_reason, r.incomplete) == ("", "refusal", True)
    assert r.stop_details == {"type": "refusal", "explanation": "I can't help with that request."}


def test_the_key_comes_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("MY_SERVER_KEY", "sk-local-123")
    server = Server(ok("rewrite_plain"))
    backend(server, api_key_env="MY_SERVER_KEY").complete(rewrite_request())
    assert server.seen[0].headers["authorization"] == "Bearer sk-local-123"


def test_a_base_url_is_required_and_read_from_the_environment(monkeypatch):
    with pytest.raises(LLMError, match="OPENAI_BASE_URL"):
        OpenAIBackend(MODEL)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1")
    assert str(OpenAIBackend(MODEL).client.base_url) == "http://127.0.0.1:9999/v1/"


# ------------------------------------------------------------------------------ tool calls
def test_the_tool_calling_loop_runs_through_native_tool_calls(tmp_path):
    server = Server(ok("loop_search"), ok("loop_answer"))
    llm = RecordedLLM(backend(server), RecordStore(tmp_path), backend_name="openai", model=MODEL)
    searcher = ListSearcher({})
    result = LoopDesign(searcher, llm, PAPERS, "anthropic").retrieve(Q)
    assert searcher.calls == ["label-free dataset shift detection clinical models"]
    assert (result.details["citations"], result.details["turns"], result.stop_reason) == (["x2"], 2, "stop")
    first, second = server.sent(0), server.sent(1)
    assert first["tools"] == [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                                "parameters": t["input_schema"]}}
                              for t in prompts.loop_tools(5, local=False)]
    assert (first["tool_choice"], first["parallel_tool_calls"], first["max_tokens"]) == ("auto", False, 128)
    # the call goes back as the assistant's tool_calls, its result as a tool message with the call's id
    call_id = "call_Xa81kQz0Pb2Lm7Nc4Rt9Vw3Y"
    assert second["messages"][2] == {"role": "assistant", "content": "", "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": "search", "arguments": '{"query": "label-free dataset shift detection clinical models"}'}}]}
    assert second["messages"][3]["role"] == "tool" and second["messages"][3]["tool_call_id"] == call_id
    assert second["messages"][3]["content"].startswith('Top 5 for "label-free dataset shift detection clinical models"')
    assert len(second["messages"]) == 4  # system, question, call, result


def test_a_tool_call_reply_and_a_forced_answer_request():
    server = Server(ok("loop_search"))
    tools = prompts.loop_tools(5, local=False)
    call = {"id": "call_1", "name": "read", "input": {"paper_id": "x2"}}
    request = LLMRequest("loop", "sys", (("user", "q"), ("assistant", (text_block("Reading it."), tool_use_block(call))),
                                         ("user", (tool_result_block("call_1", "no such paper", is_error=True),
                                                   text_block("Answer now.")))),
                         64, tools=tools, tool_choice="none")
    r = backend(server).complete(request)
    sent = server.sent()
    assert sent["messages"][2:] == [
        {"role": "assistant", "content": "Reading it.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"paper_id": "x2"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "no such paper"},
        {"role": "user", "content": "Answer now."}]
    assert sent["tool_choice"] == "none" and "parallel_tool_calls" not in sent
    expected = {"id": "call_Xa81kQz0Pb2Lm7Nc4Rt9Vw3Y", "name": "search",
                "input": {"query": "label-free dataset shift detection clinical models"}}
    assert (r.stop_reason, r.tool_calls, r.text) == ("tool_use", [expected], "")
    assert assistant_blocks(r) == (tool_use_block(expected),)


def test_malformed_tool_arguments_are_kept_as_an_empty_call_and_named():
    reply = body("loop_search")
    reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"query": "unterminated'
    r = backend(Server((200, {}, reply))).complete(
        LLMRequest("loop", "s", (("user", "q"),), 64, tools=prompts.loop_tools(5, False), tool_choice="auto"))
    assert r.tool_calls[0]["input"] == {} and r.stop_details["type"] == "malformed_tool_arguments"
    assert r.stop_details["calls"][0]["arguments"] == '{"query": "unterminated'


@pytest.mark.parametrize("constraint", ["grammar", "none", "json_schema"])
def test_a_grammar_request_goes_as_the_local_backend_sends_it(constraint):
    """The loop's local turn: its grammar goes by the grammar route only (no contract states it: under a
    schema route it goes unconstrained, and its record says so), with the local backend's sampling."""
    server = Server(ok("loop_local_call"))
    design = LoopDesign(ListSearcher({}), None, PAPERS, "local")
    request = design.request(Q, design.opening(Q), 1, [])
    r = backend(server, constraint=constraint).complete(request)
    sent = server.sent()
    assert sent["messages"] == chat_messages(request.system, request.messages)
    assert "tools" not in sent and "tool_choice" not in sent and "response_format" not in sent
    grammar = constraint == "grammar"
    assert sent.get("grammar") == (request.grammar if grammar else None)
    # llama.cpp's servers would apply repeat_penalty 1.1: the local backend's 1.0 goes with the grammar
    assert (sent.get("repeat_penalty"), sent.get("top_k")) == ((1.0, 1) if grammar else (None, None))  # temperature 0
    assert r.tool_calls == [{"id": "call_4", "name": "search",  # after the worked example's 3 calls, as the local backend
                             "input": {"query": "unsupervised drift monitoring of clinical risk models"}}]
    assert r.stop_reason == "tool_use"
    assert r.api_settings == {"prompt": "local", "constraint": "grammar" if grammar else "none",
                              **({"sampling": {"repeat_penalty": 1.0, "top_k": 1}} if grammar else {})}


def test_send_grammar_is_the_grammar_route_and_an_unknown_route_is_refused():
    assert backend(Server(), send_grammar=True).constraint == "grammar" and backend(Server()).constraint == "none"
    with pytest.raises(LLMError, match="constraint must be one of grammar, json_schema, json_object, none"):
        backend(Server(), constraint="regex")


# ------------------------------------------------------------------------------ the reply contracts as JSON schemas
TITLES = {i: t for i, (t, _) in PAPERS.items()}


def local_agent(llm=None, searcher=None):
    return AgentDesign(searcher or ListSearcher({}), llm, TITLES, "local", max_searches=2)  # one decision


def test_the_json_schema_route_sends_the_agents_contract_as_vllm_reads_it(tmp_path):
    """A recorded vLLM exchange (its documented response_format json_schema, its reply's own fields): the
    local prompt as the local backend sends it, the schema in place of the grammar, nothing llama.cpp-only,
    and the decision read as the local model's."""
    server = Server(ok("vllm_agent_search"))
    llm = RecordedLLM(backend(server, constraint="json_schema"), RecordStore(tmp_path), backend_name="openai", model=MODEL)
    searcher = ListSearcher({})
    result = local_agent(llm, searcher).retrieve(Q)
    sent = server.sent(0)
    request = local_agent().request(Q, [Q.text], [searcher.default], 1)
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "agent_decision", "schema": contract.AGENT.schema, "strict": True}}
    assert sent["messages"] == chat_messages(request.system, request.messages)  # the examples are already JSON
    assert sent["max_tokens"] == prompts.AGENT_LOCAL_MAX_TOKENS
    assert not {"grammar", "repeat_penalty", "top_k"} & set(sent)  # vLLM's own sampling fields differ
    query = "label-free monitoring of dataset shift in deployed clinical models"
    assert result.queries[:2] == [Q.text, query] and searcher.calls[:2] == [Q.text, query]
    rec = llm.store.get(request)
    assert rec["response"]["api_settings"] == {"prompt": "local", "constraint": "json_schema"}
    assert "server_text" not in rec["response"]  # the JSON is the grammar's own form


def test_the_forced_search_goes_as_the_search_only_schema():
    server = Server(ok("vllm_agent_search"))
    tree = AgentTreeDesign(ListSearcher({}), None, TITLES, "local")
    forced = tree.search_request(Q, [Q.text], [["x1"]], 1)
    r = backend(server, constraint="json_schema").complete(forced)
    schema = server.sent()["response_format"]["json_schema"]
    assert schema["name"] == "agent_search" and schema["schema"]["properties"]["decision"] == {"type": "string",
                                                                                                 "const": "search"}
    assert "anyOf" not in schema["schema"] and r.text.startswith('{"match": 0, "decision": "search"')


def test_rewrites_under_a_schema_are_a_list_read_back_into_lines(tmp_path):
    server = Server(ok("vllm_rewrite"))
    llm = RecordedLLM(backend(server, constraint="json_schema"), RecordStore(tmp_path), backend_name="openai", model=MODEL)
    searcher = ListSearcher({})
    result = MultiQueryDesign(searcher, llm, "local").retrieve(Q)
    sent = server.sent()
    assert sent["response_format"]["json_schema"]["schema"]["properties"]["queries"] == {
        "type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "string", "minLength": 8, "maxLength": 120}}
    # the worked example's reply in the form the model must write; max_tokens grows by what the JSON costs
    assert json.loads(sent["messages"][2]["content"]) == {"queries": prompts.REWRITE_EXAMPLE_A.split("\n")}
    assert sent["max_tokens"] == 120 + contract.REWRITE.extra_tokens
    written = json.loads(body("vllm_rewrite")["choices"][0]["message"]["content"])["queries"]
    assert result.queries == [Q.text] + written and result.stop_reason == ""
    response = llm.complete(MultiQueryDesign(ListSearcher({}), None, "local").request(Q, 1))
    assert response.replayed and response.text == "\n".join(written)
    assert contract.REWRITE.valid(response.text)  # the grammar's own form
    assert json.loads(response.server_text) == {"queries": written}


def test_a_schema_reply_cut_at_max_tokens_is_kept_as_sent_and_named_by_its_stop_reason():
    r = backend(Server(ok("vllm_rewrite_length")), constraint="json_schema").complete(
        MultiQueryDesign(ListSearcher({}), None, "local").request(Q, 1))
    assert r.stop_reason == "max_tokens" and r.text == body("vllm_rewrite_length")["choices"][0]["message"]["content"]
    assert r.server_text == ""  # nothing was read into another form


def test_the_json_object_route_is_llama_cpp_pythons_spelling_with_its_sampling():
    server = Server(ok("vllm_agent_search"))
    request = local_agent().request(Q, [Q.text], [["x1"]], 1)
    backend(server, constraint="json_object").complete(request)
    sent = server.sent()
    assert sent["response_format"] == {"type": "json_object", "schema": contract.AGENT.schema}
    assert (sent["repeat_penalty"], "grammar" in sent) == (1.0, False)


def test_a_schema_routes_records_are_kept_apart_and_replayed_by_that_route_only(tmp_path):
    request = local_agent().request(Q, [Q.text], [["x1"]], 1)
    transport = httpx2.Client(transport=httpx2.MockTransport(Server(ok("vllm_agent_search"))))
    live = make_llm("openai", MODEL, records_root=tmp_path, base_url=BASE, constraint="json_schema", http_client=transport)
    live.complete(request)
    assert live.store.directory == tmp_path / f"openai__{MODEL}__json_schema"
    assert make_llm("replay", MODEL, record_backend="openai", records_root=tmp_path,
                    constraint="json_schema").complete(request).replayed
    for other in ("grammar", "json_object"):  # the same request answered under another route is another reply
        with pytest.raises(LLMError, match="no recorded 'agent' response"):
            make_llm("replay", MODEL, record_backend="openai", records_root=tmp_path, constraint=other).complete(request)


def test_an_unknown_content_block_is_refused_before_any_call():
    server = Server()
    with pytest.raises(LLMError, match="'image'"):
        backend(server).complete(LLMRequest("x", "s", (("user", ({"type": "image", "source": {}},)),), 10))
    assert server.seen == []


# ------------------------------------------------------------------------------ the SDK's own retries, errors
def test_the_sdk_retries_a_rate_limit_then_succeeds_honouring_retry_after(no_sleep):
    server = Server(error("rate_limit"), ok("rewrite_plain"))
    r = backend(server, max_retries=2).complete(rewrite_request())
    assert r.tokens_out == 31 and len(server.seen) == 2 and no_sleep.waits == [2.0]  # the recorded retry-after: 2
    assert server.sent(0) == server.sent(1)


def test_a_400_is_an_llm_error_with_the_servers_message_and_no_retry(no_sleep):
    server = Server(error("invalid_request"), ok("rewrite_plain"))
    with pytest.raises(LLMError, match="BadRequestError: Error code: 400 - This model's maximum context length") as info:
        backend(server).complete(rewrite_request())
    assert isinstance(info.value.__cause__, openai.BadRequestError)
    assert len(server.seen) == 1 and no_sleep.waits == []


def test_gives_up_when_the_sdk_retries_are_spent(no_sleep):
    server = Server(*[error("rate_limit")] * 2)
    with pytest.raises(LLMError, match="RateLimitError: Error code: 429 - Rate limit reached"):
        backend(server, max_retries=1).complete(rewrite_request())
    assert len(server.seen) == 2 and no_sleep.waits == [2.0]


# ------------------------------------------------------------------------------ concurrency
class EchoServer:
    """Answers each request with its last user message; the first ``hold`` requests wait for one
    another (a barrier), so they are provably in flight together."""

    def __init__(self, hold: int):
        self.lock, self.inflight, self.most, self.seen = threading.Lock(), 0, 0, []
        self.barrier = threading.Barrier(hold, timeout=10) if hold > 1 else None

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        with self.lock:
            self.inflight += 1
            self.most = max(self.most, self.inflight)
            self.seen.append(request)
            first = len(self.seen) <= (self.barrier.parties if self.barrier else 0)
        if first:
            self.barrier.wait()
        reply = body("rewrite_plain")
        reply["choices"][0]["message"]["content"] = "echo " + json.loads(request.content)["messages"][-1]["content"]
        with self.lock:
            self.inflight -= 1
        return httpx2.Response(200, json=reply)


def questions(n: int) -> list[LLMRequest]:
    return [LLMRequest("rewrite", "s", (("user", f"question {i}"),), 50) for i in range(n)]


def test_complete_many_sends_up_to_concurrency_at_once_and_answers_in_order():
    server = EchoServer(hold=3)
    out = backend(server, concurrency=3).complete_many(questions(7))
    assert [r.text for r in out] == [f"echo question {i}" for i in range(7)]
    assert server.most == 3 and len(server.seen) == 7


def test_recorded_complete_many_records_each_answer_and_replays_without_the_server(tmp_path):
    first = RecordedLLM(backend(Server(ok("rewrite_plain"))), RecordStore(tmp_path), backend_name="openai", model=MODEL)
    first.complete(questions(1)[0])  # already recorded: not sent again
    server = EchoServer(hold=2)
    llm = RecordedLLM(backend(server, concurrency=2), RecordStore(tmp_path), backend_name="openai", model=MODEL)
    out = llm.complete_many(questions(4))
    assert [r.replayed for r in out] == [True, False, False, False] and len(server.seen) == 3
    assert [r.text for r in out[1:]] == [f"echo question {i}" for i in (1, 2, 3)]
    replay = RecordedLLM(None, RecordStore(tmp_path), backend_name="replay:openai", model=MODEL)
    again = replay.complete_many(questions(4))
    assert [r.text for r in again] == [r.text for r in out] and all(r.replayed for r in again)


# ------------------------------------------------------------------------------ record and replay
def test_make_llm_records_openai_calls_and_replay_answers_them_with_no_server(tmp_path):
    server = Server(ok("loop_search"))
    llm = make_llm("openai", MODEL, records_root=tmp_path, base_url=BASE,
                   http_client=httpx2.Client(transport=httpx2.MockTransport(server)))
    assert isinstance(llm.backend, OpenAIBackend) and llm.name == "openai"
    assert llm.store.directory == tmp_path / f"openai__{MODEL}"
    request = LLMRequest("loop", "s", (("user", "q"),), 64, tools=prompts.loop_tools(5, False), tool_choice="auto")
    live = llm.complete(request)
    replay = make_llm("replay", MODEL, record_backend="openai", records_root=tmp_path)
    again = replay.complete(request)
    assert len(server.seen) == 1 and again.replayed and not live.replayed
    assert (again.tool_calls, again.content, again.stop_reason, again.tokens_in) == \
        (live.tool_calls, live.content, "tool_use", 402)
    with pytest.raises(LLMError, match="openai"):
        replay.complete(rewrite_request())  # not recorded: the miss names how to record it


# ------------------------------------------------------------------------------ a real server
SERVED = "qwen2.5-coder-1.5b-instruct"


def llama_server_process(tmp_path_factory, *options: str):
    """llama-cpp-python's OpenAI-compatible server on the local model (``options``: more of its flags;
    :func:`lib.llm.served.serve`); yields its base URL (skipped, saying what is missing, when the model file or
    the server's packages are not installed)."""
    if not LOCAL_MODEL_FILE.exists():
        pytest.skip(f"{LOCAL_MODEL_FILE.name} is not there (make local-llm joins it)")
    missing = served.missing_packages()
    if missing:
        pytest.skip(f"llama-cpp-python's server needs {', '.join(missing)} (pip install llama-cpp-python[server])")
    log = tmp_path_factory.mktemp("server") / "server.log"
    with served.serve(LOCAL_MODEL_FILE, SERVED, log, threads=2, options=options, wait_s=120) as base:
        yield base


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """The server with chat format chatml-function-calling: the one of its formats that returns native tool
    calls."""
    yield from llama_server_process(tmp_path_factory, "--chat_format", "chatml-function-calling")


@pytest.fixture(scope="module")
def served_copy(tmp_path_factory):
    """The server as a user serves the shipped model for ``make place-model``: the model's own chat template
    (no chat format named), so the prompt it builds from a request is the one the local backend builds."""
    yield from llama_server_process(tmp_path_factory)


def test_a_real_server_answers_under_the_grammar_sent_to_it(llama_server):
    """A plain completion, its grammar sent (llama.cpp's servers take ``grammar``): the reply is
    one of the grammar's two words, which the model, unconstrained, would not write so."""
    llm = OpenAIBackend(SERVED, base_url=llama_server, send_grammar=True, max_retries=0, timeout_s=120)
    request = LLMRequest("probe", "You answer questions.", (("user", "Is the sky blue on a clear day? Answer."),), 8,
                         grammar='root ::= "YES-SKY" | "NO-SKY"')
    r = llm.complete(request)
    assert r.text in ("YES-SKY", "NO-SKY") and r.stop_reason == "end_turn"
    assert r.tokens_in > 10 and r.tokens_out >= 1 and r.backend == "openai" and r.cost_usd == 0.0


def test_a_real_server_calls_a_tool_then_answers_from_its_result(llama_server):
    """A tool call, then the next turn holding it and its result (the translated conversation the
    server must accept: assistant tool_calls, a tool message), answered without a call."""
    llm = OpenAIBackend(SERVED, base_url=llama_server, max_retries=0, timeout_s=120)
    tools = prompts.loop_tools(5, local=False)[1:2]  # read(paper_id)
    system, ask = "You read research papers with your tool.", ("user", "Use the read tool to read the paper x2.")
    r = llm.complete(LLMRequest("loop", system, (ask,), 48, tools=tools, tool_choice="auto"))
    assert r.stop_reason == "tool_use" and [c["name"] for c in r.tool_calls] == ["read"]
    assert isinstance(r.tool_calls[0]["input"].get("paper_id"), str) and r.tool_calls[0]["input"]["paper_id"].strip()
    result = tool_result_block(r.tool_calls[0]["id"], prompts.loop_read_result("x2", "Title 2", "Abstract 2."))
    final = llm.complete(LLMRequest("loop", system, (ask, ("assistant", assistant_blocks(r)),
                                                     ("user", (result, text_block("Its title, in a few words?")))),
                                    4, tools=tools, tool_choice="none"))
    assert final.stop_reason in ("end_turn", "max_tokens") and final.text.strip() and final.tool_calls == []


# ------------------------------------------------------------------------------ a served copy of the shipped model
def recorded_agent_request(temperature: float = 0.0) -> LLMRequest:
    """The first agent decision the shipped local record holds, asked greedily (temperature 0: one reply,
    whatever the route, where the routes keep the same contract over the same logits)."""
    path = records_dir("local", DEFAULT_LOCAL_MODEL) / "agent.jsonl"
    if not path.exists():
        pytest.skip(f"no shipped local agent record ({path.name})")
    with open(path, encoding="utf-8") as fh:
        return replace(LLMRequest.from_record(json.loads(fh.readline())), temperature=temperature)


def test_a_real_server_keeps_the_agents_contract_by_each_route_as_the_local_backend(served_copy, capsys):
    """The shipped model, served (llama-cpp-python's server, the model's own template), asked the agent's
    recorded decision by the grammar route and by the JSON-schema route (json_object, the spelling it
    reads), and the same request through the local backend's fast path: three replies, one text."""
    request = recorded_agent_request()
    local = LocalBackend(DEFAULT_LOCAL_MODEL).complete(request)
    assert contract.AGENT.valid(local.text)
    times = {"local fast path": local.latency_s}
    for route in ("grammar", "json_object"):
        r = OpenAIBackend(SERVED, base_url=served_copy, constraint=route, max_retries=0, timeout_s=900).complete(request)
        assert contract.AGENT.valid(r.text) and r.api_settings["constraint"] == route, (route, r.text)
        assert r.text == local.text, (route, r.text, local.text)
        times[route] = r.latency_s
    with capsys.disabled():
        print("\n  agent decision, " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items())
              + f" (load {os.getloadavg()[0]:.1f})")


def test_a_real_server_writes_the_forced_search_and_rewrites_in_their_schemas(served_copy):
    """The tree's forced search (the search-only schema) and multi-query's rewrites (three queries as a
    list, read back into three lines) by the json_object route."""
    llm = OpenAIBackend(SERVED, base_url=served_copy, constraint="json_object", max_retries=0, timeout_s=900)
    base = recorded_agent_request()
    tree = AgentTreeDesign(ListSearcher({}), None, TITLES, "local")
    forced = replace(base, kind="agent_tree_search", grammar=contract.SEARCH_ONLY_GRAMMAR)
    assert tree.search_request(Q, [Q.text], [["x1"]], 1).grammar == forced.grammar
    r = llm.complete(forced)
    assert contract.SEARCH_ONLY.valid(r.text), r.text
    rewrite = replace(MultiQueryDesign(ListSearcher({}), None, "local").request(Q, 1), temperature=0.0)
    r = llm.complete(rewrite)
    assert contract.REWRITE.valid(r.text), (r.text, r.server_text)
    assert json.loads(r.server_text or r.text)["queries"] == r.text.split("\n")


def test_a_real_server_places_the_served_copy_beside_the_local_backend(tmp_path, monkeypatch):
    """scripts/served_placement.py end to end on one question by the json_object route (a server of its own,
    the local backend's point replayed from its record): both points, every served reply compared with the local
    one of the same request, the comparison written."""
    if not LOCAL_MODEL_FILE.exists() or served.missing_packages():
        pytest.skip("the local model or llama-cpp-python's server is not installed")
    monkeypatch.setenv("OPENAI_BASE_URL", "")  # the script points it at its server: put back afterwards
    spec = importlib.util.spec_from_file_location("served_placement", ROOT / "scripts" / "served_placement.py")
    sp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sp)
    assert sp.main(["1", "json_object", "grammar", "--results", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "grammar" / "served_placement.json").read_text())
    assert set(summary["routes"]) == {"json_object", "grammar"}
    for route, row in summary["routes"].items():  # each route in its own folder, its records kept apart
        assert summary["local"]["questions"] == row["point"]["questions"] == 1 and row["comparable"]
        c = row["replies"]
        assert c["same"] + c["differ"] + c["not_asked_locally"] >= 1  # the tree asks at least one decision
        assert c["differ"] == c["other_query"] + c["other_decision"]
        assert (tmp_path / route / "agent_tree" / "run1.jsonl").exists()
        assert row["results"].endswith(route) and row["run_s"] > 0  # the run's recorded seconds
