"""The collection page's tables and reading (notebook 01): an arXiv draw (sources, lookalikes,
fillers) or the documents of a study of your own data, from the manifest written with them."""
from __future__ import annotations

import pandas as pd

from .article import article_figures
from collections import Counter
from typing import Sequence
from ..pipeline import document_chunks


def draw_table(manifest: dict) -> pd.DataFrame:
    """What an arXiv draw holds: the pool, the eligible sources, the roles, the dates, the lookalikes' similarity."""
    nb = manifest["top_neighbour_tfidf"]
    return pd.DataFrame([
        ("papers in the pool", manifest["pool_size"]),
        ("eligible sources in the window", manifest["eligible_sources"]),
        ("papers in the collection", manifest["n_papers"]),
        *[(f"role: {k}", v) for k, v in manifest["by_role"].items()],
        ("first listed, all papers", " to ".join(manifest["first_seen_range"])),
        ("first listed, sources", " to ".join(manifest["source_first_seen_range"])),
        ("source's top-neighbour TF-IDF similarity: median (Q1 to Q3)",
         f"{nb['median']:.3f} ({nb['q1']:.3f} to {nb['q3']:.3f})"),
    ], columns=["measure", "value"])


def lookalike_pair(manifest: dict, rows: list[dict]) -> pd.DataFrame:
    """The first source of the draw and its closest lookalike (a fixed rule, not a pick)."""
    first = manifest["source_order"][0]
    by_id = {r["id"]: r for r in rows}
    nid, sim = manifest["lookalikes"][first][0]
    return pd.DataFrame([{"paper": "source", "id": first, "title": by_id[first]["title"]},
                         {"paper": f"lookalike (TF-IDF cosine {sim:.3f})", "id": nid, "title": by_id[nid]["title"]}])


def documents_table(manifest: dict, rows: list[dict], profile=None) -> pd.DataFrame:
    """What a study of your own data holds: its files (with the setting that names each), the
    documents and their lengths, the questions and their judgements."""
    w = manifest["text_words"]
    out = [(f"file: {k}", v) for k, v in manifest.get("files", {}).items()]
    out += [("documents", manifest["n_papers"]), ("documents with a title", manifest["with_title"]),
            ("text length in words: median (min to max; 90th percentile)",
             f"{w['median']:g} ({w['min']} to {w['max']}; {w['p90']:.0f})"),
            ("metadata kept", ", ".join(manifest.get("metadata_fields", [])) or "none")]
    if "questions" in manifest:
        rel = manifest["relevant_per_question"]
        out += [("questions in the file", manifest["questions"]),
                ("questions scored (with a relevant document)", manifest["questions_scored"]),
                ("relevant documents per question: median (min to max)", f"{rel['median']:g} ({rel['min']} to {rel['max']})"),
                ("graded judgements", "yes (nDCG@10 is reported)" if manifest["graded"] else "no (binary)")]
    else:
        out += [("documents drawn for model-written questions", len(manifest.get("source_order", [])))]
    if profile is not None:
        counts = chunk_counts(profile, rows)
        out += [("searched as", f"{counts['chunks']:,} chunks ({counts['one_chunk']:,} documents in one, at most "
                                f"{counts['most']} in one document)" if counts else "whole documents")]
    return pd.DataFrame(out, columns=["measure", "value"])


def chunk_counts(profile, rows: list[dict]) -> dict | None:
    """How the documents were chunked for search: chunks, and documents in one chunk and in several
    (None when the profile searches whole documents)."""

    chunks = document_chunks(profile, rows)
    if chunks is None:
        return None
    per_doc = Counter(c.doc_id for c in chunks)
    return {"chunks": len(chunks), "one_chunk": sum(n == 1 for n in per_doc.values()),
            "most": max(per_doc.values()) if per_doc else 0}


def collection_reading(manifest: dict) -> str:
    """The page's reading, generated from the manifest."""
    if manifest.get("kind") == "documents":
        text = (f"The study searches {manifest['n_papers']:,} documents from `{manifest['files']['documents']}`, "
                f"{manifest['text_words']['median']:g} words long at the median.")
        if "questions" in manifest:
            left = manifest["questions"] - manifest["questions_scored"]
            text += (f" {manifest['questions_scored']} of {manifest['questions']} questions have a relevant document "
                     "and are scored" + (f"; {left} without one are left out." if left else "."))
        return text
    nb = manifest["top_neighbour_tfidf"]
    return (f"The collection holds {manifest['n_papers']:,} papers: {manifest['by_role'].get('source', 0)} sources drawn "
            f"from {manifest['eligible_sources']:,} eligible papers of {manifest['pool_size']:,} in the pool, "
            f"{manifest['by_role'].get('lookalike', 0)} lookalikes and {manifest['by_role'].get('filler', 0)} fillers. A "
            f"source's closest lookalike has a median TF-IDF similarity of {nb['median']:.2f} (the article reports "
            f"{article_figures()['collection']['top_neighbour_tfidf_median']:.2f}).")


def questions_reading(qs: pd.DataFrame, copies: Sequence[tuple], twopart: pd.DataFrame | None = None) -> str:
    """The questions page's finding (notebook 02), from its table (``ok``: passed review, ``words``): how
    many passed and their median length, or that none did and so nothing can be scored; and how many
    questions copy title words (``copies``: the copied 4-grams as the page lists them, (qid, field, words):
    a question copying several counts once)."""
    copies = len({c[0] for c in copies})
    passed = qs.loc[qs.ok == 1, "words"] if len(qs) else pd.Series(dtype=float)
    if passed.empty:
        text = (f"None of the {len(qs)} questions passed review, so no design can be scored on them; "
                f"{copies} copy 4 or more title words.")
    else:
        text = (f"{len(passed)} of {len(qs)} questions passed review and are scored; their median length is "
                f"{passed.median():g} words, and {copies} copy 4 or more title words.")
    if twopart is not None:
        text += f" The two-part set adds {int((twopart.ok == 1).sum())} reviewed questions that need two papers each."
    return text


def length_words(words: pd.Series) -> str:
    """A question set's lengths in words: the median and the range (``no questions`` for none)."""
    return "no questions" if words.empty else f"{words.median():g} words at the median ({words.min()} to {words.max()})"
