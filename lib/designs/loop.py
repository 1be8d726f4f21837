"""The tool-calling loop: the model drives search and read, within hard caps (the agentic RAG of
deep-research modes; the reason-act loop of ReAct, Yao et al. 2023, with native tool calls).

The model gets a system prompt, the question and two tools: ``search(query)`` (the dense index's
top ``loop_search_k`` ids and titles) and ``read(paper_id)`` (that paper's abstract; a long document
searched as chunks: the passages the loop's searches matched, see :func:`read_text`). It calls them
as often as it decides, one call a turn; the code runs every call and returns the result, until the
model answers by naming the paper ids it relies on (its citations). Caps, all profile settings:

* ``loop_max_steps`` model turns: the last of them is answer-only (the step cap);
* ``loop_max_tokens`` input + output tokens over the loop (every call's whole prompt counted, as
  an API bills it without caching). A turn is made only if, by a conservative projection (the
  last prompt's tokens plus the new text at 3 characters a token, the turn at its max_tokens),
  the loop's answer could still be asked for after it; otherwise the code asks for the answer now
  (the token budget), and if even that call would not fit, it makes none: the loop ends with no
  citations, the searches already run still ranking (a code-decided step in the trace).

On either cap the code makes one last call asking for the answer only (tools offered with choice
"none"; the local model's grammar allows only its answer), so the record says which cap ended the
loop, never a silent cut. A refusal or a reply cut at max_tokens ends it too, named. So does a tool
call whose arguments are not a JSON object (``bad_tool_arguments``: a native call's arguments that do
not parse, or a local reply that opens a JSON call but is not valid JSON): the loop stops at once,
with no retry (at temperature 0 the same conversation would be answered the same way, and a retry
would spend a turn of the step cap), no citations, the searches already run still ranking, and the
malformed arguments kept in the record (``details.bad_tool_arguments``).

Ranked list for scoring: the valid citations first, in the order cited, then the reciprocal rank
fusion (k = 60; Cormack et al. 2009) of every search the loop ran (each ``dense_k`` deep; the model
sees the top ``loop_search_k``), no id twice. Each result keeps the loop's own measures
(``details``) and a trace of every step (``trace``): model turns and the code's steps, who decided
each, its detail, tokens and milliseconds.

The prompt (setting ``loop_prompt``, chosen on the dev set: docs/loop.md): the local model's
conversation opens with worked examples before the question: ``one_example`` (search, read, answer
citing one id; the default, as every loop saved before the setting), ``no_example`` (the system
prompt alone) or ``two_examples`` (that one, then one whose first search misses, that searches again
with other words, reads and cites two ids). Claude's prompt (native tool use) has no worked example,
so with the anthropic style the three are the same prompt (their results still go to separate
folders: the setting is part of a result's provenance when it is not ``one_example``).

``loop_question_first`` (:class:`LoopQuestionFirstDesign`) is the same loop, except that the code
runs the first search, with the question as written (as the agent's first search is), and shows its
result to the model before the model's first turn, as a well-formed tool exchange (an assistant
search call, then its tool result). That search is a code-decided step of the trace and one of the
loop's searches (it ranks in the fusion, and its papers may be read and cited); it takes no model
turn of ``loop_max_steps``, and its tokens count in every turn's prompt and so in the budget.

Over 500 lines: the loop, its question-first variant, the tools' results and the caps are one state
machine over one trace, kept in one file.
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass

from ..llm import LLMRequest, prompts
from ..llm.base import INCOMPLETE_STOPS
from ..llm.tools import assistant_blocks, chat_text, malformed_calls, text_block, tool_result_block, tool_use_block
from ..search.fusion import rrf
from .base import DEPTH, EMBEDDER_SETTINGS, LLM_SETTINGS, LLMUse, Question, Result
from ..llm.stubs import stub_llm

ANSWER_TOOL = "answer"          # the local protocol's answer call
CHARS_PER_TOKEN = 3.0           # conservative for budget projections (English prose runs about 4)
TURN_OVERHEAD = 16              # template tokens around each new message
READ_MAX_CHARS = 2000           # a document searched whole is cut here (arXiv abstracts are at most 1,920 characters)
READ_PASSAGES = 2               # a chunked document's read: this many passages, the matched ones first
QUERY_MAX_CHARS = 300
ENDINGS = ("stop", "step_cap", "token_budget", "refusal", "max_tokens", "bad_tool_arguments")
DETAIL_CHARS = 200              # the trace keeps this much of an answer
_CITED = re.compile(r"^[\s*_>-]*cited\s*[*_]*\s*:(.*)$", re.I | re.M)
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9./_-]*[A-Za-z0-9]")


SHOWN_SEP = " -> "  # a search step's trace detail: the query, then the ids the model was shown
QUESTION_FIRST = "loop_question_first"
LOOP_DESIGNS = ("loop", QUESTION_FIRST)  # the tool-calling loops (same record, same measures)
CODE_CALL_ID = "code_search_1"           # the tool_use id of the question-first loop's code search


def code_searches(result) -> int:
    """How many of a loop result's searches the code ran itself (the question-first loop: one)."""
    return int(result.details.get("code_searches", 1 if result.design == QUESTION_FIRST else 0))


def model_queries(result) -> list[str]:
    """The queries the model wrote in a loop (the record keeps the question first, then every search
    run, the code's first search among them in the question-first loop)."""
    return list(result.queries[1 + code_searches(result):])


def shown_ids(result) -> list[str]:
    """The papers the loop's searches showed the model, first-shown first: the record's ``shown``, or
    (records saved before it was kept) read back from the trace's search steps."""
    if "shown" in result.details:
        return list(result.details["shown"])
    out: list[str] = []
    for step in result.trace:
        if step.get("kind") == "code" and step.get("title") == "search" and SHOWN_SEP in step.get("detail", ""):
            ids = step["detail"].rsplit(SHOWN_SEP, 1)[1]
            out += [i for i in ids.split(", ") if i != "(none)" and i not in out]
    return out


def passages_of(chunks, papers: dict[str, tuple[str, str]]) -> dict[str, list[str]]:
    """Each chunked document's passages in document order, the title each chunk's text starts with
    taken off (the read shows it once); a document of one chunk is left out: it is read whole."""
    by_doc: dict[str, list] = {}
    for c in chunks or ():
        by_doc.setdefault(c.doc_id, []).append(c)
    out = {}
    for pid, cs in by_doc.items():
        if len(cs) < 2 or pid not in papers:
            continue
        title = papers[pid][0]
        prefix = f"{title}. " if title else ""
        out[pid] = [c.text[len(prefix):] if c.text.startswith(prefix) else c.text
                    for c in sorted(cs, key=lambda c: c.position)]
    return out


def read_positions(n: int, matched: list[int], k: int = READ_PASSAGES) -> list[int]:
    """Which of a document's ``n`` passages one read shows: those the loop's searches matched (each
    search's best chunk of it, first matched first), then the passages after and before the first
    of them, until ``k``; in document order. No match (a read of a document no search showed): its
    first ``k``."""
    first = [p for p in dict.fromkeys(matched) if 0 <= p < n][:k]
    if not first:
        return list(range(min(k, n)))
    chosen, anchor, step = list(first), first[0], 1
    while len(chosen) < min(k, n):
        for p in (anchor + step, anchor - step):
            if 0 <= p < n and p not in chosen and len(chosen) < k:
                chosen.append(p)
        step += 1
    return sorted(chosen)


def read_text(passages: list[str], positions: list[int]) -> str:
    """The passages one read shows, each headed by its place in the document."""
    return "\n\n".join(f"(passage {p + 1} of {len(passages)})\n{passages[p]}" for p in positions)


def first_shown(result) -> list[str]:
    """The ids the loop's first search showed the model (its top ``loop_search_k``), from the trace."""
    for step in result.trace:
        if step.get("kind") == "code" and step.get("title") == "search" and SHOWN_SEP in step.get("detail", ""):
            ids = step["detail"].rsplit(SHOWN_SEP, 1)[1]
            return [i for i in ids.split(", ") if i != "(none)"]
    return []


@dataclass(frozen=True)
class Caps:
    """Hard per-question limits of one loop (profile settings ``loop_*``)."""

    max_steps: int = 8          # model turns, the last answer-only
    max_tokens: int = 16000     # input + output tokens over the loop
    search_k: int = 5           # papers the search tool shows
    turn_max_tokens: int = 128  # max_tokens of each turn

    def __post_init__(self):
        if self.max_steps < 2:
            raise ValueError(f"loop_max_steps must be at least 2 (a tool turn and the answer), got {self.max_steps}")
        if self.search_k < 1 or self.turn_max_tokens < 1 or self.max_tokens < 1:
            raise ValueError(f"loop caps must be positive, got {self}")


def parse_citations(text: str, known: set[str] | dict) -> tuple[list[str], list[str], str]:
    """The ids an answer in text cites: those on its last ``Cited:`` line, else the known ids it
    names anywhere; returns (valid ids in order, ids not in the collection, where they were read)."""
    lines = _CITED.findall(text or "")
    if lines:  # ids have digits: words on the line ("none") are not citations
        tokens, form = [t for t in _ID.findall(lines[-1]) if any(c.isdigit() for c in t)], "cited line"
    else:
        tokens, form = [t for t in _ID.findall(text or "") if _known(t, known)], "ids in text"
    valid, invalid = [], []
    for t in dict.fromkeys(tokens):
        pid = _known(t, known)
        (valid if pid else invalid).append(pid or t)
    return list(dict.fromkeys(valid)), invalid, form if tokens else "none"


def _known(token: str, known) -> str | None:
    """The collection id a token names (an arXiv version suffix such as v2 dropped), or None."""
    if token in known:
        return token
    base = re.sub(r"v\d+$", "", token)
    return base if base in known else None


def ranked_list(citations: list[str], lists: list[list[str]], rrf_k: int = 60, depth: int = DEPTH) -> list[str]:
    """Citations first, in the order cited, then the RRF fusion of every search, no id twice."""
    fused = [d for d, _ in rrf(lists, rrf_k)]
    return list(dict.fromkeys(list(citations) + fused))[:depth]


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def _chars(content) -> int:
    return len(chat_text(content))


class LoopDesign:
    name = "loop"
    uses_llm = True
    record_kind = "loop"
    settings = EMBEDDER_SETTINGS + LLM_SETTINGS + ("llm_thinking", "llm_effort", "loop_max_steps", "loop_max_tokens",
                                                   "loop_search_k", "loop_turn_max_tokens", "loop_backend")
    # settings that enter a result's provenance only away from their default, so every result saved
    # before them keeps its inputs key (lib.pipeline.design_provenance)
    optional_settings = {"loop_prompt": prompts.LOOP_PROMPT_DEFAULT}

    def __init__(self, searcher, llm, papers: dict[str, tuple[str, str]], style: str, caps: Caps = Caps(),
                 k: int = 50, rrf_k: int = 60, temperature: float = 0.0, provenance: dict | None = None,
                 prompt: str = prompts.LOOP_PROMPT_DEFAULT, corpus: prompts.Corpus = prompts.ARXIV,
                 passages: dict[str, list[str]] | None = None):
        if style not in ("local", "anthropic"):
            raise ValueError(f"prompt style must be 'local' or 'anthropic', got {style!r}")
        self.searcher, self.llm, self.papers, self.style, self.caps = searcher, llm, papers, style, caps
        self.k, self.rrf_k, self.temperature, self.provenance = k, rrf_k, temperature, provenance or {}
        self.local = style == "local"
        self.prompt, self.corpus = prompt, corpus
        self.passages = passages or {}  # a chunked document's passages: a read shows the matched ones
        self.examples = prompts.loop_examples(prompt, self.local, corpus)  # refuses an unknown variant
        self.tools = prompts.loop_tools(caps.search_k, self.local, corpus)
        self.system = (prompts.loop_local_system if self.local else prompts.loop_anthropic_system)(
            caps.search_k, caps.max_steps, corpus)
        longest = max((len(t) for t, _ in papers.values()), default=0) + 40
        # the largest tool result a turn can add: a read (a whole document's text cut at READ_MAX_CHARS, or
        # READ_PASSAGES of the longest passages with their headings), or a page of search hits
        passage = max((len(x) for ps in self.passages.values() for x in ps), default=0) + 40
        self.read_bound = max(READ_MAX_CHARS, READ_PASSAGES * passage) + longest
        self.result_bound = _tokens(max(self.read_bound, caps.search_k * longest + QUERY_MAX_CHARS))
        self.final_bound = max(_tokens(len(self._final_text(r))) for r in prompts.LOOP_FINAL) + TURN_OVERHEAD

    @staticmethod
    def stubbed(profile) -> bool:
        """True when the profile runs the loop with a stub model (nothing to replay)."""
        return bool(profile.settings.get("loop_backend"))

    @classmethod
    def from_parts(cls, parts, provenance: dict) -> "LoopDesign":
        p = parts.profile
        style = parts.prompt_style()
        if p.loop_backend:
            llm = stub_llm(p.loop_backend)
            provenance = {**provenance, "llm_backend": llm.name, "llm_source": llm.name}
        else:
            llm = parts.llm()
        allowed = parts.allowed if hasattr(parts, "allowed") else None
        papers = {x["id"]: (x["title"], x["abstract"]) for x in parts.papers if allowed is None or x["id"] in allowed}
        caps = Caps(p.loop_max_steps, p.loop_max_tokens, p.loop_search_k, p.loop_turn_max_tokens)
        return cls(parts.searcher, llm, papers, style, caps, k=p.dense_k, rrf_k=p.rrf_k, temperature=p.llm_temperature,
                   provenance=provenance, prompt=p.settings.get("loop_prompt") or prompts.LOOP_PROMPT_DEFAULT,
                   corpus=parts.corpus(), passages=passages_of(getattr(parts, "chunks", None), papers))

    @property
    def max_steps(self) -> int:
        return self.caps.max_steps

    # ------------------------------------------------------------------ requests
    def opening(self, question: Question) -> list[tuple[str, object]]:
        """The conversation's opening: the local model's worked examples (``loop_prompt``; none for
        Claude), then the question."""
        return list(self.examples) + [("user", prompts.LOOP_USER.format(question=question.text))]

    def start(self, question: Question) -> tuple[list[tuple[str, object]], "_State"]:
        """The conversation before the model's first turn, and the loop's state so far (the plain loop:
        the opening, nothing searched yet)."""
        return self.opening(question), _State()

    def request(self, question: Question, messages, run: int, seen: list[str], final: bool = False) -> LLMRequest:
        """One turn: the conversation so far, the tools (choice "none" for the forced answer) and,
        for the local model, the grammar of one call (ids limited to those the searches showed)."""
        grammar = prompts.loop_grammar(seen, final, self.corpus.id_arg) if self.local else None
        return LLMRequest(self.record_kind, self.system, tuple(messages), self.caps.turn_max_tokens, self.temperature,
                          run, grammar, label=question.qid, tools=self.tools, tool_choice="none" if final else "auto")

    def first_requests(self, questions: list[Question], runs: list[int]) -> list[LLMRequest]:
        """Every question's first turn (for batching and cost projection), exactly as :meth:`retrieve`
        asks it: the plain loop's needs no search; the question-first loop's holds the code's search."""
        out = []
        for q in questions:
            messages, st = self.start(q)
            out += [(run, self.request(q, messages, run, st.seen)) for run in runs]
        return [r for _, r in sorted(out, key=lambda x: x[0])]

    def cost_bound(self, questions: list[Question], runs: list[int]) -> dict | None:
        """The most a run can use, from the caps (every question at its step cap and token budget;
        None for a stub model, which has no fee)."""
        if str(getattr(self.llm, "name", "")).startswith("stub:"):
            return None
        n = len(list(questions)) * (1 if isinstance(runs, int) else len(list(runs)))
        out = n * self.caps.max_steps * self.caps.turn_max_tokens
        return {"calls": n * self.caps.max_steps, "input_tokens": max(n * self.caps.max_tokens - out, 0),
                "output_tokens": out}

    def _turn_and_answer(self, est_in: int) -> int:
        """Tokens a turn may use (its prompt, its reply at max_tokens) together with the forced
        answer after it (the prompt grown by that reply and the largest tool result, the closing
        instruction, the answer at max_tokens): a turn is made only if both fit in the budget."""
        turn = est_in + self.caps.turn_max_tokens
        answer = turn + self.result_bound + TURN_OVERHEAD + self.final_bound + self.caps.turn_max_tokens
        return turn + answer

    def _final_text(self, reason: str) -> str:
        return prompts.LOOP_FINAL[reason] + " " + prompts.LOOP_FINAL_ANSWER["local" if self.local else "anthropic"]

    # ------------------------------------------------------------------ tools
    def run_tool(self, call: dict, state: "_State") -> tuple[str, bool, str]:
        """Run one call the model made: (result text for the model, is it an error, detail for the trace)."""
        name, args = call.get("name"), call.get("input") or {}
        if name == "search":
            query = args.get("query")
            if not isinstance(query, str) or not query.strip():
                return "error: search needs a query (a non-empty string)", True, f"bad query {query!r}"
            return self._search(query.strip()[:QUERY_MAX_CHARS], state)
        if name == "read":
            pid = args.get(self.corpus.id_arg)
            pid = pid.strip() if isinstance(pid, str) else pid
            if pid not in self.papers:
                return f"error: no {self.corpus.item} with id {pid!r} in the collection", True, f"unknown id {pid!r}"
            state.read.append(pid)
            title, text = self.papers[pid]
            if pid in self.passages:  # a long document: the passages its searches matched
                shown = read_positions(len(self.passages[pid]), state.matched.get(pid, []))
                state.passages.setdefault(pid, []).append(shown)
                text = read_text(self.passages[pid], shown)
                where = f" (passages {', '.join(str(p + 1) for p in shown)} of {len(self.passages[pid])})"
            else:
                text, where = text[:READ_MAX_CHARS], ""
            state.read_chars += len(text)
            return prompts.loop_read_result(pid, title, text), False, f"{pid}: {title[:80]}{where}"
        return f"error: unknown tool {name!r}; the tools are search and read", True, f"unknown tool {name!r}"

    def _search(self, query: str, state: "_State") -> tuple[str, bool, str]:
        """Run one search: its list kept for the fusion, its top ``search_k`` shown (the result text,
        no error, the trace's detail: the query, then the ids shown)."""
        hits = self.searcher.search(query, self.k)
        ids = [h.id for h in hits]
        for h in hits:  # the passage of each document this search matched best (a read shows it)
            state.matched.setdefault(h.id, []).append(int(getattr(h, "best_chunk", 0) or 0))
        state.lists.append(ids)
        state.queries.append(query)
        shown = ids[:self.caps.search_k]
        state.seen.extend(i for i in shown if i not in state.seen)
        text = prompts.loop_search_result(query, [(i, self.papers[i][0] if i in self.papers else "") for i in shown],
                                          self.corpus)
        return text, False, f'"{query}"{SHOWN_SEP}{", ".join(shown) or "(none)"}'

    # ------------------------------------------------------------------ the loop
    def retrieve(self, question: Question, run: int = 1) -> Result:
        start = time.perf_counter()
        use = LLMUse(self.llm)
        messages, st = self.start(question)
        added = len(self.system) + len(json.dumps(self.tools)) + sum(_chars(c) for _, c in messages)
        last_prompt = last_out = 0
        ended_by = final_by = ""
        answer, cites, form, notes, bad_args = "", [], "none", [], []
        while True:
            est_in = last_prompt + last_out + _tokens(added) + TURN_OVERHEAD
            reason = ""
            if use.calls + 1 >= self.caps.max_steps:
                reason = "step_cap"
                st.code("step cap", f"turn {use.calls + 1} of {self.caps.max_steps}: the last, answer-only")
            else:
                need = st.used + self._turn_and_answer(est_in)
                if need > self.caps.max_tokens:
                    reason = "token_budget"
                    st.code("token budget", f"{st.used} of {self.caps.max_tokens} tokens used; a turn and the answer "
                                            f"after it would need about {need - st.used} more")
            if reason:
                text = self._final_text(reason)
                if st.used + est_in + self.final_bound + self.caps.turn_max_tokens > self.caps.max_tokens:
                    ended_by, final_by = reason, "code"
                    st.code("answer by code", "no room for an answer call in the token budget: no citations; "
                                              "the searches run so far rank")
                    break
                role, content = messages[-1]
                messages[-1] = (role, content + "\n\n" + text if isinstance(content, str)
                                else tuple(content) + (text_block(text),))
            request = self.request(question, messages, run, st.seen, final=bool(reason))
            reply = use(request)
            r = use.last
            st.used += r.prompt_tokens + r.tokens_out
            last_prompt, last_out = r.prompt_tokens, r.tokens_out
            calls = list(r.tool_calls)
            answers = [c for c in calls if c.get("name") == ANSWER_TOOL]
            st.model(r, reason, calls, reply)
            bad = [] if reason or r.stop_reason in INCOMPLETE_STOPS else malformed_calls(r, self.local)
            if bad:
                ended_by, final_by = "bad_tool_arguments", "code"
                bad_args = [str(b.get("arguments"))[:DETAIL_CHARS] for b in bad]
                notes.append("a tool call's arguments are not a JSON object; the loop stopped")
                st.code("bad tool arguments", f"not a JSON object: {'; '.join(bad_args)}; no citations, the searches "
                                              "run so far rank")
                break
            if r.stop_reason in INCOMPLETE_STOPS:
                ended_by, final_by = reason or r.stop_reason, "code"
                notes.append(f"reply stopped: {r.stop_reason}")
                if reason:  # a forced answer cut or refused: whatever it cited still counts
                    cites, invalid, form = self._citations(reply, answers)
                    st.invalid += invalid
                    final_by, answer = "model", reply
                break
            if reason or answers or not calls:
                if reason and calls and not answers:
                    notes.append("the forced answer called a tool; the call was not run")
                cites, invalid, form = self._citations(reply, answers)
                st.invalid += invalid
                ended_by, final_by, answer = reason or "stop", "model", reply
                break
            messages.append(("assistant", assistant_blocks(r)))
            results = []
            for call in calls:
                t0 = time.perf_counter()
                text, error, detail = self.run_tool(call, st)
                st.errors += error
                st.code(call.get("name") or "?", ("error: " if error else "") + detail, by="model",
                        ms=(time.perf_counter() - t0) * 1000)
                results.append(tool_result_block(call["id"], text, error))
            messages.append(("user", tuple(results)))
            added = sum(_chars((b,)) for b in results)
        st.code("ranked list", f"{len(cites)} citation(s) first, then the RRF fusion of {len(st.lists)} search(es)")
        ranked = ranked_list(cites, st.lists, self.rrf_k)
        details = {"citations": cites, "invalid_citations": st.invalid, "citation_form": form, "read": st.read,
                   "shown": st.seen, "code_searches": st.code_searches,
                   # a long document's reads (kept only where one was read, so a saved loop's record is as it was)
                   **({"read_passages": st.passages, "read_chars": st.read_chars} if st.passages else {}),
                   "papers_read": len(set(st.read)), "turns": use.calls, "ended_by": ended_by,
                   "forced_final": bool(ended_by in ("step_cap", "token_budget") and final_by == "model"),
                   "final_by": final_by, "answer": (answer or "")[:500], "tool_errors": st.errors,
                   "tokens_used": st.used, "prompt_reused": sum(x.get("prompt_reused", 0) for x in st.trace),
                   "notes": notes, **({"bad_tool_arguments": bad_args} if bad_args else {}),
                   "caps": {"max_steps": self.caps.max_steps, "max_tokens": self.caps.max_tokens,
                            "search_k": self.caps.search_k, "turn_max_tokens": self.caps.turn_max_tokens}}
        res = Result(question.qid, self.name, run, ranked, len(st.lists), [question.text] + st.queries, 0.0,
                     stop_reason=ended_by, provenance=self.provenance, details=details, trace=st.trace)
        return use.fill(res, start)

    def _citations(self, reply: str, answers: list[dict]) -> tuple[list[str], list[str], str]:
        """The citations of a final reply: its answer call's ids, else the ids its text names."""
        if answers:
            ids = answers[0].get("input", {}).get("ids")
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                return [], [str(ids)], "malformed answer call"
            valid = [i for i in dict.fromkeys(x.strip() for x in ids) if i in self.papers]
            return valid, [i for i in ids if i.strip() not in self.papers], "answer call"
        return parse_citations(reply, self.papers)


class LoopQuestionFirstDesign(LoopDesign):
    """The loop with the question searched first by the code (as the agent's first search is): its
    result is the first tool result the model sees, before its first turn (see the module docstring).
    The code's assistant turn holds only the tool_use block (no thinking block: the model wrote no
    such turn), which the Messages API takes with thinking disabled, as the article profile runs it."""

    name = QUESTION_FIRST
    record_kind = QUESTION_FIRST

    def start(self, question: Question) -> tuple[list[tuple[str, object]], "_State"]:
        """The opening, then the code's search of the question as written, written into the
        conversation as the loop writes the model's own calls: an assistant turn with the search call
        (a tool_use block; the local model reads it as its JSON call) and a user turn with its result
        (a tool_result block). The search is a code-decided step of the trace."""
        messages, st = self.opening(question), _State()
        call = {"id": CODE_CALL_ID, "name": "search", "input": {"query": question.text}}
        t0 = time.perf_counter()
        text, error, detail = self._search(question.text, st)
        st.code("search", detail, ms=(time.perf_counter() - t0) * 1000)
        st.code_searches += 1
        messages += [("assistant", (tool_use_block(call),)), ("user", (tool_result_block(call["id"], text, error),))]
        return messages, st


class _State:
    """What one loop has gathered so far, and its trace."""

    def __init__(self):
        self.code_searches = 0
        self.lists: list[list[str]] = []
        self.queries: list[str] = []
        self.read: list[str] = []
        self.read_chars = 0  # characters of document text the reads showed
        self.matched: dict[str, list[int]] = {}  # each document's best-matching passage in every search
        self.passages: dict[str, list[list[int]]] = {}  # a long document's passages each read showed (0-based)
        self.seen: list[str] = []
        self.invalid: list[str] = []
        self.trace: list[dict] = []
        self.used = self.errors = 0

    def _step(self, kind: str, by: str, title: str, detail: str, tin: int = 0, tout: int = 0, ms: float = 0.0,
              **extra) -> None:
        self.trace.append({"step": len(self.trace) + 1, "kind": kind, "decided_by": by, "title": title,
                           "detail": detail, "tokens_in": tin, "tokens_out": tout, "ms": round(ms, 1), **extra})

    def code(self, title: str, detail: str, by: str = "code", ms: float = 0.0) -> None:
        """A step the code ran: a tool call the model asked for (``by`` model), or the code's own."""
        self._step("code", by, title, detail, ms=ms)

    def model(self, r, forced: str, calls: list[dict], reply: str) -> None:
        """A model turn: what it decided, its tokens and its (recorded) time."""
        answered = not calls or any(c.get("name") == ANSWER_TOOL for c in calls)
        if forced:
            title = "forced answer"
        elif r.stop_reason in INCOMPLETE_STOPS:
            title = f"reply stopped: {r.stop_reason}"
        elif answered:
            title = "answer"
        else:
            title = "calls " + ", ".join(str(c.get("name")) for c in calls)
        if not (forced or answered):
            detail = "; ".join(f"{c.get('name')}({json.dumps(c.get('input'), ensure_ascii=False)})" for c in calls)
        else:
            detail = (reply or "; ".join(json.dumps(c.get("input"), ensure_ascii=False) for c in calls))
        self._step("model", "code" if forced else "model", title, detail[:DETAIL_CHARS], r.prompt_tokens, r.tokens_out,
                   r.latency_s * 1000, prompt_reused=r.prompt_tokens_reused)
