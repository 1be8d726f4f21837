"""Prompts of the LLM designs: the article's instructions, and the local model's variant; and the
tool-calling loop's prompts, tools and grammar (beyond the article).

The fixed instructions sit in the system prompt and the per-question parts in the user message,
so a backend that reuses a processed prompt prefix (llama.cpp) pays for the instructions once.
Every request ends with a user turn (the current Claude models take no assistant prefill).
The local 1.5B model also needed worked examples and a grammar to follow the instructions; every
difference from the article's prompts is listed in ``PROMPT_DIFFERENCES``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


# ---------------------------------------------------------------- what the documents are called
@dataclass(frozen=True)
class Corpus:
    """What the prompts call the documents searched. The arXiv study's prompts speak of arXiv paper
    abstracts (:data:`ARXIV`, the article's words); a study of other documents gets
    :func:`corpus_of` its own short description (setting ``corpus_description``, default
    "documents") and plain words for the rest, so no prompt of it speaks of papers or abstracts
    unless its description does."""

    description: str      # the collection, plural: "a collection of <description>"
    item: str             # one document
    items: str            # several
    named_item: str       # one document in the agent's instruction ("the single <named_item> that answers")
    text: str             # what a read shows of one, plural where the loop reads several ("abstracts")
    read_what: str        # what one read returns, as the loop's instructions name it
    assistant: str        # who the model is asked to be
    questions: str        # what the rewriter rewrites
    id_arg: str           # the read tool's argument


ARXIV = Corpus(description="arXiv paper abstracts", item="paper", items="papers", named_item="arXiv paper",
               text="abstract", read_what="one paper's abstract", assistant="a research assistant",
               questions="research questions", id_arg="paper_id")
ARXIV_KEYWORD = "arxiv"          # corpus_description: arxiv chooses the article's words (:data:`ARXIV`)
DEFAULT_DESCRIPTION = "documents"  # a study's description when it gives none


def corpus_of(description: str | None) -> Corpus:
    """The wording of a collection described as ``description`` (plural, e.g. "maintenance reports
    of wind turbines"); ``arxiv`` (any case) is the article's own wording, :data:`ARXIV`."""
    text = " ".join(str(description or DEFAULT_DESCRIPTION).split())
    if text.lower() == ARXIV_KEYWORD:
        return ARXIV
    return Corpus(description=text, item="document", items="documents", named_item="document",
                  text="passages", read_what="the passages of one document that match the searches",
                  assistant="a search assistant", questions="questions", id_arg="doc_id")


def corpus_for(profile) -> Corpus:
    """A profile's wording: its ``corpus_description``; none set, the article's for the arXiv
    collections (the snapshot, the arXiv API) and the neutral default for a study's documents."""
    description = profile.settings.get("corpus_description")
    if description is None:
        return ARXIV if profile.collection_source != "documents" else corpus_of(None)
    return corpus_of(description)


def worded(text: str, c: Corpus) -> str:
    """A text written for arXiv paper abstracts in ``c``'s words (the collection's description, its
    item for "paper", "text" for "abstract"); unchanged for :data:`ARXIV`. A ``{placeholder}`` is
    kept, so a format string may be worded before it is filled."""
    if c == ARXIV:
        return text
    out = text.replace("arXiv paper abstracts", c.description)
    for word, by in (("papers", c.items), ("paper", c.item), ("abstracts", "texts"), ("abstract", "text")):
        out = re.sub(rf"(?<![{{\w])({word}|{word.capitalize()})(?![}}\w])",
                     lambda m, by=by: by.capitalize() if m.group(1)[0].isupper() else by, out)
    return out


# ---------------------------------------------------------------- multiquery
def rewrite_system(c: Corpus = ARXIV) -> str:
    return (f"You rewrite {c.questions} into search queries for a collection of {c.description}. "
            f"Write 3 different versions of the question, each one a search query that could find the {c.item} "
            "that answers it. One per line, no numbering, nothing else.")


REWRITE_SYSTEM = rewrite_system(ARXIV)
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
# The article's agent, as its code runs it (the article's companion repository): the system prompt word
# for word; the user turn holds the question and every search so far (each query and the titles
# of its top 5), blocks separated by a blank line.
def agent_system(c: Corpus = ARXIV) -> str:
    return (f"You are {c.assistant} finding the single {c.named_item} that answers a question. After each "
            "search decide whether the results contain it. Reply with only JSON: {\"decision\": \"stop\"} or "
            "{\"decision\": \"search\", \"query\": \"<a new, different query>\"}.")


AGENT_SYSTEM = agent_system(ARXIV)
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
def agent_local_system(c: Corpus = ARXIV) -> str:
    return agent_system(c).replace(
        'Reply with only JSON: {"decision": "stop"} or {"decision": "search", "query": "<a new, different query>"}.',
        'Reply with only JSON: {"match": <position 1-5 of that title in the last search>, "decision": "stop"} or '
        '{"match": 0, "decision": "search", "query": "<a new, different query>"}.')


AGENT_LOCAL_SYSTEM = agent_local_system(ARXIV)
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


def agent_examples(c: Corpus = ARXIV) -> tuple[tuple[str, str], ...]:
    """The local agent's worked examples, their questions asking for ``c``'s item."""
    return AGENT_EXAMPLES if c == ARXIV else tuple((_worded(u, c), a) for u, a in AGENT_EXAMPLES)


def _worded(text: str, c: Corpus) -> str:
    """An arXiv worked example's text in ``c``'s words (its "Which paper ..." question)."""
    return text.replace("Which paper ", f"Which {c.item} ")
AGENT_GRAMMAR = r'''root ::= stop | search
stop ::= "{\"match\": " [1-5] ", \"decision\": \"stop\"}"
search ::= "{\"match\": 0, \"decision\": \"search\", \"query\": \"" qchar{3,120} "\"}"
qchar ::= [^"\\\n]
'''

# ---------------------------------------------------------------- query strategies beyond the article
# Sub-question decomposition (LlamaIndex's sub-question query engine; Self-Ask, Press et al. 2022;
# least-to-most prompting, Zhou et al. 2022): the model splits the question into one search query per
# part, up front; and HyDE (Gao et al. 2022): the model writes a short hypothetical abstract, which
# dense search embeds beside the question. Neither is in the article; both prompts are written here.
def decompose_system(c: Corpus = ARXIV) -> str:
    return (f"You split {c.questions} into search queries for a collection of {c.description}. A question may ask "
            f"about one thing or combine several parts that different {c.items} answer. Write one search query for "
            "each part: one query for a single-part question, two or three for a question with two or three parts. "
            "One per line, no numbering, nothing else.")


DECOMPOSE_USER = "Question: {question}"
DECOMPOSE_MAX_TOKENS = 160
# local variant: two worked examples (a single-part question -> 1 line, a two-part one -> 2 lines), the
# output constrained to 1-3 lines
DECOMPOSE_EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Is there work on making small language models better at following multi-step instructions without "
     "collecting new human annotations?",
     "self-generated instruction data to improve multi-step instruction following of small language models"),
    ("Which method prunes attention heads of vision transformers without retraining, and how do diffusion "
     "models get evaluated for memorising their training images?",
     "pruning attention heads of vision transformers without retraining\n"
     "detecting memorisation of training images in diffusion models"),
)
DECOMPOSE_GRAMMAR = r'''root ::= line ("\n" line)? ("\n" line)?
line ::= [^\n]{8,160}
'''


def hyde_system(c: Corpus = ARXIV) -> str:
    return (f"You write the {c.text} of a {c.item} that would answer a question, for search over a collection of "
            f"{c.description}. Write a short {c.text} (two or three sentences) as if that {c.item} existed: what it "
            "does, how, and what it finds. One paragraph, nothing else.")


HYDE_USER = "Question: {question}"
HYDE_MAX_TOKENS = 120
HYDE_EXAMPLE_Q = DECOMPOSE_EXAMPLES[0][0]
HYDE_EXAMPLE_A = ("We show that small language models can learn to follow multi-step instructions from data they "
                  "generate themselves. The model writes complex instructions and responses, filters them with its "
                  "own consistency checks and is fine-tuned on the result, improving instruction-following benchmarks "
                  "without any new human annotation.")
HYDE_GRAMMAR = r'''root ::= [^\n]{40,900}
'''

PROMPT_DIFFERENCES = {
    "anthropic": ("The agent: the article's AGENT_SYSTEM word for word, max_tokens 150, the user turn holding the "
                  "question and every search so far in the article's layout. Multiquery: REWRITE_SYSTEM, written here "
                  "(the article prints no rewrite prompt). No examples, no grammar, no assistant prefill: every request "
                  "ends with a user turn. Tool-calling loop (not in the article): native tool use with the search and "
                  "read tools, one call a turn, the answer in text ending with a 'Cited:' line. Sub-question decomposition "
                  "and HyDE (not in the article): their prompts are written here, no examples, no grammar."),
    "local": ("Multiquery: one worked example (question -> 3 lines) before the question; output constrained by a "
              "grammar to exactly 3 lines of 8-120 characters. Agent: two worked examples (one stop, one search); "
              "the reply first gives the number of the matching title (0 = none), constrained by a grammar; the "
              "decision and query are read from it exactly as from the article's format. Tool-calling loop (not in "
              "the article): the tools spelled out as JSON calls in the system prompt, one worked example "
              "(search, read, answer; setting loop_prompt: none, or a second one that searches twice and cites "
              "two), one JSON call a turn under a grammar that lets it read or cite only papers its searches "
              "showed, its answer a third call. Sub-question decomposition and HyDE (not in the article): their "
              "prompts are written here; locally decomposition gets two worked examples (a single-part and a "
              "two-part question) and a grammar of 1-3 lines of 8-160 characters, HyDE one worked example and a "
              "grammar of one paragraph."),
}


# ---------------------------------------------------------------- the tool-calling loop
# Beyond the article: the model drives the whole loop with two tools, search and read, and answers
# by naming the ids of the papers it relies on. The Anthropic requests use native tool use (the
# tools below, tool_use / tool_result blocks) and a final answer in text; the local model writes one
# JSON object a turn under a grammar, its answer being a third, local-only "answer" call.
def loop_task(c: Corpus = ARXIV) -> str:
    """The loop's task; ``{k}`` and ``{max_steps}`` left to fill."""
    return (f"You are {c.assistant}. You search a collection of {c.description} for the {c.item} that "
            f"answers a question, with two tools: search (the top {{k}} {c.items} for a query, as [id] title) and read "
            f"({c.read_what}). Use them as often as you need, up to {{max_steps}} turns in all: search, read "
            f"the {_plural(c.text)} of promising {c.items}, search again with other words if nothing fits, and stop as "
            f"soon as you are confident you have found the {c.item}.")


def _plural(text: str) -> str:
    return text if text.endswith("s") else text + "s"


def loop_answer(c: Corpus = ARXIV) -> str:
    return ("To stop, reply without a tool call: one or two sentences of answer, then a last line "
            f"'Cited: <id>, <id>' with the ids of the {c.items} the answer relies on, best first.")


def loop_search_description(c: Corpus = ARXIV) -> str:
    """The search tool's description; ``{k}`` left to fill."""
    return (f"Search the collection of {c.description}. Returns the top {{k}} {c.items} for the "
            "query, best first, each as [id] title.")


def loop_read_description(c: Corpus = ARXIV) -> str:
    if c == ARXIV:
        return "Read one paper's title and abstract, by the id that search showed."
    return f"Read {c.read_what}, with its title, by the id that search showed."


def loop_answer_description(c: Corpus = ARXIV) -> str:
    return f"End the search: the ids of the {c.items} that answer the question, best first."


LOOP_TASK = loop_task(ARXIV)
LOOP_ANSWER = loop_answer(ARXIV)
LOOP_USER = "Question: {question}"
LOOP_SEARCH_DESCRIPTION = loop_search_description(ARXIV)
LOOP_READ_DESCRIPTION = loop_read_description(ARXIV)
LOOP_ANSWER_DESCRIPTION = loop_answer_description(ARXIV)
LOOP_FINAL = {  # the code's last user turn when a cap ends the loop (the forced final answer)
    "step_cap": "That was your last tool call: the turn limit is reached.",
    "token_budget": "The token budget is nearly spent: no more tool calls.",
}
LOOP_FINAL_ANSWER = {
    "anthropic": "Answer now from what you have found, without a tool call: its last line 'Cited: <id>, <id>'.",
    "local": 'Answer now from what you have found: {"tool": "answer", "ids": [...]}.',
}


def loop_tools(k: int, local: bool, c: Corpus = ARXIV) -> tuple[dict, ...]:
    """The loop's tool definitions (Messages API shape); the local protocol adds its answer call."""
    tools = (
        {"name": "search", "description": loop_search_description(c).format(k=k),
         "input_schema": {"type": "object", "properties": {"query": {"type": "string", "description": "the search query"}},
                          "required": ["query"]}},
        {"name": "read", "description": loop_read_description(c),
         "input_schema": {"type": "object",
                          "properties": {c.id_arg: {"type": "string", "description": f"a {c.item} id as search shows it"}},
                          "required": [c.id_arg]}},
    )
    if local:
        tools += ({"name": "answer", "description": loop_answer_description(c),
                   "input_schema": {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
                                    "required": ["ids"]}},)
    return tools


def loop_search_result(query: str, hits: list[tuple[str, str]], c: Corpus = ARXIV) -> str:
    """What the search tool returns to the model: the query and its top hits as [id] title."""
    lines = [f"{i}. [{pid}] {title}" for i, (pid, title) in enumerate(hits, start=1)]
    return f'Top {len(hits)} for "{query}":\n' + ("\n".join(lines) if lines else f"(no {c.items})")


def loop_read_result(pid: str, title: str, abstract: str) -> str:
    """What the read tool returns to the model: the document's id, title and the text read (an arXiv
    paper's whole abstract; a long document's passages, :func:`lib.designs.loop.read_text`)."""
    return f"[{pid}] {title}\n{abstract}"


def loop_anthropic_system(k: int, max_steps: int, c: Corpus = ARXIV) -> str:
    return loop_task(c).format(k=k, max_steps=max_steps) + " " + loop_answer(c)


# local variant: the tools spelled out as the JSON objects the grammar allows, and worked examples
# (one by default; loop_prompt chooses none, one or two)
def loop_local_calls(c: Corpus = ARXIV) -> str:
    return ('Each turn, reply with exactly one JSON object:\n'
            '{"tool": "search", "query": "<search query>"} searches the collection;\n'
            f'{{"tool": "read", "{c.id_arg}": "<id>"}} reads that {c.item}\'s {c.text};\n'
            f'{{"tool": "answer", "ids": ["<id>", ...]}} ends the search: the ids of the {c.items} that answer '
            'the question, best first.')


LOOP_LOCAL_CALLS = loop_local_calls(ARXIV)


def loop_local_system(k: int, max_steps: int, c: Corpus = ARXIV) -> str:
    return loop_task(c).format(k=k, max_steps=max_steps) + "\n" + loop_local_calls(c)


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


def loop_examples(prompt: str, local: bool, c: Corpus = ARXIV) -> tuple[tuple[str, str], ...]:
    """The worked examples a loop's conversation opens with: the local prompt's variant ``prompt``;
    the Claude prompt (``local`` False) has none, so there the three variants are the same prompt.
    Another corpus's examples ask for its item and read with its id argument."""
    if prompt not in LOOP_PROMPTS:
        raise ValueError(f"loop_prompt must be one of {', '.join(LOOP_PROMPTS)}, got {prompt!r}")
    if not local:
        return ()
    if c == ARXIV:
        return LOOP_PROMPTS[prompt]
    return tuple((role, _worded(text, c).replace('"paper_id": ', f'"{c.id_arg}": '))
                 for role, text in LOOP_PROMPTS[prompt])


def loop_grammar(ids: list[str], final: bool = False, id_arg: str = ARXIV.id_arg) -> str:
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
        rules.append('read ::= "{\\"tool\\": \\"read\\", \\"' + id_arg + '\\": " id "}"')
        rules.append('answer ::= "{\\"tool\\": \\"answer\\", \\"ids\\": [" (id (", " id){0,4})? "]}"')
        rules.append("id ::= " + quoted)
    else:
        rules.append('answer ::= "{\\"tool\\": \\"answer\\", \\"ids\\": []}"')
    return "\n".join(rules) + "\n"
