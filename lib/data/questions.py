"""Questions: one per source paper, in three rotating styles, checked for copied title words,
reviewed against the source abstract and its nearest neighbours.
"""
from __future__ import annotations

import csv
import io
import re
import string
import unicodedata
from pathlib import Path
from typing import Iterable

from ..errors import DataError
from .relevance import judgements
from ..io import read_utf8, write_text

STYLES = ("specific", "problem", "vague")
QUESTION_FIELDS = ["qid", "source_id", "style", "question", "short", "ok", "review_note", "generator"]
TWOPART_FIELDS = ["qid", "source_ids", "question", "short", "ok", "review_note", "generator"]
_PUNCT = re.compile(f"[{re.escape(string.punctuation)}\u2010-\u2015\u2018-\u201f]")


def words(text: str) -> list[str]:
    """Lowercase, strip punctuation, split on whitespace (the article's mechanical check)."""
    return _PUNCT.sub(" ", text.lower()).split()


def word_count(text: str) -> int:
    """A question's length in words as written (split on whitespace; a hyphenated term is one word), the
    measure of the article's "14 to 54 words" and of the fidelity table; :func:`words` splits further, for
    the title check."""
    return len(text.split())


def ngrams(tokens: list[str], n: int = 4) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def copied_ngrams(title: str, question: str, n: int = 4) -> list[str]:
    """Runs of ``n`` consecutive title words that the question repeats (empty list: passes)."""
    shared = ngrams(words(title), n) & ngrams(words(question), n)
    return sorted(" ".join(g) for g in shared)


def style_for(index: int) -> str:
    """Styles rotate in draw order: specific, problem, vague, specific, ..."""
    return STYLES[index % len(STYLES)]


def qid_for(index: int) -> str:
    return f"q{index + 1:03d}"


def nfc(text: str) -> str:
    """Text in Unicode normal form NFC (UAX #15): how every id is compared (lib/data/documents.py)."""
    return unicodedata.normalize("NFC", text)


def read_questions(path: Path, known_ids: Iterable[str] | None = None, *, require_review: bool = True) -> list[dict]:
    """Read a questions CSV; every row and field is checked, errors name file, row and field. The
    qid and the ids of source_id are read in Unicode NFC, as the documents' ids are.

    Required: qid, source_id, question. Optional: style, short, ok, review_note, generator.
    A user's own file without ``ok`` counts every row as reviewed-ok (their responsibility).
    """
    known = set(known_ids) if known_ids is not None else None
    rows: list[dict] = []
    text = decode_csv(path)
    with io.StringIO(text, newline="") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [f for f in ("qid", "source_id", "question") if f not in header]
        if missing:
            raise DataError(f"{path}: header: missing column(s) {missing}; found {header}")
        seen: dict[str, tuple[int, str]] = {}
        for row_no, raw in enumerate(reader, start=2):  # row 1 is the header
            if None in raw:
                raise DataError(f"{path}: row {row_no}: more fields than columns in the header")
            row = {k: (v or "").strip() for k, v in raw.items()}
            for f in ("qid", "source_id", "question"):
                if not row[f]:
                    raise DataError(f"{path}: row {row_no}: field {f!r} is empty")
            written = row["qid"]
            row["qid"], row["source_id"] = nfc(row["qid"]), nfc(row["source_id"])
            if row["qid"] in seen:
                first_row, first = seen[row["qid"]]
                if first != written:
                    raise DataError(f"{path}: row {row_no}: field 'qid': qid {written!r} is the qid {first!r} of row "
                                    f"{first_row} written with other Unicode code points (the same once normalised "
                                    "to NFC); two qids may not differ by normalisation only")
                raise DataError(f"{path}: row {row_no}: field 'qid': duplicate qid {row['qid']!r}")
            seen[row["qid"]] = (row_no, written)
            try:
                judged = judgements(row["source_id"])
            except (ValueError, TypeError, AttributeError):
                raise DataError(f"{path}: row {row_no}: field 'source_id': judgements should be a JSON object "
                                f"{{\"doc id\": grade}}, got {row['source_id']!r}") from None
            unknown = [d for d in judged if known is not None and d not in known]
            if unknown:
                raise DataError(f"{path}: row {row_no}: field 'source_id': {', '.join(map(repr, unknown))} is not in the "
                                f"collection (add it with the source_ids setting and rebuild the collection)")
            style = row.get("style") or ""
            if style and style not in STYLES:
                raise DataError(f"{path}: row {row_no}: field 'style': {style!r} is not one of {STYLES}")
            ok = row.get("ok", "1") if "ok" in header else "1"
            if ok not in ("0", "1"):
                raise DataError(f"{path}: row {row_no}: field 'ok' should be 0 or 1, got {ok!r}")
            row["ok"] = int(ok)
            row.setdefault("short", "")
            row.setdefault("review_note", "")
            row.setdefault("generator", "user")
            row.setdefault("style", style)
            rows.append(row)
    if not rows:
        raise DataError(f"{path}: no question rows (only a header); a questions file needs at least one row")
    return rows


def decode_csv(path: Path) -> str:
    """A CSV file's text: UTF-8, with or without a byte-order mark; a decoding error names the file,
    the row and the byte."""
    return read_utf8(path, "questions file", "row")


def _write_csv(rows: list[dict], path: Path, fields: list[str]) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    write_text(path, buf.getvalue())


def write_questions(rows: list[dict], path: Path) -> None:
    _write_csv(rows, path, QUESTION_FIELDS)


def write_twopart_questions(rows: list[dict], path: Path) -> None:
    _write_csv(rows, path, TWOPART_FIELDS)


def read_twopart_questions(path: Path, known_ids: Iterable[str] | None = None) -> list[dict]:
    """Read the two-part questions CSV (qid, source_ids "id1;id2", question, short, ok, review_note,
    generator); every row and field is checked, errors name file, row and field."""
    known = set(known_ids) if known_ids is not None else None
    rows: list[dict] = []
    with io.StringIO(decode_csv(path), newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [f for f in TWOPART_FIELDS if f not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{path}: header: missing column(s) {missing}; found {reader.fieldnames}")
        for row_no, raw in enumerate(reader, start=2):
            row = {k: (v or "").strip() for k, v in raw.items()}
            ids = [nfc(i) for i in row["source_ids"].split(";") if i]
            if len(ids) != 2 or ids[0] == ids[1]:
                raise DataError(f"{path}: row {row_no}: field 'source_ids': expected two different ids joined by ';'")
            if known is not None and not set(ids) <= known:
                raise DataError(f"{path}: row {row_no}: field 'source_ids': {sorted(set(ids) - known)} not in the collection")
            if row["ok"] not in ("0", "1"):
                raise DataError(f"{path}: row {row_no}: field 'ok' should be 0 or 1, got {row['ok']!r}")
            rows.append({**row, "source_ids": ids, "ok": int(row["ok"])})
    if not rows:
        raise DataError(f"{path}: no question rows (only a header)")
    return rows
