"""BM25 in the engine (``retriever: milvus``, ``milvus_bm25: engine``; lib/search/milvus_keyword.py), against a real
engine, Milvus Lite embedded: the study's own collection holds each row's text with a BM25 function and index, and
its full-text search finds a document by its rare words behind the in-process BM25 index's interface; the bm25
and hybrid designs run on it through the pipeline and say so in their provenance and the scores table; a user's
BM25 field is only read; a field that does not fit is an error naming its setting."""
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

from lib import pipeline  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.data.papers import paper_text, read_collection  # noqa: E402
from lib.designs.base import Question  # noqa: E402
from lib.errors import EngineError, ProfileError  # noqa: E402
from lib.report.index_words import keyword_cell, retriever_cell  # noqa: E402
from lib.runs import inputs_key, read_results, run_path  # noqa: E402
from lib.search import milvus_index as mi  # noqa: E402
from lib.search import milvus_keyword as mk  # noqa: E402
from lib.search.bm25 import SETTINGS, BM25Index  # noqa: E402
from lib.search.embedder import Embedder  # noqa: E402

N = 40  # papers of the shipped collection: small, so every engine here starts and builds in seconds


def unit(x):
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def rare_words(papers: list[dict], i: int, n: int = 4) -> str:
    """``n`` words of paper ``i`` (6+ letters) that no other paper here has: a query only it answers."""
    others = {w for j, p in enumerate(papers) if j != i for w in words(paper_text(p))}
    mine = [w for w in dict.fromkeys(words(paper_text(papers[i]))) if w.isalpha() and len(w) >= 6 and w not in others]
    assert len(mine) >= n
    return " ".join(mine[:n])


@pytest.fixture(scope="module")
def papers():
    return sorted(read_collection(ROOT / "data" / "collection.jsonl")[:N], key=lambda p: p["id"])


@pytest.fixture(scope="module")
def own(papers, tmp_path_factory):
    """The study's own collection of the papers (random vectors: only its full-text search is read here)."""
    ids = [p["id"] for p in papers]
    vecs = unit(np.random.default_rng(2).standard_normal((len(ids), 8)))
    engine = mi.build_collection(mi.Connection(str(tmp_path_factory.mktemp("own") / "milvus.db")), ids, vecs,
                                 texts=[paper_text(p) for p in papers], progress=False)
    return mk.keyword_index(engine, ids), engine


def test_the_engines_full_text_search_finds_a_document_by_its_rare_words(papers, own, tmp_path):
    index, engine = own
    in_process = BM25Index.build(papers, cache_dir=tmp_path / "bm25")
    for i in (0, 7, 23):
        query = rare_words(papers, i)
        hits = index.search(query, 10)
        assert hits[0].id == papers[i]["id"] and hits[0].score > 0
        assert in_process.search(query, 10)[0].id == papers[i]["id"]
        # the same interface as in process: every document once, ties (here the zero scores) in id order,
        # a document's score read back as the search gave it
        assert len({h.id for h in hits}) == 10
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        zero = [h.id for h in hits if h.score == 0]
        assert zero == sorted(zero)
        assert index.scores_for(query, [hits[1].id, hits[0].id]) == pytest.approx([hits[1].score, hits[0].score])
    query = rare_words(papers, 7)
    assert len(index.search(query, 100)) == N
    assert index.scores(query).shape == (N,)
    allowed = {p["id"] for p in papers[::3]}  # a metadata filter, applied inside the search
    index.restrict(allowed)
    try:
        hits = index.search(query, 10)
        assert {h.id for h in hits} <= allowed and len(hits) == 10
        assert papers[7]["id"] not in {h.id for h in hits}
    finally:
        index.restrict(None)
    assert index.search("the of and", 3) == index.search("", 3)  # no word to search: id order, score 0
    assert [h.id for h in index.search("", 3)] == [p["id"] for p in papers[:3]]
    # found again, not built again; a collection without texts (dense only) is another, without full-text search
    vecs = unit(np.random.default_rng(2).standard_normal((N, 8)))
    ids = [p["id"] for p in papers]
    again = mi.build_collection(engine.connection, ids, vecs, texts=[paper_text(p) for p in papers], progress=False)
    assert again.collection == engine.collection
    dense_only = mi.build_collection(engine.connection, ids, vecs, progress=False)
    assert dense_only.collection != engine.collection and dense_only.sparse_field is None
    with pytest.raises(ValueError, match="without texts"):
        mk.keyword_index(dense_only, ids)


def test_chunks_answer_at_document_level(papers, tmp_path):
    """A document scores its best chunk and appears once, its best chunk named, as in process."""
    ids, positions, texts = [], [], []
    for p in papers[:12]:
        sentences = [s for s in re.split(r"(?<=\.) ", paper_text(p)) if s]
        for k, s in enumerate(sentences[:3]):
            ids.append(p["id"])
            positions.append(k)
            texts.append(s)
    vecs = unit(np.random.default_rng(4).standard_normal((len(ids), 8)))
    engine = mi.build_collection(mi.Connection(str(tmp_path / "milvus.db")), ids, vecs, positions, texts=texts,
                                 progress=False)
    index = mk.keyword_index(engine, sorted(set(ids)))
    row = next(r for r in range(len(ids)) if positions[r] == 1)
    target = " ".join(w for w in words(texts[row]) if w.isalpha() and len(w) >= 6
                      and not any(w in words(t) for j, t in enumerate(texts) if j != row)) or texts[row]
    hits = index.search(target, 5)
    assert hits[0].id == ids[row] and hits[0].best_chunk == 1
    assert len({h.id for h in hits}) == 5


def test_the_engine_drops_the_same_stop_words_as_bm25s():
    import bm25s.stopwords

    assert set(mi.STOP_WORDS) == set(bm25s.stopwords.STOPWORDS_EN)
    assert mi.ANALYZER["filter"][1]["stop_words"] == list(mi.STOP_WORDS)


def test_a_text_longer_than_the_engine_holds_is_named():
    with pytest.raises(EngineError, match="milvus_bm25 'engine'.*chunk_documents=true.*milvus_bm25=in-process"):
        mi.text_length(["x" * (mi.MAX_TEXT_BYTES + 1)])
    assert mi.text_length(["é" * 10, "abc"]) == 20  # bytes, not characters


def test_a_load_that_reads_a_half_written_index_is_tried_again(monkeypatch):
    """Milvus Lite writes a segment's index in a background thread; a load meanwhile can fail (see mi.load)."""
    from pymilvus.exceptions import MilvusException

    monkeypatch.setattr(mi.time, "sleep", lambda s: None)

    class Client:
        calls = 0

        def load_collection(self, name):
            Client.calls += 1
            if Client.calls < 3:
                raise MilvusException(message="Failed to read all data for array (file seems not fully written?)")
    mi.load(Client(), "c")
    assert Client.calls == 3
    Client.calls = -10
    with pytest.raises(MilvusException):
        mi.load(Client(), "c", tries=2)


# --------------------------------------------------------------------------- the designs, through the pipeline
def engine_parts(papers, tmp_path, monkeypatch, **settings):
    """The pipeline's parts of a study over the papers, searched in Milvus Lite in ``tmp_path``; vectors from the
    shipped embedding cache (no model), the question set stood in for."""
    cache = tmp_path / "emb"
    monkeypatch.setattr(pipeline, "embedder", lambda profile: Embedder(
        profile.embedder, profile.embedder_backend, cache_dir=cache, base_dirs=(ROOT / "data" / "cache" / "embeddings",)))
    profile = load_profile("offline", retriever="milvus", milvus_uri=str(tmp_path / "milvus.db"), **settings)
    parts = pipeline.ProfileParts(profile, papers=[dict(p) for p in papers], progress=False)
    parts.__dict__.update(questions_digest="test-questions")
    return profile, parts


def test_the_bm25_and_hybrid_designs_run_on_the_engines_keyword_search(papers, tmp_path, monkeypatch):
    profile, parts = engine_parts(papers, tmp_path, monkeypatch)
    assert profile.milvus_bm25 == "engine" and pipeline.keyword_in_engine(profile)
    assert isinstance(parts.bm25, mk.MilvusKeywordIndex)
    assert parts.bm25.collection == parts.engine.collection  # the dense collection's own full-text search
    q = Question("q1", rare_words(papers, 11), papers[11]["id"])
    for name in ("bm25", "hybrid", "hybrid_rerank"):
        design = pipeline.make_design(name, profile, parts)
        result = design.retrieve(q)
        assert result.ranked_ids[0] == papers[11]["id"], name
        assert result.provenance["retriever"] == "milvus" and result.provenance["milvus_bm25"] == "engine", name
        assert pipeline.expected_settings(profile, name)["milvus_bm25"] == "engine"
    assert design.provenance["bm25"] == {"engine": "milvus", "analyzer": mi.ANALYZER, "index": mi.BM25_INDEX}
    # the rerank step's BM25 signal comes from the engine too; a design without BM25 records nothing of it
    assert pipeline.keyword_provenance(profile, "rerank") == {"milvus_bm25": "engine"}
    assert "milvus_bm25" not in pipeline.design_provenance(profile, "dense", parts)
    assert "milvus_bm25" not in pipeline.expected_settings(profile, "agent")
    # the scores table says where each row's BM25 ran
    assert retriever_cell(profile) == "Milvus Lite, embedded, the study's own collection (exact)"
    assert keyword_cell(profile, "bm25") == "Milvus Lite, embedded, the study's own collection (full-text search)"
    assert keyword_cell(profile, "dense") == "—"

    # milvus_bm25=in-process: bm25s over the study's documents, as before; results say nothing of the engine's BM25
    profile, parts = engine_parts(papers, tmp_path, monkeypatch, milvus_bm25="in-process")
    assert not pipeline.keyword_in_engine(profile) and isinstance(parts.bm25, BM25Index)
    result = pipeline.make_design("bm25", profile, parts).retrieve(q)
    assert result.ranked_ids[0] == papers[11]["id"] and "milvus_bm25" not in result.provenance
    assert result.provenance["bm25"] == SETTINGS
    assert pipeline.expected_settings(profile, "hybrid")["milvus_bm25"] is None
    assert keyword_cell(profile, "hybrid") == "in process (bm25s), over the study's documents"


def test_the_shipped_bm25_results_keep_their_keys():
    """Searched in process, a bm25 result's provenance (and so its inputs key) is what it was."""
    shipped = load_profile("offline")
    parts = pipeline.ProfileParts(shipped, progress=False)
    prov = {**pipeline.design_provenance(shipped, "bm25", parts), "bm25": SETTINGS}
    assert "milvus_bm25" not in prov
    assert pipeline.expected_settings(shipped, "bm25")["milvus_bm25"] is None  # a result of the engine's BM25 is refused
    saved = read_results(run_path(shipped.results_dir, "bm25", 1))[0]
    question = next(q for q in pipeline.question_set(shipped, parts.papers) if q.qid == saved.qid)
    assert inputs_key("bm25", 1, question, prov) == saved.inputs
    engine = load_profile("offline", retriever="milvus", milvus_collection="papers")  # no BM25 field named
    assert not pipeline.keyword_in_engine(engine) and pipeline.keyword_provenance(engine, "bm25") == {}


# --------------------------------------------------------------------------- a user's collection
def user_collection(uri: str, papers: list[dict], dim: int = 8, sparse_index: str = "bm25"):
    """A collection as a user would have it: their own names, a text field with the standard analyzer, a BM25
    function filling ``words``, and a sparse field of their own vectors (``own_sparse``, no function)."""
    from pymilvus import DataType, Function, FunctionType, MilvusClient

    client = MilvusClient(uri)
    schema = client.create_schema(auto_id=False)
    schema.add_field("pid", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("body", DataType.VARCHAR, max_length=8192, enable_analyzer=True)
    schema.add_field("emb", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("words", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("own_sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(Function(name="body_bm25", function_type=FunctionType.BM25, input_field_names=["body"],
                                 output_field_names=["words"]))
    params = client.prepare_index_params()
    params.add_index(field_name="emb", index_type="FLAT", metric_type="COSINE")
    params.add_index(field_name="words", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    params.add_index(field_name="own_sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    client.create_collection("papers", schema=schema, index_params=params)
    rng = np.random.default_rng(6)
    client.insert("papers", [{"pid": p["id"], "body": paper_text(p), "emb": rng.standard_normal(dim).tolist(),
                              "own_sparse": {int(k): 1.0 for k in rng.integers(0, 1000, 3)}} for p in papers])
    client.flush("papers")
    return client


def folder_digest(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def theirs(papers, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("user") / "user.db")
    return uri, user_collection(uri, papers)


def test_a_users_bm25_field_is_searched_read_only(papers, theirs, tmp_path, monkeypatch):
    uri, owner = theirs
    rows = lambda: sorted((r["pid"], r["body"]) for r in owner.query("papers", filter="", limit=1000,  # noqa: E731
                                                                     output_fields=["pid", "body"]))
    everything, files = rows(), folder_digest(Path(uri))
    ids = [p["id"] for p in papers]
    index = mk.open_keyword(mi.Connection(uri), "papers", "pid", "words", ids)
    assert index.settings["text_field"] == "body" and index.settings["index"]["metric_type"] == "BM25"
    for i in (3, 17, 31):
        query = rare_words(papers, i)
        assert index.search(query, 5)[0].id == papers[i]["id"]
        assert index.scores_for(query, [papers[i]["id"]])[0] > 0
    for write in ("insert", "upsert", "delete", "create_collection", "drop_collection", "create_index",
                  "load_collection", "release_collection", "flush"):
        with pytest.raises(AttributeError, match="never changes"):
            getattr(index.client, write)
    assert rows() == everything
    assert folder_digest(Path(uri)) == files
    # a document the study does not know is named, not scored as some other paper
    narrow = mk.open_keyword(mi.Connection(uri), "papers", "pid", "words", ids[1:])
    with pytest.raises(EngineError, match="milvus_id_field"):
        narrow.search(rare_words(papers, 0), 3)

    # through the pipeline: milvus_sparse_field named, the bm25 design searches it; the table says so
    cache = tmp_path / "emb"
    monkeypatch.setattr(pipeline, "embedder", lambda profile: Embedder(
        profile.embedder, profile.embedder_backend, cache_dir=cache, base_dirs=(ROOT / "data" / "cache" / "embeddings",)))
    profile = load_profile("offline", retriever="milvus", milvus_uri=uri, milvus_collection="papers",
                           milvus_id_field="pid", milvus_vector_field="emb", milvus_sparse_field="words")
    parts = pipeline.ProfileParts(profile, papers=[dict(p) for p in papers], progress=False)
    parts.__dict__.update(questions_digest="test-questions")
    result = pipeline.make_design("bm25", profile, parts).retrieve(Question("q", rare_words(papers, 9), papers[9]["id"]))
    assert result.ranked_ids[0] == papers[9]["id"]
    assert result.provenance["milvus_bm25"] == "engine" and result.provenance["milvus_sparse_field"] == "words"
    assert keyword_cell(profile, "bm25") == "Milvus, collection papers, field words (read-only)"
    assert folder_digest(Path(uri)) == files
    # no BM25 field named: BM25 stays in process over the study's documents, and the table says so
    profile = load_profile("offline", retriever="milvus", milvus_uri=uri, milvus_collection="papers")
    assert not pipeline.keyword_in_engine(profile)
    assert keyword_cell(profile, "bm25") == "in process (bm25s), over the study's documents"


def test_a_users_bm25_field_that_does_not_fit_is_named(papers, theirs):
    uri, owner = theirs
    c, ids = mi.Connection(uri), [p["id"] for p in papers]
    with pytest.raises(EngineError, match="milvus_collection 'nope': no such collection"):
        mk.open_keyword(c, "nope", "pid", "words", ids)
    with pytest.raises(EngineError, match="milvus_sparse_field 'sparse': collection 'papers' has no such field "
                                          r"\(its fields: pid, body, emb, words, own_sparse\)"):
        mk.open_keyword(c, "papers", "pid", "sparse", ids)
    with pytest.raises(EngineError, match="milvus_sparse_field 'body': should be the SPARSE_FLOAT_VECTOR field a BM25 "
                                          "function fills from a text field, not VARCHAR"):
        mk.open_keyword(c, "papers", "pid", "body", ids)
    with pytest.raises(EngineError, match="milvus_sparse_field 'own_sparse': no BM25 function fills it"):
        mk.open_keyword(c, "papers", "pid", "own_sparse", ids)
    with pytest.raises(EngineError, match="milvus_id_field 'doc_id': collection 'papers' has no such field"):
        mk.open_keyword(c, "papers", "doc_id", "words", ids)
    with pytest.raises(EngineError, match="milvus_id_field 'emb': a document id should be a VARCHAR or INT64"):
        mk.open_keyword(c, "papers", "emb", "words", ids)
    # a Milvus Lite file is open in this process alone: released, it is loaded again by the study (a collection in
    # a server is the user's to load: tests/test_milvus.py)
    owner.release_collection("papers")
    assert mk.open_keyword(c, "papers", "pid", "words", ids).search(rare_words(papers, 3), 1)[0].id == papers[3]["id"]
    # a BM25 field names a field of the user's collection; the study's own collection has its own
    with pytest.raises(ProfileError, match="milvus_sparse_field"):
        load_profile("offline", retriever="milvus", milvus_sparse_field="words")
