"""Assemble the bundled question set from the drafts and their independent reviews.

data/question_drafts/partN.csv (questions written from title + abstract, before any search) and
reviewN.csv (reviews against the source and its 3 nearest collection papers) -> data/questions.csv,
and the pilot's subset -> data/pilot/questions.csv. Fails if any question copies 4+ title words.
"""
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.collection import DataError  # noqa: E402
from lib.config import ROOT  # noqa: E402
from lib.questions import copied_ngrams, write_questions  # noqa: E402

GENERATOR = "claude-authoring-session (LLM, title+abstract only; reviewed by a separate LLM pass)"
drafts = ROOT / "data" / "question_drafts"
rows = []
for k in range(1, 5):
    packet = {p["qid"]: p for p in json.load(open(drafts / f"packet{k}.json"))}
    reviews = {r["qid"]: r for r in csv.DictReader(open(drafts / f"review{k}.csv", newline="", encoding="utf-8"))}
    for row_no, q in enumerate(csv.DictReader(open(drafts / f"part{k}.csv", newline="", encoding="utf-8")), start=2):
        rv = reviews.get(q["qid"])
        if rv is None:
            raise DataError(f"{drafts / f'review{k}.csv'}: no review for {q['qid']}")
        title = packet[q["qid"]]["title"]
        for field in ("question", "short"):
            if copied_ngrams(title, q[field]):
                raise DataError(f"{drafts / f'part{k}.csv'}: row {row_no}: field {field!r} copies title words "
                                f"{copied_ngrams(title, q[field])}")
        rows.append({**q, "ok": int(rv["ok"]), "review_note": rv["review_note"], "generator": GENERATOR})
write_questions(rows, ROOT / "data" / "questions.csv")
pilot_sources = set(json.load(open(ROOT / "data" / "pilot" / "collection_manifest.json"))["source_order"])
write_questions([r for r in rows if r["source_id"] in pilot_sources], ROOT / "data" / "pilot" / "questions.csv")
print(f"{len(rows)} questions, {sum(r['ok'] for r in rows)} ok")
