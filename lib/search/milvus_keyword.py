"""BM25 in the engine: Milvus's full-text search behind the interface of the in-process BM25 index
(:class:`lib.search.bm25.BM25Index`: ``restrict``, ``search``, ``scores``, ``scores_for``), so the bm25 and hybrid
designs and the rerank step's BM25 signal run on it unchanged (``retriever: milvus``, ``milvus_bm25: engine``;
docs/engine.md).

Two ways in, as for dense search (:mod:`lib.search.milvus_index`):

* :func:`keyword_index`: the sparse field of the study's own collection, built with its rows' texts
  (``build_collection(..., texts=...)``: a text field with :data:`~lib.search.milvus_index.ANALYZER`, a BM25
  function filling the sparse field from it, a BM25 index on that field).
* :func:`open_keyword`: the BM25 field of a collection the user already has (``milvus_sparse_field``), read-only
  (:class:`~lib.search.milvus_index.ReadOnlyClient`), its schema checked before any search: the field exists, is
  a SPARSE_FLOAT_VECTOR, a BM25 function fills it from a text field, its index scores by BM25, the collection is
  loaded. Each problem is an :class:`EngineError` naming the setting.

The query is sent as text; the engine analyzes it as it analyzed the documents and scores by BM25 with its own
tokenizer, filters and statistics (how its rankings differ from bm25s's: docs/engine.md). Scores are the engine's
BM25 scores (Milvus returns them as distances, Milvus Lite negated: their size is the score). Answers are at
document level, as in process: a document scores its best row and appears once, ties broken by id. The engine
returns only rows sharing a word with the query, so the documents with none follow them with score 0 in id
order, as the in-process index ranks its ties; a search asks for more rows than documents wanted and doubles
the depth until the ``k``-th document's score is above the lowest row returned, or the engine has no more.
"""
from __future__ import annotations

import json
import re
import time
from typing import Sequence

import numpy as np

from ..errors import EngineError
from .dense import Hit
from .milvus_index import (ANALYZER, BM25_INDEX, MAX_DEPTH, Connection, MilvusIndex, ReadOnlyClient, require_loaded,
                           type_name, user_fields)

WORD = re.compile(r"\w", re.UNICODE)  # a query with no word character has no term to search


def id_literal(ids: Sequence[str], int_ids: bool) -> str:
    """Ids as a filter expression's list (numbers for an INT64 id field)."""
    return json.dumps([int(i) for i in ids] if int_ids else [str(i) for i in ids], ensure_ascii=False)


class MilvusKeywordIndex:
    """BM25 search over one collection's sparse field at document level; the same methods as BM25Index.

    ``doc_ids``: the study's documents (every id the engine returns must be one; the documents no row of which
    shares a word with a query rank after those that do, in id order); ``settings``: what the scores depend on
    (the analyzer, the index), for a result's provenance."""

    def __init__(self, client, connection: Connection, collection: str, id_field: str, sparse_field: str,
                 doc_ids: Sequence[str], settings: dict, int_ids: bool = False, position_field: str | None = None):
        self.client, self.connection, self.collection = client, connection, collection
        self.id_field, self.sparse_field, self.position_field = id_field, sparse_field, position_field
        self.int_ids, self.settings = int_ids, settings
        self.ids = sorted({str(d) for d in doc_ids})  # the documents, sorted
        self.pos = {d: i for i, d in enumerate(self.ids)}
        self.allowed: set[str] | None = None
        self.filter = ""

    def restrict(self, allowed: set[str] | None) -> "MilvusKeywordIndex":
        """A metadata filter applied inside every search (a filter expression on the id field; None: all)."""
        self.allowed = None if allowed is None else {str(d) for d in allowed}
        self.filter = "" if allowed is None else f"{self.id_field} in {id_literal(sorted(self.allowed), self.int_ids)}"
        return self

    def _call(self, what: str, fn, **kwargs):
        from pymilvus.exceptions import MilvusException  # pymilvus is optional (only the Milvus backend needs it)

        started = time.monotonic()
        try:
            return fn(collection_name=self.collection, timeout=self.connection.timeout_s, **kwargs)
        except MilvusException as exc:
            raise self.connection.error(f"{what} in collection {self.collection!r}", exc, started) from None

    def _best(self, query: str, k: int, where: str) -> list[tuple[str, float, int]]:
        """The top ``k`` documents the engine scores above 0 for the query (document, score, best row's position)."""
        if k <= 0 or not WORD.search(query):
            return []
        fields = [self.id_field] + ([self.position_field] if self.position_field else [])
        depth = min(MAX_DEPTH, k + 1)
        while True:
            rows = self._call("full-text search", self.client.search, data=[query], limit=depth, filter=where,
                              output_fields=fields, search_params={"metric_type": "BM25"},
                              anns_field=self.sparse_field)[0]
            best: dict[str, tuple[float, int]] = {}
            for r in rows:  # a document's best row (the lowest position among equal scores)
                doc, score = str(r["entity"][self.id_field]), abs(float(r["distance"]))
                position = int(r["entity"][self.position_field]) if self.position_field else 0
                if doc not in best or (score, -position) > (best[doc][0], -best[doc][1]):
                    best[doc] = (score, position)
            ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
            lowest = min((abs(float(r["distance"])) for r in rows), default=float("-inf"))
            if len(rows) < depth or depth >= MAX_DEPTH or (len(ranked) == k and ranked[-1][1][0] > lowest):
                break
            depth = min(MAX_DEPTH, 2 * depth)
        unknown = [d for d, _ in ranked if d not in self.pos]
        if unknown:
            raise EngineError(f"milvus_collection {self.collection!r}: field {self.id_field!r} (milvus_id_field) holds "
                              f"{unknown[0]!r}, which is not among the study's documents: search the collection "
                              "its documents were imported from")
        return [(d, s, p) for d, (s, p) in ranked]

    def search(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` documents by the engine's BM25 score, ties broken by id; documents sharing no word with
        the query follow with score 0, in id order."""
        universe = self.ids if self.allowed is None else [d for d in self.ids if d in self.allowed]
        k = min(k, len(universe))
        hits = [Hit(d, s, p) for d, s, p in self._best(query, k, self.filter)]
        if len(hits) < k:
            found = {h.id for h in hits}
            hits += [Hit(d, 0.0, 0) for d in universe if d not in found][: k - len(hits)]
        return hits

    def scores_for(self, query: str, ids: Sequence[str]) -> list[float]:
        """The engine's BM25 score of each given document for the query (its best row's; 0: no word shared)."""
        if not ids:
            return []
        wanted = sorted({str(i) for i in ids})
        where = f"{self.id_field} in {id_literal(wanted, self.int_ids)}"
        best = {d: s for d, s, _ in self._best(query, len(wanted), where)}
        return [best.get(str(i), 0.0) for i in ids]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document (in ``self.ids`` order) for the query."""
        return np.asarray(self.scores_for(query, self.ids), dtype=np.float32)


def keyword_index(engine: MilvusIndex, doc_ids: Sequence[str]) -> MilvusKeywordIndex:
    """Full-text search in the study's own collection (built with its rows' texts)."""
    if engine.sparse_field is None:
        raise ValueError(f"collection {engine.collection!r} was built without texts: it has no full-text search")
    return MilvusKeywordIndex(engine.client, engine.connection, engine.collection, engine.id_field, engine.sparse_field,
                              doc_ids, {"engine": "milvus", "analyzer": ANALYZER, "index": BM25_INDEX},
                              position_field=engine.position_field)


def open_keyword(connection: Connection, collection: str, id_field: str, sparse_field: str,
                 doc_ids: Sequence[str]) -> MilvusKeywordIndex:
    """Full-text search in a collection the user already has, read-only, its schema checked first: the collection
    exists and is loaded (a Milvus Lite file is loaded here: ``require_loaded``), ``id_field`` is a VARCHAR or
    INT64 field, ``sparse_field`` a SPARSE_FLOAT_VECTOR field that a BM25 function fills from a text field, indexed
    with metric BM25. Each problem is an :class:`EngineError` naming the setting."""
    from pymilvus import DataType  # pymilvus is optional (only the Milvus backend needs it)
    from pymilvus.exceptions import MilvusException  # pymilvus is optional (only the Milvus backend needs it)

    engine = connection.client()
    client = ReadOnlyClient(engine)
    started = time.monotonic()
    try:
        described, fields = user_fields(client, connection, collection, id_field, "milvus_sparse_field", sparse_field)
        kind = fields[sparse_field]["type"]
        if kind != DataType.SPARSE_FLOAT_VECTOR:
            raise EngineError(f"milvus_sparse_field {sparse_field!r}: should be the SPARSE_FLOAT_VECTOR field a BM25 "
                              f"function fills from a text field, not {type_name(kind)}")
        function = next((f for f in described.get("functions") or []
                         if type_name(f.get("type")) == "BM25" and sparse_field in (f.get("output_field_names") or [])), None)
        if function is None:
            raise EngineError(f"milvus_sparse_field {sparse_field!r}: no BM25 function fills it, so it cannot be "
                              "searched with text; name the field a BM25 function fills from your text field, or "
                              "leave milvus_sparse_field null to keep BM25 in process")
        text_field = (function.get("input_field_names") or ["?"])[0]
        index = {}
        for name in client.list_indexes(collection, field_name=sparse_field, timeout=connection.timeout_s):
            index = client.describe_index(collection, index_name=name, timeout=connection.timeout_s)
        if index.get("metric_type") != "BM25":
            raise EngineError(f"milvus_sparse_field {sparse_field!r}: indexed with metric {index.get('metric_type')!r}; "
                              "full-text search needs an index with metric BM25")
        require_loaded(client, connection, collection, engine.load_collection)
    except MilvusException as exc:
        raise connection.error(f"reading collection {collection!r}", exc, started) from None
    analyzer = (fields.get(text_field, {}).get("params") or {}).get("analyzer_params")
    if isinstance(analyzer, str):
        try:
            analyzer = json.loads(analyzer)
        except ValueError:
            pass
    settings = {"engine": "milvus", "collection": collection, "text_field": text_field, "sparse_field": sparse_field,
                "analyzer": analyzer, "index": {k: v for k, v in index.items()
                                                if k in ("index_type", "metric_type") or k.startswith("bm25")}}
    return MilvusKeywordIndex(client, connection, collection, id_field, sparse_field, doc_ids, settings,
                              int_ids=fields[id_field]["type"] == DataType.INT64)
