"""Wiring: the one place where a profile becomes parts (collection, questions, searcher, LLM,
reranker) and designs, and runs are made; what the pages read back from the saved runs is
``lib.report.queries``'s.

Over 500 lines: :class:`ProfileParts` builds every part of one profile lazily and the runner shares
its caches, so the wiring is read in one place."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from functools import cached_property
from pathlib import Path
from typing import Callable


from .config import DEFAULT_PROFILE, ROOT, Profile, parse_runs
from .data.collection import read_collection
from .data.papers import paper_text
from .data.questions import read_questions, read_twopart_questions
from .designs import Question, Result, design_class, design_names
from .errors import DataError
from .io import content_digest, digest
from .llm import ReplayMiss, make_llm
from .progress import bar, unscored
from .llm.prompts import corpus_for
from .runs import RecordCheck, read_results, run_designs, run_files, run_path, write_qrels, write_trec
from .search.dense import DenseIndex, DenseSearcher, embedded_rows
from .search.fusion import RRF_TIES
from .search.embedder import Embedder
from .data.papers import read_papers
from .data.question_gen import generated_questions_path
from .search.chunking import chunk_for_embedder
from .search.snapshot import load_matrix
from .search import milvus_index as mi
from .search import milvus_keyword as mk
from .search.dense import resolve_backend
from .llm.anthropic_backend import profile_backend_kwargs
from .llm import openai_settings
from .llm.contract import SCHEMA_CONSTRAINTS, constraint_of, prompt_for
from .search.rerank import CrossEncoderScorer
from .search.bm25 import BM25Index
from .search.snapshot import BM25_DIR
from .search.rerank import FusedReranker
from .llm.cost import check_budget, project_designs
from .llm.batches import prefetch_first_turns


# --------------------------------------------------------------------------- data
def collection(profile: Profile) -> list[dict]:
    """The drawn collection's rows, read (and checked) once a process while its file is unchanged
    (the same path, size, inode and modification time): a report reads it for every design and condition."""
    path = profile.data_dir / "collection.jsonl"
    if not path.exists():
        raise DataError(f"{path}: no collection yet; run notebook 01 (make notebook NB=01)")
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_ino, st.st_mtime_ns)
    if key not in _COLLECTIONS:
        if len(_COLLECTIONS) >= _KEPT_COLLECTIONS:
            _COLLECTIONS.pop(next(iter(_COLLECTIONS)))
        _COLLECTIONS[key] = [read_collection(path), None]
    return _COLLECTIONS[key][0]


# the collections as last read, by file (path, size, inode, modification time): [rows, their digest once taken]
_COLLECTIONS: dict[tuple, list] = {}
_KEPT_COLLECTIONS = 8


def search_papers(profile: Profile) -> list[dict]:
    """The papers the designs search: the drawn collection, or (``collection_scope: snapshot``)
    every paper of the snapshot, the collection's roles kept and the rest marked ``snapshot``."""
    papers = collection(profile)
    if profile.collection_scope == "default":
        return papers
    snap, coll = profile.path("snapshot_path"), profile.data_dir / "collection.jsonl"
    key = (str(snap), snap.stat().st_mtime_ns, str(coll), coll.stat().st_mtime_ns)
    if key not in _SNAPSHOT_PAPERS:  # read once a process (63,903 papers): the scorer reads every condition
        roles = {p["id"]: p["role"] for p in papers}
        rows = [{"id": p.id, "title": p.title, "abstract": p.abstract, "categories": list(p.categories),
                 "first_seen": p.first_seen, "role": roles.get(p.id, "snapshot")} for p in read_papers(snap)]
        _SNAPSHOT_PAPERS.clear()
        _SNAPSHOT_PAPERS[key] = (rows, collection_digest(rows))
    return _SNAPSHOT_PAPERS[key][0]


# the snapshot's papers as last read, with their digest (the papers and the digest are read once a process)
_SNAPSHOT_PAPERS: dict[tuple, tuple[list[dict], str]] = {}


def questions_path(profile: Profile) -> Path:
    if profile.questions_source == "user" and profile.collection_source == "documents":
        return profile.data_dir / "questions.csv"  # imported with the documents (lib/data/study.py)
    if profile.questions_source == "user":
        if not profile.user_questions_path:
            raise DataError(f"profiles/{profile.name}.yaml: questions_source 'user' needs user_questions_path")
        return profile.path("user_questions_path")
    if profile.questions_source == "generate":
        return generated_questions_path(profile)
    return profile.path("questions_path")


def all_questions(profile: Profile, papers: list[dict] | None = None) -> list[dict]:
    """Every question row (reviewed or not), checked against the collection's ids."""
    papers = papers if papers is not None else collection(profile)
    return _question_rows(read_questions, questions_path(profile), papers)


def twopart_questions(profile: Profile, papers: list[dict] | None = None) -> list[dict]:
    """The two-part question rows, checked against the collection's ids."""
    if not profile.twopart_questions_path:
        raise DataError(f"profiles/{profile.name}.yaml: question_set 'twopart' needs twopart_questions_path")
    papers = papers if papers is not None else collection(profile)
    return _question_rows(read_twopart_questions, profile.path("twopart_questions_path"), papers)


def _question_rows(read: Callable[[Path, set[str]], list[dict]], path: Path, papers: list[dict]) -> list[dict]:
    """``read(path, the papers' ids)``, kept for this process by the file's content and the papers list itself (the
    same object: a collection or snapshot as read once, held by the memo), so the report's pages, which ask for
    the questions of each condition again and again, read each file once; each call gets its own rows."""
    path = Path(path)
    if not path.is_file():
        return read(path, {p["id"] for p in papers})  # its own error, naming the file
    key = (read.__name__, str(path.resolve()), content_digest(path), id(papers))
    kept = _QUESTION_ROWS.get(key)
    if kept is None or kept[0] is not papers:
        if len(_QUESTION_ROWS) >= 16:
            _QUESTION_ROWS.pop(next(iter(_QUESTION_ROWS)))
        kept = _QUESTION_ROWS[key] = (papers, read(path, {p["id"] for p in papers}))
    return [dict(row) for row in kept[1]]


_QUESTION_ROWS: dict[tuple, tuple[list[dict], list[dict]]] = {}  # _question_rows' reads


def scored_questions(profile: Profile, papers: list[dict] | None = None) -> list[Question]:
    """The questions that are scored (see :func:`question_set`), the first ``question_limit`` of them."""
    out = question_set(profile, papers)
    limit = profile.question_limit
    return out[:limit] if limit else out


def question_set(profile: Profile, papers: list[dict] | None = None) -> list[Question]:
    """The whole scored question set, before ``question_limit``: review ok = 1, in the profile's form
    (full or short). In the two-part condition each question's source is its two papers, joined by ";"."""
    out = []
    twopart = profile.question_set == "twopart"
    rows = twopart_questions(profile, papers) if twopart else all_questions(profile, papers)
    for row in rows:
        if not row["ok"]:
            continue
        text = row["question"]
        if profile.question_form == "short":
            if not row.get("short"):
                raise DataError(f"{questions_path(profile)}: qid {row['qid']}: field 'short' is empty "
                                "but question_form is 'short'")
            text = row["short"]
        source = ";".join(row["source_ids"]) if twopart else row["source_id"]
        out.append(Question(row["qid"], text, source, "twopart" if twopart else row.get("style", "")))
    return out


def collection_digest(papers: list[dict]) -> str:
    """The digest of the papers a design searches (id, title, abstract, categories, first listing)."""
    kept = next((d for rows, d in _SNAPSHOT_PAPERS.values() if rows is papers), None)
    if kept is not None:  # the snapshot's papers as read: their digest was taken then
        return kept
    entry = next((e for e in _COLLECTIONS.values() if e[0] is papers), None)  # a collection as read
    if entry is not None and entry[1] is not None:
        return entry[1]
    value = digest([[p["id"], p["title"], p.get("abstract", ""), list(p.get("categories", [])), p.get("first_seen", "")]
                    for p in papers])
    if entry is not None:
        entry[1] = value
    return value


def questions_digest(questions: list[Question]) -> str:
    """The digest of a scored question set (qid, text, source of each, in order)."""
    return digest([[q.qid, q.text, q.source_id] for q in questions])


def results_dir(profile: Profile) -> Path:
    """Where the profile's runs are saved (the short-question condition and variants apart)."""
    return profile.results_dir


# --------------------------------------------------------------------------- parts and designs
SHIPPED_CACHE = ROOT / "data" / "cache"


def cache_dirs(profile: Profile, kind: str) -> tuple[Path, tuple[Path, ...]]:
    """A cache's folder for this profile and the folders it may read but never writes: the shipped caches and,
    for a variant or another condition of a study, the study's own (``kind``: embeddings, bm25, rerank, why: page
    12's re-searched lists, hnsw: the approximate index's graph, never shipped)."""
    own = profile.own_dir
    if own is None and kind == "why" and (profile.name != DEFAULT_PROFILE or profile.own_overrides()):
        # page 12 for another shipped profile (pilot, dev) or a question limit: its lists stay out of the repository
        return ROOT / "build" / "cache" / kind, (SHIPPED_CACHE / kind,)
    if own is None:
        return SHIPPED_CACHE / kind, ()
    # a variant or another condition of a study also reads the study's own caches (its folder's, read only): a
    # question limit on 20,000 documents embeds none of them again
    home = ROOT / profile.settings["results_dir"] / "cache" / kind
    return own / "cache" / kind, tuple(d for d in (SHIPPED_CACHE / kind, home) if d != own / "cache" / kind)


def embedder(profile: Profile) -> Embedder:
    folder, base = cache_dirs(profile, "embeddings")
    return Embedder(profile.embedder, profile.embedder_backend, cache_dir=folder, base_dirs=base)


def dense_options(profile: Profile, backend: str | None = None) -> dict:
    """How the dense index searches: exact (numpy, faiss flat) or approximate (faiss HNSW), by setting
    (``backend``: the one already resolved from it, :attr:`ProfileParts.dense_backend`)."""
    return {"backend": backend or profile.dense_backend, "hnsw_m": profile.hnsw_m, "hnsw_ef_search": profile.hnsw_ef_search,
            "hnsw_ef_construction": profile.hnsw_ef_construction, "hnsw_cache_dir": cache_dirs(profile, "hnsw")[0]}


def document_chunks(profile: Profile, papers: list[dict], emb: Embedder | None = None):
    """The documents' chunks when the profile chunks them (``chunk_documents``), else None."""
    if not profile.chunk_documents:
        return None

    return chunk_for_embedder(papers, emb or embedder(profile), profile.chunk_tokens, profile.chunk_overlap)


def searcher(profile: Profile, papers: list[dict] | None = None, progress: bool = True, chunks=None,
             backend: str | None = None) -> DenseSearcher:
    """Dense search over the papers (or their chunks); the snapshot's vectors come from its shipped matrix
    (``backend``: the dense backend already resolved, so that the search is the one a result records)."""
    papers = papers if papers is not None else search_papers(profile)
    emb = embedder(profile)
    if profile.retriever == "milvus":
        return DenseSearcher(milvus_index(profile, papers, emb, progress, chunks), emb)
    options = dense_options(profile, backend)
    if profile.collection_scope == "snapshot":
        return DenseSearcher(DenseIndex(*load_matrix(papers, profile.embedder), **options), emb)
    return DenseSearcher(DenseIndex.build(papers, emb, progress=progress, chunks=chunks, **options), emb)


def milvus_connection(profile: Profile) -> mi.Connection:
    """Where the engine is: ``milvus_uri``, or Milvus Lite embedded in the study's cache folder."""
    p = profile
    uri = p.milvus_uri or str(cache_dirs(p, "milvus")[0] / "milvus.db")
    return mi.Connection(uri, p.milvus_token_env, p.milvus_timeout_s)


def milvus_index(profile: Profile, papers: list[dict], emb: Embedder, progress: bool = True, chunks=None):
    """Dense search in Milvus (``retriever: milvus``): the user's collection read-only
    (``milvus_collection``), or the study's own collection built from its documents' vectors, in Milvus Lite
    in the study's cache folder unless ``milvus_uri`` names a server; with BM25 in the engine
    (:func:`keyword_in_engine`) the study's own collection holds each row's text for full-text search too."""
    p = profile
    connection = milvus_connection(p)
    if p.milvus_collection:
        dim = int(emb.encode_raw(["the query embedder's dimension"]).shape[1])
        return mi.open_collection(connection, p.milvus_collection, p.milvus_id_field, p.milvus_vector_field, dim,
                                  ef_search=p.hnsw_ef_search, known_ids={x["id"] for x in papers})
    if p.collection_scope == "snapshot":
        ids, vectors = load_matrix(papers, p.embedder)
        positions = None
    else:
        ids, vectors, positions = embedded_rows(papers, emb, progress, chunks)
    texts = None
    if keyword_in_engine(p):  # each row's text, as the in-process BM25 index holds it
        text_of = {x["id"]: paper_text(x) for x in papers}
        texts = [c.text for c in chunks] if chunks is not None else [text_of[i] for i in ids]
    return mi.build_collection(connection, ids, vectors, positions, p.milvus_index, p.hnsw_m, p.hnsw_ef_construction,
                               p.hnsw_ef_search, progress=progress, texts=texts)


def keyword_in_engine(profile: Profile) -> bool:
    """Whether BM25 (the bm25 and hybrid designs, the rerank step's BM25 signal) searches in the engine:
    ``retriever: milvus`` with ``milvus_bm25: engine``, in the study's own collection or in a user's collection
    whose BM25 field is named (``milvus_sparse_field``); else bm25s in process over the study's documents."""
    p = profile
    return p.retriever == "milvus" and p.milvus_bm25 == "engine" and (not p.milvus_collection or bool(p.milvus_sparse_field))


def uses_bm25(profile: Profile, name: str) -> bool:
    """Whether a design's results depend on BM25: the bm25 design and those fusing a hybrid list (their class
    says ``uses_bm25``), and with a BM25 weight in ``rerank_weights`` every design with the rerank step."""
    cls = design_class(name)
    return bool(getattr(cls, "uses_bm25", False)) or (
        "rerank_weights" in cls.settings and bool(profile.rerank_weights.get("bm25")))


def keyword_provenance(profile: Profile, name: str) -> dict:
    """Where BM25 ran, in the provenance of a design that uses it only when it ran in the engine, so every
    result whose BM25 ran in process keeps its key: ``milvus_bm25``, and a user's BM25 field."""
    p = profile
    if not (keyword_in_engine(p) and uses_bm25(p, name)):
        return {}
    return {"milvus_bm25": "engine", **({"milvus_sparse_field": p.milvus_sparse_field} if p.milvus_collection else {})}


def retriever_provenance(profile: Profile) -> dict:
    """Where dense search ran, in a result's provenance only away from the default (in process), so every
    result computed in process keeps its key: the engine, and its collection (the user's, by address and
    fields; the study's own, by its index: its rows are the documents the collection digest names)."""
    p = profile
    if p.retriever == "in-process":
        return {}
    if p.milvus_collection:
        return {"retriever": p.retriever, **{k: p.settings[k] for k in (
            "milvus_uri", "milvus_collection", "milvus_id_field", "milvus_vector_field", "hnsw_ef_search")}}
    hnsw = ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search") if p.milvus_index == "HNSW" else ()
    return {"retriever": p.retriever, "milvus_index": p.milvus_index, **{k: p.settings[k] for k in hnsw}}


class ProfileParts:
    """The parts a design is built from (``lib.designs.Parts``), made from a profile on first use."""

    def __init__(self, profile: Profile, papers: list[dict] | None = None, progress: bool = True):
        self.profile, self.progress = profile, progress
        self.papers = papers if papers is not None else search_papers(profile)

    @cached_property
    def collection_digest(self) -> str:
        return collection_digest(self.papers)

    @cached_property
    def questions_digest(self) -> str:
        return questions_digest(question_set(self.profile, self.papers))

    @cached_property
    def allowed(self) -> set[str] | None:
        """The papers the metadata filters let through (None: no filter), applied inside every search."""
        cats, dates = self.profile.filter_categories, self.profile.filter_first_seen
        if not cats and not dates:
            return None
        return {p["id"] for p in self.papers if (not cats or set(cats) & set(p["categories"]))
                and (not dates or dates[0] <= p["first_seen"] <= dates[1])}

    @cached_property
    def chunks(self):
        """The documents' chunks (``chunk_documents``), or None: each paper searched whole."""
        return document_chunks(self.profile, self.papers)

    @cached_property
    def dense_backend(self) -> str:
        """The dense index's backend as it searches: the setting, ``auto`` resolved by the rows indexed
        (the chunks when chunked, else the papers); resolved here once, for the inputs key and for the
        searcher alike."""
        return resolve_backend(self.profile.dense_backend, len(self.chunks) if self.chunks is not None else len(self.papers))

    @cached_property
    def engine(self):
        """The Milvus collection of ``retriever: milvus`` (dense search, and the study's own collection's
        full-text search), opened or built once for both."""
        return milvus_index(self.profile, self.papers, embedder(self.profile), self.progress, self.chunks)

    @cached_property
    def searcher(self) -> DenseSearcher:
        if self.profile.retriever == "milvus":
            s = DenseSearcher(self.engine, embedder(self.profile))
        else:
            s = searcher(self.profile, self.papers, self.progress, chunks=self.chunks, backend=self.dense_backend)
        s.index.restrict(self.allowed)
        return s

    def forget_queries(self) -> None:
        """Before each answer: the dense searcher (if built) embeds every query anew (see DenseSearcher)."""
        if "searcher" in self.__dict__:
            self.searcher.forget_queries()

    def titles(self) -> dict[str, str]:
        return {p["id"]: p["title"] for p in self.papers}

    def texts(self) -> dict[str, str]:
        return {p["id"]: paper_text(p) for p in self.papers}

    @cached_property
    def _llm(self):
        p = self.profile
        settings = {}
        if p.llm_backend == "anthropic":
            settings = profile_backend_kwargs(p, "llm")
        elif p.llm_backend == "openai":
            settings = openai_settings(p)
        elif p.llm_record_backend == "openai":  # replaying a served model: the records of its route
            settings = {"constraint": self.constraint()}
        own = p.own_dir
        return make_llm(p.llm_backend, p.llm_model, p.llm_record_backend,
                        records_root=None if own is None else own / "llm_records", **settings)

    def llm(self):
        return self._llm

    def llm_source(self) -> str:
        """Whose answers the LLM designs get: the recorded backend when replaying, else the live one."""
        p = self.profile
        return (p.llm_record_backend or "local") if p.llm_backend == "replay" else p.llm_backend

    def corpus(self):
        """What the prompts call the documents: the profile's ``corpus_description`` (lib.llm.prompts.corpus_for)."""
        return corpus_for(self.profile)

    def constraint(self) -> str:
        """How a served model is kept to the reply contracts (``openai_constraint``, lib.llm.contract)."""
        return constraint_of(self.profile.settings.get("openai_constraint"), self.profile.openai_send_grammar)

    def prompt_style(self) -> str:
        """The article's prompts for Claude and for a served model with no constraint (native tool calls), the
        local variant (worked examples, its reply contracts) for the local model and a served model kept to
        those contracts by a grammar or a JSON schema (:func:`lib.llm.contract.prompt_for`)."""
        source = self.llm_source()
        if source == "openai":
            return prompt_for(self.constraint())
        return "anthropic" if source == "anthropic" else "local"

    @cached_property
    def _scorer(self):
        p = self.profile
        folder, base = cache_dirs(p, "rerank")
        return CrossEncoderScorer(p.reranker, p.reranker_backend, cache_dir=folder, max_length=p.reranker_max_length,
                                  int8=p.reranker_int8, base_dirs=base)

    def scorer(self):
        return self._scorer

    @cached_property
    def bm25(self):
        """Keyword search: the engine's full-text search (:func:`keyword_in_engine`), else bm25s in process."""
        p = self.profile
        if keyword_in_engine(p):
            ids = [x["id"] for x in self.papers]
            if p.milvus_collection:  # the user's BM25 field, read-only
                index = mk.open_keyword(milvus_connection(p), p.milvus_collection, p.milvus_id_field,
                                        p.milvus_sparse_field, ids)
            else:
                index = mk.keyword_index(self.engine, ids)
            return index.restrict(self.allowed)
        # the whole snapshot's index is a local cache, not shipped with the drawn collections' ones
        folder, base = cache_dirs(self.profile, "bm25")
        if self.profile.collection_scope == "snapshot":
            folder, base = BM25_DIR, ()
        return BM25Index.build(self.papers, cache_dir=folder, base_dirs=base, chunks=self.chunks).restrict(self.allowed)

    def reranker(self):
        """The rerank step: the cross-encoder's score fused with the dense and BM25 scores by the
        profile's ``rerank_weights``; only the signals it weighs are built."""
        w = self.profile.rerank_weights
        return FusedReranker(w, cross_encoder=self.scorer() if w.get("cross_encoder") else None,
                             bm25=self.bm25 if w.get("bm25") else None)


def design_provenance(profile: Profile, name: str, parts: ProfileParts) -> dict:
    """The profile name and every setting the design's results depend on (and, for LLM designs,
    which backend answered and with which prompt style)."""
    cls = design_class(name)
    prov = {"profile": profile.name, **{k: profile.settings.get(k) for k in cls.settings},
            # what was searched and asked: a result computed on other papers or questions is never reused
            "collection_digest": parts.collection_digest, "questions_digest": parts.questions_digest}
    if fuses(cls):
        prov["ties"] = RRF_TIES
    # the metadata filters shape every design's searches; they enter the record only when set
    prov.update({k: profile.settings[k] for k in ("filter_categories", "filter_first_seen") if profile.settings.get(k)})
    # chunked search and approximate search change what is found: they enter the record only when set,
    # so every result computed whole and exactly keeps its key
    if profile.chunk_documents:
        prov.update({k: profile.settings[k] for k in ("chunk_documents", "chunk_tokens", "chunk_overlap")})
    prov.update(retriever_provenance(profile))
    prov.update(keyword_provenance(profile, name))
    if parts.dense_backend == "faiss-hnsw" and profile.retriever == "in-process":  # set, or chosen by ``auto``
        prov.update({"dense_backend": "faiss-hnsw",
                     **{k: profile.settings[k] for k in ("hnsw_m", "hnsw_ef_search", "hnsw_ef_construction")}})
    # a design's optional settings (the loop's prompt variant) enter the record only away from their
    # default, so every result saved before the setting keeps its key
    prov.update({k: profile.settings[k] for k, default in optional_settings(cls).items()
                 if profile.settings.get(k) != default})
    if cls.uses_llm:
        prov.update({"llm_backend": parts.llm().name, "llm_source": parts.llm_source(),
                     "prompt_style": parts.prompt_style()})
        # a served model kept to the contracts by a JSON schema: the route enters the record (the grammar
        # route and none are told apart by the prompt style, as before the setting)
        if parts.llm_source() == "openai" and parts.constraint() in SCHEMA_CONSTRAINTS:
            prov["openai_constraint"] = parts.constraint()
    return prov


def optional_settings(cls) -> dict:
    """The settings a design's results depend on that enter its provenance only when not at their
    default (setting -> default): the design's own, and for every LLM design the description of the
    documents its prompts give (``corpus_description``; null: the arXiv study's own words)."""
    return {**({"corpus_description": None} if cls.uses_llm else {}), **(getattr(cls, "optional_settings", {}) or {})}


def expected_settings(profile: Profile, name: str) -> dict:
    """The settings a saved record of the design must carry as they are now: its settings, and its
    optional settings (None, i.e. absent, at their default)."""
    cls = design_class(name)
    out = {k: profile.settings.get(k) for k in cls.settings}
    out.update({k: (None if profile.settings.get(k) == d else profile.settings.get(k))
                for k, d in optional_settings(cls).items()})
    # where dense search ran: a result of another retriever is never scored as this one's
    out["retriever"] = retriever_provenance(profile).get("retriever")
    if uses_bm25(profile, name):  # where BM25 ran, likewise
        out["milvus_bm25"] = keyword_provenance(profile, name).get("milvus_bm25")
    return out


def fuses(cls) -> bool:
    """Whether a design fuses lists (RRF) or reorders candidates, so its results depend on the tie rule."""
    return "rrf_k" in cls.settings or "rerank_k" in cls.settings


def make_design(name: str, profile: Profile, parts: ProfileParts | None = None):
    """A design from the registry, built from the profile's parts."""
    parts = parts or ProfileParts(profile)
    return design_class(name).from_parts(parts, design_provenance(profile, name, parts))


def default_runs(parts: ProfileParts, name: str) -> list[int]:
    """1 for deterministic designs; for LLM designs the profile's n_runs (when replaying, those of
    them the record holds calls for)."""
    profile = parts.profile
    if not design_class(name).uses_llm:
        return [1]
    stubbed = getattr(design_class(name), "stubbed", None)
    if stubbed and stubbed(profile):  # the loop run by a stub model: deterministic, nothing to replay
        return [1]
    if profile.llm_backend == "replay":
        recorded = {rec["run"] for rec in parts.llm().store.records(design_class(name).record_kind).values()}
        # a design that may answer without the model (escalate) has runs saved with no call recorded,
        # and its first run needs no record at all
        recorded |= {int(p.stem[3:]) for p in run_files(profile.results_dir, name)}
        if getattr(design_class(name), "may_answer_without_llm", False):
            recorded.add(1)
        return sorted(r for r in recorded if r <= profile.n_runs)
    return list(range(1, profile.n_runs + 1))


def run(profile: Profile, name: str, runs: list[int] | None = None, progress: bool = True) -> dict[int, list[Result]]:
    """Run (or resume) one design for the given runs; see :func:`run_many`."""
    return {k: res[name] for k, res in run_many(profile, [name], runs, progress).items()}


def run_many(profile: Profile, names: list[str], runs: list[int] | None = None,
             progress: bool = True) -> dict[int, dict[str, list[Result]]]:
    """Run (or resume) designs together, question by question (so partial runs cover the same
    questions); writes JSON-lines, TREC and qrels files.

    With the replay backend a run whose record stops part-way (an interrupted recording) is
    replayed up to that point and reported; it is saved and marked, not scored.
    """
    runs = parse_runs(runs)
    parts = ProfileParts(profile, progress=progress)
    qs = scored_questions(profile, parts.papers)
    if runs is None:
        runs = sorted(set().union(*(default_runs(parts, n) for n in names)))
    designs = [make_design(n, profile, parts) for n in names]
    rdir = results_dir(profile)
    if profile.llm_backend == "anthropic" and any(design_class(n).uses_llm for n in names):
        paid_preflight(profile, designs, qs, runs)
    if profile.llm_backend == "openai" and profile.openai_concurrency > 1:
        concurrent_questions(designs, qs, runs, rdir, profile.openai_concurrency, progress=progress)
    replay = profile.llm_backend == "replay" and any(design_class(n).uses_llm for n in names)
    out: dict[int, dict[str, list[Result]]] = {}
    misses = []
    for k in runs:
        try:
            res = run_designs(designs, qs, k, rdir, progress=progress, before_each=parts.forget_queries,
                              refuse_new=None if profile.extends_shipped else "the shipped study")
        except ReplayMiss as exc:
            if not replay:
                raise
            res = {n: read_results(run_path(rdir, n, k)) for n in names}
            done = min(len(r) for r in res.values())
            later = recorded_later(parts, designs, k, qs[done + 1:])
            if later:  # the record goes on past this question: the question changed, not the recording
                raise ReplayMiss(f"{'+'.join(names)} run {k}: question {qs[done].qid} (question {done + 1} of "
                                 f"{len(qs)}) has no recorded answer, although later questions have "
                                 f"({', '.join(later[:3])}): was it changed? {exc}") from exc
            if done == 0:  # the record holds this run for other questions only (another condition)
                misses.append(exc)
                print(f"{'+'.join(names)} run {k}: not recorded for these questions; skipped")
                continue
            unscored(f"{'+'.join(names)} run {k}: the record has no answer for question {qs[done].qid} (question "
                     f"{done + 1} of {len(qs)}) nor for any later one: a recording that was interrupted or is still "
                     f"going on, or a question changed since it was recorded; saved for {done} questions, not scored "
                     f"({exc})")
        for n, rs in res.items():
            write_trec(rs, rdir / n / f"run{k}.trec", f"{n}-run{k}")
        out[k] = res
    if misses and not out:
        raise misses[0]
    write_qrels(qs, rdir / "qrels.txt")
    return out


def concurrent_questions(designs: list, questions: list[Question], runs: list[int], results_dir: Path,
                         concurrency: int, progress: bool = True) -> int:
    """With a served model: every question the LLM designs have not saved yet, answered ``concurrency`` at
    a time (each question all its designs' turns, in a thread of its own), its model replies recorded and
    the results thrown away; the run then answers question by question, replaying them. Only the waits on
    the server overlap: the designs' own work (searches, embeddings) runs one thread at a time (a lock the
    thread gives up while it waits, :meth:`RecordedLLM.held`). The records keep the order of a run that
    answers one question after another (each question's replies are written once the questions before it
    are); an interrupted pass keeps those written. The first error, in question order, is raised once the
    others have finished. Returns how many questions were asked."""
    llm_designs = [d for d in designs if getattr(d, "uses_llm", False) and hasattr(getattr(d, "llm", None), "held")]
    if not llm_designs or concurrency < 2:
        return 0
    llms = list({id(d.llm): d.llm for d in llm_designs}.values())
    tasks = []
    for k in runs:
        saved = {d.name: {r.qid for r in read_results(run_path(results_dir, d.name, k))} for d in llm_designs}
        tasks += [(k, q, ds) for q in questions if (ds := [d for d in llm_designs if q.qid not in saved[d.name]])]
    if not tasks:
        return 0
    lock = threading.Lock()

    def answer(task) -> list[dict]:
        k, q, ds = task
        with lock, ExitStack() as stack:
            kept = [stack.enter_context(llm.held(lock)) for llm in llms]
            for d in ds:
                d.retrieve(q, k)
            return kept

    errors = []
    with ThreadPoolExecutor(max_workers=min(concurrency, len(tasks))) as pool, \
            bar(total=len(tasks), desc=f"{'+'.join(d.name for d in llm_designs)}: {concurrency} questions at once",
                unit="q", disable=not progress) as shown:
        futures = [pool.submit(answer, t) for t in tasks]
        for f in futures:
            f.add_done_callback(lambda _f: shown.update())
        for f in futures:  # in question order: each question's replies written once those before it are
            try:
                kept = f.result()
            except Exception as exc:  # noqa: BLE001 - raised below, once the others are written
                errors.append(exc)
                continue
            for llm, answers in zip(llms, kept):
                llm.write(answers)
    if errors:
        raise errors[0]
    return len(tasks)


def recorded_later(parts: ProfileParts, designs: list, run: int, questions: list[Question]) -> list[str]:
    """The questions among ``questions`` that the LLM designs' record holds calls for in this run
    (a question's text found in a recorded request): a replay that misses a question although later
    ones are recorded met a changed question, not the end of an interrupted recording."""
    texts = {q.qid: q.text for q in questions}
    found: list[str] = []
    for d in designs:
        kind = getattr(d, "record_kind", None)
        if kind is None or not getattr(d, "uses_llm", False):
            continue
        for rec in parts.llm().store.records(kind).values():
            if rec.get("run") != run:
                continue
            last = str(rec["request"]["messages"][-1])
            found += [qid for qid, t in texts.items() if qid not in found and t in last]
    return [q.qid for q in questions if q.qid in found]


def paid_preflight(profile: Profile, designs: list, questions: list[Question], runs: list[int],
                   **batch_options) -> None:
    """Before any paid call: print the projected calls, tokens and cost of what is about to run,
    stop if it exceeds ``max_cost_usd``, and with ``llm_batch`` send the first turns as one batch
    (``batch_options``, e.g. ``poll_s``, go to :func:`lib.llm.batches.run_batch`)."""
    projection = project_designs(designs, questions, runs)
    for name, p in projection.items():
        print(f"{name}: about {p['calls']} calls, {p['input_tokens']:,} input and {p['output_tokens']:,} output tokens, "
              f"{p['usd']:.2f} USD ({p['batch_usd']:.2f} USD as a batch)")
    check_budget(list(projection.values()), profile.max_cost_usd, batch=profile.llm_batch)
    if profile.llm_batch:
        prefetch_first_turns(designs, questions, runs, **{"max_cost_usd": profile.max_cost_usd, "log": print,
                                                          **batch_options})


# --------------------------------------------------------------------------- reading saved runs
def record_check(profile: Profile, parts: "ProfileParts | None" = None) -> RecordCheck:
    """What every saved record is checked against before it is scored: the questions, the papers
    searched, the digests and the design settings as they are now."""
    parts = parts or ProfileParts(profile, progress=False)
    qs = question_set(profile, parts.papers)
    return RecordCheck({q.qid: q for q in qs}, frozenset(p["id"] for p in parts.papers),
                       {"collection_digest": parts.collection_digest, "questions_digest": parts.questions_digest},
                       {n: expected_settings(profile, n) for n in design_names()})


__all__ = ["all_questions", "collection", "design_class", "design_names", "make_design", "questions_path", "results_dir",
           "run", "run_many", "scored_questions", "search_papers", "searcher"]
