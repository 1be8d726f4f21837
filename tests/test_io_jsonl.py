"""The one JSON-lines reader (lib.io.iter_jsonl, and read_jsonl on it): line numbers, blank lines,
gzip, torn last lines, and errors that name the file, the line and the problem."""
from __future__ import annotations

import gzip
import json

import pytest

from lib.errors import DataError
from lib.io import iter_jsonl, read_jsonl


def test_rows_are_numbered_by_line_blank_lines_skipped(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}\r\n\n  \n{"a": "x\xe2\x80\xa8y"}\n{"a": 3}')  # BOM, CRLF, U+2028 raw, no last newline
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (4, {"a": "x\u2028y"}), (5, {"a": 3})]


def test_gzip_is_read_by_its_name(tmp_path):
    path = tmp_path / "a.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"a": 1}) + "\n\n" + json.dumps({"a": 2}) + "\n")
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (3, {"a": 2})]


def test_a_damaged_gzip_is_named(tmp_path):
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n' * 1000)[:-30])
    with pytest.raises(DataError, match=r"a.jsonl.gz: line \d+: the gzip stream is damaged"):
        list(iter_jsonl(path))


def test_a_torn_last_line_is_left_out_only_when_asked(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b')
    assert [v for _, v in iter_jsonl(path, torn_tail_ok=True)] == [{"a": 1}, {"a": 2}]
    assert read_jsonl(path, torn_tail_ok=True) == [{"a": 1}, {"a": 2}]
    with pytest.raises(DataError, match=r"run.jsonl: line 3: not valid JSON"):
        list(iter_jsonl(path))
    path.write_text('{"a": 1}\n{"a": 2}')  # a complete value without its newline is still an unfinished append
    assert read_jsonl(path, torn_tail_ok=True) == [{"a": 1}]
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]
    path.write_text('{"a": 1}\n{"a": \n{"a": 3, "b')  # a bad middle line is an error even so
    with pytest.raises(DataError, match=r"run.jsonl: line 2: not valid JSON"):
        read_jsonl(path, torn_tail_ok=True)


@pytest.mark.parametrize("data, fragments", [
    (b'{"a": 1}\n{"a" 2}\n', ["line 2", "not valid JSON", "Expecting ':' delimiter at column 6"]),
    (b'{"a": 1}\n["a", 1]\n', ["line 2", "expected a JSON object, got list"]),
    (b'{"a": 1}\n\n{"a": "caf\xe9"}\n', ["line 3", "byte 0xe9 is not UTF-8"]),
])
def test_a_bad_line_names_file_line_and_problem(tmp_path, data, fragments):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    with pytest.raises(DataError) as info:
        list(iter_jsonl(path))
    assert str(info.value).startswith(f"{path}: ")
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_values_other_than_objects_when_allowed(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('["p1", 0.5]\n["p2", 1]\n')  # the reranker's score cache
    assert dict(read_jsonl(path, torn_tail_ok=True)) == {"p1": 0.5, "p2": 1}
    with pytest.raises(DataError, match="line 1: expected a JSON object, got list"):
        read_jsonl(path, objects=True)


def test_a_missing_file(tmp_path):
    with pytest.raises(DataError, match="absent.jsonl: no such file"):
        list(iter_jsonl(tmp_path / "absent.jsonl"))
    assert list(iter_jsonl(tmp_path / "absent.jsonl", missing_ok=True)) == []
    assert read_jsonl(tmp_path / "absent.jsonl") == []  # an append-only file not written yet


def test_a_record_parse_rejects_names_file_and_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"k": 1}\n{"j": 2}\n')
    with pytest.raises(DataError, match=r"r.jsonl: line 2: not a valid record \(KeyError: 'k'\)"):
        read_jsonl(path, lambda o: o["k"])
