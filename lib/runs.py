"""Run files: one ``<results>/<design>/run<k>.jsonl`` per design and run, one :class:`Result` per
line, appended as each question is answered; resumed, read, checked and exported (TREC) here.

A saved result is reused only when its ``inputs`` key matches what would be computed now (question
text, source, design settings, models, backend, run); otherwise the run is refused with what
changed. Reading never writes; only the resuming writer repairs a torn last line, under a lock.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .progress import bar as tqdm  # progress in the terminal, never in a page

from .designs import Design, Question, Result
from .errors import DataError
from .data.relevance import judgements
from .io import Appender, content_digest, locked, read_jsonl, read_once, repair_torn_tail, write_text
from contextlib import ExitStack

# provenance entries that say how a result was obtained but not what it depends on
NOT_INPUTS = ("profile", "llm_backend")


class StaleResults(DataError):
    """Saved results were produced from other inputs than the ones asked for now."""


class ReadOnlyResults(DataError):
    """A run would add results to a folder that may not grow (the shipped study, without the switch)."""


def run_path(results_dir: Path, design: str, run: int) -> Path:
    return Path(results_dir) / design / f"run{run}.jsonl"


def run_files(results_dir: Path, design: str) -> list[Path]:
    """A design's run files, by run number."""
    paths = Path(results_dir, design).glob("run*.jsonl")
    return sorted((p for p in paths if p.stem[3:].isdigit()), key=lambda p: int(p.stem[3:]))


def inputs_key(design: str, run: int, question: Question, provenance: dict) -> str:
    """The key of everything a result depends on."""
    blob = {"design": design, "run": run, "qid": question.qid, "question": question.text,
            "source_id": question.source_id, "settings": {k: v for k, v in provenance.items() if k not in NOT_INPUTS}}
    return hashlib.sha256(json.dumps(blob, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()[:24]


def read_results(path: Path) -> list[Result]:
    """The results saved in one run file; never writes. A bad line (not JSON, not an object, not a
    result) is an error naming the file and line; an unterminated last line (an interrupted append)
    is left out. Read once per version of the file in a process (:func:`lib.io.read_once`: a report's pages
    read each run file several times); each call gets its own list of the same results, which are never changed."""
    return list(read_once(_RESULTS, path, lambda p: read_jsonl(p, Result.from_json, torn_tail_ok=True, objects=True)))


_RESULTS: dict[tuple, list[Result]] = {}  # read_results' files, by content


# the type each field of a saved record must have before it is counted (bool is no number here)
_NUMBER = (int, float)
FIELD_TYPES = {"qid": str, "design": str, "run": int, "ranked_ids": list, "searches": int, "queries": list,
               "latency_s": _NUMBER, "llm_calls": int, "tokens_in": int, "tokens_out": int, "cost_usd": _NUMBER,
               "llm_latency_s": _NUMBER, "stop_reason": str, "replies": list, "provenance": dict, "inputs": str,
               "details": dict, "trace": list}


@dataclass(frozen=True)
class RecordCheck:
    """What a saved record is checked against before it is scored: the questions as they are now,
    the ids of the papers searched, and the digests and settings of the profile as it is now."""

    questions: dict[str, Question]
    known_ids: frozenset[str]
    digests: dict[str, str]  # collection_digest, questions_digest
    settings: dict[str, dict]  # design -> the profile settings its results depend on

    def check(self, path: Path, no: int, r: Result, design: str, run: int) -> None:
        """A :class:`DataError` naming the file, line, qid and field of the first thing wrong."""
        where = f"{path}: line {no}: qid {getattr(r, 'qid', '?')!r}"
        for name, kind in FIELD_TYPES.items():
            value = getattr(r, name)
            if isinstance(value, bool) or not isinstance(value, kind):
                raise DataError(f"{where}: field {name!r} should be {getattr(kind, '__name__', 'a number')}, "
                                f"got {value!r:.80}")
        if r.design != design:
            raise DataError(f"{where}: field 'design' is {r.design!r} in a file of design {design!r}")
        if r.run != run:
            raise DataError(f"{where}: field 'run' is {r.run} in the file of run {run}")
        ids = r.ranked_ids
        if not set(map(type, ids)) <= {str} and not all(isinstance(i, str) for i in ids):  # (the first test in C)
            raise DataError(f"{where}: field 'ranked_ids' should hold paper ids (strings)")
        if len(set(ids)) != len(ids):
            dup = next(i for n, i in enumerate(ids) if i in ids[:n])
            raise DataError(f"{where}: field 'ranked_ids' names {dup!r} more than once")
        if not self.known_ids.issuperset(ids):
            unknown = next(i for i in ids if i not in self.known_ids)
            raise DataError(f"{where}: field 'ranked_ids' names {unknown!r}, which is not in the collection searched")
        q = self.questions.get(r.qid)
        if q is None:
            raise DataError(f"{where}: field 'qid': no such question in the question set as it is now")
        for k, v in self.digests.items():
            if r.provenance.get(k) != v:
                raise DataError(f"{where}: field 'provenance.{k}' is {r.provenance.get(k)!r}, but the "
                                f"{k.split('_')[0]} is now {v!r}: this result was computed on other "
                                f"{'papers' if k.startswith('collection') else 'questions'}; run the design again")
        for k, v in self.settings.get(design, {}).items():
            if r.provenance.get(k) != v:
                raise DataError(f"{where}: field 'provenance.{k}' is {r.provenance.get(k)!r}, but the profile "
                                f"now says {v!r}; run the design again")
        if r.inputs != inputs_key(design, run, q, r.provenance):
            raise DataError(f"{where}: field 'inputs' does not match the question as it is now "
                            f"({what_changed(r, q, r.provenance)}); run the design again")


# run files already checked in this process, by what the check depended on: the file as it is (its path and
# a hash of its bytes) and the check's digests and settings; a file changed since, or another check, is checked
_CHECKED: set[tuple] = set()


def _check_key(path: Path, design: str, check: RecordCheck) -> tuple:
    content = content_digest(path)  # the file as it is, as read_results keeps it
    return (str(Path(path).resolve()), content, design, len(check.known_ids), len(check.questions),
            json.dumps([check.digests, check.settings.get(design, {})], sort_keys=True, default=str))


def read_checked(path: Path, design: str, check: RecordCheck | None = None) -> list[Result]:
    """A run file's results, each checked (:class:`RecordCheck`) when a check is given, no qid twice. A file
    that passed the same check unchanged earlier in this process is not checked again (a report reads each
    run file on several pages)."""
    key = _check_key(path, design, check) if check is not None else None
    res = read_results(path)
    check_unique(res, path)
    if check is not None and key not in _CHECKED:
        run = int(Path(path).stem[3:])
        for no, r in enumerate(res, start=1):
            check.check(path, no, r, design, run)
        _CHECKED.add(key)
    return res


def check_unique(results: Sequence[Result], path: Path) -> None:
    seen: set[str] = set()
    for r in results:
        if r.qid in seen:
            raise DataError(f"{path}: qid {r.qid!r} appears more than once (two writers at once?); "
                            "remove the duplicate lines or the file and run again")
        seen.add(r.qid)


def what_changed(saved: Result, question: Question, provenance: dict) -> str:
    """In words: why a saved result does not match the inputs asked for now."""
    diffs = []
    if saved.queries and isinstance(saved.queries[0], str) and saved.queries[0] != question.text:
        diffs.append(f"question text ({saved.queries[0][:60]!r} -> {question.text[:60]!r})")
    old = saved.provenance or {}
    for k in sorted(set(old) | set(provenance)):
        if k not in NOT_INPUTS and old.get(k) != provenance.get(k):
            diffs.append(f"{k} ({old.get(k)!r} -> {provenance.get(k)!r})")
    return ", ".join(diffs) or "source paper or run"


def run_designs(designs: Sequence[Design], questions: Sequence[Question], run: int, results_dir: Path,
                progress: bool = True, before_each: Callable[[], None] | None = None,
                refuse_new: str | None = None) -> dict[str, list[Result]]:
    """Answer, question by question, every question a design has not saved yet for this run
    (several designs interleaved, so partial runs cover the same questions), appending to
    ``<results>/<design>/run<run>.jsonl``. A killed run resumes with nothing lost or repeated.

    ``before_each`` is called before every answer (the runner passes the searcher's
    ``forget_queries``, so each design's latency includes embedding its own queries).
    ``refuse_new`` (why the folder may not grow): a run that would add a result is refused
    (:class:`ReadOnlyResults`) before any is computed.

    Refuses (:class:`StaleResults`) when a saved result for one of these questions was computed
    from other inputs, and (:class:`lib.io.LockedError`) when another process writes the file.
    """
    if run < 1:
        raise ValueError(f"run must be 1 or more, got {run}")
    done: dict[str, dict[str, Result]] = {}
    keys: dict[str, dict[str, str]] = {}
    with ExitStack() as stack:
        appenders = {}
        for d in designs:
            path = run_path(results_dir, d.name, run)
            stack.enter_context(locked(path))
            cut = repair_torn_tail(path)
            if cut:
                print(f"{path}: removed an unterminated last line ({cut} bytes) left by an interrupted run")
            saved = read_results(path)
            check_unique(saved, path)
            keys[d.name] = {q.qid: inputs_key(d.name, run, q, d.provenance) for q in questions}
            by_q = {q.qid: q for q in questions}
            stale = [r for r in saved if r.qid in by_q and r.inputs != keys[d.name][r.qid]]
            if stale:
                r = stale[0]
                raise StaleResults(
                    f"{path}: {len(stale)} saved result(s) were computed from other inputs than asked for now "
                    f"(first: {r.qid}: {what_changed(r, by_q[r.qid], d.provenance)}). Use another results_dir "
                    "for these settings, or delete the file to recompute it.")
            done[d.name] = {r.qid: r for r in saved}
            appenders[d.name] = stack.enter_context(Appender(path))
        todo = [q for q in questions if any(q.qid not in done[d.name] for d in designs)]
        if todo and refuse_new:
            missing = [d.name for d in designs if any(q.qid not in done[d.name] for q in todo)]
            raise ReadOnlyResults(f"{results_dir}: run {run} of {', '.join(missing)} would add {len(todo)} result(s) "
                                  f"to {refuse_new}. To keep them apart, give another folder (-p results_dir <folder>); "
                                  "to extend the shipped study on purpose: EXTEND=1 (make notebook ... EXTEND=1), "
                                  "or scripts/run_designs.py")
        label = "+".join(d.name for d in designs)
        try:
            for q in tqdm(todo, desc=f"{label} run {run}", unit="q", disable=not progress or not todo):
                for d in designs:
                    if q.qid in done[d.name]:
                        continue
                    if before_each is not None:
                        before_each()
                    res = d.retrieve(q, run)
                    res.inputs = keys[d.name][q.qid]
                    appenders[d.name].write(asdict(res))
                    done[d.name][q.qid] = res
        finally:  # a run that wrote nothing leaves no empty file behind
            for d in designs:
                path = run_path(results_dir, d.name, run)
                if path.exists() and path.stat().st_size == 0:
                    path.unlink()
    return {d.name: [done[d.name][q.qid] for q in questions if q.qid in done[d.name]] for d in designs}


def run_design(design: Design, questions: Sequence[Question], run: int, results_dir: Path,
               progress: bool = True) -> list[Result]:
    """One design's run (see :func:`run_designs`); results in question order."""
    return run_designs([design], questions, run, results_dir, progress)[design.name]


def write_trec(results: Iterable[Result], path: Path, tag: str) -> Path:
    """A TREC run file (qid Q0 docid rank score tag) that ranx and ir_measures read."""
    lines = []
    for r in results:
        n = len(r.ranked_ids)
        lines += [f"{r.qid} Q0 {doc} {rank} {n - rank + 1} {tag}\n" for rank, doc in enumerate(r.ranked_ids, start=1)]
    return write_text(Path(path), "".join(lines))


def write_qrels(questions: Iterable[Question], path: Path) -> Path:
    """A TREC qrels file (qid 0 docid grade): each question's source paper(s), or its judgements, beside the run files."""
    return write_text(Path(path), "".join(f"{q.qid} 0 {d} {g}\n" for q in questions
                                          for d, g in judgements(q.source_id).items()))
