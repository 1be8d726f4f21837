"""The one JSON-lines reader (lib.io.iter_jsonl, and read_jsonl on it): line numbers, blank lines,
gzip, torn last lines, and errors that name the file, the line and the problem."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

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


def test_a_digest_hashes_the_bytes_json_dumps_writes_whichever_library_writes_them():
    """lib.io.digest writes plain values with orjson and the rest with json: the same sha256 either way, for the
    values orjson would write otherwise (floats, integers over 64 bits, keys that are no strings, objects only
    json's ``default`` turns into strings, nesting deeper than orjson goes) and those it writes alike."""
    import hashlib
    import json

    from lib.io import digest

    def by_json(value):
        blob = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    deep: list = []
    for _ in range(300):
        deep = [deep]
    values = [[["2401.00001", "T\u00edtle \u2028 \x00\x1f\x7f\"\\ \U0001F600", "", ["cs.IR", "cs.CL"], "2024-01-01"]],
              {"b": 1, "a": [True, False, None, -(1 << 63), (1 << 64) - 1], "\uffff": {}, "\U0001F600": []},
              {"f": 1e-05, "g": 1e16, "h": [0.1, -0.0]}, {"big": 1 << 70}, {1: "a key that is no string"},
              {"p": Path("results") / "x"}, ("a", ("tuple",)), "text", 7, None, deep]
    for value in values:
        assert digest(value) == by_json(value), value
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate cannot be hashed either way
        digest(["\ud800"])


def test_a_file_read_once_is_read_again_when_its_content_changes_whatever_its_size_and_time(tmp_path):
    """lib.io.read_once keeps what was read from a file by its content: the same content is read once, an edit
    that keeps the size and the modification time is read again, and only the file's last version is kept."""
    import os

    from lib.io import read_once

    f = tmp_path / "run1.jsonl"
    f.write_text('{"a": 1}\n')
    memo, reads = {}, []

    def read(path):
        reads.append(path)
        return read_jsonl(path)

    assert read_once(memo, f, read) == [{"a": 1}] and read_once(memo, f, read) == [{"a": 1}]
    assert len(reads) == 1
    before = f.stat()
    f.write_text('{"a": 2}\n')
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert f.stat().st_size == before.st_size and f.stat().st_mtime_ns == before.st_mtime_ns
    assert read_once(memo, f, read) == [{"a": 2}] and len(reads) == 2 and len(memo) == 1
    seal = tmp_path / "digests.json"  # a file the reading depends on: its change reads again too
    assert read_once(memo, f, read, seal) == [{"a": 2}] and len(reads) == 3
    seal.write_text("{}")
    assert read_once(memo, f, read, seal) == [{"a": 2}] and len(reads) == 4
