"""How far each profile follows the published study: the fidelity table, from one data file
(``data/fidelity.yaml``: one row per setting or procedure of the article, with the article's value and,
for each profile, its value, a mark ``same`` or ``substitute``, a why for every substitute, and the
profile settings that hold it with their expected values).

:func:`load_fidelity` reads and checks the file (a malformed row is a :class:`lib.errors.DataError`
naming the file and the row); :func:`fidelity_table` gives the table as a DataFrame, and
:func:`fidelity_markdown` as Markdown (for the README); :func:`profile_mismatches` lists every named
setting whose expected value differs from the profile file's own, so the table cannot drift from
the profiles (tests/test_fidelity.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd
import yaml

from ..config import ROOT, Profile, ProfileLoader, Settings, load_profile, shown_path
from ..errors import DataError

PATH = ROOT / "data" / "fidelity.yaml"
MARKS = ("same", "substitute")
# the file's key for each profile column -> (the profile's name, the column's title)
PROFILE_COLUMNS: dict[str, tuple[str, str]] = {"article_profile": ("article", "article profile"),
                                               "offline_profile": ("offline", "offline profile")}
COLUMNS = ["what", "article"] + [title for _, title in PROFILE_COLUMNS.values()]
_ROW_KEYS = {"what", "article", *PROFILE_COLUMNS}
_CELL_KEYS = {"mark", "value", "settings", "why"}


@dataclass(frozen=True)
class ProfileCell:
    """What one profile does for a row: its mark, its value, the why of a substitute, and the
    settings that hold it (setting -> expected value)."""

    mark: str
    value: str
    why: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    def text(self, show_settings: bool = False) -> str:
        """The cell as the table shows it: ``same: <value>`` or ``substitute: <value> (<why>)``."""
        out = f"{self.mark}: {self.value}" + (f" ({self.why})" if self.why else "")
        if show_settings and self.settings:
            out += " [" + ", ".join(f"{k}: {_yaml_text(v)}" for k, v in self.settings.items()) + "]"
        return out


@dataclass(frozen=True)
class FidelityRow:
    """One setting or procedure: ``what`` it is, the ``article``'s value, and each profile's cell
    (keyed by profile name, e.g. ``cells["offline"]``)."""

    number: int  # 1-based, in file order
    what: str
    article: str
    cells: dict[str, ProfileCell]


def _yaml_text(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()


def _equal(actual: Any, expected: Any) -> bool:
    """A setting's value equals the expected one (true is not 1, nor false 0)."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(actual, dict) and isinstance(expected, dict):
        return actual.keys() == expected.keys() and all(_equal(actual[k], expected[k]) for k in actual)
    if isinstance(actual, list) and isinstance(expected, list):
        return len(actual) == len(expected) and all(_equal(a, e) for a, e in zip(actual, expected))
    return actual == expected


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: field {name!r} must be non-empty text, got {value!r} (quote numbers: \"150\")")
    return " ".join(value.split())


def _cell(raw: Any, where: str, key: str) -> ProfileCell:
    here = f"{where}: {key}"
    if not isinstance(raw, dict):
        raise DataError(f"{here}: expected a mapping with mark, value, optional settings and why, got {raw!r}")
    unknown = sorted(set(raw) - _CELL_KEYS)
    if unknown:
        raise DataError(f"{here}: unknown field(s) {unknown}; known: {sorted(_CELL_KEYS)}")
    mark = raw.get("mark")
    if mark not in MARKS:
        raise DataError(f"{here}: field 'mark' must be one of {MARKS}, got {mark!r}")
    value = _text(raw.get("value"), here, "value")
    why = raw.get("why")
    if mark == "substitute":
        why = _text(why, here, "why")
    elif why is not None:
        raise DataError(f"{here}: a 'same' row takes no 'why' (got {why!r}); mark it substitute or drop the why")
    settings = raw.get("settings") or {}
    if not isinstance(settings, dict):
        raise DataError(f"{here}: field 'settings' must map setting names to expected values, got {settings!r}")
    unknown = sorted(str(k) for k in settings if k not in Settings.model_fields)
    if unknown:
        raise DataError(f"{here}: field 'settings': {unknown} are not profile settings (lib/config.py Settings)")
    return ProfileCell(mark, value, why or "", dict(settings))


def load_fidelity(path: Path | str = PATH) -> list[FidelityRow]:
    """The rows of the fidelity file, checked: a malformed row is a DataError naming the file and the
    row (its number and ``what``)."""
    path = Path(path)
    name = shown_path(path)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=ProfileLoader)  # dates kept as text
    except OSError as exc:
        raise DataError(f"{name}: cannot be read ({exc})") from None
    except yaml.YAMLError as exc:
        raise DataError(f"{name}: not valid YAML ({exc})") from None
    rows = raw.get("rows") if isinstance(raw, dict) else None
    if not isinstance(rows, list) or not rows:
        raise DataError(f"{name}: expected a mapping with a non-empty list 'rows'")
    out, seen = [], {}
    for i, row in enumerate(rows, start=1):
        label = repr(row.get("what")) if isinstance(row, dict) else "?"
        where = f"{name}: row {i} ({label})"
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected a mapping, got {row!r}")
        missing, unknown = sorted(_ROW_KEYS - set(row)), sorted(set(row) - _ROW_KEYS)
        if missing or unknown:
            raise DataError(f"{where}: " + "; ".join(([f"missing field(s) {missing}"] if missing else [])
                                                     + ([f"unknown field(s) {unknown}"] if unknown else []))
                            + f"; a row has {sorted(_ROW_KEYS)}")
        what = _text(row["what"], where, "what")
        if what in seen:
            raise DataError(f"{where}: 'what' repeats row {seen[what]}")
        seen[what] = i
        cells = {profile: _cell(row[key], where, key) for key, (profile, _) in PROFILE_COLUMNS.items()}
        out.append(FidelityRow(i, what, _text(row["article"], where, "article"), cells))
    return out


def profile_mismatches(rows: Sequence[FidelityRow] | None = None,
                       profiles: Mapping[str, Profile] | None = None, path: Path | str = PATH) -> list[str]:
    """Every named setting whose expected value differs from the profile's (the profile files as
    loaded by :func:`lib.config.load_profile`, unless ``profiles`` gives them), one line each naming
    the file, the row, the profile, the setting and both values; empty when the table holds."""
    rows = load_fidelity(path) if rows is None else rows
    profiles = dict(profiles or {})
    for name, _ in PROFILE_COLUMNS.values():
        if name not in profiles:
            profiles[name] = load_profile(name)
    name = shown_path(Path(path))
    out = []
    for row in rows:
        for profile, cell in row.cells.items():
            actual = profiles[profile].settings
            for key, expected in cell.settings.items():
                if not _equal(actual[key], expected):
                    out.append(f"{name}: row {row.number} ({row.what!r}): profile {profile!r}: {key} is "
                               f"{_yaml_text(actual[key])} in profiles/{profile}.yaml, the table expects "
                               f"{_yaml_text(expected)}")
    return out


def fidelity_table(path: Path | str = PATH, show_settings: bool = False) -> pd.DataFrame:
    """The fidelity table: one row per setting or procedure, columns "what", "article", "article
    profile", "offline profile"; each profile cell reads ``same: …`` or ``substitute: … (why)``
    (``show_settings``: followed by the settings that hold it, ``[setting: value, ...]``)."""
    rows = load_fidelity(path)
    return pd.DataFrame([[r.what, r.article] + [r.cells[p].text(show_settings) for p, _ in PROFILE_COLUMNS.values()]
                         for r in rows], columns=COLUMNS)


def fidelity_markdown(path: Path | str = PATH, show_settings: bool = False) -> str:
    """The fidelity table as a Markdown table (one line a row, pipes in the text escaped), for the README."""
    table = fidelity_table(path, show_settings)
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"
