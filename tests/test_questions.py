import csv

import pytest

from lib.errors import DataError
from lib.config import ROOT
from lib.data.questions import copied_ngrams, read_questions, style_for, words


def write(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_four_gram_check():
    title = "Sparse Attention for Long-Context Decoding: A Study"
    assert copied_ngrams(title, "Is there a study of sparse attention for long-context decoding?") == [
        "attention for long context", "for long context decoding", "sparse attention for long"]
    assert copied_ngrams(title, "How can attention be made sparse when decoding long contexts?") == []
    assert words("Long-Context, decoding!") == ["long", "context", "decoding"]
    assert [style_for(i) for i in range(4)] == ["specific", "problem", "vague", "specific"]


def test_bundled_set_meets_the_rules():
    rows = read_questions(ROOT / "data" / "questions.csv")
    ok = [r for r in rows if r["ok"]]
    assert len(rows) == 300 and len(ok) >= 290
    assert {s: sum(r["style"] == s for r in rows) for s in ("specific", "problem", "vague")} == \
        {"specific": 100, "problem": 100, "vague": 100}
    assert all(r["short"] and 2 <= len(words(r["short"])) <= 5 for r in rows)
    assert all(r["review_note"] for r in rows)


def test_user_file_errors_name_file_row_and_field(tmp_path):
    known = {"2607.00001", "2607.00002"}
    good = write(tmp_path / "mine.csv", ["qid", "source_id", "question"],
                 [["u1", "2607.00001", "what is it?"], ["u2", "2607.00002", "and this?"]])
    rows = read_questions(good, known)
    assert [r["qid"] for r in rows] == ["u1", "u2"] and all(r["ok"] == 1 for r in rows)
    bad_id = write(tmp_path / "a.csv", ["qid", "source_id", "question"], [["u1", "9999.1", "q?"]])
    with pytest.raises(DataError, match=r"a.csv: row 2: field 'source_id': '9999.1' is not in the collection"):
        read_questions(bad_id, known)
    empty = write(tmp_path / "b.csv", ["qid", "source_id", "question"], [["u1", "2607.00001", "q?"], ["u2", "2607.00002", ""]])
    with pytest.raises(DataError, match=r"b.csv: row 3: field 'question' is empty"):
        read_questions(empty, known)
    dup = write(tmp_path / "c.csv", ["qid", "source_id", "question"], [["u1", "2607.00001", "q?"], ["u1", "2607.00002", "r?"]])
    with pytest.raises(DataError, match="row 3: field 'qid': duplicate"):
        read_questions(dup, known)
    nocol = write(tmp_path / "d.csv", ["qid", "question"], [["u1", "q?"]])
    with pytest.raises(DataError, match=r"d.csv: header: missing column\(s\) \['source_id'\]"):
        read_questions(nocol, known)
    style = write(tmp_path / "e.csv", ["qid", "source_id", "question", "style"], [["u1", "2607.00001", "q?", "odd"]])
    with pytest.raises(DataError, match="row 2: field 'style'"):
        read_questions(style, known)
    extra = tmp_path / "f.csv"
    extra.write_text("qid,source_id,question\nu1,2607.00001,q?,surplus\n")
    with pytest.raises(DataError, match="row 2: more fields than columns"):
        read_questions(extra, known)


def test_qids_and_source_ids_are_read_in_nfc_and_a_normalisation_clash_is_refused(tmp_path):
    nfc, nfd = "caf\u00e9", "cafe\u0301"  # one id written two ways (precomposed; e with a combining accent)
    path = write(tmp_path / "q.csv", ["qid", "source_id", "question"], [[f"q-{nfd}", nfd, "which?"]])
    row = read_questions(path, known_ids=[nfc])[0]
    assert row["qid"] == f"q-{nfc}" and row["source_id"] == nfc
    path = write(tmp_path / "clash.csv", ["qid", "source_id", "question"], [[nfc, "a", "x"], ["q2", "a", "y"],
                                                                            [nfd, "a", "z"]])
    with pytest.raises(DataError) as exc:
        read_questions(path)
    msg = str(exc.value)
    assert "clash.csv: row 4: field 'qid'" in msg and "row 2" in msg and "NFC" in msg


def test_a_questions_length_counts_words_as_written():
    """Length is whitespace words (the article's measure; a hyphenated term is one word), while the title
    check's tokens split on punctuation too."""
    from lib.data.questions import word_count, words

    q = "How can trajectory-weighted DPO keep an LLM tutor's answers (q.v.) honest?"
    assert word_count(q) == 11 and len(words(q)) > word_count(q)
    assert word_count("  spaced   out \n text ") == 3
