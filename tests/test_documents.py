"""A user's own documents, questions and judgements: every format on tiny real files
(tests/data/userdocs/, README there), and every error naming its file, line or row, and field."""
import csv
import json
from pathlib import Path

import pytest

from lib.data.documents import attach_qrels, read_beir, read_documents, read_qrels, read_user_questions
from lib.data.papers import paper_text
from lib.errors import DataError

DATA = Path(__file__).resolve().parent / "data" / "userdocs"
ROW_KEYS = {"id", "title", "abstract", "categories", "first_seen", "role", "metadata"}
CSV_FIELDS = {"id": "doc_id", "title": "heading", "text": "body", "categories": "subjects", "first_seen": "date"}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    return path


def jsonl(tmp_path: Path, name: str, *objs) -> Path:
    return write(tmp_path, name, "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs))


def parquet(tmp_path: Path, name: str, columns: dict) -> Path:
    import fastparquet
    import pandas as pd

    path = tmp_path / name
    fastparquet.write(str(path), pd.DataFrame(columns))
    return path


def error_of(call, *args, **kwargs) -> str:
    with pytest.raises(DataError) as exc:
        call(*args, **kwargs)
    return str(exc.value)


# ---------------------------------------------------------------- the formats

def test_jsonl_any_id_format_and_metadata():
    rows = read_documents(DATA / "docs.jsonl", metadata=["source", "year", "categories", "first_seen"])
    assert [r["id"] for r in rows] == ["doc-7", "a/b", "42", "文書-1"]  # the integer id as text, ids stripped
    assert all(set(r) == ROW_KEYS and r["role"] == "document" for r in rows)
    by_id = {r["id"]: r for r in rows}
    raw = [json.loads(line) for line in (DATA / "docs.jsonl").read_text(encoding="utf-8").split("\n") if line.strip()]
    assert [r["abstract"] for r in rows] == [o["text"] for o in raw]  # the whole text, untouched
    assert "\u2028" in by_id["a/b"]["abstract"]  # a raw line separator inside a JSON string is no line break
    assert by_id["a/b"]["title"] == "" and by_id["a/b"]["metadata"] == {"source": "memo"}
    assert by_id["doc-7"]["categories"] == ["physics.ao-ph", "eess.SY"] and by_id["doc-7"]["first_seen"] == "2024-03-05"
    assert by_id["doc-7"]["metadata"] == {"source": "report", "year": 2024}  # paper fields are not repeated there
    assert by_id["42"]["categories"] == [] and by_id["42"]["first_seen"] == ""
    # without metadata nothing further is kept, and categories / first_seen stay empty
    bare = read_documents(DATA / "docs.jsonl")
    assert all(r["metadata"] == {} and r["categories"] == [] and r["first_seen"] == "" for r in bare)
    assert paper_text(by_id["doc-7"]).startswith("Tidal power in narrow estuaries. Tidal turbines")


def test_csv_mapped_columns():
    rows = read_documents(DATA / "docs.csv", fields=CSV_FIELDS, metadata=["lang"])
    assert [r["id"] for r in rows] == ["007", "x-1", "Ω2"]  # a leading zero survives: CSV cells stay text
    first, second, third = rows
    assert first["abstract"] == "Agents that keep notes, and read them back, answer\r\nmulti-step questions better."
    assert first["categories"] == ["cs.AI", "cs.CL"] and first["first_seen"] == "2025-01-15"
    assert second["title"] == "" and second["categories"] == [] and second["first_seen"] == ""
    assert third["title"] == 'Quoted "words"' and third["metadata"] == {"lang": "en"}
    # the same file through fmt, whatever its suffix
    copy = DATA / "docs.csv"
    assert read_documents(copy, fmt="csv", fields=CSV_FIELDS, metadata=["lang"]) == rows


def test_csv_text_longer_than_the_csv_modules_cell_limit(tmp_path):
    text = "word " * 60_000  # 300,000 characters, past csv's default 131,072
    path = tmp_path / "long.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([["id", "text"], ["long-1", text]])
    limit = csv.field_size_limit()
    (row,) = read_documents(path)
    assert row["abstract"] == text.strip()
    assert csv.field_size_limit() == limit  # the module's limit is put back


def test_parquet_written_by_pyarrow():
    rows = read_documents(DATA / "docs.parquet", fields={"id": "doc_id", "text": "body"},
                          metadata=["pages", "categories", "first_seen"])
    assert [r["id"] for r in rows] == ["p-1", "p/2", "p-3"]
    p1, p2, p3 = rows
    assert p1["categories"] == ["cs.DB", "cs.IR"] and p1["first_seen"] == "2024-05-01"  # a date column as text
    assert p1["metadata"] == {"pages": 12} and isinstance(p1["metadata"]["pages"], int)
    assert p2["title"] == "" and p2["first_seen"] == ""  # nulls: no title, no date
    assert p3["categories"] == [] and p3["metadata"] == {"pages": None}
    json.dumps(rows)  # plain values only


def test_parquet_with_integer_ids(tmp_path):
    path = parquet(tmp_path, "ints.parquet", {"id": [3, 10], "text": ["three", "ten"], "score": [0.5, 1.5]})
    rows = read_documents(path, metadata=["score"])
    assert [r["id"] for r in rows] == ["3", "10"] and [r["metadata"]["score"] for r in rows] == [0.5, 1.5]


def test_beir_folder():
    docs, questions, qrels, unjudged = read_beir(DATA / "beir")
    assert [d["id"] for d in docs] == ["d1", "d2", "d3", "d4", "d5"]
    assert read_documents(DATA / "beir") == docs  # a folder is read as BEIR
    d1 = docs[0]
    assert d1["title"] == "Coral bleaching thresholds" and d1["metadata"] == {"url": "https://example.org/d1"}
    assert docs[1]["title"] == "" and docs[3]["metadata"] == {}
    assert qrels == {"q1": {"d1": 2, "d3": 1, "d2": 0}, "q2": {"d4": 1}, "q3": {"d5": 1, "d2": 2}, "q5": {"d1": 0}}
    # the split's queries in queries.jsonl order; grade 0 is not relevant: q5 kept with nothing relevant
    # (a study counts it and leaves it out); q4 (judged in dev only) is no question of test: returned
    assert questions == [
        {"qid": "q1", "question": "at what temperature do corals bleach", "relevant": {"d1": 2, "d3": 1}},
        {"qid": "q2", "question": "where do kelp forests grow fastest", "relevant": {"d4": 1}},
        {"qid": "q3", "question": "why do shells form slowly in acidic water", "relevant": {"d5": 1, "d2": 2}},
        {"qid": "q5", "question": "deep sea mining rules", "relevant": {}}]
    assert unjudged == ["q4"]
    _, dev, dev_qrels, dev_unjudged = read_beir(DATA / "beir", split="dev")
    assert [q["qid"] for q in dev] == ["q4"] and dev_qrels == {"q4": {"d2": 1}}
    assert dev_unjudged == ["q1", "q2", "q3", "q5"]


def test_ids_are_read_in_nfc_and_ids_equal_once_normalised_are_refused(tmp_path):
    nfc, nfd = "caf\u00e9", "cafe\u0301"  # the same id: a precomposed e-acute, and e with a combining accent
    assert nfc != nfd
    path = jsonl(tmp_path, "docs.jsonl", {"id": nfd, "text": "one"}, {"id": "b", "text": "two"})
    assert [r["id"] for r in read_documents(path)] == [nfc, "b"]
    # the judgements and the questions' relevant column find the document however its id is written
    qrels = write(tmp_path, "q.qrels", f"q1 0 {nfc} 1\nq{nfd} 0 {nfd} 2\n")
    assert read_qrels(qrels, None, [nfc, "b"]) == {"q1": {nfc: 1}, f"q{nfc}": {nfc: 2}}
    qs = write(tmp_path, "qs.csv", f"qid,question,source_id\nq{nfd},which one,{nfd}\n")
    assert read_user_questions(qs, known_doc_ids=[nfc]) == [{"qid": f"q{nfc}", "question": "which one",
                                                             "relevant": {nfc: 1}}]
    # two ids that collide once normalised: refused, naming the file, both lines and the field
    clash = jsonl(tmp_path, "clash.jsonl", {"id": nfc, "text": "one"}, {"id": "b", "text": "two"},
                  {"id": nfd, "text": "three"})
    msg = error_of(read_documents, clash)
    assert str(clash) in msg and "line 3" in msg and "line 1" in msg and "field 'id'" in msg and "NFC" in msg
    msg = error_of(read_user_questions, write(tmp_path, "qclash.csv", f"qid,question\n{nfc},a\n{nfd},b\n"))
    assert "qclash.csv: line 3" in msg and "line 2" in msg and "field 'qid'" in msg and "NFC" in msg
    beir = tmp_path / "beir"
    jsonl(beir, "corpus.jsonl", {"_id": nfd, "text": "x"})
    jsonl(beir, "queries.jsonl", {"_id": "q1", "text": "y"}, {"_id": "q2", "text": "z"})
    write(beir, "qrels/test.tsv", f"query-id\tcorpus-id\tscore\nq1\t{nfc}\t1\n")
    docs, questions, _, unjudged = read_beir(beir)
    assert docs[0]["id"] == nfc and questions[0]["relevant"] == {nfc: 1} and unjudged == ["q2"]
    jsonl(beir, "corpus.jsonl", {"_id": nfd, "text": "x"}, {"_id": nfc, "text": "x"})
    msg = error_of(read_beir, beir)
    assert "corpus.jsonl: line 2" in msg and "field '_id'" in msg and "line 1" in msg and "NFC" in msg


def test_user_questions_with_a_relevant_column():
    doc_ids = [r["id"] for r in read_documents(DATA / "docs.csv", fields=CSV_FIELDS)]
    qs = read_user_questions(DATA / "questions.csv", known_doc_ids=doc_ids)
    assert qs == [{"qid": "q1", "question": "which agents answer multi-step questions better", "relevant": {"007": 1}},
                  {"qid": "q2", "question": "a document with no heading", "relevant": {"x-1": 1}}]


def test_user_questions_with_trec_qrels():
    doc_ids = [r["id"] for r in read_documents(DATA / "docs.jsonl")]
    qs = read_user_questions(DATA / "questions.jsonl", fields={"id": "id", "question": "text"})
    assert [q["relevant"] for q in qs] == [{}, {}]  # no relevant column: relevance comes from the qrels
    qrels = read_qrels(DATA / "qrels.txt", [q["qid"] for q in qs], doc_ids)
    assert qrels == {"u1": {"doc-7": 2, "42": 1}, "u2": {"a/b": 1, "doc-7": 0}}
    full = attach_qrels(qs, qrels, DATA / "qrels.txt")
    assert [q["relevant"] for q in full] == [{"doc-7": 2, "42": 1}, {"a/b": 1}]


def test_trec_and_beir_qrels_read_the_same(tmp_path):
    trec = write(tmp_path, "q.trec", "q1 0 d1 2\nq1 Q0 d2 0\n\nq2 0 d1 1\n")
    beir = write(tmp_path, "q.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td1\t1\n")
    assert read_qrels(trec, None, None) == read_qrels(beir, ["q1", "q2"], ["d1", "d2"]) == \
        {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}}


# ---------------------------------------------------------------- the errors

@pytest.mark.parametrize("name, text, kwargs, fragments", [
    ("missing_text.jsonl", '{"id": "a", "text": "x"}\n{"id": "b", "body": "y"}\n', {},
     ["line 2", "missing field 'text'", "['body', 'id']"]),
    ("missing_col.csv", "id,title,body\na,t,x\n", {},
     ["header", "missing column 'text'", "['id', 'title', 'body']"]),
    ("missing_title.csv", "id,text\na,x\n", {"fields": {"title": "heading"}}, ["header", "missing column 'heading'"]),
    ("missing_meta.csv", "id,text\na,x\n", {"metadata": ["lang"]}, ["header", "missing column 'lang'", "metadata"]),
    ("missing_meta.jsonl", '{"id": "a", "text": "x"}\n', {"metadata": ["lang"]}, ["'lang'", "in no line", "['id', 'text']"]),
    ("empty_id.jsonl", '{"id": "a", "text": "x"}\n{"id": "  ", "text": "y"}\n', {}, ["line 2", "field 'id'", "empty"]),
    ("null_id.jsonl", '{"id": null, "text": "y"}\n', {}, ["line 1", "field 'id'", "empty"]),
    ("empty_id.csv", "id,text\na,x\n,y\n", {}, ["line 3", "field 'id'", "empty"]),
    ("blank_line.csv", "id,text\na,x\n\n,y\n", {}, ["line 4", "field 'id'", "empty"]),
    ("dup.csv", "id,text\na,x\nb,y\n a ,z\n", {}, ["line 4", "field 'id'", "duplicate id 'a'", "first at line 2"]),
    ("dup_multiline.csv", 'id,text\na,"two\nlines"\na,z\n', {}, ["line 4", "duplicate id 'a'", "first at line 2"]),
    ("dup.jsonl", '{"id": 7, "text": "x"}\n\n{"id": "7", "text": "y"}\n', {}, ["line 3", "duplicate id '7'", "line 1"]),
    ("space_id.jsonl", '{"id": "a b", "text": "x"}\n', {}, ["line 1", "field 'id'", "whitespace"]),
    ("float_id.jsonl", '{"id": 1.5, "text": "x"}\n', {}, ["line 1", "field 'id'", "float"]),
    ("bool_id.jsonl", '{"id": true, "text": "x"}\n', {}, ["line 1", "field 'id'", "bool"]),
    ("empty_text.jsonl", '{"id": "a", "text": "  "}\n', {}, ["line 1", "field 'text'", "empty"]),
    ("empty_text.csv", "doc,body\na,\n", {"fields": {"id": "doc", "text": "body"}}, ["line 2", "field 'body'", "empty"]),
    ("list_text.jsonl", '{"id": "a", "text": ["x"]}\n', {}, ["line 1", "field 'text'", "should be a string"]),
    ("not_json.jsonl", '{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "c", text}\n', {},
     ["line 3", "not valid JSON"]),
    ("not_object.jsonl", '["a", "x"]\n', {}, ["line 1", "expected a JSON object", "list"]),
    ("title_number.jsonl", '{"id": "a", "title": 5, "text": "x"}\n', {}, ["line 1", "field 'title'", "should be a string"]),
    ("bad_date.csv", "id,text,first_seen\na,x,2024-13-01\n", {"metadata": ["first_seen"]},
     ["line 2", "field 'first_seen'", "YYYY-MM-DD"]),
    ("bad_cats.jsonl", '{"id": "a", "text": "x", "cats": [1, 2]}\n', {"fields": {"categories": "cats"}},
     ["line 1", "field 'cats'", "list of strings"]),
    ("long_row.csv", "id,text\na,x,extra\n", {}, ["line 2", "3 fields", "2 columns"]),
    ("dup_header.csv", "id,text,text\na,x,y\n", {}, ["line 1", "header", "['text']"]),
    ("empty.csv", "\n\n", {}, ["empty file"]),
    ("empty.jsonl", "\n", {}, ["no documents"]),
    ("notes.txt", "id,text\n", {}, ["suffix '.txt'"]),
    ("ok.jsonl", '{"id": "a", "text": "x"}\n', {"fields": {"body": "text"}}, ["fields", "unknown name", "'body'"]),
    ("ok2.jsonl", '{"id": "a", "text": "x"}\n', {"fmt": "xml"}, ["unknown format 'xml'"]),
])
def test_document_errors_name_file_place_and_field(tmp_path, name, text, kwargs, fragments):
    path = write(tmp_path, name, text)
    msg = error_of(read_documents, path, **kwargs)
    assert str(path) in msg
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)


def test_not_utf8_names_the_line_and_byte(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("id,text\na,ok\nb,café\n".encode("latin-1"))
    msg = error_of(read_documents, path)
    assert str(path) in msg and "line 3" in msg and "0xe9" in msg


def test_no_such_file(tmp_path):
    for name in ("absent.jsonl", "absent.csv", "absent.parquet"):
        assert "no such file" in error_of(read_documents, tmp_path / name)


def test_parquet_errors(tmp_path):
    path = write(tmp_path, "fake.parquet", "id,text\na,x\n")
    msg = error_of(read_documents, path)
    assert str(path) in msg and "not a readable Parquet file" in msg
    path = parquet(tmp_path, "cols.parquet", {"key": ["a"], "text": ["x"]})
    msg = error_of(read_documents, path)
    assert str(path) in msg and "missing column 'id'" in msg and "['key', 'text']" in msg
    path = parquet(tmp_path, "dup.parquet", {"id": ["a", "b", "a"], "text": ["x", "y", "z"]})
    msg = error_of(read_documents, path)
    assert "row 3" in msg and "duplicate id 'a'" in msg and "first at row 1" in msg
    path = parquet(tmp_path, "empty.parquet", {"id": ["a", "b"], "text": ["x", None]})
    msg = error_of(read_documents, path)
    assert "row 2" in msg and "field 'text'" in msg and "empty" in msg
    path = parquet(tmp_path, "title.parquet", {"id": ["a"], "text": ["x"], "title": [3]})
    msg = error_of(read_documents, path)
    assert "row 1" in msg and "field 'title'" in msg and "int" in msg


def test_question_errors(tmp_path):
    path = write(tmp_path, "qs.csv", "qid,text\nq1,hello\n")
    msg = error_of(read_user_questions, path)
    assert str(path) in msg and "missing column 'question'" in msg and "['qid', 'text']" in msg
    path = write(tmp_path, "dup.csv", "qid,question\nq1,a\nq1,b\n")
    assert "line 3" in (msg := error_of(read_user_questions, path)) and "duplicate id 'q1'" in msg
    path = write(tmp_path, "empty.csv", "qid,question\nq1,\n")
    assert "line 2" in (msg := error_of(read_user_questions, path)) and "field 'question'" in msg
    path = write(tmp_path, "rel.csv", "qid,question,source_id\nq1,a,d1\nq2,b,d9\n")
    msg = error_of(read_user_questions, path, known_doc_ids=["d1"])
    assert str(path) in msg and "line 3" in msg and "field 'source_id'" in msg and "'d9'" in msg
    path = write(tmp_path, "norel.csv", "qid,question\nq1,a\n")
    msg = error_of(read_user_questions, path, fields={"relevant": "doc"})
    assert "missing column 'doc'" in msg
    path = write(tmp_path, "none.jsonl", "\n")
    assert "no questions" in error_of(read_user_questions, path)


@pytest.mark.parametrize("text, fragments", [
    ("q1 0 d1 1\nq9 0 d1 1\n", ["line 2", "field 'qid'", "'q9'"]),
    ("q1 0 d1 1\nq1 0 d9 1\n", ["line 2", "field 'docid'", "'d9'"]),
    ("q1 0 d1 high\n", ["line 1", "field 'grade'", "'high'"]),
    ("q1 0 d1\n", ["line 1", "4 fields"]),
    ("q1 0 d1 1\n\nq1 0 d1 2\n", ["line 3", "already judges 'd1'", "line 1"]),
    ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td9\t1\n", ["line 3", "field 'corpus-id'", "'d9'"]),
    ("query-id\tcorpus-id\tscore\nq9\td1\t1\n", ["line 2", "field 'query-id'", "'q9'"]),
    ("query-id\tcorpus-id\tscore\nq1\td1\t1.5\n", ["line 2", "field 'score'", "'1.5'"]),
    ("query-id\tcorpus-id\tscore\nq1 d1 1\n", ["line 2", "3 tab-separated fields"]),
    ("qid\tdocid\trel\nq1\td1\t1\n", ["line 1", "query-id<TAB>corpus-id<TAB>score"]),
    ("query-id\tcorpus-id\tscore\n", ["no judgements"]),
])
def test_qrels_errors(tmp_path, text, fragments):
    path = write(tmp_path, "qrels.txt", text)
    msg = error_of(read_qrels, path, ["q1", "q2"], ["d1", "d2"])
    assert str(path) in msg
    for fragment in fragments:
        assert fragment in msg, (fragment, msg)


def test_attach_qrels_errors():
    qs = [{"qid": "q1", "question": "a", "relevant": {}}, {"qid": "q2", "question": "b", "relevant": {"d1": 1}}]
    msg = error_of(attach_qrels, qs, {"q1": {"d1": 0}}, "my.qrels")
    assert "my.qrels" in msg and "'q1'" in msg and "no relevant document" in msg
    msg = error_of(attach_qrels, qs, {"q1": {"d2": 1}, "q2": {"d1": 0}}, "my.qrels")
    assert "'q2'" in msg and "not relevant" in msg


def test_beir_errors(tmp_path):
    folder = tmp_path / "b"
    jsonl(folder, "corpus.jsonl", {"_id": "d1", "title": "", "text": "x"})
    jsonl(folder, "queries.jsonl", {"_id": "q1", "text": "y"})
    msg = error_of(read_beir, folder)
    assert "test.tsv" in msg and "no such qrels split 'test'" in msg
    write(folder, "qrels/dev.tsv", "query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    assert "['dev']" in error_of(read_beir, folder, split="test")
    msg = error_of(read_beir, folder, split="dev")
    assert str(folder / "qrels" / "dev.tsv") in msg and "line 2" in msg and "field 'corpus-id'" in msg
    write(folder, "qrels/train.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t0\n")
    assert "no question has a relevant document" in error_of(read_beir, folder, split="train")
    msg = error_of(read_beir, tmp_path / "nowhere")
    assert "no such BEIR folder" in msg
    msg = error_of(read_documents, write(tmp_path, "corpus.jsonl", "{}\n"), fmt="beir")
    assert "is a folder" in msg
    bad = tmp_path / "bad_meta"
    jsonl(bad, "corpus.jsonl", {"_id": "d1", "text": "x"}, {"_id": "d2", "text": "y", "metadata": "oops"})
    msg = error_of(read_documents, bad)
    assert str(bad / "corpus.jsonl") in msg and "line 2" in msg and "field 'metadata'" in msg
    empty = tmp_path / "empty_beir"
    empty.mkdir()
    msg = error_of(read_beir, empty)
    assert str(empty / "corpus.jsonl") in msg and "no such file" in msg
