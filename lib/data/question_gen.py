"""Live question generation: one question per source paper, written by an LLM, checked, reviewed.

The study's method, step by step:

1. A writer LLM sees only the source paper's title and abstract and writes one question in the
   paper's style (:func:`lib.questions.style_for`, rotating in source order): *specific* (names the
   method or setting in its own words), *problem* (describes the problem without naming the
   method), *vague* (imprecise, half remembered); every style about 15 to 55 words. It replies with JSON
   ``{"question": ..., "short": "<2-5 search keywords>"}``; a plain-text reply is accepted as the
   question (``short`` left empty) and counted.
2. The mechanical check (:func:`lib.questions.copied_ngrams`, on the question and its short form)
   flags any run of 4+ consecutive title words; a flagged question is written again, up to
   ``max_tries`` times, with a note naming the copied words. If it still copies, the last one is
   kept with ``ok = 0``.
3. A reviewer LLM checks the question against the source abstract and the source's 3 nearest other
   papers: it passes if the source abstract answers it and no other paper answers it as well.

Every call goes through :class:`lib.llm.RecordedLLM` (no sampling parameters are sent), so a
rerun replays the record instead of calling, and paying for, the model again; an interrupted run
resumes there. A reply that stops on a refusal (``stop_reason: "refusal"``) or at ``max_tokens``
is not used: the row is kept with ``ok = 0`` and a note naming the stop reason, the event is
logged (``refusal`` / ``max_tokens``, with the step), and the run goes on.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..progress import bar as tqdm  # progress in the terminal, never in a page

from ..errors import DataError
from ..llm import LLMRequest, RecordedLLM
from ..llm.base import INCOMPLETE_STOPS, REFUSAL
from ..llm.prompts import ARXIV, Corpus, corpus_for, worded
from .questions import QUESTION_FIELDS, STYLES, copied_ngrams, qid_for, style_for
from ..llm.cost import combine, project_cost
from ..llm import openai_settings
from ..llm import make_llm, record_store
from ..llm.anthropic_backend import AnthropicBackend, profile_backend_kwargs
from ..llm.cost import check_budget
from .questions import write_questions

QUESTION_MAX_TOKENS = 300
REVIEW_MAX_TOKENS = 300
N_REVIEW_NEIGHBOURS = 3
MALFORMED_REVIEW = "malformed review reply"
EMPTY_QUESTION = "(empty reply)"  # stands in for an empty writer reply, so the CSV stays readable
REFUSED_QUESTION = "(refused)"    # stands in for a refused writer reply

# ---------------------------------------------------------------------------------- prompts
QUESTION_SYSTEM = ("You write test questions for a study of search over a collection of arXiv paper "
                   "abstracts. Each question must be answerable by one paper, which you see by its title "
                   "and abstract only.")
# The style says how the question asks, not how long it is: one length rule for every style, matched to
# the article's questions (14-54 words, median 32; its example "vague" question had 28 words).
STYLE_INSTRUCTIONS: dict[str, str] = {
    "specific": ("specific: name the paper's method or setting in your own words, as a researcher who knows "
                 "roughly what they are looking for would ask."),
    "problem": ("problem: describe the problem the paper addresses without naming its method, as someone who "
                "has the problem but does not know this paper would ask."),
    "vague": "vague: imprecise, as if half remembered from a talk or a skimmed feed.",
}
assert set(STYLE_INSTRUCTIONS) == set(STYLES)
QUESTION_LENGTH = "Whatever the style, write about 15 to 55 words; around 30 is typical."
QUESTION_USER = ("Write one question that this paper answers, in this style:\n{style_instruction}\n"
                 + QUESTION_LENGTH + "\n\n"
                 "Do not copy the title, and do not repeat any run of 4 or more consecutive words from the "
                 "title, in the question or in the keywords. Also give 2-5 search keywords a person might "
                 "type for the same need.\n\n"
                 'Reply with JSON only: {{"question": "...", "short": "<2-5 search keywords>"}}\n\n'
                 "Title: {title}\n\nAbstract: {abstract}")
COPY_NOTE = ("\n\nNote (attempt {attempt}): an earlier question repeated these runs of title words: {copied}. "
             "Write a new question and keywords that repeat none of them and no other run of 4 or more "
             "consecutive title words.")

REVIEW_SYSTEM = ("You check test questions for a study of search over a collection of arXiv paper abstracts. "
                 "A good question is answered by its source paper and by no other paper as well.")
REVIEW_USER = ("Question: {question}\n\nSource paper (the question was written from it):\nTitle: {title}\n"
               "Abstract: {abstract}\n\nThe {n} most similar other papers in the collection:\n{neighbours}\n\n"
               "Does the source abstract answer the question, and does none of the other papers answer it "
               "as well? Reply with JSON only: "
               '{{"ok": true or false, "reason": "<one sentence>"}}. ok is true only if the source abstract '
               "answers the question and no other paper answers it as well.")


# ---------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class ParsedQuestion:
    """A writer reply, read: the question, its short form, and whether it was plain text."""

    question: str
    short: str
    plain_text_reply: bool


@dataclass(frozen=True)
class WrittenQuestion:
    """The kept question of one source after the copy check (``copied`` empty: it passes)."""

    question: str
    short: str
    copied: list[str]
    attempts: int
    plain_text_reply: bool
    stop_reason: str = ""  # "refusal" or "max_tokens" when the kept reply stopped there (not usable)


@dataclass(frozen=True)
class Review:
    """A reviewer's verdict and its raw reply; ``malformed``: not the expected JSON (counted a fail)."""

    ok: bool
    reason: str
    malformed: bool = False
    reply: str = ""
    stop_reason: str = ""  # "refusal" or "max_tokens" when the reply stopped there (counted a fail)


# ---------------------------------------------------------------------------------- helpers
def paper_field(paper: Mapping[str, Any] | Any, name: str) -> str:
    """A field of a paper given as a collection row (dict) or a :class:`lib.collection.Paper`."""
    return str(paper[name] if isinstance(paper, Mapping) else getattr(paper, name))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def extract_json(text: str) -> Any | None:
    """The JSON value in a reply (bare, in a ``` fence, or the outermost {...}); None if there is none."""
    body = text.strip()
    fence = re.fullmatch(r"```[a-zA-Z]*\s*(.*?)\s*```", body, flags=re.DOTALL)
    if fence:
        body = fence.group(1)
    candidates = [body]
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end:
        candidates.append(body[start:end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate, strict=False)  # tolerate raw newlines inside strings
        except json.JSONDecodeError:
            continue
    return None


def copied_title_words(title: str, question: str, short: str = "") -> list[str]:
    """Runs of 4+ consecutive title words repeated by the question or its short form."""
    return sorted(set(copied_ngrams(title, question)) | set(copied_ngrams(title, short)))


def neighbours_from_manifest(manifest: Mapping[str, Any], papers: Sequence[Mapping[str, Any]],
                             k: int = N_REVIEW_NEIGHBOURS) -> dict[str, list[Mapping[str, Any]]]:
    """Each source's ``k`` nearest other papers (the manifest's lookalikes, most similar first)."""
    by_id = {p["id"]: p for p in papers}
    out: dict[str, list[Mapping[str, Any]]] = {}
    for source_id, lookalikes in manifest["lookalikes"].items():
        missing = [nid for nid, _ in lookalikes[:k] if nid not in by_id]
        if missing:
            raise DataError(f"collection_manifest.json: lookalikes of {source_id}: {missing} not in the collection")
        out[source_id] = [by_id[nid] for nid, _ in lookalikes[:k]]
    return out


# ---------------------------------------------------------------------------------- writing
def question_request(title: str, abstract: str, style: str, copied_before: Sequence[str] = (),
                     attempt: int = 1, corpus: Corpus = ARXIV) -> LLMRequest:
    """The writer's request: title and abstract only, the style, and a note after a copy (in
    ``corpus``'s words: a study's documents are no arXiv papers)."""
    if style not in STYLE_INSTRUCTIONS:
        raise ValueError(f"unknown question style {style!r}; expected one of {STYLES}")
    user = worded(QUESTION_USER, corpus).format(style_instruction=worded(STYLE_INSTRUCTIONS[style], corpus),
                                                title=title, abstract=abstract)
    if copied_before:
        user += COPY_NOTE.format(attempt=attempt, copied="; ".join(f'"{c}"' for c in copied_before))
    return LLMRequest(kind="question", system=worded(QUESTION_SYSTEM, corpus), messages=(("user", user),),
                      max_tokens=QUESTION_MAX_TOKENS, temperature=0.0)


def parse_question_reply(text: str) -> ParsedQuestion:
    """Read a writer reply: the expected JSON, or else the whole text taken as the question."""
    obj = extract_json(text)
    if isinstance(obj, dict) and isinstance(obj.get("question"), str) and obj["question"].strip():
        short = obj.get("short", "")
        short = " ".join(map(str, short)) if isinstance(short, list) else str(short or "")
        return ParsedQuestion(_one_line(obj["question"]), _one_line(short), plain_text_reply=False)
    question = _one_line(text).strip().strip('"\u201c\u201d').strip()
    return ParsedQuestion(question, "", plain_text_reply=True)


def write_question(llm: RecordedLLM, source: Mapping[str, Any] | Any, style: str, qid: str,
                   max_tries: int = 3, corpus: Corpus = ARXIV) -> tuple[WrittenQuestion, list[dict]]:
    """Write a question and regenerate it (up to ``max_tries`` times) while it copies title words.

    Returns the kept question and the log events: ``plain_text_reply`` for every reply that was
    not JSON, and ``regenerated`` for every regeneration (``attempt`` is the number of the new
    write, 2 for the first regeneration; ``copied`` and ``previous_question`` describe the one
    it replaces). A reply that stops on a refusal or at max_tokens ends the writing at once: it is
    kept with its ``stop_reason`` (a refusal's partial text is discarded) and logged as
    ``refusal`` / ``max_tokens`` (``step``: ``question``).
    """
    title, abstract = paper_field(source, "title"), paper_field(source, "abstract")
    log: list[dict] = []
    copied_so_far: list[str] = []
    attempt = 1
    while True:
        response = llm.complete(question_request(title, abstract, style, copied_so_far, attempt, corpus))
        reply, stop = response.text, str(getattr(response, "stop_reason", "") or "")
        if stop in INCOMPLETE_STOPS:
            log.append(_stop_event(stop, qid, "question", response, attempt=attempt))
            parsed = parse_question_reply(reply) if stop != REFUSAL else ParsedQuestion("", "", False)
            question = parsed.question or (REFUSED_QUESTION if stop == REFUSAL else EMPTY_QUESTION)
            return WrittenQuestion(question, parsed.short, [], attempt, parsed.plain_text_reply, stop), log
        parsed = parse_question_reply(reply)
        if parsed.plain_text_reply:
            log.append({"event": "plain_text_reply", "qid": qid, "attempt": attempt, "reply": reply})
        copied = copied_title_words(title, parsed.question, parsed.short)
        if not copied or attempt > max_tries:
            return WrittenQuestion(parsed.question, parsed.short, copied, attempt, parsed.plain_text_reply), log
        copied_so_far = sorted(set(copied_so_far) | set(copied))
        attempt += 1
        log.append({"event": "regenerated", "qid": qid, "attempt": attempt, "copied": copied,
                    "previous_question": parsed.question})


# ---------------------------------------------------------------------------------- review
def review_request(question: str, source: Mapping[str, Any] | Any,
                   neighbours: Sequence[Mapping[str, Any] | Any], corpus: Corpus = ARXIV) -> LLMRequest:
    """The reviewer's request: the question, the source, and its 3 nearest other papers (in
    ``corpus``'s words)."""
    near = neighbours[:N_REVIEW_NEIGHBOURS]
    listed = "\n".join(f"{i}. Title: {paper_field(p, 'title')}\n{worded('Abstract', corpus)}: "
                       f"{paper_field(p, 'abstract')}" for i, p in enumerate(near, start=1))
    user = worded(REVIEW_USER, corpus).format(question=question, title=paper_field(source, "title"),
                                              abstract=paper_field(source, "abstract"), n=len(near), neighbours=listed)
    return LLMRequest(kind="review", system=worded(REVIEW_SYSTEM, corpus), messages=(("user", user),),
                      max_tokens=REVIEW_MAX_TOKENS, temperature=0.0)


def parse_review_reply(text: str) -> Review:
    """Read a reviewer reply; anything but ``{"ok": <bool>, "reason": ...}`` is a malformed fail."""
    obj = extract_json(text)
    if not isinstance(obj, dict) or not isinstance(obj.get("ok"), bool):
        return Review(ok=False, reason=MALFORMED_REVIEW, malformed=True, reply=text)
    return Review(ok=obj["ok"], reason=_one_line(str(obj.get("reason") or "")), reply=text)


def review_question(llm: RecordedLLM, question: str, source: Mapping[str, Any] | Any,
                    neighbours: Sequence[Mapping[str, Any] | Any], corpus: Corpus = ARXIV) -> Review:
    """Ask the reviewer whether the source abstract, and no nearest other paper, answers the question.
    A reply that stops on a refusal or at max_tokens is a fail whose reason names the stop."""
    response = llm.complete(review_request(question, source, neighbours, corpus))
    stop = str(getattr(response, "stop_reason", "") or "")
    if stop in INCOMPLETE_STOPS:
        return Review(ok=False, reason=stop_note(stop, "reviewer", _category(response)), reply=response.text,
                      stop_reason=stop)
    return parse_review_reply(response.text)


def stop_note(stop: str, who: str, category: str | None = None) -> str:
    """The row note for a reply that stopped on a refusal or at max_tokens."""
    if stop == REFUSAL:
        return f"the {who} refused (stop_reason refusal{f', category {category}' if category else ''})"
    return f"the {who}'s reply was cut at max_tokens (stop_reason max_tokens)"


def _category(response: Any) -> str | None:
    """A refusal's policy category (``stop_details.category``), when the API gave one."""
    return (getattr(response, "stop_details", None) or {}).get("category")


def _stop_event(stop: str, qid: str, step: str, response: Any, **extra: Any) -> dict:
    event = {"event": stop, "qid": qid, "step": step, **extra}
    if stop == REFUSAL:
        event["category"] = _category(response)
    return event


# ---------------------------------------------------------------------------------- the set
def generate_question_set(llm_writer: RecordedLLM, llm_reviewer: RecordedLLM,
                          sources: Sequence[Mapping[str, Any] | Any],
                          neighbours_by_id: Mapping[str, Sequence[Mapping[str, Any] | Any]],
                          generator_name: str, progress: bool = True,
                          max_tries: int = 3, corpus: Corpus = ARXIV) -> tuple[list[dict], list[dict]]:
    """One question per source, in source order: write, check for copies, review.

    Returns rows with exactly :data:`lib.questions.QUESTION_FIELDS` (for
    :func:`lib.questions.write_questions`) and the log of events (``plain_text_reply``,
    ``regenerated``, ``still_copying``, ``empty_reply``, ``malformed_review``, ``refusal``,
    ``max_tokens``; see :func:`count_events`).
    """
    rows: list[dict] = []
    log: list[dict] = []
    bar = tqdm(sources, desc="questions", unit="paper", disable=not progress)
    for i, source in enumerate(bar):
        qid, style, source_id = qid_for(i), style_for(i), paper_field(source, "id")
        if source_id not in neighbours_by_id:
            raise DataError(f"no nearest papers given for source {source_id} ({qid}); the review needs "
                            f"its {N_REVIEW_NEIGHBOURS} nearest other papers")
        written, events = write_question(llm_writer, source, style, qid, max_tries, corpus)
        log.extend(events)
        if written.stop_reason:
            category = next((e.get("category") for e in events if e["event"] == REFUSAL), None)
            ok, note = 0, stop_note(written.stop_reason, "writer", category) + "; not reviewed"
        elif not written.question:
            written = replace(written, question=EMPTY_QUESTION)
            ok, note = 0, "the writer's reply was empty; not reviewed"
            log.append({"event": "empty_reply", "qid": qid})
        elif written.copied:
            ok, note = 0, (f"still copies title words after {max_tries} regenerations: "
                           f"{'; '.join(written.copied)}; not reviewed")
            log.append({"event": "still_copying", "qid": qid, "copied": written.copied,
                        "question": written.question})
        else:
            review = review_question(llm_reviewer, written.question, source, neighbours_by_id[source_id], corpus)
            ok, note = int(review.ok), review.reason
            if review.stop_reason:
                log.append({"event": review.stop_reason, "qid": qid, "step": "review", "reply": review.reply})
            elif review.malformed:
                log.append({"event": "malformed_review", "qid": qid, "reply": review.reply})
        values = (qid, source_id, style, written.question, written.short, ok, note, generator_name)
        rows.append(dict(zip(QUESTION_FIELDS, values, strict=True)))
        bar.set_postfix(ok=sum(r["ok"] for r in rows), regenerated=sum(e["event"] == "regenerated" for e in log))
    return rows, log


def count_events(log: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many of each event the log holds (e.g. ``{"plain_text_reply": 2, "regenerated": 1}``)."""
    return dict(Counter(e["event"] for e in log))


def project_question_cost(llm: Any, sources: Sequence[Mapping[str, Any] | Any],
                          neighbours_by_id: Mapping[str, Sequence[Mapping[str, Any] | Any]],
                          prices: dict | None = None, corpus: Corpus = ARXIV) -> dict[str, Any]:
    """Projected cost of :func:`generate_question_set` on ``llm``'s model before any call: one write
    and one review per source not yet recorded (the review with a placeholder question of typical
    length; regenerations of copying questions come on top), from :func:`lib.llm.cost.project_cost`."""
    store = getattr(llm, "store", None)
    writes, reviews = [], []
    for i, source in enumerate(sources):
        req = question_request(paper_field(source, "title"), paper_field(source, "abstract"), style_for(i),
                               corpus=corpus)
        if store is not None and store.get(req) is not None:
            continue  # written before: it (and its review) replays
        writes.append(req)
        near = neighbours_by_id.get(paper_field(source, "id"), [])
        reviews.append(review_request("q" * 250, source, near, corpus))
    return combine([project_cost(writes, llm.model, prices, recorded=store),
                    project_cost(reviews, llm.model, prices, recorded=store)])


def question_backend(profile) -> str:
    """Who writes and reviews the questions: Claude (``anthropic``) when the question model is a Claude
    model or none is set for an arXiv profile; for a study of your own documents without a question
    model, the LLM designs' backend (the local model offline, or an OpenAI-compatible server)."""
    model = profile.question_model or ""
    if model.startswith("claude") or (not model and profile.collection_source != "documents"):
        return "anthropic"
    return profile.llm_backend


def _backend_kwargs(profile, backend: str) -> dict:
    if backend == "openai":
        return openai_settings(profile)
    return {}


def question_llm(profile) -> RecordedLLM:
    """The recorded LLM that writes and reviews questions: the profile's question model, called with
    its question thinking and effort (``question_thinking``, ``question_effort``) when live."""
    # a study of its own records its calls in its own folder (the shipped record is replayed, never written)
    root = None if profile.own_dir is None else profile.own_dir / "llm_records"
    backend = question_backend(profile)
    if backend != "anthropic":  # the local model, a server's, or the record: the question model or the LLM designs'
        return make_llm(backend, profile.question_model or profile.llm_model, profile.llm_record_backend,
                        records_root=root, **_backend_kwargs(profile, backend))

    model = profile.question_model
    return RecordedLLM(AnthropicBackend(model, **profile_backend_kwargs(profile, "question")),
                       record_store("anthropic", model, root), backend_name="anthropic", model=model)


def generated_questions_path(profile) -> Path:
    """Where a generated question set is written: the profile's ``questions_path``, or, for a study of
    its own, the same file name in its own data folder (the shipped questions are never rewritten)."""
    if profile.own_dir is None:
        return profile.path("questions_path")
    return profile.own_dir / "data" / profile.path("questions_path").name


def generate_for_profile(profile, papers: Sequence[Mapping[str, Any]], progress: bool = True) -> Path:
    """Notebook 02's live path: write and review a fresh set with the profile's question model,
    then save it to the profile's ``questions_path`` and the event log beside it. Before any call,
    the projected cost is printed and checked against the profile's ``max_cost_usd``."""

    if not profile.question_model and question_backend(profile) == "anthropic":
        raise DataError(f"profiles/{profile.name}.yaml: questions_source 'generate' needs question_model")
    manifest = json.loads((profile.data_dir / "collection_manifest.json").read_text())
    by_id = {p["id"]: p for p in papers}
    sources = [by_id[s] for s in manifest["source_order"]]
    neighbours = neighbours_from_manifest(manifest, papers)
    llm = question_llm(profile)
    if llm.backend is not None and question_backend(profile) == "anthropic":  # a paid model: project, check first
        projection = project_question_cost(llm, sources, neighbours, corpus=corpus_for(profile))
        print(f"question generation with {profile.question_model}: {projection['calls']} calls, "
              f"~{projection['input_tokens']} input / ~{projection['output_tokens']} output tokens, "
              f"~${projection['usd']:.4f} projected ({projection['already_recorded']} recorded calls replay)")
        check_budget(projection, profile.settings.get("max_cost_usd"))
    rows, log = generate_question_set(llm, llm, sources, neighbours,
                                      generator_name=f"{llm.name}:{profile.question_model or profile.llm_model}",
                                      progress=progress, corpus=corpus_for(profile))
    path = generated_questions_path(profile)
    write_questions(rows, path)
    (path.parent / "question_generation_log.json").write_text(json.dumps(log, indent=1))
    return path
