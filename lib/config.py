"""Profiles: one YAML file of experiment settings per profile (``profiles/<name>.yaml``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import ProfileError

ROOT = Path(__file__).resolve().parent.parent
PROFILE_DIR = ROOT / "profiles"


@dataclass
class Profile:
    """Settings of one profile, with any per-run overrides applied."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, key: str) -> Any:
        try:
            return self.settings[key]
        except KeyError as exc:  # pragma: no cover - attribute errors are programming errors
            raise AttributeError(f"profile {self.name!r} has no setting {key!r}") from exc

    def path(self, key: str) -> Path:
        """A setting that names a path, resolved against the repository root."""
        value = self.settings[key]
        return (ROOT / value) if value is not None else None

    @property
    def data_dir(self) -> Path:
        return ROOT / self.settings["data_dir"]

    @property
    def results_dir(self) -> Path:
        return ROOT / self.settings["results_dir"]

    def provenance(self) -> dict[str, Any]:
        """What produced an output: profile, models and backends."""
        keys = ["embedder", "embedder_backend", "reranker", "reranker_backend", "llm_backend", "llm_model"]
        return {"profile": self.name, **{k: self.settings.get(k) for k in keys}}


def load_profile(name: str = "offline", **overrides: Any) -> Profile:
    """Read ``profiles/<name>.yaml``; keyword overrides that are not None replace settings."""
    path = PROFILE_DIR / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))
        raise ProfileError(f"{path.relative_to(ROOT)}: no such profile {name!r}; known profiles: {known}")
    with open(path) as fh:
        settings = yaml.safe_load(fh)
    if not isinstance(settings, dict):
        raise ProfileError(f"{path.relative_to(ROOT)}: expected a mapping of settings")
    for key, value in overrides.items():
        if value is None:
            continue
        if key not in settings:
            raise ProfileError(f"{path.relative_to(ROOT)}: unknown setting {key!r} given as a parameter")
        settings[key] = value
    settings.setdefault("profile", name)
    return Profile(name=name, settings=settings)


def notebook_profile(namespace: dict[str, Any]) -> Profile:
    """The profile a notebook runs with: ``profile`` from its parameters, and every other profile
    setting that papermill injected (``-f profiles/<name>.yaml`` or ``-p key value``) or that the
    parameters cell sets to something other than None, as an override."""
    name = namespace.get("profile", "offline")
    base = load_profile(name)
    overrides = {k: namespace[k] for k in base.settings if k != "profile" and namespace.get(k) is not None}
    return load_profile(name, **overrides)
