"""The published study's figures (``data/article_figures.json``, each with where the article gives
it), for printing beside this report's own numbers."""
from __future__ import annotations

import json
from functools import lru_cache

from ..config import ROOT
from .display import fixed, with_range

PATH = ROOT / "data" / "article_figures.json"


@lru_cache(maxsize=1)
def article_figures() -> dict:
    return json.loads(PATH.read_text(encoding="utf-8"))


def article_cell(design: str, metric: str) -> str:
    """The article's value of a metric for a design, with its range against dense, as a table cell."""
    r = article_figures()["results"].get(design)
    if not r or metric not in r:
        return "—"

    cell = ("≈" if r.get(f"{metric}_derived") else "") + fixed(r[metric])
    delta = r.get(f"delta_{metric}")
    if delta:
        cell += f" ({with_range(*delta)})"
    return cell


def shows_article(profile) -> bool:
    """Whether the article's published figures stand beside ours: only where the article's kind of
    questions is scored (the arXiv study), never in a study of your own data."""
    return getattr(profile, "collection_source", None) != "documents"
