"""The agent's decision tree (lib/designs/agent_tree.py): the agent's own path replayed from its
record, a search asked for where the model stopped (search branch only), the chain on to the cap."""
from fakes import ListSearcher, ScriptedLLM

from lib.designs import PROBES, design_class, design_names
from lib.designs.agent import AgentDesign
from lib.designs.agent_tree import FORCED_KIND, OFF_PATH_KIND, SEARCH_ONLY_GRAMMAR, AgentTreeDesign, forced_query
from lib.designs.base import Question
from lib.llm import RecordedLLM
from lib.llm.records import RecordStore, decoding_of
from lib.search.fusion import rrf

TITLES = {i: f"Title {i}" for i in ["a1", "a2", "b1", "b2", "c1", "c2", "x1", "x2", "x3", "x4", "x5", "x6"]}
Q = Question("q1", "the question", "b1")
LISTS = {"the question": ["a1", "a2"], "query two": ["b1", "b2"], "query three": ["c1", "c2"]}
STOP = '{"match": 1, "decision": "stop"}'


def search(q):
    return '{"match": 0, "decision": "search", "query": "%s"}' % q


def tree(replies, style="local", max_searches=3):
    llm = ScriptedLLM(replies)
    return AgentTreeDesign(ListSearcher(LISTS), llm, TITLES, style, max_searches=max_searches), llm


def test_stop_at_first_decision_asks_for_a_search_and_goes_on_to_the_cap():
    design, llm = tree([STOP, search("query two"), STOP, search("query three")])
    r = design.retrieve(Q, run=1)
    # the agent as run: it stopped after the question's search
    assert (r.searches, r.queries, r.stop_reason) == (1, ["the question"], "stop")
    assert r.ranked_ids == ["a1", "a2"]
    d = r.details
    assert d["chain_queries"] == ["the question", "query two", "query three"]
    assert d["chain_lists"] == [LISTS["the question"], LISTS["query two"], LISTS["query three"]]
    assert d["path_searches"] == 1
    assert [(s["searches"], s["on_path"], s["decision"], s.get("forced", False)) for s in d["decisions"]] == \
        [(1, True, "stop", True), (2, False, "stop", True)]
    kinds = [q.kind for q in llm.requests]
    assert kinds == ["agent", FORCED_KIND, OFF_PATH_KIND, FORCED_KIND]
    # the forced requests are the same state with only the search branch open
    assert llm.requests[1].messages == llm.requests[0].messages and llm.requests[1].grammar == SEARCH_ONLY_GRAMMAR
    assert "root ::= search" in SEARCH_ONLY_GRAMMAR and "stop |" not in SEARCH_ONLY_GRAMMAR
    assert r.llm_calls == 4


def test_the_models_own_search_off_the_path_needs_no_forcing():
    design, llm = tree([STOP, search("query two"), search("query three")])
    r = design.retrieve(Q)
    assert r.details["chain_queries"] == ["the question", "query two", "query three"]
    assert [s["decision"] for s in r.details["decisions"]] == ["stop", "search"]
    assert "forced" not in r.details["decisions"][1]
    assert [q.kind for q in llm.requests] == ["agent", FORCED_KIND, OFF_PATH_KIND]


def test_a_path_that_reaches_the_cap_is_the_agents_own_and_asks_nothing_more():
    design, llm = tree([search("query two"), search("query three")])
    r = design.retrieve(Q)
    assert r.searches == 3 and r.stop_reason == "cap" and r.details["path_searches"] == 3
    assert r.ranked_ids == [d for d, _ in rrf([LISTS[q] for q in r.queries], 60)]
    assert [q.kind for q in llm.requests] == ["agent", "agent"]


def test_stop_at_the_second_decision_is_forced_once():
    design, llm = tree([search("query two"), STOP, search("query three")])
    r = design.retrieve(Q)
    assert r.searches == 2 and r.queries == ["the question", "query two"]
    assert r.ranked_ids == [d for d, _ in rrf([LISTS["the question"], LISTS["query two"]], 60)]
    assert r.details["chain_queries"][-1] == "query three"
    assert [q.kind for q in llm.requests] == ["agent", "agent", FORCED_KIND]


def test_a_forced_reply_without_a_query_ends_the_chain_and_says_why():
    design, _ = tree([STOP, STOP])
    r = design.retrieve(Q)
    assert r.details["chain_queries"] == ["the question"] and r.details["chain_ended"] == "stopped anyway"
    assert forced_query(search("x")) == ("x", "") and forced_query("nonsense")[0] is None


def test_without_a_grammar_the_search_is_asked_in_words():
    design, llm = tree([STOP, search("query two"), STOP, search("query three")], style="anthropic")
    design.retrieve(Q)
    forced = llm.requests[1]
    assert forced.grammar is None and forced.messages[-1][1].startswith(llm.requests[0].messages[-1][1])
    assert "Do not stop here" in forced.messages[-1][1]


def test_the_path_replays_the_agents_own_record(tmp_path):
    """The agent's saved decisions answer the tree's path: only the calls off it reach the model."""
    store = RecordStore(tmp_path)
    agent = AgentDesign(ListSearcher(LISTS), RecordedLLM(ScriptedLLM([STOP]), store, backend_name="local", model="m"),
                        TITLES, "local")
    assert agent.retrieve(Q, run=1).searches == 1
    model = ScriptedLLM([search("query two"), STOP, search("query three")])
    design = AgentTreeDesign(ListSearcher(LISTS), RecordedLLM(model, store, backend_name="local", model="m"),
                             TITLES, "local")
    r = design.retrieve(Q, run=1)
    assert [q.kind for q in model.requests] == [FORCED_KIND, OFF_PATH_KIND, FORCED_KIND]
    assert r.details["chain_queries"] == ["the question", "query two", "query three"]
    assert store.count("agent") == 1 and store.count(FORCED_KIND) == 2 and store.count(OFF_PATH_KIND) == 1


def test_a_probe_is_no_scored_design():
    assert "agent_tree" not in design_names() and design_class("agent_tree") is PROBES["agent_tree"]


def test_decoding_of_a_record():
    assert decoding_of({"response": {"backend": "local", "decoding": "fast"}}) == "fast"
    assert decoding_of({"response": {"backend": "local"}, "recorded_at": "2026-12-01T19:00:00Z"}) == "token"
    assert decoding_of({"response": {"backend": "local"}, "recorded_at": "2026-12-03T10:00:00Z"}) == "fast"
    assert decoding_of({"response": {"backend": "anthropic"}}) == "server"
