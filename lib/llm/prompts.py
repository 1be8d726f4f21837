"""Prompts of the LLM designs: the article's instructions, and the local model's variant; and the
tool-calling loop's prompts, tools and grammar (beyond the article).

The fixed instructions sit in the system prompt and the per-question parts in the user message,
so a backend that reuses a processed prompt prefix (llama.cpp) pays for the instructions once.
Every request ends with a user turn (the current Claude models take no assistant prefill).
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
# The article's agent, as its code runs it (../shared/article_figures.md): the system prompt word
# for word; the user turn holds the question and every search so far (each query and the titles
# of its top 5), blocks separated by a blank line.
AGENT_SYSTEM = ("You are a research assistant finding the single arXiv paper that answers a question. After each "
                "search decide whether the results contain it. Reply with only JSON: {\"decision\": \"stop\"} or "
                "{\"decision\": \"search\", \"query\": \"<a new, different query>\"}.")
AGENT_MAX_TOKENS = 150  # the article's max_tokens for a decision
AGENT_ANTHROPIC_SYSTEM = AGENT_SYSTEM


def agent_user(question: str, searches: list[tuple[str, list[str]]]) -> str:
    """The agent's user turn in the article's layout: ``Question: ...``, then one block per search so
    far: ``Search i: "<query>"`` and its top-5 titles, each on its own line as ``  - <title>``."""
    blocks = [f"Question: {question}"]
    for i, (query, titles) in enumerate(searches, start=1):
        blocks.append("\n".join([f'Search {i}: "{query}"'] + [f"  - {t}" for t in titles[:5]]))
    return "\n\n".join(blocks)


# local variant: the article's system prompt with the reply first naming the position (1-5) of the
# matching title in the last search (0 = none), two worked examples and a grammar; the user turn
# is the article's layout unchanged
AGENT_LOCAL_SYSTEM = AGENT_SYSTEM.replace(
    'Reply with only JSON: {"decision": "stop"} or {"decision": "search", "query": "<a new, different query>"}.',
    'Reply with only JSON: {"match": <position 1-5 of that title in the last search>, "decision": "stop"} or '
    '{"match": 0, "decision": "search", "query": "<a new, different query>"}.')
AGENT_LOCAL_MAX_TOKENS = 64
AGENT_EXAMPLES: tuple[tuple[str, str], ...] = (
    (agent_user("Which paper trains a retriever for code search using only unit tests as the reward signal?",
                [("Which paper trains a retriever for code search using only unit tests as the reward signal?",
                  ["Test-Driven Reinforcement Learning for Code Retrieval Models",
                   "A Survey of Code Generation Benchmarks", "Unit Test Generation with Large Language Models",
                   "Contrastive Pretraining for Source Code Search", "Reward Hacking in Program Synthesis"])]),
     '{"match": 1, "decision": "stop"}'),
    (agent_user("How can hospitals detect when a deployed diagnostic model starts failing because patient data shifts?",
                [("How can hospitals detect when a deployed diagnostic model starts failing because patient data shifts?",
                  ["Federated Learning for Medical Imaging", "Privacy Risks of Clinical Language Models",
                   "A Benchmark for Radiology Report Generation", "Fairness Audits of Triage Algorithms",
                   "Synthetic Patient Records with Diffusion Models"])]),
     '{"match": 0, "decision": "search", "query": "monitoring dataset shift in deployed clinical prediction models"}'),
)
AGENT_GRAMMAR = r'''root ::= stop | search
stop ::= "{\"match\": " [1-5] ", \"decision\": \"stop\"}"
search ::= "{\"match\": 0, \"decision\": \"search\", \"query\": \"" qchar{3,120} "\"}"
qchar ::= [^"\\\n]
'''

PROMPT_DIFFERENCES = {
    "anthropic": ("The agent: the article's AGENT_SYSTEM word for word, max_tokens 150, the user turn holding the "
                  "question and every search so far in the article's layout. Multiquery: REWRITE_SYSTEM, written here "
                  "(the article prints no rewrite prompt). No examples, no grammar, no assistant prefill: every request "
                  "ends with a user turn. Tool-calling loop (not in the article): native tool use with the search and "
                  "read tools, one call a turn, the answer in text ending with a 'Cited:' line."),
    "local": ("Multiquery: one worked example (question -> 3 lines) before the question; output constrained by a "
              "grammar to exactly 3 lines of 8-120 characters. Agent: two worked examples (one stop, one search); "
              "the reply first gives the number of the matching title (0 = none), constrained by a grammar; the "
              "decision and query are read from it exactly as from the article's format. Tool-calling loop (not in "
              "the article): the tools spelled out as JSON calls in the system prompt, one worked example "
              "(search, read, answer; setting loop_prompt: none, or a second one that searches twice and cites "
              "two), one JSON call a turn under a grammar that lets it read or cite only papers its searches "
              "showed, its answer a third call."),
}


# ---------------------------------------------------------------- the tool-calling loop
# Beyond the article: the model drives the whole loop with two tools, search and read, and answers
# by naming the ids of the papers it relies on. The Anthropic requests use native tool use (the
# tools below, tool_use / tool_result blocks) and a final answer in text; the local model writes one
# JSON object a turn under a grammar, its answer being a third, local-only "answer" call.
LOOP_TASK = ("You are a research assistant. You search a collection of arXiv paper abstracts for the paper that "
             "answers a question, with two tools: search (the top {k} papers for a query, as [id] title) and read "
             "(one paper's abstract). Use them as often as you need, up to {max_steps} turns in all: search, read "
             "the abstracts of promising papers, search again with other words if nothing fits, and stop as soon "
             "as you are confident you have found the paper.")
LOOP_ANSWER = ("To stop, reply without a tool call: one or two sentences of answer, then a last line "
               "'Cited: <id>, <id>' with the ids of the papers the answer relies on, best first.")
LOOP_USER = "Question: {question}"
LOOP_SEARCH_DESCRIPTION = ("Search the collection of arXiv paper abstracts. Returns the top {k} papers for the "
                           "query, best first, each as [id] title.")
LOOP_READ_DESCRIPTION = "Read one paper's title and abstract, by the id that search showed."
LOOP_ANSWER_DESCRIPTION = "End the search: the ids of the papers that answer the question, best first."
LOOP_FINAL = {  # the code's last user turn when a cap ends the loop (the forced final answer)
    "step_cap": "That was your last tool call: the turn limit is reached.",
    "token_budget": "The token budget is nearly spent: no more tool calls.",
}
LOOP_FINAL_ANSWER = {
    "anthropic": "Answer now from what you have found, without a tool call: its last line 'Cited: <id>, <id>'.",
    "local": 'Answer now from what you have found: {"tool": "answer", "ids": [...]}.',
}


def loop_tools(k: int, local: bool) -> tuple[dict, ...]:
    """The loop's tool definitions (Messages API shape); the local protocol adds its answer call."""
    tools = (
        {"name": "search", "description": LOOP_SEARCH_DESCRIPTION.format(k=k),
         "input_schema": {"type": "object", "properties": {"query": {"type": "string", "description": "the search query"}},
                          "required": ["query"]}},
        {"name": "read", "description": LOOP_READ_DESCRIPTION,
         "input_schema": {"type": "object",
                          "properties": {"paper_id": {"type": "string", "description": "a paper id as search shows it"}},
                          "required": ["paper_id"]}},
    )
    if local:
        tools += ({"name": "answer", "description": LOOP_ANSWER_DESCRIPTION,
                   "input_schema": {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
                                    "required": ["ids"]}},)
    return tools


def loop_search_result(query: str, hits: list[tuple[str, str]]) -> str:
    """What the search tool returns to the model: the query and its top hits as [id] title."""
    lines = [f"{i}. [{pid}] {title}" for i, (pid, title) in enumerate(hits, start=1)]
    return f'Top {len(hits)} for "{query}":\n' + ("\n".join(lines) if lines else "(no papers)")


def loop_read_result(pid: str, title: str, abstract: str) -> str:
    """What the read tool returns to the model: the paper's id, title and abstract."""
    return f"[{pid}] {title}\n{abstract}"


def loop_anthropic_system(k: int, max_steps: int) -> str:
    return LOOP_TASK.format(k=k, max_steps=max_steps) + " " + LOOP_ANSWER


# local variant: the tools spelled out as the JSON objects the grammar allows, and worked examples
# (one by default; loop_prompt chooses none, one or two)
LOOP_LOCAL_CALLS = ('Each turn, reply with exactly one JSON object:\n'
                    '{"tool": "search", "query": "<search query>"} searches the collection;\n'
                    '{"tool": "read", "paper_id": "<id>"} reads that paper\'s abstract;\n'
                    '{"tool": "answer", "ids": ["<id>", ...]} ends the search: the ids of the papers that answer '
                    'the question, best first.')


def loop_local_system(k: int, max_steps: int) -> str:
    return LOOP_TASK.format(k=k, max_steps=max_steps) + "\n" + LOOP_LOCAL_CALLS


LOOP_EXAMPLE: tuple[tuple[str, str], ...] = (
    ("user", LOOP_USER.format(question="Which paper detects dataset shift in deployed clinical prediction models "
                                       "without labels?")),
    ("assistant", '{"tool": "search", "query": "label-free detection of dataset shift in clinical models"}'),
    ("user", loop_search_result("label-free detection of dataset shift in clinical models", [
        ("2601.01234", "Federated Learning for Medical Imaging"),
        ("2601.04321", "Unsupervised Monitoring of Deployed Clinical Risk Models under Dataset Shift"),
        ("2601.00777", "A Benchmark for Radiology Report Generation"),
        ("2601.02468", "Fairness Audits of Triage Algorithms"),
        ("2601.01357", "Synthetic Patient Records with Diffusion Models")])),
    ("assistant", '{"tool": "read", "paper_id": "2601.04321"}'),
    ("user", loop_read_result("2601.04321", "Unsupervised Monitoring of Deployed Clinical Risk Models under Dataset "
                              "Shift", "Clinical prediction models degrade when patient populations change. We detect "
                              "such shift without outcome labels by tracking the model's input and output "
                              "distributions, and flag failing models weeks before labels arrive.")),
    ("assistant", '{"tool": "answer", "ids": ["2601.04321"]}'),
)


# a second, contrasting worked example (loop_prompt "two_examples"): the first search does not show
# the paper, the model searches again with other words, reads, and cites two papers, best first
LOOP_EXAMPLE_SEARCH_AGAIN: tuple[tuple[str, str], ...] = (
    ("user", LOOP_USER.format(question="Which paper speeds up long-context inference by merging similar entries of "
                                       "the key-value cache instead of evicting them?")),
    ("assistant", '{"tool": "search", "query": "key-value cache eviction for long-context inference"}'),
    ("user", loop_search_result("key-value cache eviction for long-context inference", [
        ("2601.03112", "Heavy Hitters and Attention Sinks: Which Tokens to Evict from the KV Cache"),
        ("2601.02290", "Quantizing the Key-Value Cache to Two Bits"),
        ("2601.04863", "Sparse Attention Kernels for Long Documents"),
        ("2601.01646", "Position Interpolation for Longer Context Windows"),
        ("2601.03958", "A Survey of Efficient Transformer Inference")])),
    ("assistant", '{"tool": "search", "query": "merging similar tokens in the KV cache instead of dropping them"}'),
    ("user", loop_search_result("merging similar tokens in the KV cache instead of dropping them", [
        ("2601.05206", "Merge, Don't Drop: Similarity-Based Key-Value Cache Compression"),
        ("2601.04417", "Clustering Key-Value States for Memory-Efficient Long-Context Decoding"),
        ("2601.03112", "Heavy Hitters and Attention Sinks: Which Tokens to Evict from the KV Cache"),
        ("2601.02733", "Token Merging for Vision Transformers"),
        ("2601.03958", "A Survey of Efficient Transformer Inference")])),
    ("assistant", '{"tool": "read", "paper_id": "2601.05206"}'),
    ("user", loop_read_result("2601.05206", "Merge, Don't Drop: Similarity-Based Key-Value Cache Compression",
                              "Evicting key-value entries loses information that long-context tasks need later. We "
                              "instead merge each new entry into its most similar retained entry, keeping the cache "
                              "within a fixed memory budget, and match full-cache accuracy on long-document question "
                              "answering at a quarter of the memory.")),
    ("assistant", '{"tool": "answer", "ids": ["2601.05206", "2601.04417"]}'),
)

# the local prompt's variants (profile setting loop_prompt, chosen on the dev set: docs/loop.md): the
# worked examples before the question; the system prompt is the same in all three
LOOP_PROMPTS: dict[str, tuple[tuple[str, str], ...]] = {
    "one_example": LOOP_EXAMPLE,                                  # search, read, answer citing one id
    "no_example": (),                                             # the system prompt alone
    "two_examples": LOOP_EXAMPLE + LOOP_EXAMPLE_SEARCH_AGAIN,     # and one that searches twice, cites two
}
LOOP_PROMPT_DEFAULT = "one_example"


def loop_examples(prompt: str, local: bool) -> tuple[tuple[str, str], ...]:
    """The worked examples a loop's conversation opens with: the local prompt's variant ``prompt``;
    the Claude prompt (``local`` False) has none, so there the three variants are the same prompt."""
    if prompt not in LOOP_PROMPTS:
        raise ValueError(f"loop_prompt must be one of {', '.join(LOOP_PROMPTS)}, got {prompt!r}")
    return LOOP_PROMPTS[prompt] if local else ()


def loop_grammar(ids: list[str], final: bool = False) -> str:
    """GBNF for one local turn: a search, a read of a paper shown so far, or the answer citing up to 5
    of them (``final``: the answer only). Only ids the searches have shown can be read or cited."""
    quoted = " | ".join('"\\"' + i + '\\""' for i in dict.fromkeys(ids))
    rules = []
    if final:
        rules.append("root ::= answer")
    else:
        rules.append("root ::= search | " + ("read | answer" if ids else "answer"))
        rules.append('search ::= "{\\"tool\\": \\"search\\", \\"query\\": \\"" qchar{3,120} "\\"}"')
        rules.append("qchar ::= [^\"\\\\\\n]")
    if ids:
        rules.append('read ::= "{\\"tool\\": \\"read\\", \\"paper_id\\": " id "}"')
        rules.append('answer ::= "{\\"tool\\": \\"answer\\", \\"ids\\": [" (id (", " id){0,4})? "]}"')
        rules.append("id ::= " + quoted)
    else:
        rules.append('answer ::= "{\\"tool\\": \\"answer\\", \\"ids\\": []}"')
    return "\n".join(rules) + "\n"
