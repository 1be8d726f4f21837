"""Prompts of the two LLM designs: the article's instructions, and the local model's variant.

The fixed instructions sit in the system prompt and the per-question parts in the user message,
so a backend that reuses a processed prompt prefix (llama.cpp) pays for the instructions once.
Every request ends with a user turn (the current Claude models take no assistant prefill); the
Anthropic agent request asks for its JSON decision at the end of that user turn.
The local 1.5B model also needed worked examples and a grammar to follow the instructions; every
difference from the article's prompts is listed in ``PROMPT_DIFFERENCES``.
"""
from __future__ import annotations

# ---------------------------------------------------------------- multiquery
REWRITE_SYSTEM = ("You rewrite research questions into search queries for a collection of arXiv paper abstracts. "
                  "Write 3 different versions of the question, each one a search query that could find the paper "
                  "that answers it. One per line, no numbering, nothing else.")
REWRITE_USER = "Question: {question}"

# local variant: one worked example before the question, output constrained to 3 lines
REWRITE_EXAMPLE_Q = ("Is there work on making small language models better at following multi-step "
                     "instructions without collecting new human annotations?")
REWRITE_EXAMPLE_A = ("self-generated instruction data for small language models\n"
                     "improving multi-step instruction following without human labels\n"
                     "synthetic training data to teach compact LLMs complex instructions")
REWRITE_GRAMMAR = r'''root ::= line "\n" line "\n" line
line ::= [^\n]{8,120}
'''

# ---------------------------------------------------------------- agent
# The article's agent instructions in two parts: the task (system prompt) and the JSON decision
# asked for. The Anthropic requests ask for the decision at the end of the user turn (the current
# models take no assistant prefill, so the reply format is asked for where the model answers);
# AGENT_SYSTEM, the two joined, is the text the local variant is derived from, unchanged.
AGENT_TASK = ("You are a research assistant searching a collection of arXiv paper abstracts for the one paper "
              "that answers a question. You see the question, the searches made so far and the titles of the "
              "top 5 results of the last search.")
AGENT_DECISION = ('If one of these titles is the paper that answers the question, reply {"decision":"stop"}. '
                  'Otherwise reply {"decision":"search","query":"<a new search query>"}. Reply with JSON only.')
AGENT_SYSTEM = AGENT_TASK + " " + AGENT_DECISION
AGENT_USER = "Question: {question}\nSearches so far: {queries}\nTop 5 titles from the last search:\n{titles}"
AGENT_ANTHROPIC_SYSTEM = AGENT_TASK


def agent_anthropic_user(user: str) -> str:
    """The Anthropic agent's user turn: the filled-in AGENT_USER, then the decision asked for."""
    return user + "\n\n" + AGENT_DECISION


FIRST_SEARCH = "1 (the question as written)"

# local variant: the reply first names the matching title number (0 = none), then the decision
AGENT_LOCAL_SYSTEM = AGENT_SYSTEM.replace(
    'reply {"decision":"stop"}. Otherwise reply {"decision":"search","query":"<a new search query>"}.',
    'reply {"match": <its number>, "decision": "stop"}. Otherwise reply '
    '{"match": 0, "decision": "search", "query": "<a new search query>"}.')
AGENT_EXAMPLES: tuple[tuple[str, str], ...] = (
    (AGENT_USER.format(
        question="Which paper trains a retriever for code search using only unit tests as the reward signal?",
        queries=FIRST_SEARCH,
        titles=("1. Test-Driven Reinforcement Learning for Code Retrieval Models\n"
                "2. A Survey of Code Generation Benchmarks\n3. Unit Test Generation with Large Language Models\n"
                "4. Contrastive Pretraining for Source Code Search\n5. Reward Hacking in Program Synthesis")),
     '{"match": 1, "decision": "stop"}'),
    (AGENT_USER.format(
        question="How can hospitals detect when a deployed diagnostic model starts failing because patient data shifts?",
        queries=FIRST_SEARCH,
        titles=("1. Federated Learning for Medical Imaging\n2. Privacy Risks of Clinical Language Models\n"
                "3. A Benchmark for Radiology Report Generation\n4. Fairness Audits of Triage Algorithms\n"
                "5. Synthetic Patient Records with Diffusion Models")),
     '{"match": 0, "decision": "search", "query": "monitoring dataset shift in deployed clinical prediction models"}'),
)
AGENT_GRAMMAR = r'''root ::= stop | search
stop ::= "{\"match\": " [1-5] ", \"decision\": \"stop\"}"
search ::= "{\"match\": 0, \"decision\": \"search\", \"query\": \"" qchar{3,120} "\"}"
qchar ::= [^"\\\n]
'''

PROMPT_DIFFERENCES = {
    "anthropic": ("The article's instructions (lib/llm/prompts.py: REWRITE_SYSTEM; AGENT_TASK as the system prompt "
                  "and AGENT_DECISION, the JSON reply asked for, at the end of the user turn), no examples, no grammar, "
                  "no assistant prefill: every request ends with a user turn."),
    "local": ("Multiquery: one worked example (question -> 3 lines) before the question; output constrained by a "
              "grammar to exactly 3 lines of 8-120 characters. Agent: two worked examples (one stop, one search); "
              "the reply first gives the number of the matching title (0 = none), constrained by a grammar; the "
              "decision and query are read from it exactly as from the article's format."),
}


def searches_so_far(queries: list[str]) -> str:
    """The searches made so far, as the agent sees them."""
    return "; ".join([FIRST_SEARCH] + [f'{i}. "{q}"' for i, q in enumerate(queries[1:], start=2)])
