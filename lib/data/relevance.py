"""Which documents answer a question, as a question's source field holds it: one id (the arXiv
study), two ids joined by ";" (a two-part question, both needed), or relevance judgements written
as a JSON object ``{"doc id": grade, ...}`` (a study of your own data: one or more relevant
documents, graded allowed, grade 0 = judged not relevant, as in TREC qrels)."""
from __future__ import annotations

import json


def encode(judged: dict[str, int]) -> str:
    """Judgements as the source field holds them (ids in order, so equal judgements give equal text)."""
    return json.dumps({str(d): int(g) for d, g in sorted(judged.items())}, ensure_ascii=False, separators=(",", ":"))


def is_judged(source: str) -> bool:
    """True when the source field holds judgements (a JSON object) rather than one or two ids."""
    return source.startswith("{")


def judgements(source: str) -> dict[str, int]:
    """Every judged document with its grade (one or two ids: each relevant with grade 1)."""
    if is_judged(source):
        return {str(d): int(g) for d, g in json.loads(source).items()}
    return {d: 1 for d in source.split(";") if d}


def relevant_ids(source: str) -> list[str]:
    """The documents that answer the question (grade above 0), in the order the field gives them."""
    return [d for d, g in judgements(source).items() if g > 0]
