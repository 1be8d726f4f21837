"""How the report names designs and shows numbers, in one place for the index, the README table, the
notebooks and the charts.

:func:`design_label` is the one display name of a design: the offline rerank step is not the
article's cross-encoder, so beside the article's numbers it is named by what it fuses (from the
profile's ``rerank_weights``: "rerank (dense+BM25)" when there is no cross-encoder weight).
:func:`number` rounds a value for reading (3 decimals for scores, no trailing zeros, a dash for a
missing value), :func:`heading` turns a column name into words, and :func:`readable` does both to a
whole table.

Every table a page shows goes through :func:`safe_table` (or :func:`styled`, which reads the table first):
the one renderer that escapes the text of a user's files (titles, texts, questions, ids, field names)
before pandas' Styler writes it, as the Styler writes its cells, headers and index unescaped by
default. Text from a user's files put into Markdown goes through :func:`markdown_text` (or
:func:`markdown_code` for a code span)."""
from __future__ import annotations

import datetime
import html
import math
import re
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
from ..config import DEFAULT_PROFILE
from ..config import load_profile
from ..designs import design_class

# the rerank step's signals as the labels name them
SIGNAL_WORDS = {"cross_encoder": "cross-encoder", "dense": "dense", "bm25": "BM25"}
DASH = "—"
METRIC_WORDS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}
# an output's metadata key naming the parts a page lacks (lib.report.pages.lacking): the rendered page leaves
# out its cells tagged needs-<part> (lib/report/render.py)
LACKS = "agentic-rag-evidence/lacks"
# the designs whose answers come from a language model (the charts tell them apart)
LLM_DESIGNS = ("multiquery", "agent", "agent_rerank", "escalate", "loop", "loop_question_first", "decompose", "hyde")


def is_study(profile: Any) -> bool:
    """Whether a profile is a study of the user's own documents (``make study``), not the arXiv study."""
    return getattr(profile, "collection_source", None) == "documents"


_ARXIV_NOUNS = re.compile(r"\b(papers|paper|abstracts|abstract)\b", re.I)
_DOCUMENT_NOUNS = {"papers": "documents", "paper": "document", "abstracts": "texts", "abstract": "text"}


def document_words(text: str) -> str:
    """Words written for the arXiv study in a study's words: paper(s) -> document(s), abstract(s) -> text(s)
    (a table's headings and labels, where the same column serves both)."""
    def swap(m: re.Match) -> str:
        new = _DOCUMENT_NOUNS[m.group(1).lower()]
        return new.capitalize() if m.group(1)[0].isupper() else new

    return _ARXIV_NOUNS.sub(swap, text)


def source_words(profile: Any = None) -> str:
    """What a question is answered by, in the report's words: the arXiv study's source paper, a study's
    relevant document."""
    return "the relevant document" if getattr(profile, "collection_source", "") == "documents" else "the source"


def headroom_words(head: Mapping[str, Any], source: str = "the source") -> str:
    """Dense's headroom (``lib.evaluation.scores.headroom``) as a clause after "dense": what its top 5
    misses and so the most any design can raise recall@5 by, counted from recall (with several relevant
    documents a question, one found of two leaves room too)."""
    n, miss, gain = head["questions"], head["dense_misses_at_5"], head["max_recall_gain"]
    incomplete = head.get("dense_incomplete_at_5", miss)
    at10 = head.get("dense_misses_at_10")
    ten = f" (in its top 10 for {at10})" if at10 is not None else ""
    if incomplete == miss:
        return (f"misses {source} in its top 5 for {miss} of {n} questions{ten}, so no design can raise recall@5 by "
                f"more than {gain:.3f}")
    return (f"reaches recall@5 {head['dense_recall_at_5']:.3f}: its top 5 holds every relevant document for "
            f"{n - incomplete} of {n} questions, some of them for {incomplete - miss} and none for {miss}{ten}, so no "
            f"design can raise recall@5 by more than {gain:.3f}")


def _weights(profile: Any) -> Mapping[str, float]:
    """The rerank weights of a profile, a profile's name, or the weights themselves."""
    if profile is None:
        profile = DEFAULT_PROFILE
    if isinstance(profile, str):
        profile = load_profile(profile)
    if isinstance(profile, Mapping):
        return profile
    return profile.rerank_weights


def rerank_label(profile: Any = None) -> str:
    """The rerank step's name: "rerank" when it is the cross-encoder alone (the article's kind of
    step); otherwise named by the signals it fuses, e.g. "rerank (dense+BM25)"."""
    used = [k for k, v in _weights(profile).items() if v]
    if used == ["cross_encoder"]:
        return "rerank"
    return "rerank (" + "+".join(SIGNAL_WORDS.get(k, k) for k in used) + ")"


def design_label(design: str, profile: Any = None) -> str:
    """The display name of a design under a profile (a Profile, its name, or its rerank weights)."""
    return rerank_label(profile) if design == "rerank" else design


def design_namer(profile: Any = None) -> Callable[[str], str]:
    """``design_label`` with the profile fixed (the profile is read once)."""
    label = rerank_label(profile)
    return lambda d: label if d == "rerank" else d


def calls_a_model(design: str) -> bool:
    """Whether the design's answers involve a language model (escalate: when it escalates)."""
    try:
        return bool(design_class(design).uses_llm)
    except Exception:  # a name not in the registry (a test's table)
        return design in LLM_DESIGNS


def missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def number(value: Any, decimals: int = 3, sign: bool = False) -> str:
    """A value for reading: ``decimals`` places with trailing zeros dropped (0.950 -> 0.95, 297.0 ->
    297), a sign when asked (+0.01; never -0), a dash for None or NaN; text is left as it is."""
    if missing(value):
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        return str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isinf(x):
        return ("−" if x < 0 else "") + "∞"
    text = f"{x:.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{x:.0f}"
    if text in ("-0", ""):
        text = "0"
    if sign and not text.startswith("-") and text != "0":
        text = "+" + text
    return text.replace("-", "−")


def fixed(value: Any, decimals: int = 3, sign: bool = False) -> str:
    """A score with a fixed number of places (for columns read side by side: 0.950, +0.010), a dash
    when missing."""
    if missing(value):
        return DASH
    return f"{float(value):{'+' if sign else ''}.{decimals}f}".replace("-", "−")


def p_words(p: Any) -> str:
    """A (Holm-corrected) p-value as the tables print it: "p 0.009", "p < 0.001", or "" when there is none."""
    if missing(p):
        return ""
    p = float(p)
    if p < 0.05 <= round(p, 3):  # 0.049995 would print as 0.050 while it counts as below 0.05
        return "p < 0.05"
    return "p < 0.001" if p < 0.001 else f"p {p:.3f}" if p < 0.995 else "p 1"


def with_range(delta: Any, low: Any, high: Any, decimals: int = 3, p: Any = None) -> str:
    """A difference with its 95% range, "+0.010 [+0.000, +0.024]", or a dash; with ``p`` (the Holm-corrected
    p-value of the paired randomization test) it follows the range: "+0.046 [+0.029, +0.065], p 0.009"."""
    if missing(delta):
        return DASH
    text = f"{fixed(delta, decimals, True)} [{fixed(low, decimals, True)}, {fixed(high, decimals, True)}]"
    return f"{text}, {p_words(p)}" if p_words(p) else text


def percent(value: Any, decimals: int = 0) -> str:
    return DASH if missing(value) else f"{float(value) * 100:.{decimals}f}%"


HEADINGS = {
    "design": "design", "condition": "condition", "run": "run", "runs": "runs", "questions": "questions",
    "metric": "measure", "group": "group", "mean": "mean", "delta": "− dense", "low": "95% range, low",
    "high": "95% range, high", "includes_zero": "range includes 0",
    "searches": "searches per question", "searches_1": "share with 1 search", "searches_2": "share with 2",
    "searches_3": "share with 3", "latency_median_s": "median latency (s)", "latency_mean_s": "mean latency (s)",
    "latency_p90_s": "90th percentile latency (s)", "llm_calls": "LLM calls per question",
    "tokens_in": "input tokens per question", "tokens_out": "output tokens per question",
    "tokens": "LLM tokens per question", "cost_usd_per_q": "cost per question (USD)", "cost_usd": "cost (USD)",
    "cost_total_usd": "cost per run (USD)", "both_found_at_10": "both found @10",
    "dense_misses_at_5": "dense misses at 5", "not_scored": "not scored", "wins": "found where dense missed",
    "losses": "lost where dense found", "lost_in_1_runs": "lost in 1 run", "lost_in_2_runs": "lost in 2 runs",
    "lost_in_3_runs": "lost in 3 runs", "sd_of_differences": "SD of the differences",
    "min_detectable_difference": "smallest detectable difference",
    "questions_for_0.01": "questions for a 0.01 difference", "expected": "expected", "got": "now",
    "drift": "drift", "status": "status", "qid": "question id", "stop_reason": "ended by",
    # one comparison, one p: the Holm-corrected p of the index's family, and the raw p named as such
    "p_value": "p, uncorrected", "p_holm": "p, Holm-corrected",
    # the tool-calling loop
    "citation_hit_rate": "source cited (share)", "citation_all_rate": "every source cited (share of questions)",
    "citations_per_q": "citations per question",
    "citation_precision": "citations that are the source (share)", "papers_read_per_q": "papers read per question",
    "citations_relevant_share": "relevant share of all citations (citation precision)",
    "cites_first_top_rate": "loops citing exactly the first search's top results (share)",
    "searches_per_q": "searches per question", "turns_per_q": "model turns per question",
    "tokens_in_per_q": "input tokens per question", "tokens_out_per_q": "output tokens per question",
    "prompt_reused_per_q": "prompt tokens reused per question", "ended_stop": "ended: the model answered",
    "ended_step_cap": "ended: step cap", "ended_token_budget": "ended: token budget", "ended_refusal": "ended: refusal",
    "ended_max_tokens": "ended: max_tokens", "ended_bad_tool_arguments": "ended: tool arguments not JSON",
    "final_by_code": "answer forced by the code", "loops": "loops",
    "turns": "model turns", "tokens_used": "tokens used", "ended_by": "ended by",
    # bounded escalation
    "escalated": "escalated", "escalated_share": "share escalated", "helped": "helped", "hurt": "hurt",
    "unchanged": "unchanged", "llm_calls_per_q": "LLM calls per question",
    "agent_llm_calls_per_q": "the agent's LLM calls per question", "tokens_per_q": "LLM tokens per question",
    "agent_tokens_per_q": "the agent's LLM tokens per question", "calls_saved_vs_agent": "LLM calls saved against the agent",
}
_SUFFIXES = {"min": "lowest run", "max": "highest run", "delta": "− dense", "low": "− dense, 95% low",
             "high": "− dense, 95% high", "p_value": "p, uncorrected", "p_holm": "p, Holm-corrected"}


def heading(column: str) -> str:
    """A column name in words: recall_at_5 -> recall@5, mrr_at_10_delta -> MRR@10 − dense,
    latency_median_s -> median latency (s); unknown names with their underscores as spaces."""
    if column in HEADINGS:
        return HEADINGS[column]
    if column in METRIC_WORDS:
        return METRIC_WORDS[column]
    for m, words in METRIC_WORDS.items():
        if column.startswith(m + "_") and column[len(m) + 1:] in _SUFFIXES:
            return f"{words} {_SUFFIXES[column[len(m) + 1:]]}"
        if column.startswith(m + "_"):
            return f"{words}, {column[len(m) + 1:].replace('_', ' ')}"
    return str(column).replace("_", " ")


SHARE_COLUMNS = {"searches_1", "searches_2", "searches_3", "escalated_share", "calls_saved_vs_agent"}
SIGNED_COLUMNS = {"delta", "low", "high", "drift"}


def readable(df: pd.DataFrame, decimals: int = 3, profile: Any = None, shares: set[str] | None = None,
             signed: set[str] | None = None, decimals_for: Mapping[str, int] | None = None) -> pd.DataFrame:
    """The table for reading: every number rounded (:func:`number`), shares as percentages, the
    differences signed, missing values a dash, measure names and design names as the report writes
    them (``profile``: whose rerank step names the rerank design), headings in words, no index."""
    shares = SHARE_COLUMNS if shares is None else shares
    signed = SIGNED_COLUMNS | {c for c in df.columns if str(c).endswith(("_delta", "_low", "_high"))} \
        if signed is None else signed
    decimals_for = decimals_for or {}
    name = design_namer(profile)
    words = document_words if is_study(profile) else str  # a study's headings speak of its documents
    out = pd.DataFrame(index=range(len(df)))
    for col in df.columns:
        values = df[col].tolist()
        if col == "design":
            cells = [name(v) if isinstance(v, str) else number(v) for v in values]
        elif col == "metric":
            cells = [METRIC_WORDS.get(v, v) if isinstance(v, str) else number(v) for v in values]
        elif col in shares:
            cells = [percent(v) for v in values]
        else:
            places = decimals_for.get(col, 0 if "tokens" in str(col) else decimals)  # tokens: whole numbers
            cells = [number(v, places, sign=col in signed) for v in values]
        out[words(heading(str(col)))] = cells
    return out


def _escaped_value(value: Any) -> Any:
    """A cell as HTML text: text (and anything shown through its text: a list, a mapping) escaped,
    quotes too; numbers, dates and missing values kept, so a Styler's number formats still apply."""
    if isinstance(value, str):
        return html.escape(value)
    if value is None or isinstance(value, (bool, int, float, complex, np.generic, datetime.date, datetime.timedelta,
                                           pd.Timestamp, pd.Timedelta)) or value is pd.NA or value is pd.NaT:
        return value
    return html.escape(str(value))


def _escaped_labels(index: pd.Index) -> pd.Index:
    return index.map(lambda v: tuple(_escaped_value(x) for x in v) if isinstance(v, tuple) else _escaped_value(v))


def escaped(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose text is HTML-escaped (``html.escape``, quotes too): every text cell, every
    column name and index label. pandas' Styler writes cells, headers and index as they are (its
    ``escape`` is off by default, and a later ``format`` call without it turns it off again), so the
    text is escaped before the Styler sees it; numbers stay numbers."""
    out = df.map(_escaped_value) if len(df.columns) else df.copy()
    out.columns = _escaped_labels(df.columns)
    out.index = _escaped_labels(df.index)
    return out


def safe_table(df: pd.DataFrame, index: bool = False):
    """The one way a page shows a table: a Styler over :func:`escaped` ``df`` (no index column unless
    ``index``); chain ``.format``, ``.apply`` or ``.set_caption`` on it as on ``df.style``."""
    style = escaped(df).style
    return style if index else style.hide(axis="index")


def styled(df: pd.DataFrame, **kwargs):
    """:func:`readable`, as a notebook shows it: escaped (:func:`safe_table`), no index column (``profile``:
    a study's headings speak of its documents, :func:`document_words`)."""
    return safe_table(readable(df, **kwargs))


# the characters Markdown reads as markup (a line's start or inline); escaped with a backslash
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!|~-])")


def markdown_text(value: Any) -> str:
    """Text from a user's files for a Markdown cell: shown as written, never read as Markdown or HTML
    (its Markdown punctuation backslash-escaped, then ``<``, ``>``, ``&`` and quotes HTML-escaped)."""
    return html.escape(_MARKDOWN.sub(r"\\\1", str(value)).replace("\n", " "))


def markdown_code(value: Any) -> str:
    """Text from a user's files as a Markdown code span (a path, an id): fenced by one more backtick
    than the longest run inside it, so a backtick in the text cannot end it (the span's text is
    escaped by the Markdown renderer)."""
    text = str(value).replace("\n", " ")
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def transposed(df: pd.DataFrame, key: str = "run", label: str = "run", **kwargs) -> pd.DataFrame:
    """A wide table of few rows turned on its side for reading: one row per column of ``df`` (in
    words), one column per value of ``key`` ("run 1", "run 2", ...), each value read as
    :func:`readable` reads it."""
    if df.empty:
        return df
    cells = readable(df.drop(columns=[key]), **kwargs)
    names = [f"{label} {number(v)}" for v in df[key]]
    out = pd.DataFrame({"measure": list(cells.columns)})
    for i, n in enumerate(names):
        out[n] = cells.iloc[i].tolist()
    return out


def seconds(value: Any) -> str:
    """A latency for reading: 3 places under a second (0.109, 0.001), 2 above (6.23)."""
    if missing(value):
        return DASH
    return f"{float(value):.{3 if abs(float(value)) < 1 else 2}f}"


# a cell a spreadsheet would read as a formula (OWASP, CSV injection): text starting with one of these
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` for a CSV a reader may open in a spreadsheet: every text cell (and column name) that starts
    with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``, so it is read as text,
    never run as a formula (OWASP's CSV injection advice); numbers are left as they are."""
    def safe(value: Any) -> Any:
        return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_START) else value

    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c]):
            out[c] = out[c].map(safe)
    out.columns = [safe(c) for c in out.columns]
    return out
