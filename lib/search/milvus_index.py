"""Dense search in Milvus through pymilvus, behind the interface of :class:`lib.search.dense.DenseIndex`
(``restrict``, ``search_vector``, ``scores_for``), so :class:`~lib.search.dense.DenseSearcher` and every
design run on it unchanged (``retriever: milvus``; docs/engine.md).

Two ways in:

* :func:`build_collection`: the study's own collection, built from its documents' vectors (one row per
  document, or per chunk) in Milvus Lite, the same engine embedded in the process and kept in a folder
  (``milvus_uri`` null), or in a server or cluster at ``milvus_uri``. Its name is a digest of its rows and
  index settings, so a changed collection is a new one; an interrupted build resumes where it stopped.
* :func:`open_collection`: a collection the user already has (``milvus_collection``), searched read-only:
  the client is wrapped so that only reading calls exist (:class:`ReadOnlyClient`), and its schema is checked
  (the id and vector fields, their types, the dimension of the query embedder, the metric) before any search.

Given the rows' texts, the study's own collection also holds each row's text in a field with an analyzer, a BM25
function filling a sparse field from it and a BM25 index on that field: the engine's own full-text search, which
:mod:`lib.search.milvus_keyword` searches behind the interface of the in-process BM25 index (``milvus_bm25``).

Answers are at document level, as the in-process search's: Milvus returns rows (chunks), a document scores
its best row and appears once; the search asks for more rows than documents wanted and doubles the depth
until it holds ``k`` documents and the ``k``-th document's score is above the lowest row returned (as
:class:`lib.search.faiss_index.FaissIndex`). Ties are broken by document id. Every engine error (no
answer at the URI, a timeout, the engine going down during a run) is an :class:`EngineError` naming the
setting; a run's results are appended question by question, so a run stopped that way resumes.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import EngineError
from .dense import Hit
import os
from ..progress import bar as tqdm

INSERT_BATCH = 2048  # rows sent to the engine at a time while building
MAX_DEPTH = 16_384  # Milvus's largest top-k
ROW_FIELD, DOC_FIELD, POSITION_FIELD, VECTOR_FIELD = "row", "doc_id", "position", "vector"
# pymilvus pings an idle connection every 10 s; Milvus Lite's gRPC server allows a ping every 5 minutes and
# closes a connection that pings more often ("too many pings"), which broke a report's later pages, so the
# client pings no idle connection and no busy one more often than the server allows
GRPC_OPTIONS = {"grpc.keepalive_time_ms": 330_000, "grpc.keepalive_permit_without_calls": False}
METRICS = ("IP", "COSINE")  # cosine similarity: inner product over normalised vectors, or the engine's cosine
# the engine's full-text search in the study's own collection: each row's text, and the sparse field its BM25
# function fills from it
TEXT_FIELD, SPARSE_FIELD, BM25_FUNCTION = "text", "sparse", "bm25"
# the English stop words bm25s drops in process (its list, Lucene's; tests/test_milvus_keyword.py holds them equal)
STOP_WORDS = ("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
              "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to",
              "was", "will", "with")
# the analyzer of the text field, as close to the in-process BM25's as Milvus's analyzers go: the standard
# tokenizer, lowercased, the same stop words, then Snowball English stemming. Milvus applies all of it; Milvus
# Lite 3 applies the tokenizer, lowercasing and the stop words and ignores the stemmer (docs/engine.md)
ANALYZER = {"tokenizer": "standard",
            "filter": ["lowercase", {"type": "stop", "stop_words": list(STOP_WORDS)},
                       {"type": "stemmer", "language": "english"}]}
BM25_INDEX = {"index_type": "SPARSE_INVERTED_INDEX", "metric_type": "BM25", "params": {"bm25_k1": 1.5, "bm25_b": 0.75}}
MAX_TEXT_BYTES = 65_535  # Milvus's longest VARCHAR
LOAD_TRIES = 6  # loads of the study's own collection before its error is raised (see load)


@dataclass(frozen=True)
class Connection:
    """Where the engine is: ``uri`` (a Milvus Lite folder ending in .db, or http(s)://host:port), the
    environment variable holding its token, and the timeout of connecting, searching and reading (writing
    and indexing the study's own collection wait as long as they take)."""

    uri: str
    token_env: str = "MILVUS_TOKEN"
    timeout_s: float = 30.0

    @property
    def lite(self) -> bool:
        """Whether the engine is a Milvus Lite file (a folder ending in .db), opened in this process."""
        return self.uri.endswith(".db")

    def client(self):
        """A connected pymilvus client; an unreachable engine is an :class:`EngineError` naming the URI, and a
        Milvus Lite file another process has open (one process opens such a file at a time) one line saying so."""
        from pymilvus import MilvusClient  # pymilvus is optional (only the Milvus backend needs it)
        from pymilvus.exceptions import MilvusException  # pymilvus is optional (only the Milvus backend needs it)

        if self.lite:
            Path(self.uri).parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        for attempt in range(2):  # a channel closed while idle is opened again once
            try:
                with quiet_lite():
                    return MilvusClient(uri=self.uri, token=os.environ.get(self.token_env, ""),
                                        timeout=self.timeout_s, grpc_options=GRPC_OPTIONS)
            except MilvusException as exc:
                if self.lite and held_elsewhere(Path(self.uri)):
                    raise EngineError(f"milvus_uri {self.uri!r}: another process has this Milvus Lite file open, and "
                                      "only one process at a time can; stop that process, or serve the file "
                                      f"(python -m milvus_lite server --data-dir {self.uri}) and set milvus_uri to "
                                      "its address") from None
                if attempt or time.monotonic() - started >= 0.9 * self.timeout_s:
                    raise self.error("cannot connect", exc, started) from None
                time.sleep(1.0)

    def error(self, what: str, exc: Exception, started: float | None = None) -> EngineError:
        """An engine error naming the setting: a timeout when the call took the whole ``milvus_timeout_s``."""
        message = getattr(exc, "message", None) or str(exc)
        if started is not None and time.monotonic() - started >= 0.9 * self.timeout_s:
            return EngineError(f"milvus_uri {self.uri!r}: {what}: no answer within milvus_timeout_s={self.timeout_s:g} "
                               f"({message})")
        return EngineError(f"milvus_uri {self.uri!r}: {what} ({message}); is the engine running at that address? "
                           "Saved results are kept: run again when it answers, and the run resumes")


@contextlib.contextmanager
def quiet_lite():
    """Milvus Lite's log off while a client opens a file: a file it cannot open is logged with a traceback, and
    said here in one line instead (:meth:`Connection.client`)."""
    log = logging.getLogger("milvus_lite")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def held_elsewhere(folder: Path) -> bool:
    """Whether another process holds a Milvus Lite file's lock (the advisory ``flock`` on its ``LOCK`` file that
    Milvus Lite holds while the file is open), tried without waiting and let go at once."""
    try:
        fd = os.open(folder / "LOCK", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


class ReadOnlyClient:
    """A pymilvus client with only its reading calls: what the study may do to a collection it does not own.
    Any other call (insert, upsert, delete, create or drop, indexes, loading) is an AttributeError."""

    READS = ("has_collection", "describe_collection", "list_indexes", "describe_index", "get_load_state",
             "get_collection_stats", "search", "query")

    def __init__(self, client):
        self._client = client

    def __getattr__(self, name: str):
        if name not in ReadOnlyClient.READS:
            raise AttributeError(f"{name}: not a read; the study never changes a collection it does not own")
        return getattr(self._client, name)


class MilvusIndex:
    """Cosine search over one Milvus collection at document level; the same methods as DenseIndex.

    ``client``: a pymilvus client (a :class:`ReadOnlyClient` for a user's collection); ``id_field``: each
    row's document id; ``position_field``: its chunk position (None: 0); ``metric``: IP or COSINE;
    ``ef_search``: sent to an HNSW index (None: the engine's default)."""

    def __init__(self, client, connection: Connection, collection: str, id_field: str, vector_field: str,
                 metric: str, int_ids: bool = False, position_field: str | None = None, ef_search: int | None = None,
                 known_ids: set[str] | None = None):
        self.client, self.connection, self.collection = client, connection, collection
        self.id_field, self.vector_field, self.position_field = id_field, vector_field, position_field
        self.metric, self.int_ids, self.ef_search, self.known_ids = metric, int_ids, ef_search, known_ids
        self.filter = ""
        self.allowed: set[str] | None = None
        self.sparse_field: str | None = None  # the study's own collection built with texts: its BM25 field

    def _literal(self, ids: Sequence[str]) -> str:
        values = [int(i) for i in ids] if self.int_ids else [str(i) for i in ids]
        return json.dumps(values, ensure_ascii=False)

    def restrict(self, allowed: set[str] | None) -> None:
        """A metadata filter applied inside every search (a filter expression on the id field; None: all)."""
        self.allowed = None if allowed is None else set(allowed)
        self.filter = "" if allowed is None else f"{self.id_field} in {self._literal(sorted(allowed))}"

    def _call(self, what: str, fn, **kwargs):
        from pymilvus.exceptions import MilvusException  # pymilvus is optional (only the Milvus backend needs it)

        started = time.monotonic()
        try:
            return fn(collection_name=self.collection, timeout=self.connection.timeout_s, **kwargs)
        except MilvusException as exc:
            raise self.connection.error(f"{what} in collection {self.collection!r}", exc, started) from None

    def search_vector(self, qvec: np.ndarray, k: int) -> list[Hit]:
        if self.allowed is not None:
            k = min(k, len(self.allowed))
        if k <= 0:
            return []
        q = np.asarray(qvec, dtype=np.float32).reshape(-1).tolist()
        params = {"metric_type": self.metric, "params": {} if self.ef_search is None else {"ef": self.ef_search}}
        fields = [self.id_field] + ([self.position_field] if self.position_field else [])
        depth = min(MAX_DEPTH, k + 1)
        while True:
            if self.ef_search is not None:
                params["params"]["ef"] = max(self.ef_search, depth)
            rows = self._call("search", self.client.search, data=[q], limit=depth, filter=self.filter,
                              output_fields=fields, search_params=params, anns_field=self.vector_field)[0]
            best: dict[str, tuple[float, int]] = {}
            for r in rows:  # a document's best row
                doc, score = str(r["entity"][self.id_field]), float(r["distance"])
                if doc not in best or score > best[doc][0]:
                    best[doc] = (score, int(r["entity"][self.position_field]) if self.position_field else 0)
            ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
            lowest = min((float(r["distance"]) for r in rows), default=float("-inf"))
            exhausted = len(rows) < depth or depth >= MAX_DEPTH
            if exhausted or (len(ranked) == k and ranked[-1][1][0] > lowest):
                break
            depth = min(MAX_DEPTH, 2 * depth)
        if self.known_ids is not None:
            unknown = [d for d, _ in ranked if d not in self.known_ids]
            if unknown:
                raise EngineError(f"milvus_collection {self.collection!r}: field {self.id_field!r} (milvus_id_field) holds "
                                  f"{unknown[0]!r}, which is not among the study's documents: search the collection "
                                  "its documents were imported from")
        return [Hit(d, s, p) for d, (s, p) in ranked]

    def scores_for(self, qvec: np.ndarray, ids: Sequence[str]) -> list[float]:
        """Cosine of the query vector with the given documents (each its best row's), from their stored vectors."""
        if not ids:
            return []
        rows = self._call("query", self.client.query, filter=f"{self.id_field} in {self._literal(sorted(set(ids)))}",
                          output_fields=[self.id_field, self.vector_field])
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        best: dict[str, float] = {}
        for r in rows:
            v = np.asarray(r[self.vector_field], dtype=np.float32)
            if self.metric == "COSINE":
                v = v / max(float(np.linalg.norm(v)), 1e-12)
                s = float(v @ q) / max(float(np.linalg.norm(q)), 1e-12)
            else:
                s = float(v @ q)
            doc = str(r[self.id_field])
            best[doc] = max(best.get(doc, float("-inf")), s)
        missing = [i for i in ids if i not in best]
        if missing:
            raise EngineError(f"milvus_collection {self.collection!r}: no row with {self.id_field} = {missing[0]!r}")
        return [best[i] for i in ids]


# --------------------------------------------------------------------------- the study's own collection
def collection_name(ids: Sequence[str], positions: Sequence[int], vectors: np.ndarray, index: dict,
                    texts: Sequence[str] | None = None) -> str:
    """The name of the study's own collection: a digest of its rows (ids, positions, vectors, and texts when it
    holds them for full-text search, with the analyzer and BM25 index) and index settings. Without texts the
    name is the one a collection built before full-text search got, so that collection is found again."""
    head = [list(map(str, ids)), list(map(int, positions)), vectors.shape, index]
    if texts is not None:
        head.append({"analyzer": ANALYZER, "bm25": BM25_INDEX})
    h = hashlib.sha256(json.dumps(head, sort_keys=True).encode())
    h.update(np.ascontiguousarray(vectors, dtype=np.float32).data)
    for t in texts or ():
        h.update(str(t).encode("utf-8") + b"\x00")
    return f"study_{h.hexdigest()[:20]}"


def text_length(texts: Sequence[str]) -> int:
    """The text field's length: the longest text in bytes; a text longer than Milvus holds is an error naming
    the settings that avoid it."""
    longest = max((len(str(t).encode("utf-8")) for t in texts), default=1)
    if longest > MAX_TEXT_BYTES:
        raise EngineError(f"milvus_bm25 'engine': a row's text is {longest:,} bytes, and a Milvus text field holds at "
                          f"most {MAX_TEXT_BYTES:,}: chunk the documents (chunk_documents=true), or keep BM25 in "
                          "process (milvus_bm25=in-process)")
    return max(1, longest)


def index_settings(index_type: str, m: int = 32, ef_construction: int = 80) -> dict:
    """The vector index of the study's own collection: FLAT (exact) or HNSW (``m``, ``ef_construction``)."""
    if index_type == "FLAT":
        return {"index_type": "FLAT", "metric_type": "IP", "params": {}}
    if index_type == "HNSW":
        return {"index_type": "HNSW", "metric_type": "IP", "params": {"M": m, "efConstruction": ef_construction}}
    raise ValueError(f"milvus_index should be FLAT or HNSW, got {index_type!r}")


def build_collection(connection: Connection, ids: Sequence[str], vectors: np.ndarray,
                     positions: Sequence[int] | None = None, index_type: str = "FLAT", m: int = 32,
                     ef_construction: int = 80, ef_search: int = 64, progress: bool = True,
                     texts: Sequence[str] | None = None) -> MilvusIndex:
    """The study's own collection of these rows (built, finished if a build was interrupted, or found); with
    ``texts`` (each row's) it holds them too, for the engine's full-text search (:data:`ANALYZER`, a BM25
    function and index: :func:`lib.search.milvus_keyword.keyword_index`)."""
    from pymilvus import DataType, Function, FunctionType  # pymilvus is optional (only the Milvus backend needs it)
    from pymilvus.exceptions import MilvusException  # pymilvus is optional (only the Milvus backend needs it)

    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = vectors.shape
    positions = [0] * n if positions is None else [int(p) for p in positions]
    if texts is not None and len(texts) != n:
        raise ValueError(f"{n} rows but {len(texts)} texts")
    index = index_settings(index_type, m, ef_construction)
    name = collection_name(ids, positions, vectors, index, texts)
    text_bytes = None if texts is None else text_length(texts)
    client = connection.client()
    try:
        if not client.has_collection(name):
            schema = client.create_schema(auto_id=False, enable_dynamic_field=False,
                                          description="built by agentic-rag-evidence from a study's documents")
            schema.add_field(ROW_FIELD, DataType.INT64, is_primary=True)
            schema.add_field(DOC_FIELD, DataType.VARCHAR, max_length=max(1, max((len(str(i).encode()) for i in ids), default=1)))
            schema.add_field(POSITION_FIELD, DataType.INT64)
            schema.add_field(VECTOR_FIELD, DataType.FLOAT_VECTOR, dim=d)
            if texts is not None:
                schema.add_field(TEXT_FIELD, DataType.VARCHAR, max_length=text_bytes, enable_analyzer=True,
                                 analyzer_params=ANALYZER)
                schema.add_field(SPARSE_FIELD, DataType.SPARSE_FLOAT_VECTOR)
                schema.add_function(Function(name=BM25_FUNCTION, function_type=FunctionType.BM25,
                                             input_field_names=[TEXT_FIELD], output_field_names=[SPARSE_FIELD]))
            params = client.prepare_index_params()
            params.add_index(field_name=VECTOR_FIELD, **index)
            if texts is not None:
                params.add_index(field_name=SPARSE_FIELD, **BM25_INDEX)
            client.create_collection(name, schema=schema, index_params=params, timeout=connection.timeout_s)
        have = int(client.get_collection_stats(name, timeout=connection.timeout_s)["row_count"])
        if have < n:  # rows go in order, so the first ``have`` are there; the last batch is sent again (upsert)
            start = max(0, (have // INSERT_BATCH - 1) * INSERT_BATCH)
            with tqdm(total=n, initial=start, desc="Milvus collection", unit="rows", disable=not progress) as bar:
                for a in range(start, n, INSERT_BATCH):
                    b = min(n, a + INSERT_BATCH)
                    # rows already there are sent again as an upsert, new rows inserted: Milvus Lite's upsert looks
                    # each key up over every segment, so inserting 1M rows with it slowed to about 100 rows a second
                    send = client.upsert if a < have else client.insert
                    send(name, [{ROW_FIELD: r, DOC_FIELD: str(ids[r]), POSITION_FIELD: positions[r],
                                 VECTOR_FIELD: vectors[r], **({} if texts is None else {TEXT_FIELD: str(texts[r])})}
                                for r in range(a, b)], timeout=connection.timeout_s)
                    bar.update(b - a)
            client.flush(name)  # writing and indexing take as long as they take: no timeout
            # a collection is loaded when created, and Milvus Lite indexes only the segments it holds when
            # loaded: loaded again, every segment gets its index (HNSW searched brute-force otherwise)
            client.release_collection(name)
        load(client, name)  # builds each segment's index the first time
    except MilvusException as exc:
        raise connection.error(f"building collection {name!r}", exc) from None
    engine = MilvusIndex(client, connection, name, DOC_FIELD, VECTOR_FIELD, "IP", position_field=POSITION_FIELD,
                         ef_search=ef_search if index_type == "HNSW" else None)
    engine.sparse_field = None if texts is None else SPARSE_FIELD
    return engine


def load(client, name: str, tries: int = LOAD_TRIES) -> None:
    """Load the study's own collection. Milvus Lite 3 writes a flushed segment's index file in a background
    thread, outside its lock, and a load meanwhile can read that file half written ("file seems not fully
    written", seen building 2,000 rows on loaded cores): a failed load is tried again after a pause (0.5 s,
    doubling), once the engine has finished the file; the last failure is raised."""
    from pymilvus.exceptions import MilvusException  # pymilvus is optional (only the Milvus backend needs it)

    for attempt in range(tries):
        try:
            client.load_collection(name)
            return
        except MilvusException:
            if attempt == tries - 1:
                raise
            time.sleep(0.5 * 2 ** attempt)


# --------------------------------------------------------------------------- a user's collection, read-only
def type_name(kind) -> str:
    """A pymilvus type or load state by its name."""
    return getattr(kind, "name", str(kind))


def user_fields(client, connection: Connection, collection: str, id_field: str, setting: str, field: str) -> tuple[dict, dict]:
    """A user's collection described (``describe_collection``) and its fields by name, checked: the collection
    exists, it has ``id_field`` and ``field`` (named by the setting ``setting``), and ids are VARCHAR or INT64.
    Each problem is an :class:`EngineError` naming the setting."""
    from pymilvus import DataType  # pymilvus is optional (only the Milvus backend needs it)

    if not client.has_collection(collection, timeout=connection.timeout_s):
        raise EngineError(f"milvus_collection {collection!r}: no such collection at milvus_uri {connection.uri!r}")
    described = client.describe_collection(collection, timeout=connection.timeout_s)
    fields = {f["name"]: f for f in described["fields"]}
    for named, name in (("milvus_id_field", id_field), (setting, field)):
        if name not in fields:
            raise EngineError(f"{named} {name!r}: collection {collection!r} has no such field "
                              f"(its fields: {', '.join(fields)})")
    if fields[id_field]["type"] not in (DataType.VARCHAR, DataType.INT64):
        raise EngineError(f"milvus_id_field {id_field!r}: a document id should be a VARCHAR or INT64 field, "
                          f"not {type_name(fields[id_field]['type'])}")
    return described, fields


def require_loaded(client, connection: Connection, collection: str, load=None) -> None:
    """A user's collection must be loaded: the study never loads (changes the state of) a collection it does not own
    in a server, which others may be using. A Milvus Lite file (``milvus_uri`` a .db folder) is open in this process
    alone and is not loaded when a process opens it, so the study loads it there (``load``: the client's
    ``load_collection``), which changes none of its rows, schema or data files (a segment without its index
    file gets one, as any process loading it would write)."""
    state = client.get_load_state(collection, timeout=connection.timeout_s)["state"]
    if type_name(state) != "Loaded" and connection.lite and load is not None:
        load(collection)  # as long as it takes, as the study's own collection's load
        state = client.get_load_state(collection, timeout=connection.timeout_s)["state"]
    if type_name(state) != "Loaded":
        raise EngineError(f"milvus_collection {collection!r} is not loaded at milvus_uri {connection.uri!r}; the study "
                          f"never changes a collection it does not own: load it yourself (MilvusClient.load_collection)")


def open_collection(connection: Connection, collection: str, id_field: str, vector_field: str, dim: int,
                    ef_search: int | None = None, known_ids: set[str] | None = None) -> MilvusIndex:
    """A collection the user already has, searched read-only, its schema checked first: the collection
    exists and is loaded (a Milvus Lite file is loaded here: :func:`require_loaded`), ``id_field`` is a VARCHAR or
    INT64 field, ``vector_field`` a float vector of dimension ``dim`` (the query embedder's) indexed with an IP or
    COSINE metric. Each problem is an :class:`EngineError` naming the setting."""
    from pymilvus import DataType  # pymilvus is optional (only the Milvus backend needs it)
    from pymilvus.exceptions import MilvusException  # pymilvus is optional (only the Milvus backend needs it)

    engine = connection.client()
    client = ReadOnlyClient(engine)
    started = time.monotonic()
    try:
        _, fields = user_fields(client, connection, collection, id_field, "milvus_vector_field", vector_field)
        vector = fields[vector_field]
        if vector["type"] != DataType.FLOAT_VECTOR:
            raise EngineError(f"milvus_vector_field {vector_field!r}: should be a FLOAT_VECTOR field, not {vector['type'].name}")
        have = int(vector["params"]["dim"])
        if have != dim:
            raise EngineError(f"milvus_vector_field {vector_field!r} holds vectors of dimension {have}, but the query "
                              f"embedder (embedder) gives {dim}: set embedder to the model the collection was embedded with")
        metric = None
        for name in client.list_indexes(collection, field_name=vector_field, timeout=connection.timeout_s):
            metric = client.describe_index(collection, index_name=name, timeout=connection.timeout_s).get("metric_type")
        if metric not in METRICS:
            raise EngineError(f"milvus_vector_field {vector_field!r}: indexed with metric {metric!r}; the study compares "
                              f"by cosine, so it needs an index with metric {' or '.join(METRICS)}")
        require_loaded(client, connection, collection, engine.load_collection)
    except MilvusException as exc:
        raise connection.error(f"reading collection {collection!r}", exc, started) from None
    return MilvusIndex(client, connection, collection, id_field, vector_field, metric,
                       int_ids=fields[id_field]["type"] == DataType.INT64, ef_search=ef_search, known_ids=known_ids)
