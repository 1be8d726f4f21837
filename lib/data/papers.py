"""Papers: one record type for a paper, the text it is searched by, and the checked readers of
paper files (the snapshot, a collection)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..errors import DataError
from ..io import iter_jsonl

REQUIRED_FIELDS = {"id": str, "title": str, "abstract": str, "categories": list, "first_seen": str}
ROLES = ("source", "lookalike", "filler", "document")  # document: a study of your own documents


@dataclass(frozen=True)
class Paper:
    id: str
    title: str
    abstract: str
    categories: tuple[str, ...]
    first_seen: str

    @property
    def text(self) -> str:
        return paper_text(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Paper":
        return cls(row["id"], row["title"], row["abstract"], tuple(row["categories"]), row["first_seen"])


def paper_text(paper: "Paper | Mapping[str, Any]") -> str:
    """What is embedded, searched and reranked: title and abstract (the article's choice)."""
    title, text = (paper["title"], paper["abstract"]) if isinstance(paper, Mapping) else (paper.title, paper.abstract)
    return f"{title}. {text}" if title else text  # a document without a title (your own data): its text alone


def parse_paper(obj: Any, source: str, line: int) -> Paper:
    """Validate one JSON record; raise DataError naming file, line and field."""
    if not isinstance(obj, dict):
        raise DataError(f"{source}: line {line}: expected a JSON object, got {type(obj).__name__}")
    for name, kind in REQUIRED_FIELDS.items():
        if name not in obj:
            raise DataError(f"{source}: line {line}: missing field {name!r}")
        if not isinstance(obj[name], kind):
            raise DataError(f"{source}: line {line}: field {name!r} should be {kind.__name__}, "
                            f"got {type(obj[name]).__name__}")
    # your own documents (role document, or drawn from them as a source: they carry their metadata): no title
    # or date needed
    document = obj.get("role") == "document" or "metadata" in obj
    for name in ("id", "abstract") if document else ("id", "title", "abstract"):
        if not obj[name].strip():
            raise DataError(f"{source}: line {line}: field {name!r} is empty")
    fs = obj["first_seen"]
    if (fs or not document) and (len(fs) != 10 or fs[4] != "-" or fs[7] != "-"):
        raise DataError(f"{source}: line {line}: field 'first_seen' should be YYYY-MM-DD, got {fs!r}")
    return Paper(obj["id"], obj["title"].strip(), obj["abstract"].strip(), tuple(obj["categories"]), fs)


def read_papers(path: Path) -> list[Paper]:
    """Read a JSON-lines file of papers (optionally gzipped, :func:`lib.io.iter_jsonl`), checking every line."""
    papers = []
    seen: set[str] = set()
    for line, obj in iter_jsonl(path):
        paper = parse_paper(obj, str(path), line)
        if paper.id in seen:
            raise DataError(f"{path}: line {line}: field 'id': duplicate id {paper.id!r}")
        seen.add(paper.id)
        papers.append(paper)
    return papers


def read_collection(path: Path) -> list[dict]:
    """Read ``collection.jsonl`` (:func:`lib.io.iter_jsonl`), checking fields and roles."""
    rows = []
    for line, obj in iter_jsonl(path):
        parse_paper(obj, str(path), line)
        if obj.get("role") not in ROLES:
            raise DataError(f"{path}: line {line}: field 'role' should be one of {ROLES}, got {obj.get('role')!r}")
        rows.append(obj)
    return rows
