"""A study of your own data (`make study`): the study's profile and folder, the import of documents,
questions and judgements into the shapes every step reads, scores with several relevant documents,
and the worked example (the dev questions and collection as a BEIR folder) run end to end through
the one command at pilot size, leaving the shipped study byte-identical."""
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lib import pipeline
from lib.config import ROOT, STUDIES_DIR, load_profile
from lib.data.study import import_study
from lib.errors import DataError, ProfileError
from lib.evaluation.metrics import per_question, scores_of
from lib.data.relevance import encode, judgements, relevant_ids

SHIPPED = ("data", "results", "figures", "report", "models")


def checksums() -> dict[str, str]:
    """sha256 of every tracked file under the shipped folders, and what git sees as new there."""
    listed = subprocess.run(["git", "ls-files", "-z", *SHIPPED], cwd=ROOT, capture_output=True, text=True).stdout
    out = {p: hashlib.sha256((ROOT / p).read_bytes()).hexdigest() for p in listed.split("\0") if p}
    out["(git status)"] = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", *SHIPPED], cwd=ROOT,
                                         capture_output=True, text=True).stdout
    return out


def new_study(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "scripts/new_study.py", "--name", name, *args], cwd=ROOT,
                          capture_output=True, text=True)


@pytest.fixture
def study_name(request):
    """A study folder of the test's own, removed afterwards."""
    name = f"test-{request.node.name[:30].replace('_', '-')}"
    shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)
    yield name
    shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)


def write_tiny(tmp_path):
    docs = tmp_path / "docs.jsonl"
    rows = [{"doc_id": "manual/7", "headline": "Pump maintenance", "body": "Replace the seal every year. " * 80},
            {"doc_id": "42", "headline": "", "body": "The warranty covers parts for two years."},
            {"doc_id": "faq-ü", "headline": "Noise", "body": "A humming pump is normal at start-up."}]
    docs.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    qs = tmp_path / "questions.csv"
    qs.write_text("qid,question\nu1,how often should the seal be replaced\nu2,is a humming pump broken\n"
                  "u3,what does nobody know\n", encoding="utf-8")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nu1\tmanual/7\t2\nu1\t42\t1\nu2\tfaq-ü\t1\nu3\t42\t0\n",
                     encoding="utf-8")
    return docs, qs, qrels


def test_relevance_in_the_source_field_round_trips():
    judged = {"b/2": 2, "a 1": 1, "c": 0}
    text = encode(judged)
    assert judgements(text) == judged and relevant_ids(text) == ["a 1", "b/2"]
    assert judgements("2607.00001") == {"2607.00001": 1} and relevant_ids("x;y") == ["x", "y"]
    # several relevant documents: recall@5 is the share found, MRR@10 the first one's, nDCG@10 graded
    s = scores_of(["z", "b/2", "q", "a 1"], text)
    assert s["recall_at_5"] == 1.0 and s["mrr_at_10"] == 0.5 and 0 < s["ndcg_at_10"] < 1


def test_a_study_imports_its_files_into_its_own_folder(tmp_path, study_name):
    docs, qs, qrels = write_tiny(tmp_path)
    before = checksums()
    done = new_study(study_name, "--docs", str(docs), "--questions", str(qs), "--qrels", str(qrels),
                     "--fields", "id=doc_id,title=headline,text=body", "--set", "llm_backend=replay")
    assert done.returncode == 0, done.stderr
    profile = load_profile(study_name)
    assert profile.study_dir == STUDIES_DIR / study_name and profile.own_dir is not None
    for where in (profile.data_dir, profile.results_dir, profile.report_dir, profile.figures_dir, profile.own_dir):
        assert where.is_relative_to(STUDIES_DIR / study_name), where
    rows, manifest = import_study(profile)
    assert [r["id"] for r in rows] == ["manual/7", "42", "faq-ü"] and rows[1]["title"] == ""
    assert manifest["questions"] == 3 and manifest["questions_scored"] == 2 and manifest["graded"]
    assert manifest["questions_without_relevant"] == ["u3"]  # judged, but nothing relevant: left out, counted
    qs_read = pipeline.question_set(profile, rows)
    assert [(q.qid, judgements(q.source_id)) for q in qs_read] == [("u1", {"42": 1, "manual/7": 2}),
                                                                    ("u2", {"faq-ü": 1})]
    # the import is read back when nothing changed, and imported again when a file changed
    assert import_study(profile)[1]["inputs_key"] == manifest["inputs_key"]
    qrels.write_text(qrels.read_text() + "u2\t42\t1\n", encoding="utf-8")
    assert import_study(profile)[1]["inputs_key"] != manifest["inputs_key"]
    assert checksums() == before  # nothing shipped was written


def test_a_variant_of_a_study_reads_the_studys_own_caches_and_writes_only_its_own(tmp_path, study_name):
    """A question limit (or another condition) on a study gets a results folder of its own; it reads the study's
    embeddings instead of embedding every document again, and writes none into the study's cache."""
    from lib.data.papers import paper_text

    docs, qs, qrels = write_tiny(tmp_path)
    assert new_study(study_name, "--docs", str(docs), "--questions", str(qs), "--qrels", str(qrels),
                     "--fields", "id=doc_id,title=headline,text=body").returncode == 0
    study, variant = load_profile(study_name), load_profile(study_name, question_limit=1)
    assert variant.own_dir != study.own_dir and variant.own_dir.is_relative_to(study.own_dir)
    home = study.own_dir / "cache" / "embeddings"
    assert pipeline.cache_dirs(study, "embeddings") == (home, (pipeline.SHIPPED_CACHE / "embeddings",))
    own, bases = pipeline.cache_dirs(variant, "embeddings")
    assert own == variant.own_dir / "cache" / "embeddings" and home in bases
    texts = [paper_text(p) for p in import_study(study)[0]]
    pipeline.embedder(study).embed(texts, progress=False)
    written = home / "all-MiniLM-L6-v2.npz"
    before = written.read_bytes()
    emb = pipeline.embedder(variant)
    assert emb.cache.missing(texts) == []  # every document's vector read from the study's cache
    emb.embed(texts + ["a question the study never embedded"], progress=False)
    assert written.read_bytes() == before  # the study's cache is read, never written, by its variant


def test_a_study_refuses_bad_input_by_name(tmp_path, study_name):
    docs, qs, qrels = write_tiny(tmp_path)
    qrels.write_text("query-id\tcorpus-id\tscore\nu1\tno-such-doc\t1\n", encoding="utf-8")
    assert new_study(study_name, "--docs", str(docs), "--questions", str(qs), "--qrels", str(qrels),
                     "--fields", "id=doc_id,title=headline,text=body").returncode == 0
    with pytest.raises(DataError, match=r"qrels.tsv.*line 2.*no-such-doc"):
        import_study(load_profile(study_name))
    # a study name that is a shipped profile, and a study whose settings changed, are refused
    assert new_study("offline", "--docs", str(docs)).returncode == 2
    again = new_study(study_name, "--docs", str(docs), "--questions", str(qs), "--set", "n_runs=2")
    assert again.returncode == 2 and "exists with other settings" in again.stderr
    with pytest.raises(ProfileError, match="no such profile"):
        load_profile("test-not-a-study")


def test_per_question_scores_graded_judgements():
    from lib.designs import Result

    r = Result(qid="u1", design="dense", run=1, ranked_ids=["42", "x", "manual/7"], searches=1, queries=["q"],
               latency_s=0.1)
    row = per_question([r], {"u1": encode({"manual/7": 2, "42": 1})}).iloc[0]
    assert row.recall_at_5 == 1.0 and row.mrr_at_10 == 1.0 and row["rank"] == 1 and 0 < row.ndcg_at_10 < 1


def test_the_worked_example_runs_end_to_end_through_make_study(worked_example):
    """The README's `make study DOCS=examples/beir-dev ...` (tests/conftest.py worked_example: a clean clone, its
    first 20 questions, no local model): every page that needs no model runs and the index tells the truth about
    the study; dense ranks exactly as the shipped dev run; the shipped study stays byte-identical (the clone's
    `git status` is clean). The LLM designs' replay of a study's recorded calls is run by the worked example on
    Milvus (tests/test_milvus.py)."""
    first = worked_example.runs[0]
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    limit = int(re.search(r"\bquestion_limit=(\d+)", " ".join(worked_example.command)).group(1))
    folder = worked_example.clone / "studies" / worked_example.name
    index = (worked_example.report / "index.html").read_text(encoding="utf-8")
    assert "This study" in index and "examples/beir-dev" in index and "2,000" in index
    assert "the article:" not in index and "What differs from the article" not in index
    assert f"{limit} questions" in index
    assert (worked_example.report / "12_why.html").exists()
    # the same papers and questions searched the same way: dense ranks exactly as the shipped dev run
    from lib.runs import read_results

    ours = {r.qid: r.ranked_ids for r in read_results(folder / "results" / "dense" / "run1.jsonl")}
    dev = {r.qid: r.ranked_ids for r in read_results(ROOT / "results" / "dev" / "dense" / "run1.jsonl")}
    assert len(ours) == limit and all(ours[q] == dev[q] for q in ours)
    assert worked_example.status == "", worked_example.status


def test_who_writes_the_questions():
    from lib.data.question_gen import question_backend

    assert question_backend(load_profile("offline")) == "anthropic"  # the arXiv study: Claude, with a key
    arxiv_local = load_profile("offline", llm_backend="local")
    assert question_backend(arxiv_local) == "anthropic"


def test_questions_for_documents_that_have_none(tmp_path, study_name):
    """No questions file: the documents drawn with the seed get questions written and reviewed by the
    local model (the real one, where installed), recorded in the study's own folder."""
    from lib.data.question_gen import generate_for_profile, question_backend
    from lib.preflight import local_model_missing

    if local_model_missing():
        pytest.skip(f"needs the local model ({local_model_missing()}): make local-llm")
    docs, _, _ = write_tiny(tmp_path)
    done = new_study(study_name, "--docs", str(docs), "--fields", "id=doc_id,title=headline,text=body",
                     "--set", "n_sources=2", "--set", "n_lookalikes=1")
    assert done.returncode == 0, done.stderr
    profile = load_profile(study_name)
    assert profile.questions_source == "generate" and question_backend(profile) == "local"
    rows, manifest = import_study(profile)
    assert len(manifest["source_order"]) == 2 and sum(r["role"] == "source" for r in rows) == 2
    path = generate_for_profile(profile, rows, progress=False)
    assert path.is_relative_to(STUDIES_DIR / study_name)
    written = pipeline.all_questions(profile, rows)
    assert [r["source_id"] for r in written] == manifest["source_order"] and all(r["question"] for r in written)
    assert all(r["generator"].startswith("local") for r in written)
    records = list((profile.own_dir / "llm_records").rglob("*.jsonl"))
    assert {p.stem for p in records} >= {"question", "review"}


def test_a_rerun_of_the_import_returns_what_the_first_run_returned(tmp_path, study_name):
    """The first rerun of a study reads back what its first run wrote: the import returns it read back
    too (not the dict it built, whose order differs from the file's), and page 01 opens after the import,
    so page 01 is the same twice (checked by rendering a study of the worked example three times: from
    the first rerun every page is byte-identical)."""
    from lib.report.collection import documents_table
    from lib.report.pages import study_banner

    docs, qs, qrels = write_tiny(tmp_path)
    assert new_study(study_name, "--docs", str(docs), "--questions", str(qs), "--qrels", str(qrels),
                     "--fields", "id=doc_id,title=headline,text=body").returncode == 0
    profile = load_profile(study_name)
    first = import_study(profile)
    banner = study_banner(profile)  # every page's opening line, taken (on page 01) after the import
    again = import_study(profile)
    assert json.dumps(first) == json.dumps(again)  # the same values in the same order
    assert documents_table(first[1], first[0]).to_html() == documents_table(again[1], again[0]).to_html()
    assert study_banner(profile) == banner and "3 documents, 2 questions" in banner
    # page 01 imports before its opening line, so its first run does not open with "not imported yet"
    code = (ROOT / "notebooks" / "01_collection.py").read_text(encoding="utf-8")
    assert code.index("make_collection(cfg)") < code.index("open_page(cfg")


def test_a_beir_study_counts_and_names_the_queries_without_judgements(study_name, capsys):
    beir = ROOT / "tests" / "data" / "userdocs" / "beir"
    assert new_study(study_name, "--docs", str(beir)).returncode == 0
    _, manifest = import_study(load_profile(study_name))
    assert manifest["queries_unjudged"] == 1 and manifest["queries_unjudged_ids"] == ["q4"]  # judged in dev only
    assert manifest["questions"] == 4 and manifest["questions_scored"] == 3
    assert manifest["questions_without_relevant"] == ["q5"]  # judged, nothing relevant: left out, counted
    said = capsys.readouterr().out
    assert "queries.jsonl: 1 query has no judgement in" in said and "test.tsv and is not scored: q4" in said
    import_study(load_profile(study_name))  # read back: said again, as a rerun's page 01 says it
    assert capsys.readouterr().out == said


def test_a_beir_folder_reads_the_questions_and_judgements_given_instead_of_its_own(tmp_path, study_name):
    """Issue 57: `make study DOCS=<a BEIR folder> QUESTIONS=q.csv QRELS=r.tsv` scored the folder's own queries and
    judgements, silently; each file given replaces the folder's, and the command says which files it reads."""
    beir = ROOT / "tests" / "data" / "userdocs" / "beir"
    qs, qrels = tmp_path / "q.csv", tmp_path / "r.tsv"
    qs.write_text("qid,question\nmine1,what warms the reef\nmine2,how fast does kelp grow\n", encoding="utf-8")
    qrels.write_text("mine1 0 d2 1\nmine2 0 d4 2\n", encoding="utf-8")
    done = new_study(study_name, "--docs", str(beir), "--questions", str(qs), "--qrels", str(qrels))
    assert done.returncode == 0, done.stderr
    assert f"questions are read from {qs}, its judgements from {qrels}" in done.stderr
    profile = load_profile(study_name)
    assert (profile.user_questions_path, profile.qrels_path) == (str(qs), str(qrels))  # in the study's settings
    rows, manifest = import_study(profile)
    assert manifest["files"]["questions"] == str(qs) and manifest["files"]["judgements"] == str(qrels)
    assert [(q.qid, judgements(q.source_id)) for q in pipeline.question_set(profile, rows)] == [
        ("mine1", {"d2": 1}), ("mine2", {"d4": 2})]
    # QRELS alone: the folder's queries, judged by the file given
    shutil.rmtree(STUDIES_DIR / study_name)
    qrels.write_text("q2 0 d4 1\nq4 0 d2 1\n", encoding="utf-8")
    done = new_study(study_name, "--docs", str(beir), "--qrels", str(qrels))
    assert f"questions are read from {beir.relative_to(ROOT)}/queries.jsonl, its judgements from {qrels}" in done.stderr
    rows, manifest = import_study(load_profile(study_name))
    assert manifest["files"]["judgements"] == str(qrels) and manifest["questions"] == 2
    assert [q.qid for q in pipeline.question_set(load_profile(study_name), rows)] == ["q2", "q4"]
    # QUESTIONS alone: the file's questions, judged by the folder's split
    shutil.rmtree(STUDIES_DIR / study_name)
    qs.write_text("qid,question\nq1,coral heat\nq3,acid shells\n", encoding="utf-8")
    assert new_study(study_name, "--docs", str(beir), "--questions", str(qs)).returncode == 0
    rows, manifest = import_study(load_profile(study_name))
    assert manifest["files"]["questions"] == str(qs) and manifest["files"]["judgements"].endswith("qrels/test.tsv")
    assert [(q.qid, q.text) for q in pipeline.question_set(load_profile(study_name), rows)] == [
        ("q1", "coral heat"), ("q3", "acid shells")]


def test_a_changed_document_file_recomputes_and_keeps_the_old_results_aside(tmp_path, study_name, capsys):
    docs, qs, qrels = write_tiny(tmp_path)
    assert new_study(study_name, "--docs", str(docs), "--questions", str(qs), "--qrels", str(qrels),
                     "--fields", "id=doc_id,title=headline,text=body", "--set", "chunk_documents=false").returncode == 0
    profile = load_profile(study_name)
    import_study(profile)
    pipeline.run(profile, "bm25", progress=False)
    rdir = profile.results_dir
    saved = {p.relative_to(rdir): p.read_bytes() for p in rdir.rglob("*")
             if p.is_file() and p.suffix != ".lock" and "cache" not in p.parts}
    assert {str(p) for p in saved} == {"bm25/run1.jsonl", "bm25/run1.trec", "qrels.txt"}
    # other bytes, the same documents (a blank line): nothing is set aside, the saved run is reused
    docs.write_text(docs.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert "superseded" not in import_study(profile)[1]
    assert (rdir / "bm25" / "run1.jsonl").read_bytes() == saved[Path("bm25/run1.jsonl")]
    # a document's text changes: the old data and runs are moved aside, then the design runs again
    docs.write_text(docs.read_text(encoding="utf-8").replace("warranty covers parts", "warranty covers the seal"),
                    encoding="utf-8")
    old_collection = (profile.data_dir / "collection.jsonl").read_bytes()
    _, manifest = import_study(profile)
    out = capsys.readouterr().out
    assert "the study's files changed" in out and "3 saved run file(s)" in out and "computed again" in out
    aside = ROOT / manifest["superseded"]["moved_to"]
    assert aside.parent == STUDIES_DIR / study_name / "superseded" and manifest["superseded"]["run_files"] == 3
    assert {p: (aside / "results" / p).read_bytes() for p in saved} == saved  # kept, byte for byte
    assert (aside / "data" / "collection.jsonl").read_bytes() == old_collection
    assert not (rdir / "bm25" / "run1.jsonl").exists() and (rdir / "cache" / "bm25").is_dir()  # caches stay
    new = pipeline.run(profile, "bm25", progress=False)[1]  # no StaleResults: computed again
    assert [r.qid for r in new] == ["u1", "u2"] and (rdir / "bm25" / "run1.jsonl").read_bytes() != saved[Path("bm25/run1.jsonl")]


def test_documents_drawn_as_sources_for_model_written_questions_read_back_without_titles(tmp_path, study_name):
    """A document with no title drawn as a source (questions written by a model) reads back as it was
    written, on the rerun and for every later page (the import's rows are its file's, read back)."""
    docs, _, _ = write_tiny(tmp_path)
    assert new_study(study_name, "--docs", str(docs), "--fields", "id=doc_id,title=headline,text=body",
                     "--set", "n_sources=3", "--set", "n_lookalikes=1").returncode == 0
    profile = load_profile(study_name)
    rows, manifest = import_study(profile)
    untitled = next(r for r in rows if r["id"] == "42")
    assert untitled["role"] == "source" and untitled["title"] == "" and sorted(manifest["source_order"]) == [
        "42", "faq-ü", "manual/7"]
    assert import_study(profile) == (rows, manifest) and pipeline.collection(profile) == rows
