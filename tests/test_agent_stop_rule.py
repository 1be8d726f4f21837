"""The agent's stop rule reads the reply's text whatever its stop reason, as the article's code does:
a reply cut at max_tokens that holds a valid new query searches on; one that ends the loop is named
by its stop reason. On recorded Messages API replies (tests/data/anthropic_*.json) through the
Anthropic backend with a fake client."""
from types import SimpleNamespace

import pytest

from lib.designs import Question
from lib.designs.agent import AgentDesign, next_query
from lib.llm import RecordedLLM, RecordStore
from lib.llm.anthropic_backend import AnthropicBackend
from tests.fakes import FakeClient, ListSearcher, reply_body

Q = Question("q001", "How should LLM search agents spend a limited rollout budget?", "2607.06223")
TITLES = {i: f"Title {i}" for i in ["a", "b", "c", "d", "e", "f", "x1", "x2", "x3", "x4", "x5", "x6"]}
NEW = "rollout budget allocation by information gain for LLM search agents"


def cut_reply(text: str) -> dict:
    body = reply_body("agent_thinking")
    body["content"] = [{"type": "text", "text": text}]
    body["stop_reason"] = "max_tokens"
    return body


def agent(tmp_path, *replies):
    client = FakeClient(*replies)
    llm = RecordedLLM(AnthropicBackend("claude-haiku-5-5", client=client), RecordStore(tmp_path),
                      backend_name="anthropic", model="claude-haiku-5-5")
    searcher = ListSearcher({Q.text: ["a", "b", "c", "d", "e", "f"], NEW: ["f", "e", "d"]})
    return AgentDesign(searcher, llm, TITLES, "anthropic"), searcher


def test_a_cut_reply_with_a_valid_new_query_searches_on(tmp_path):
    design, searcher = agent(tmp_path, cut_reply('{"decision": "search", "query": "' + NEW + '"}\nThe first '
                                                 'search showed titles about'), "agent_stop")
    r = design.retrieve(Q)
    assert searcher.calls == [Q.text, NEW]
    assert (r.stop_reason, r.searches, r.llm_calls, r.queries) == ("stop", 2, 2, [Q.text, NEW])
    # the new query's list is fused in (RRF, k = 60): f 1/66 + 1/61 and e 1/65 + 1/62 pass a's 1/61
    assert r.ranked_ids[:3] == ["f", "e", "d"]


def test_a_cut_reply_that_ends_the_loop_is_named_by_its_stop_reason(tmp_path):
    design, searcher = agent(tmp_path, cut_reply('{"decision":"search","query":"rollout budget alloc'))
    r = design.retrieve(Q)
    assert (r.stop_reason, r.searches, searcher.calls) == ("max_tokens", 1, [Q.text])


@pytest.mark.parametrize("reply,stop,expected", [
    ('{"decision": "search", "query": "new words"} and then', "max_tokens", ("new words", "")),
    ('{"decision": "search", "query": "new words"}', "", ("new words", "")),
    ('{"decision": "search", "query": " the question "}', "max_tokens", (None, "max_tokens")),
    ('{"decision": "search", "query": " the question "}', "end_turn", (None, "repeated query")),
    ('{"decision": "stop"}', "max_tokens", (None, "max_tokens")),
    ('{"decision": "stop"}', "end_turn", (None, "stop")),
    ('{"decision": "search", "query": ""}', "", (None, "empty query")),
    ("", "refusal", (None, "refusal")),
    ("", "end_turn", (None, "malformed: no JSON object in reply")),
])
def test_next_query_follows_the_articles_rule_and_names_an_incomplete_stop(reply, stop, expected):
    assert next_query(SimpleNamespace(stop_reason=stop), reply, ["the question"]) == expected
