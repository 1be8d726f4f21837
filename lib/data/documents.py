"""A user's own documents, questions and relevance judgements, read and checked; nothing is written.

Documents come as JSON lines (``.jsonl``), CSV (``.csv``), Parquet (``.parquet``) or a BEIR folder
(Thakur et al. 2021, "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information
Retrieval Models", NeurIPS Datasets and Benchmarks): ``corpus.jsonl`` lines ``{"_id", "title",
"text", "metadata": {}}``, ``queries.jsonl`` lines ``{"_id", "text", "metadata": {}}`` and
``qrels/<split>.tsv``, tab-separated under the header ``query-id  corpus-id  score``, as BEIR's
``GenericDataLoader`` reads them. Relevance judgements may also be a TREC qrels file
(``qid iter docid grade``, whitespace-separated, as trec_eval reads it).

Every document becomes a row of the collection's shape (:func:`lib.data.collection.read_collection`):
``id``, ``title``, ``abstract`` (the document's whole text, however long; chunking is done
elsewhere), ``categories``, ``first_seen``, ``role`` (``"document"``) and ``metadata`` (a dict).
A question is ``{"qid", "question", "relevant": {doc_id: grade}}``, grades > 0 only.

Ids (documents', questions', and those the judgements name) are read in Unicode normal form NFC
(UAX #15): ids that differ only by normalisation name one document, and two such ids in one file
are refused, as duplicates are; an id holding an invisible character (a zero-width space or joiner, a
byte-order mark, any format or control character) is refused, naming the character.

Every error is a :class:`DataError` naming the file, the 1-based line (text files, the header
being line 1 of a CSV file) or row (Parquet), and the field.

Over 500 lines: one reader per input format (JSON lines, CSV, Parquet, BEIR, TREC qrels), each with
the checks and messages that name a user's file and line.
"""
from __future__ import annotations

import csv
import datetime
import io
import math
import sys
import unicodedata
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..errors import DataError
from ..io import iter_jsonl, read_utf8

FORMATS = ("jsonl", "csv", "parquet", "beir")
SUFFIXES = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}
DOCUMENT_FIELDS = ("id", "title", "text", "categories", "first_seen")
DEFAULT_FIELDS = {"id": "id", "title": "title", "text": "text"}
BEIR_FIELDS = {"id": "_id", "title": "title", "text": "text"}
QUESTION_FIELDS = ("id", "question", "relevant")
# the project's own questions file (data/questions.csv) reads with no mapping
DEFAULT_QUESTION_FIELDS = {"id": "qid", "question": "question", "relevant": "source_id"}
BEIR_QUESTION_FIELDS = {"id": "_id", "question": "text"}
BEIR_QRELS_HEADER = ("query-id", "corpus-id", "score")
BEIR_SPLITS = ("test", "dev", "train")
ROLE = "document"


@dataclass
class _Table:
    """A file's records before checking: where each came from, and the header if the format has one."""

    path: Path
    unit: str                       # "line" (JSON lines, CSV) or "row" (Parquet)
    columns: list[str] | None       # the header (CSV, Parquet); None for JSON lines, whose fields vary by line
    records: list[tuple[int, dict]]

    def where(self, n: int) -> str:
        return f"{self.path}: {self.unit} {n}"


# ---------------------------------------------------------------- reading the formats

def read_text(path: Path) -> str:
    """A text file's contents, UTF-8 with or without a byte-order mark (:func:`lib.io.read_utf8`)."""
    return read_utf8(path)


def _record_id(table: "_Table", n: int, rec: Mapping, column: str, what: str,
               first_at: dict[str, tuple[int, str]]) -> tuple[str, str]:
    """Where record ``n`` is, and its id (required, NFC, unique: a second use, or an id that is the same
    as an earlier one once both are normalised, is an error naming both places)."""
    where = table.where(n)
    raw = _cell(table, n, rec, column, what, True)
    key = _id(raw, where, column)
    if key in first_at:
        at, first = first_at[key]
        written = str(raw).strip()
        if written != first:
            raise DataError(f"{where}: field {column!r}: id {written!r} is the id {first!r} of {table.unit} {at} "
                            "written with other Unicode code points (the same once normalised to NFC); "
                            "two ids may not differ by normalisation only")
        raise DataError(f"{where}: field {column!r}: duplicate id {key!r} (first at {table.unit} {at})")
    first_at[key] = (n, str(raw).strip())
    return where, key


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """Numbered lines split on newlines only (``str.splitlines`` would also split on U+2028 and
    other separators that JSON strings may hold raw)."""
    for n, line in enumerate(text.split("\n"), start=1):
        yield n, line.rstrip("\r")


def _read_jsonl(path: Path) -> _Table:
    """A JSON-lines file, every non-blank line an object (:func:`lib.io.iter_jsonl`)."""
    return _Table(path, "line", None, list(iter_jsonl(path)))


@contextmanager
def _csv_fields_unbounded() -> Iterator[None]:
    """Lift the csv module's 131,072-character cell limit while reading (documents are whole texts)."""
    old = csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _read_csv(path: Path) -> _Table:
    """A CSV file (RFC 4180, as Python's csv module reads it): the first non-blank line is the header;
    every record is numbered by the line it starts on."""
    text = read_text(path)
    header: list[str] | None = None
    records = []
    with _csv_fields_unbounded(), io.StringIO(text, newline="") as fh:
        reader = csv.reader(fh)
        end = 0
        try:
            for cells in reader:
                start, end = end + 1, reader.line_num
                if not cells or not any(c.strip() for c in cells):
                    continue
                if header is None:
                    header = [c.strip() for c in cells]
                    dup = sorted({c for c in header if header.count(c) > 1})
                    if dup:
                        raise DataError(f"{path}: line {start}: header: column(s) {dup} appear more than once")
                    continue
                if len(cells) > len(header):
                    raise DataError(f"{path}: line {start}: {len(cells)} fields but the header has {len(header)} columns")
                cells += [""] * (len(header) - len(cells))  # a short record's missing cells are empty
                records.append((start, dict(zip(header, cells))))
        except csv.Error as exc:
            raise DataError(f"{path}: line {reader.line_num}: not valid CSV ({exc})") from None
    if header is None:
        raise DataError(f"{path}: empty file (no header line)")
    return _Table(path, "line", header, records)


_NULLS = ("NaTType", "NAType")  # pandas' missing date and missing value


def _plain(value: Any) -> Any:
    """A Parquet cell as a plain Python value: numpy scalars and arrays unwrapped, nulls (None, NaN,
    NaT, NA) as None."""
    if value is None or type(value).__name__ in _NULLS:
        return None
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy scalar or array
        value = value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _read_parquet(path: Path) -> _Table:
    """A Parquet file, read with fastparquet; rows are numbered from 1 (Parquet has no header line)."""
    if not Path(path).is_file():
        raise DataError(f"{path}: no such file")
    try:
        with warnings.catch_warnings():  # fastparquet's import reads a pandas option pandas 3 deprecates
            warnings.filterwarnings("ignore", message=".*future.infer_string", category=DeprecationWarning)
            from fastparquet import ParquetFile  # fastparquet is only needed for a parquet file
    except ImportError:
        raise DataError(f"{path}: reading Parquet needs the fastparquet package (pip install fastparquet)") from None
    try:
        frame = ParquetFile(str(path)).to_pandas()
    except Exception as exc:  # fastparquet raises many kinds on a damaged or foreign file
        raise DataError(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    if any(name is not None for name in frame.index.names):  # a named index is a column the writer set aside
        frame = frame.reset_index()
    columns = [str(c) for c in frame.columns]
    records = [(n, {str(k): _plain(v) for k, v in rec.items()})
               for n, rec in enumerate(frame.to_dict("records"), start=1)]
    return _Table(Path(path), "row", columns, records)


def _read_table(path: Path, fmt: str) -> _Table:
    return {"jsonl": _read_jsonl, "csv": _read_csv, "parquet": _read_parquet}[fmt](Path(path))


def _format_of(path: Path, fmt: str | None) -> str:
    """The format asked for, or the one the suffix names (a folder is a BEIR folder)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise DataError(f"{path}: unknown format {fmt!r}; the formats are {list(FORMATS)}")
        return fmt
    if path.is_dir():
        return "beir"
    if path.suffix.lower() in SUFFIXES:
        return SUFFIXES[path.suffix.lower()]
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    raise DataError(f"{path}: cannot tell the format from the suffix {path.suffix!r}; use one of "
                    f"{sorted(SUFFIXES)}, a BEIR folder, or give the format ({list(FORMATS)})")


# ---------------------------------------------------------------- checking values

def _id(value: Any, where: str, field: str) -> str:
    """An id as a stripped, non-empty string without whitespace (TREC run and qrels files separate
    their fields by whitespace), in Unicode normal form NFC (so an id typed with a precomposed "é"
    and one with "e" and a combining accent name one document, in every file); integers are
    accepted and written in decimal."""
    if value is None:
        raise DataError(f"{where}: field {field!r} is empty")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(f"{where}: field {field!r} should be a string or an integer, got "
                        f"{type(value).__name__} {value!r}")
    text = str(value).strip()
    if not text:
        raise DataError(f"{where}: field {field!r} is empty")
    if any(c.isspace() for c in text):
        raise DataError(f"{where}: field {field!r}: id {text!r} contains whitespace (run and qrels files "
                        "separate their fields by whitespace)")
    hidden = [c for c in text if unicodedata.category(c) in ("Cf", "Cc")]  # zero-width and control characters
    if hidden:
        c = hidden[0]
        raise DataError(f"{where}: field {field!r}: id {text!r} contains {unicodedata.name(c, 'a control character')} "
                        f"(U+{ord(c):04X}), which is invisible: two ids that look the same would name two documents")
    return unicodedata.normalize("NFC", text)


def _text(value: Any, where: str, field: str, required: bool) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise DataError(f"{where}: field {field!r} should be a string, got {type(value).__name__} {value!r}")
    value = value.strip()
    if required and not value:
        raise DataError(f"{where}: field {field!r} is empty")
    return value


def _categories(value: Any, where: str, field: str) -> list[str]:
    """A list of strings, or one string of categories joined by ";" (the project's list separator)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(";")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise DataError(f"{where}: field {field!r} should be a list of strings or a string joined by ';', "
                        f"got {value!r}")
    return [v.strip() for v in value if v.strip()]


def _first_seen(value: Any, where: str, field: str) -> str:
    """A date as YYYY-MM-DD (a date or timestamp value gives its date), or "" when none is given."""
    if value is None or value == "":
        return ""
    if isinstance(value, datetime.date):
        return value.isoformat()[:10]
    if isinstance(value, str):
        value = value.strip()
        try:
            if len(value) == 10 and datetime.date.fromisoformat(value):
                return value
        except ValueError:
            pass
    raise DataError(f"{where}: field {field!r} should be a date written YYYY-MM-DD, got {value!r}")


def _json_value(value: Any) -> Any:
    """A metadata value made JSON-serialisable (dates as ISO text)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _mapping(fields: Mapping[str, str] | None, names: Sequence[str], defaults: Mapping[str, str],
             source: Path) -> dict[str, str]:
    """The defaults overlaid with the caller's mapping from the project's names to the file's columns."""
    fields = dict(fields or {})
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise DataError(f"{source}: fields: unknown name(s) {unknown}; the names are {list(names)}")
    for name, column in fields.items():
        if not isinstance(column, str) or not column.strip():
            raise DataError(f"{source}: fields: {name!r} should name a column, got {column!r}")
    return {**defaults, **{k: v.strip() for k, v in fields.items()}}


def _require_columns(table: _Table, wanted: Mapping[str, str]) -> None:
    """For a format with a header: every wanted column (label -> column) is in it."""
    if table.columns is None:
        return
    for label, column in wanted.items():
        if column not in table.columns:
            where = "header" if table.unit == "line" else "columns"
            raise DataError(f"{table.path}: {where}: missing column {column!r} ({label}); the file has columns "
                            f"{table.columns}")


def _cell(table: _Table, n: int, rec: dict, column: str, label: str, required: bool) -> Any:
    """A record's value of a column; for JSON lines, a missing required field names the line's fields."""
    if column not in rec:
        if required:
            raise DataError(f"{table.where(n)}: missing field {column!r} ({label}); the line has fields {sorted(rec)}")
        return None
    return rec[column]


# ---------------------------------------------------------------- documents

def read_documents(path: str | Path, fmt: str | None = None, fields: Mapping[str, str] | None = None,
                   metadata: Sequence[str] | None = None) -> list[dict]:
    """A user's documents as collection rows (see the module's docstring); every record checked.

    ``fmt``: ``jsonl``, ``csv``, ``parquet`` or ``beir`` (None: from the suffix; a folder is BEIR).
    ``fields``: the file's column for each of the project's names ``id``, ``title``, ``text`` (default
    the same names; ``_id``/``title``/``text`` for BEIR) and, optionally, ``categories`` and
    ``first_seen``. ``metadata``: further columns kept under ``"metadata"``; a column named
    ``categories`` or ``first_seen`` there fills that paper field instead, so the profile's
    ``filter_categories`` / ``filter_first_seen`` work. A BEIR line's ``metadata`` object is kept whole.

    Required: a non-empty, unique id (strings or integers, stripped, no whitespace) and a non-empty
    text. The title column may be absent (titles are then empty) unless ``fields`` names it.
    """
    path = Path(path)
    fmt = _format_of(path, fmt)
    beir = fmt == "beir"
    if beir:
        if not path.is_dir():
            raise DataError(f"{path}: a BEIR dataset is a folder holding corpus.jsonl, queries.jsonl and qrels/")
        path = path / "corpus.jsonl"
    cols = _mapping(fields, DOCUMENT_FIELDS, BEIR_FIELDS if beir else DEFAULT_FIELDS, path)
    extra = [metadata] if isinstance(metadata, str) else list(metadata or [])
    for name in ("categories", "first_seen"):  # named as metadata: fills the paper field
        if name in extra and name not in cols:
            cols[name] = name
            extra.remove(name)
    table = _read_table(path, "jsonl" if beir else fmt)
    title_required = bool(fields and "title" in fields)
    wanted = {f"the document's {k}": cols[k] for k in ("id", "text")}
    wanted.update({f"the document's {k}": cols[k] for k in ("title", "categories", "first_seen")
                   if k in cols and (k != "title" or title_required)})
    wanted.update({"metadata": c for c in extra})
    _require_columns(table, wanted)
    if table.columns is None:  # JSON lines: a metadata column must appear in some line
        for column in extra:
            if not any(column in rec for _, rec in table.records):
                seen = sorted({k for _, rec in table.records for k in rec})
                raise DataError(f"{path}: metadata column {column!r} is in no line; the lines have fields {seen}")
    rows: list[dict] = []
    first_at: dict[str, tuple[int, str]] = {}
    for n, rec in table.records:
        where, doc_id = _record_id(table, n, rec, cols["id"], "the document's id", first_at)
        text = _text(_cell(table, n, rec, cols["text"], "the document's text", True), where, cols["text"], True)
        title = _text(_cell(table, n, rec, cols["title"], "the document's title", title_required), where,
                      cols["title"], False)
        cats = _categories(rec.get(cols["categories"]), where, cols["categories"]) if "categories" in cols else []
        seen = _first_seen(rec.get(cols["first_seen"]), where, cols["first_seen"]) if "first_seen" in cols else ""
        meta: dict[str, Any] = {}
        if beir and rec.get("metadata") is not None:
            if not isinstance(rec["metadata"], dict):
                raise DataError(f"{where}: field 'metadata' should be a JSON object, got {type(rec['metadata']).__name__}")
            meta.update(rec["metadata"])
        meta.update({c: rec[c] for c in extra if c in rec})
        rows.append({"id": doc_id, "title": title, "abstract": text, "categories": cats, "first_seen": seen,
                     "role": ROLE, "metadata": _json_value(meta)})
    if not rows:
        raise DataError(f"{path}: no documents")
    return rows


# ---------------------------------------------------------------- questions and judgements

def read_user_questions(path: str | Path, fields: Mapping[str, str] | None = None, fmt: str | None = None,
                        known_doc_ids: Iterable[str] | None = None) -> list[dict]:
    """A user's questions file (JSON lines, CSV or Parquet) as ``{"qid", "question", "relevant"}``.

    ``fields`` maps the project's names ``id``, ``question`` and ``relevant`` to the file's columns
    (default ``qid``, ``question``, ``source_id``: the project's own questions file). The relevant
    column holds one document id, graded 1; when the file has no such column (or a row leaves it
    empty) ``relevant`` is ``{}`` and comes from a qrels file (:func:`read_qrels`, :func:`attach_qrels`).
    ``known_doc_ids``: when given, a relevant id outside it is an error.
    """
    path = Path(path)
    fmt = _format_of(path, fmt)
    if fmt == "beir":
        raise DataError(f"{path}: a BEIR folder's questions are read with read_beir")
    cols = _mapping(fields, QUESTION_FIELDS, DEFAULT_QUESTION_FIELDS, path)
    table = _read_table(path, fmt)
    relevant_required = bool(fields and "relevant" in fields)
    wanted = {"the question's id": cols["id"], "the question's text": cols["question"]}
    if relevant_required:
        wanted["the relevant document's id"] = cols["relevant"]
    _require_columns(table, wanted)
    known = set(known_doc_ids) if known_doc_ids is not None else None
    return _questions(table, cols, relevant_required, known)


def _questions(table: _Table, cols: Mapping[str, str], relevant_required: bool, known: set[str] | None) -> list[dict]:
    out: list[dict] = []
    first_at: dict[str, tuple[int, str]] = {}
    for n, rec in table.records:
        where, qid = _record_id(table, n, rec, cols["id"], "the question's id", first_at)
        question = _text(_cell(table, n, rec, cols["question"], "the question's text", True), where,
                         cols["question"], True)
        relevant: dict[str, int] = {}
        if "relevant" in cols:
            value = _cell(table, n, rec, cols["relevant"], "the relevant document's id", relevant_required)
            if value is not None and str(value).strip():
                doc = _id(value, where, cols["relevant"])
                if known is not None and doc not in known:
                    raise DataError(f"{where}: field {cols['relevant']!r}: {doc!r} is not a document id")
                relevant[doc] = 1
        out.append({"qid": qid, "question": question, "relevant": relevant})
    if not out:
        raise DataError(f"{table.path}: no questions")
    return out


def read_qrels(path: str | Path, known_qids: Iterable[str] | None,
               known_doc_ids: Iterable[str] | None) -> dict[str, dict[str, int]]:
    """Relevance judgements ``{qid: {doc_id: grade}}`` in file order, from a TREC qrels file
    (``qid iter docid grade``, whitespace-separated; ``iter`` is ignored, as trec_eval does) or a
    BEIR tsv (header ``query-id<TAB>corpus-id<TAB>score``). Grades are integers; a grade of 0 or
    less means judged not relevant (trec_eval's default relevance level is 1). Known ids (None: not
    checked), one judgement per (question, document).
    """
    path = Path(path)
    qids = set(known_qids) if known_qids is not None else None
    docs = set(known_doc_ids) if known_doc_ids is not None else None
    qrels: dict[str, dict[str, int]] = {}
    first_at: dict[tuple[str, str], int] = {}
    names: tuple[str, str, str] | None = None  # (question, document, grade) field names of the format
    for n, line in _lines(read_text(path)):
        if not line.strip():
            continue
        if names is None:
            if tuple(c.strip() for c in line.split("\t")) == BEIR_QRELS_HEADER:
                names = BEIR_QRELS_HEADER
                continue
            names = ("qid", "docid", "grade")
        where = f"{path}: line {n}"
        if names == BEIR_QRELS_HEADER:
            parts = [c.strip() for c in line.split("\t")]
            if len(parts) != 3:
                raise DataError(f"{where}: expected 3 tab-separated fields (query-id, corpus-id, score), got {len(parts)}")
            qid, doc, grade = parts
        else:
            parts = line.split()
            if len(parts) != 4:
                raise DataError(f"{where}: expected 4 fields 'qid iter docid grade' (TREC qrels) or the header "
                                f"'query-id<TAB>corpus-id<TAB>score' (BEIR), got {line.strip()!r}")
            qid, _, doc, grade = parts
        qid, doc = _id(qid, where, names[0]), _id(doc, where, names[1])
        try:
            value = int(grade)
        except ValueError:
            raise DataError(f"{where}: field {names[2]!r} should be an integer grade, got {grade!r}") from None
        if qids is not None and qid not in qids:
            raise DataError(f"{where}: field {names[0]!r}: {qid!r} is not a known question id")
        if docs is not None and doc not in docs:
            raise DataError(f"{where}: field {names[1]!r}: {doc!r} is not a document id")
        if (qid, doc) in first_at:
            raise DataError(f"{where}: field {names[1]!r}: question {qid!r} already judges {doc!r} (line "
                            f"{first_at[qid, doc]})")
        first_at[qid, doc] = n
        qrels.setdefault(qid, {})[doc] = value
    if not qrels:
        raise DataError(f"{path}: no judgements")
    return qrels


def attach_qrels(questions: Sequence[Mapping], qrels: Mapping[str, Mapping[str, int]], source: str | Path,
                 require_relevant: bool = True) -> list[dict]:
    """The questions with their relevant documents from ``qrels`` (grades > 0) added to any a
    relevant column gave; ``source`` (the qrels file) names where a problem lies. No judgement may call
    a column's document not relevant; every question must end with a relevant document, or (with
    ``require_relevant`` off: a study leaves such questions out and counts them) may end with none."""
    out = []
    for q in questions:
        judged = qrels.get(q["qid"], {})
        for doc in q["relevant"]:
            if doc in judged and judged[doc] <= 0:
                raise DataError(f"{source}: question {q['qid']!r}: judges {doc!r} not relevant (grade {judged[doc]}), "
                                "but the questions file names it as the relevant document")
        relevant = {**q["relevant"], **{d: g for d, g in judged.items() if g > 0}}
        if not relevant and require_relevant:
            raise DataError(f"{source}: question {q['qid']!r}: no relevant document (no judgement with grade > 0 "
                            "and no relevant id in the questions file)")
        out.append({**q, "relevant": relevant})
    return out


def read_beir(folder: str | Path, split: str = "test", metadata: Sequence[str] | None = None,
              qrels_path: str | Path | None = None) -> tuple[list[dict], list[dict], dict[str, dict[str, int]], list[str]]:
    """A BEIR folder: its documents (:func:`read_documents`), the questions of one qrels split, that
    split's judgements, and the ids of the queries the split does not judge. As BEIR's loader does,
    only the queries the split judges are questions (in queries.jsonl's order); a question with no
    judgement above 0 is kept with no relevant document (``relevant`` empty: a study leaves it out
    and counts it). The queries the split leaves without any judgement are not dropped silently:
    their ids are returned (a study counts and names them: :func:`lib.data.study.import_study`).
    ``qrels_path``: judgements from that file (TREC or BEIR tsv) instead of the folder's split."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)")
    documents = read_documents(folder, "beir", metadata=metadata)
    qrels_path = Path(qrels_path) if qrels_path is not None else folder / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        have = sorted(p.stem for p in (folder / "qrels").glob("*.tsv")) if (folder / "qrels").is_dir() else []
        raise DataError(f"{qrels_path}: no such qrels split {split!r}; the folder has {have or 'no qrels/*.tsv'}")
    queries_path = folder / "queries.jsonl"
    table = _read_jsonl(queries_path)
    queries = _questions(table, BEIR_QUESTION_FIELDS, False, None)
    qrels = read_qrels(qrels_path, [q["qid"] for q in queries], [d["id"] for d in documents])
    questions = [{**q, "relevant": {d: g for d, g in qrels[q["qid"]].items() if g > 0}}
                 for q in queries if q["qid"] in qrels]
    if not any(q["relevant"] for q in questions):
        raise DataError(f"{qrels_path}: no question has a relevant document (grade > 0)")
    unjudged = [q["qid"] for q in queries if q["qid"] not in qrels]
    return documents, questions, qrels, unjudged
