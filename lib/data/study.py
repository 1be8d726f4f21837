"""A study of your own data (``make study``): the documents, the questions and their relevance
judgements read from the user's files (``lib/data/documents.py``) and written once into the study's
own data folder, in the shapes every other step reads — ``collection.jsonl`` (one row per document),
``questions.csv`` (each question's judgements in its source field, ``lib/data/relevance.py``)
and ``collection_manifest.json`` (which files, their digests, the counts). The import is keyed by
the files' bytes and the settings that read them, so a rerun reads nothing twice and a changed file
is imported again."""
from __future__ import annotations

import hashlib
import json
import statistics
from pathlib import Path

import numpy as np

from ..config import ROOT, Profile, profile_file, shown_path
from ..errors import DataError
from .relevance import encode
from ..io import HeldLock, acquire, write_bytes, write_json, write_jsonl
from ..progress import bar
from .draw import draw_sources, tfidf_neighbours
from .papers import Paper, read_collection
from .questions import write_questions
from . import documents as docs
from datetime import datetime, timezone

# the settings that decide what the import reads (a change re-imports)
IMPORT_SETTINGS = ("documents_path", "documents_format", "document_fields", "document_metadata", "questions_source",
                   "user_questions_path", "question_fields", "qrels_path", "beir_split", "n_sources", "n_lookalikes",
                   "seed")


# the study locks this process holds (one per study folder), kept for the process's life
_HELD: dict[Path, HeldLock] = {}


def lock_study(profile: Profile) -> HeldLock | None:
    """One run of a study at a time: an exclusive lock on ``studies/<name>/study.lock``, taken when a
    report run of the study starts and held until the process ends (the kernel releases it then, even
    for a killed process). A second run is refused (:class:`lib.io.LockedError`) naming the holder:
    pid, host, command and since when. Not a study of your own data (the shipped profiles): None."""
    if profile.study_dir is None:
        return None
    path = profile.study_dir / "study.lock"
    held = _HELD.get(path)
    if held is None or held.fh is None:
        held = _HELD[path] = acquire(path, f"{shown_path(profile.study_dir)}: study {profile.name!r} is being run by "
                                           "another process; wait for it to finish")
    return held


def _file_digest(path: Path, h) -> None:
    """Feed a file's (or a folder's files') names and bytes into ``h``."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
        with open(f, "rb") as fh:
            while block := fh.read(1 << 22):
                h.update(block)


def inputs_paths(profile: Profile) -> list[Path]:
    """The user's files the import reads: the documents (a file or a BEIR folder), questions, qrels."""
    out = [profile.path("documents_path")]
    for key in ("user_questions_path", "qrels_path"):
        if profile.settings.get(key) and profile.questions_source == "user":
            out.append(profile.path(key))
    return out


def import_key(profile: Profile) -> str:
    h = hashlib.sha256(json.dumps({k: profile.settings.get(k) for k in IMPORT_SETTINGS}, sort_keys=True,
                                  default=str).encode())
    for path in inputs_paths(profile):
        if not path.exists():
            raise DataError(f"{shown_path(path)}: no such file or folder (named by {_setting_of(profile, path)})")
        _file_digest(path, h)
    return h.hexdigest()[:20]


def _setting_of(profile: Profile, path: Path) -> str:
    return next((k for k in ("documents_path", "user_questions_path", "qrels_path")
                 if profile.settings.get(k) and profile.path(k) == path), "the profile")


def _text_words(rows: list[dict]) -> dict:
    n = sorted(len(r["abstract"].split()) for r in rows)
    return {"median": statistics.median(n), "p90": float(np.quantile(n, 0.9)), "max": n[-1], "min": n[0]}


def read_user_data(profile: Profile) -> tuple[list[dict], list[dict] | None, dict, dict]:
    """The documents, the questions (``{qid, question, relevant: {doc id: grade}}``; None when the
    questions are to be written by a model), which files they came from, and what was read but is
    not a question (a BEIR folder's queries its split does not judge: ``queries_unjudged``)."""
    path = profile.path("documents_path")
    fmt = profile.documents_format or ("beir" if path.is_dir() else None)
    files = {"documents": shown_path(path)}
    questions, read = None, {}
    # a BEIR folder's questions and judgements come with it, each unless a file of the user's replaces it
    # (user_questions_path: the questions; qrels_path: the judgements), as for any documents file
    beir_qrels = profile.path("qrels_path") if profile.qrels_path else path / "qrels" / f"{profile.beir_split}.tsv"
    if fmt == "beir" and not profile.user_questions_path:
        rows, questions, _, unjudged = docs.read_beir(path, split=profile.beir_split,
                                                      metadata=profile.document_metadata or None, qrels_path=beir_qrels)
        files["questions"] = shown_path(path / "queries.jsonl")
        files["judgements"] = shown_path(beir_qrels)
        read = {"queries_unjudged": len(unjudged), "queries_unjudged_ids": unjudged[:50]}
    elif fmt == "beir":
        rows = docs.read_documents(path, "beir", metadata=profile.document_metadata or None)
    else:
        rows = docs.read_documents(path, fmt=fmt, fields=profile.document_fields or None,
                                   metadata=profile.document_metadata or None)
    if profile.questions_source != "user":  # a model writes the questions
        return rows, None, files, {}
    if questions is None:
        if not profile.user_questions_path:
            raise DataError(f"{shown_path(profile_file(profile.name))}: questions_source 'user' needs user_questions_path")
        qpath = profile.path("user_questions_path")
        ids = {r["id"] for r in rows}
        questions = docs.read_user_questions(qpath, fields=profile.question_fields or None, known_doc_ids=ids)
        files["questions"] = shown_path(qpath)
        if profile.qrels_path or fmt == "beir":
            qpath = beir_qrels if fmt == "beir" else profile.path("qrels_path")
            # the folder's own split judges its own queries too: only those of the questions given are read
            own_split = fmt == "beir" and not profile.qrels_path
            qrels = docs.read_qrels(qpath, None if own_split else {q["qid"] for q in questions}, ids)
            files["judgements"] = shown_path(qpath)
            questions = docs.attach_qrels(questions, qrels, qpath, require_relevant=False)
    return rows, questions, files, read


def import_study(profile: Profile, force: bool = False) -> tuple[list[dict], dict]:
    """Notebook 01 for a study of your own documents: read the user's files and write the
    collection, the questions and the manifest into the study's data folder (nothing else is
    written); read back when the saved manifest has the same inputs key. What is returned is what
    was written, read back (as a rerun reads it), so a first run and its rerun show the same.

    When the files changed since the last import and the collection or the questions they give
    changed with them, every result computed from the old ones is moved aside, never deleted
    (:func:`set_aside`), and the designs compute them again; this is printed."""
    key = import_key(profile)
    out, man = profile.data_dir / "collection.jsonl", profile.data_dir / "collection_manifest.json"
    qfile = profile.data_dir / "questions.csv"
    before: dict[Path, bytes] = {}
    if out.exists() and man.exists():
        manifest = json.loads(man.read_text())
        if not force and manifest.get("inputs_key") == key:
            say(manifest)
            return read_collection(out), manifest
        before = {p: p.read_bytes() for p in (out, qfile, man) if p.exists()}
        old_key = manifest.get("inputs_key") or "unknown"
    # its steps shown as they end (a file of 100 MB takes seconds to read, measure, write and read back)
    steps = bar(total=4, desc=f"importing {shown_path(profile.path('documents_path'))}", unit="step")
    rows, questions, files, read = read_user_data(profile)
    steps.update()
    manifest = {"kind": "documents", "inputs_key": key, "profile": profile.name, "files": files,
                "collection_source": "documents", "n_papers": len(rows), "by_role": {"document": len(rows)},
                "text_words": _text_words(rows), "with_title": sum(bool(r["title"]) for r in rows),
                "metadata_fields": sorted({k for r in rows for k in r.get("metadata", {})}), **read}
    steps.update()
    if questions is not None:
        kept = [q for q in questions if any(g > 0 for g in (q.get("relevant") or {}).values())]
        scored = {q["qid"] for q in kept}
        manifest.update(questions=len(questions), questions_scored=len(kept),
                        questions_without_relevant=[q["qid"] for q in questions if q["qid"] not in scored][:50],
                        relevant_per_question=_spread([sum(g > 0 for g in q["relevant"].values()) for q in kept]),
                        graded=any(g > 1 for q in kept for g in q["relevant"].values()))
        if not kept:
            raise DataError(f"{files.get('questions')}: no question has a relevant document "
                            f"(judgements: {files.get('judgements', 'the questions file')})")
        write_questions([{"qid": q["qid"], "source_id": encode(q["relevant"]), "style": "", "question": q["question"],
                          "short": "", "ok": 1, "review_note": "", "generator": "user"} for q in kept], qfile)
    else:  # a model writes the questions (notebook 02): draw the documents it writes them from
        rows, drawn = _draw_sources(rows, profile)
        manifest.update(drawn)
    write_jsonl(out, rows)
    steps.update()
    if before and any(p.read_bytes() != b for p, b in before.items() if p != man):
        manifest["superseded"] = set_aside(profile, old_key, before)
    write_json(man, manifest)
    manifest = json.loads(man.read_text())
    rows = read_collection(out)
    steps.update()
    steps.close()
    say(manifest)
    return rows, manifest


def say(manifest: dict) -> None:
    """What the import read but does not use, and where the results of earlier files went, printed from
    the manifest (on every run, so a rerun says what the first run said): the BEIR queries the split
    does not judge (counted and named), and the results set aside when the files changed."""
    n = manifest.get("queries_unjudged", 0)
    if n:
        ids = manifest.get("queries_unjudged_ids", [])
        print(f"{manifest['files']['questions']}: {n} quer{'y has' if n == 1 else 'ies have'} no judgement in "
              f"{manifest['files']['judgements']} and {'is' if n == 1 else 'are'} not scored: {', '.join(ids[:20])}"
              + (f" and {n - 20} more" if n > 20 else ""))
    aside = manifest.get("superseded")
    if aside:
        print(f"{manifest['files']['documents']}: the study's files changed; the data and {aside['run_files']} saved "
              f"run file(s) computed from the earlier files (inputs {aside['from_inputs_key'][:12]}) were moved to "
              f"{aside['moved_to']} (kept, not deleted), and every design computed again (embeddings of unchanged "
              "documents reused from the cache)")


def set_aside(profile: Profile, old_key: str, data: dict[Path, bytes]) -> dict:
    """The study's files changed and give another collection or other questions: the old data files
    (``data``: path -> their bytes before the import) and every run file computed from them (each
    design's ``run<k>.jsonl`` and ``.trec``, the ``qrels.txt`` beside them, in every folder of the
    study's results) are moved into ``superseded/<UTC time>-<old inputs key>/`` of the study's
    folder, their paths kept, nothing deleted; what was moved is returned (the manifest keeps it, and
    :func:`say` prints it)."""
    home = profile.study_dir or profile.data_dir.parent
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    dest = home / "superseded" / f"{stamp}-{old_key[:12]}"
    for path, blob in data.items():
        write_bytes(dest / "data" / path.name, blob)
    results = ROOT / profile.settings["results_dir"]
    runs = sorted(p for p in results.rglob("*") if p.is_file() and _is_run_file(p.relative_to(results)))
    for p in runs:
        target = dest / "results" / p.relative_to(results)
        target.parent.mkdir(parents=True, exist_ok=True)
        p.replace(target)
    return {"from_inputs_key": old_key, "moved_to": shown_path(dest), "run_files": len(runs)}


# folders of a study's results that hold no run computed from its documents (its report, charts, model
# calls and caches, and results already set aside)
_NOT_RUNS = ("report", "figures", "llm_records", "cache", "superseded")


def _is_run_file(rel: Path) -> bool:
    """Whether a path (relative to the study's results) is a saved run: a run file, its TREC copy, the qrels."""
    if any(part in _NOT_RUNS for part in rel.parts[:-1]):
        return False
    name = rel.name
    return name == "qrels.txt" or (name.startswith("run") and name.endswith((".jsonl", ".trec"))
                                   and name[3:].split(".")[0].isdigit())


def _spread(values: list[int]) -> dict:
    return {"median": statistics.median(values), "max": max(values), "min": min(values)} if values else {}


def _draw_sources(rows: list[dict], profile: Profile) -> tuple[list[dict], dict]:
    """For model-written questions: ``n_sources`` documents drawn with the seed (role source), each
    with its ``n_lookalikes`` nearest documents by TF-IDF cosine (``lib/data/draw.py``), which
    the question reviewer reads as the question's competitors."""
    papers = [Paper.from_row(r) for r in rows]
    order = [p.id for p in draw_sources(papers, profile.n_sources, profile.seed)]
    chosen = set(order)
    neighbours = tfidf_neighbours(papers, order, profile.n_lookalikes) if profile.n_lookalikes else {s: [] for s in order}
    rows = [{**r, "role": "source" if r["id"] in chosen else "document"} for r in rows]
    return rows, {"source_order": order, "lookalikes": neighbours, "by_role": {"source": len(order),
                                                                              "document": len(rows) - len(order)}}

