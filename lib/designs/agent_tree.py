"""The agent's decision tree: what the model would have searched where it stopped, measured.

The agent runs as usual (its decisions are the agent's own requests, so a run replays the agent's
saved run of the same number and extends it). At every decision where the model stops before the
cap, it is asked once more from the same state with only the search branch of its reply open (the
search-only contract of :mod:`lib.llm.contract`: the grammar's ``search`` rule, sent to a served model
by the same route as every decision, a grammar or a schema whose decision is "search"; a model under no
contract, the article's prompt, is asked with one added sentence), and the
chain goes on from that query to the cap the same way: the model decides at every state it
reaches, and is made to search only where it stopped. Each question then holds one chain of
leaves, stop after 1, 2, ... ``max_searches`` searches, every query the model's own.

The result's ``ranked_ids``, ``queries`` and ``stop_reason`` are the agent's as run (the chain's
first ``details["path_searches"]`` searches); ``details`` holds the whole chain: every query, its
list (50 deep), and at each state the model's decision and whether the state was on the agent's
own path. Off the path the model's ordinary decisions are recorded as ``agent_tree`` calls and the
searches it was made to write as ``agent_tree_search`` calls, so the agent's own record stays the
record of what the agent did. Not a scored design: the evaluation reads its chains
(:mod:`lib.evaluation.why_paths`, :mod:`lib.evaluation.judges`)."""
from __future__ import annotations

import time

from ..llm import LLMRequest
from ..llm.contract import SEARCH_ONLY_GRAMMAR
from ..search.fusion import rrf
from .agent import AgentDesign, next_query, parse_decision
from .base import DEPTH, LLMUse, Question, Result

# a model under no contract (the article's prompt: the Messages API, a served model with no constraint) is asked in words
SEARCH_ONLY_NOTE = ('Do not stop here: reply with only JSON {"decision": "search", "query": '
                    '"<a new, different query>"}.')
PATH_KIND, OFF_PATH_KIND, FORCED_KIND = "agent", "agent_tree", "agent_tree_search"


def forced_query(reply: str) -> tuple[str | None, str]:
    """The query of a reply asked with only the search branch open: (query, "") or (None, why none).
    A query equal to the current one is kept (it is what the model wrote); only a reply with no
    query at all ends the chain."""
    decision, value = parse_decision(reply)
    if decision == "search" and value:
        return value, ""
    return None, ("empty query" if decision == "search" else value if decision == "malformed" else "stopped anyway")


class AgentTreeDesign(AgentDesign):
    name = "agent_tree"
    uses_llm = True
    record_kind = FORCED_KIND  # its runs: those whose searches-where-it-stopped are recorded (its path replays the agent's)
    scored = False  # the report reads its chains, never scores it as a design

    def search_request(self, question: Question, queries: list[str], lists: list[list[str]], run: int) -> LLMRequest:
        """The same state's request with only the search branch open."""
        base = self.request(question, queries, lists, run, kind=FORCED_KIND)
        if base.grammar:
            return LLMRequest(FORCED_KIND, base.system, base.messages, base.max_tokens, base.temperature, run,
                              SEARCH_ONLY_GRAMMAR, label=question.qid)
        *head, (role, user) = base.messages
        return LLMRequest(FORCED_KIND, base.system, (*head, (role, f"{user}\n\n{SEARCH_ONLY_NOTE}")),
                          base.max_tokens, base.temperature, run, label=question.qid)

    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = LLMUse(self.llm)
        queries = [question.text]
        lists = [[h.id for h in self.searcher.search(question.text, self.k)]]
        decisions: list[dict] = []
        path_searches, reason, ended = 0, "cap", ""
        while len(queries) < self.max_searches:
            on_path = path_searches == 0
            reply = use(self.request(question, queries, lists, run, kind=PATH_KIND if on_path else OFF_PATH_KIND))
            value, why = next_query(use, reply, queries)
            state = {"searches": len(queries), "on_path": on_path, "decision": "search" if value else "stop",
                     "why": why, "decoding": use.last_decoding}
            if value is None:
                if on_path:
                    path_searches, reason = len(queries), why
                value, ended = forced_query(use(self.search_request(question, queries, lists, run)))
                state.update(forced=True, forced_decoding=use.last_decoding)
            decisions.append(state)
            if value is None:
                break
            queries.append(value)
            lists.append([h.id for h in self.searcher.search(value, self.k)])
        path_searches = path_searches or len(queries)
        fused = [d for d, _ in rrf(lists[:path_searches], self.rrf_k)][:DEPTH]
        res = Result(question.qid, self.name, run, fused, path_searches, queries[:path_searches], 0.0,
                     stop_reason=reason, provenance=self.provenance,
                     details={"chain_queries": queries, "chain_lists": [ids[:DEPTH] for ids in lists],
                              "decisions": decisions, "path_searches": path_searches,
                              **({"chain_ended": ended} if ended else {})})
        return use.fill(res, start)
