"""The snapshot condition's index: chunked, resumable embedding with the real model; the float16
matrix with its provenance, refused for other papers, and checked against the model."""
import json

import numpy as np
import pytest

from lib.config import env_overrides, load_profile
from lib.errors import DataError
from lib.search import snapshot as snap
from lib.search.dense import DenseIndex


@pytest.fixture()
def papers(snapshot):
    return [{"id": p.id, "title": p.title, "abstract": p.abstract, "categories": list(p.categories),
             "first_seen": p.first_seen} for p in snapshot[:7]]


def test_chunks_resume_and_only_a_changed_chunk_is_recomputed(papers, minilm_embedder, tmp_path, monkeypatch):
    monkeypatch.setattr(snap, "CHUNK", 3)
    texts = [f"{p['title']}. {p['abstract']}" for p in papers]
    first = snap.embed_chunks([p["id"] for p in papers], texts, minilm_embedder, tmp_path, progress=False)
    chunk_files = sorted((tmp_path / "all-MiniLM-L6-v2").glob("*.npy"))
    assert first.shape == (7, 384) and len(chunk_files) == 3
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    # an interrupted run: one chunk lost, one torn; the rerun recomputes exactly those two
    chunk_files[0].unlink()
    chunk_files[1].write_bytes(b"torn")
    calls = []
    real = minilm_embedder.encode_raw
    monkeypatch.setattr(minilm_embedder, "encode_raw", lambda chunk: calls.append(len(chunk)) or real(chunk))
    again = snap.embed_chunks([p["id"] for p in papers], texts, minilm_embedder, tmp_path, progress=False)
    assert len(calls) == 2  # the lost chunk and the torn one, nothing else
    assert np.allclose(again, first, atol=1e-6)
    # a changed text recomputes its chunk only
    calls.clear()
    texts2 = texts[:6] + [texts[6] + " Changed."]
    snap.embed_chunks([p["id"] for p in papers], texts2, minilm_embedder, tmp_path, progress=False)
    assert calls == [1]


def test_float16_matrix_round_trip_provenance_and_check(papers, minilm_embedder, tmp_path, monkeypatch):
    monkeypatch.setattr(snap, "CHUNK", 4)
    path = snap.build_matrix(papers, minilm_embedder, tmp_path / "ship", tmp_path / "chunks", progress=False)
    meta = json.loads(path.with_name("all-MiniLM-L6-v2.json").read_text())
    assert np.load(path).dtype == np.float16 and meta["papers"] == 7 and meta["dtype"] == "float16"
    assert meta["model"] == "all-MiniLM-L6-v2" and meta["order"] == "by paper id"
    ids, vecs = snap.load_matrix(list(reversed(papers)), "all-MiniLM-L6-v2", tmp_path / "ship")
    assert ids == sorted(p["id"] for p in papers) and vecs.dtype == np.float32
    # the index built from the shipped matrix finds each paper by its own text first
    index = DenseIndex(ids, vecs)
    q = minilm_embedder.encode_raw([f"{papers[2]['title']}. {papers[2]['abstract']}"])[0]
    assert index.search_vector(q, 1)[0].id == papers[2]["id"]
    check = snap.check_matrix(papers, minilm_embedder, sample=5, directory=tmp_path / "ship")
    assert check["ok"] and check["sample"] == 5 and check["min_cosine"] > snap.MATCH_COSINE
    # other papers (or a changed text) are refused, naming the provenance file
    changed = [dict(p) for p in papers]
    changed[0]["abstract"] += " Edited."
    with pytest.raises(DataError, match="other papers or texts"):
        snap.load_matrix(changed, "all-MiniLM-L6-v2", tmp_path / "ship")
    with pytest.raises(DataError, match="no snapshot embeddings"):
        snap.load_matrix(papers, "another-model", tmp_path / "ship")
    # a matrix that does not match the model fails the check
    np.save(path, (np.load(path)[::-1]).astype(np.float16))
    assert not snap.check_matrix(papers, minilm_embedder, sample=7, directory=tmp_path / "ship")["ok"]


def test_snapshot_condition_is_its_own_folder_and_never_the_shipped_one():
    base = load_profile("offline")
    cond = load_profile("offline", collection_scope="snapshot")
    short = load_profile("offline", collection_scope="snapshot", question_form="short")
    assert cond.results_dir == base.results_dir / "snapshot" and short.results_dir == base.results_dir / "snapshot" / "short"
    assert base.shipped and not cond.shipped and not cond.own_overrides()


def test_another_local_model_keeps_its_runs_beside_the_profiles_and_is_never_the_shipped_report():
    """The model-size axis: llm_model overridden writes results/<condition>/models/<model>/, guarded like the
    shipped study (extend_shipped), and never renders into report/ or figures/."""
    small = "qwen2.5-coder-0.5b-instruct-awq-q4_k_m"
    base = load_profile("offline")
    other = load_profile("offline", llm_model=small)
    short = load_profile("offline", llm_model=small, question_form="short")
    same = load_profile("offline", llm_model=base.llm_model)   # the file's own model: no axis
    assert other.results_dir == base.results_dir / "models" / small
    assert short.results_dir == base.results_dir / "short" / "models" / small
    assert same.results_dir == base.results_dir and same.shipped
    assert not other.shipped and other.report_dir != base.report_dir and other.figures_dir != base.figures_dir
    assert not other.own_overrides() and not other.extends_shipped
    assert load_profile("offline", llm_model=small, extend_shipped=True).extends_shipped
    assert env_overrides({"LLM_MODEL": small})["llm_model"] == small
