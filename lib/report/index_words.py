"""The index's and the README's words: sentences generated from the numbers of ``index_numbers``
(the answer with its scope first, the per-design notes, whose parts produced the numbers) and the
README's results table. Plain text with **bold** marks; ``index_html`` makes the HTML."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Callable

import pandas as pd

from .article import article_cell, article_figures, shows_article
from ..llm.prompts import corpus_for
from .display import DASH, design_namer, fixed, number, seconds, source_words, with_range
from .index_numbers import (DEFAULT_CONDITION, METRICS, _profile, _registry_order, _scored, conditions_from_summary,
                            overall, verdict)
from ..designs import design_names
from .. import pipeline


QUESTION = "Does an agent that can search again find better evidence than plain search?"

# what each design does, in a few words (the rerank step is described from the profile)
DESIGN_WORDS = {
    "dense": "embed the question, return the nearest abstracts (the baseline)",
    "multiquery": "an LLM writes 3 rewrites; 4 searches fused by reciprocal rank fusion (k = 60)",
    "agent": "search; an LLM sees the top-5 titles of every search so far and stops or writes a new query; at most 3 "
             "searches, fused by RRF (the article's agent)",
    "bm25": "keyword search (BM25) over title + abstract",
    "hybrid": "the BM25 and dense lists fused by RRF",
    "hybrid_rerank": "the hybrid top 50 reordered by the rerank step",
    "agent_rerank": "the agent's fused list reordered by the rerank step",
    "escalate": "hybrid_rerank first; the agent only where a confidence signal chosen on dev says the first pass is weak",
    "loop": "a tool-calling loop: the model calls search and read itself, its own first search included, and cites the "
            "papers it relies on",
    "loop_question_first": "the tool-calling loop with the question searched first by the code, its result the "
                           "model's first tool result",
    "decompose": "sub-question decomposition: an LLM writes one query per part of the question (1-3); the question "
                 "and the parts searched, fused by RRF",
    "hyde": "HyDE: an LLM writes a hypothetical abstract; one dense search with the mean of its and the question's "
            "vectors",
}

ARTICLE_DESIGNS = ("dense", "rerank", "multiquery", "agent")
DEV_SET = "the arXiv study's dev set"  # where a study's thresholds and prompt choices come from


def design_words(profile) -> dict[str, str]:
    """:data:`DESIGN_WORDS` for a profile: the arXiv study's as they are; a study's in its documents' words,
    its choices made on the arXiv dev set named as such."""
    cfg = _profile(profile)
    if cfg.collection_source != "documents":
        return dict(DESIGN_WORDS)
    w = corpus_for(cfg)
    return {**DESIGN_WORDS, "dense": f"embed the question, return the nearest {w.items} (the baseline)",
            "bm25": "keyword search (BM25) over title and text",
            "escalate": DESIGN_WORDS["escalate"].replace("chosen on dev", f"chosen on {DEV_SET}"),
            "loop": DESIGN_WORDS["loop"].replace("papers", w.items),
            "hyde": DESIGN_WORDS["hyde"].replace("abstract", w.item)}

VERDICT_WORDS = {"better": "measurably better than", "worse": "measurably worse than",
                 "same": "not measurably different from", "mixed": "better on one measure and worse on the other than"}


def _not_scored_note(table: pd.DataFrame, condition: str, design: str) -> str:
    rows = table[(table.condition == condition) & (table.design == design)]
    if rows.empty:
        return "not run yet"
    note = str(rows.not_scored.iloc[0]) if "not_scored" in rows and pd.notna(rows.not_scored.iloc[0]) else ""
    return "no complete run yet" + (f" ({note}: saved, not scored)" if note else "")


def model_words(profile) -> str:
    """The language model the numbers come from, in words, from the profile: its size where its name
    gives one, whether it ran locally or through an API, and whether its recorded calls were replayed."""
    cfg = _profile(profile)
    model = str(cfg.llm_model)
    size = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)b(?![a-z])", model.lower())
    backend = cfg.llm_backend
    source = cfg.settings.get("llm_record_backend") if backend == "replay" else backend
    kind = {"local": "a local", "openai": "an OpenAI-compatible", "anthropic": "an Anthropic"}.get(source, "a")
    what = f"{kind} {size.group(1)}B model ({model}" if size else f"{kind} model ({model}"
    return what + (", replayed from its recorded calls)" if backend == "replay" else ")")


def collection_words(profile) -> str:
    """The collection searched, in words, from its manifest: how many documents, and for an arXiv
    draw, from how large a snapshot."""
    cfg = _profile(profile)
    path = Path(cfg.data_dir) / "collection_manifest.json"
    m = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    n = m.get("n_papers")
    if not n:
        return "the profile's collection"
    if not shows_article(cfg):
        return f"your {n:,} documents"
    pool = f" (drawn from a snapshot of {m['pool_size']:,} papers)" if m.get("pool_size") else ""
    return f"{n:,} arXiv abstracts{pool}"


def scope_sentence(table: pd.DataFrame, profile="offline", default: str = DEFAULT_CONDITION) -> str:
    """The answer's first sentence: what it holds for, generated from the profile and the saved runs:
    which language model (beside the article's Claude Haiku where the article's study is shown),
    which collection and questions, and how close plain dense search already is to the ceiling."""
    cfg = _profile(profile)
    article = shows_article(cfg)
    model = model_words(cfg)
    if article and cfg.llm_backend != "anthropic":
        model += ", not the article's Claude Haiku"
    elif article:
        model += ", the article's model family"
    scored = _scored(table)
    here = scored[scored.condition == default] if not scored.empty else scored
    questions, ceiling = "the questions", ""
    if not here.empty:
        n = int(here.questions.max())
        questions = f"the {n} {default}"
        misses = here.dense_misses_at_5.dropna()
        gains = here.max_recall_gain.dropna() if "max_recall_gain" in here else misses[:0]
        if len(misses):
            miss = int(misses.iloc[0])
            gain = float(gains.iloc[0]) if len(gains) else miss / n
            found = (f"finds {source_words(cfg)} in its top 5 for {n - miss} of the {n}" if math.isclose(gain, miss / n)
                     else f"reaches recall@5 {fixed(1 - gain)} (several relevant documents a question)")
            ceiling = (f", and plain dense search already {found}, so no design can raise recall@5 there by more than "
                       f"{fixed(gain)}")
    return (f"Scope: the language model here is {model}; {questions} are searched over {collection_words(cfg)}"
            f"{ceiling}.")


def headline_answer(table: pd.DataFrame, profile="offline", default: str = DEFAULT_CONDITION,
                    design: str = "agent") -> str:
    """The answer, generated from the condition table: its scope first (:func:`scope_sentence`), then
    the agent against dense in the default condition beside the article's published difference, how
    that holds in the other conditions, and which step does beat dense. "Measurably" follows the
    Holm-corrected randomization test where the saved differences carry it, else the 95% range
    (:func:`index_numbers.verdict`). Text with **bold** marks (``_md_bold`` turns it into HTML)."""
    name = design_namer(profile)
    scored = _scored(table)
    if scored.empty:
        return ("Not answered yet: no design has a complete, scored run, so nothing can be compared with dense. "
                "The runs saved so far are listed under \"How each run was produced\".")
    conditions = list(dict.fromkeys(table.condition))
    default = default if default in conditions else conditions[0]
    art = article_figures()["results"].get(design, {}) if shows_article(_profile(profile)) else {}
    out = [scope_sentence(table, profile, default)]
    row = scored[(scored.condition == default) & (scored.design == design)]
    if not row.empty and overall(row.iloc[0]) is not None:
        r = row.iloc[0]
        word = overall(r)
        lead = {"worse": "**No**", "better": "**Yes**", "same": "**Not measurably**", "mixed": "**Not clearly**"}[word]
        runs = f"{int(r.runs)} run" + ("s" if r.runs > 1 else "")
        test = ("95% ranges; measurable: Holm-corrected p < 0.05" if pd.notna(r.get("mrr_at_10_p_holm", None))
                else "95% ranges")
        art_text = ""
        if art.get("delta_recall_at_5") and art.get("delta_mrr_at_10"):
            a5, a10 = art["delta_recall_at_5"], art["delta_mrr_at_10"]
            zero = all(x[1] <= 0 <= x[2] for x in (a5, a10))
            art_text = (f"; the article measured {fixed(a5[0], sign=True)} and {fixed(a10[0], sign=True)}"
                        + (", ranges that include 0" if zero else ""))
        out.append(f"{lead}: on the {int(r.questions)} {default} the agent ({runs}) is {VERDICT_WORDS[word]} plain dense "
                   f"search: recall@5 {with_range(r.recall_at_5_delta, r.recall_at_5_low, r.recall_at_5_high)}, "
                   f"MRR@10 {with_range(r.mrr_at_10_delta, r.mrr_at_10_low, r.mrr_at_10_high)} ({test}){art_text}.")
    else:
        out.append(f"**Not answered yet for the {default}**: the agent has {_not_scored_note(table, default, design)} "
                   "there, so its comparison with dense waits for a complete run.")
    # the other conditions, grouped by what the agent did there
    groups: dict[str, list] = {}
    waiting = []
    for c in conditions:
        if c == default:
            continue
        rr = scored[(scored.condition == c) & (scored.design == design)]
        if rr.empty or overall(rr.iloc[0]) is None:
            waiting.append(c)
            continue
        groups.setdefault(overall(rr.iloc[0]), []).append((c, float(rr.iloc[0].mrr_at_10_delta)))
    pending = {}
    for c in waiting:
        pending.setdefault(_not_scored_note(table, c, design).split(" (")[0], []).append(c)
    later = "; ".join(f"{note} on {_join(cs)}" for note, cs in pending.items())
    if len(groups) == 1 and not waiting:
        (w, items), = groups.items()
        vals = [v for _, v in items]
        span = fixed(vals[0], sign=True) if len(vals) == 1 else f"{fixed(min(vals), sign=True)} to {fixed(max(vals), sign=True)}"
        where = f"on {items[0][0]}" if len(items) == 1 else f"in the other {len(items)} conditions"
        same = not row.empty and overall(row.iloc[0]) == w
        out.append(f"It is {VERDICT_WORDS[w]} dense {where}{' too' if same else ''} (MRR@10 {span}).")
    elif groups:
        parts = [f"{VERDICT_WORDS[w]} dense on " + _join([f"{c} ({fixed(v, sign=True)})" for c, v in items])
                 for w, items in groups.items()]
        out.append("Elsewhere (MRR@10) it is " + "; and ".join(parts) + (f" ({later})" if later else "") + ".")
    elif later:
        out.append(f"In the other conditions it is {later}.")
    strategies = strategies_sentence(scored, conditions, name)
    if strategies:
        out.append(strategies)
    # what does beat dense
    best = []
    for c in conditions:
        g = scored[(scored.condition == c) & (scored.design != "dense")]
        g = g[[verdict(r, "mrr_at_10") == "better" or verdict(r, "recall_at_5") == "better" for _, r in g.iterrows()]]
        if not g.empty:
            b = g.loc[g.mrr_at_10_delta.astype(float).idxmax()]
            best.append((c, b.design, float(b.mrr_at_10_delta), float(b.llm_calls or 0) > 0))
    if best:
        by: dict[str, list] = {}
        for c, d, dv, llm in best:
            by.setdefault(d, []).append((c, dv, llm))
        bits = []
        for d, items in sorted(by.items(), key=lambda kv: -len(kv[1])):
            vals = [dv for _, dv, _ in items]
            span = fixed(vals[0], sign=True) if len(vals) == 1 else f"{fixed(min(vals), sign=True)} to " \
                                                                    f"{fixed(max(vals), sign=True)}"
            where = f"in {len(items)} of {len(conditions)} conditions" if len(items) > 1 else f"on {items[0][0]}"
            bits.append(f"**{name(d)}** {where} (MRR@10 {span})")
        none_llm = not any(llm for *_, llm in best)
        out.append("The largest measurable gain over dense comes from " + _join(bits)
                   + (", steps that call no language model." if none_llm and len(bits) > 1 else
                      ", a step that calls no language model." if none_llm else "."))
    else:
        out.append("No design is measurably better than dense in any condition.")
    return " ".join(out)


# the query strategies measured beside the agent (lib/designs/query_strategies.py), said in the answer
QUERY_STRATEGIES = ("decompose", "hyde")


def strategies_sentence(scored: pd.DataFrame, conditions: list[str], name: Callable[[str], str]) -> str:
    """One sentence on the query strategies beside the agent: each one's verdict against dense per
    condition (MRR@10 differences), grouped by verdict; "" where none is scored."""
    bits = []
    for d in QUERY_STRATEGIES:
        by: dict[str, list] = {}
        for c in conditions:
            rr = scored[(scored.condition == c) & (scored.design == d)]
            if not rr.empty and overall(rr.iloc[0]) is not None:
                by.setdefault(overall(rr.iloc[0]), []).append((c, float(rr.iloc[0].mrr_at_10_delta)))
        if by:
            bits.append(f"**{name(d)}** is " + "; ".join(
                f"{VERDICT_WORDS[w]} dense on " + _join([f"{c} ({fixed(v, sign=True)})" for c, v in items])
                for w, items in by.items()))
    if not bits:
        return ""
    return "Better queries written up front (one model call, no second search; MRR@10): " + "; and ".join(bits) + "."


def _join(items: list[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def parts_note(profile, where: str = "below") -> str:
    """Whose parts produced the numbers, in one sentence (empty for the article's own parts); ``where``
    the section "What differs from the article" is (below, on the index)."""
    cfg = _profile(profile)
    if not shows_article(cfg):  # a study of your own data
        return (f"These numbers come from the study {cfg.name}: your documents and questions, searched with the "
                f"embedder {cfg.embedder}, {rerank_short(cfg)} and {cfg.llm_model} through {cfg.llm_backend} "
                "(\"This study\" below).")
    if cfg.llm_backend == "anthropic":
        return ""
    return (f"These numbers come from the {cfg.name} profile's parts, not the article's: {cfg.llm_model} (a local "
            f"model) instead of Claude Haiku, the embedder {cfg.embedder}, and {rerank_short(cfg)} instead of the "
            f"article's cross-encoder (\"What differs from the article\" {where}).")


def rerank_short(cfg) -> str:
    """The rerank step in a few words, from the profile's weights: "a rerank step of 1·dense + 1.5·BM25"."""
    w = {k: v for k, v in cfg.rerank_weights.items() if v}
    words = {"cross_encoder": "cross-encoder", "dense": "dense", "bm25": "BM25"}
    return "a rerank step of " + " + ".join(f"{v:g}·{words.get(k, k)}" for k, v in w.items())


def rerank_step_words(cfg) -> str:
    """What the profile's rerank step is, in words (from its weights)."""
    w = {k: v for k, v in cfg.rerank_weights.items() if v}
    parts = " + ".join(f"{v:g}·{k.replace('_', ' ')}" for k, v in w.items())
    if "cross_encoder" not in w:
        return (f"the dense top {cfg.rerank_k} reordered by {parts} (each score standardised over the "
                "candidates), chosen on the dev set; no cross-encoder: the one trained here did not beat this on "
                "dev (docs/reranker.md). The article used the cross-encoder cross-encoder/ms-marco-MiniLM-L-6-v2.")
    model = ("cross-encoder/ms-marco-MiniLM-L-6-v2, the article's" if cfg.reranker_backend == "huggingface-hub"
             else f"a MiniLM cross-encoder trained in this project ({cfg.reranker}), not the article's")
    return f"the dense top {cfg.rerank_k} reordered by {parts}, the cross-encoder being {model}."


def headline_table(results_dir: Path, conditions: pd.DataFrame | None = None, profile="offline",
                   condition: str = DEFAULT_CONDITION) -> pd.DataFrame:
    """One condition's scores for the README: recall@5 and MRR@10 with their ranges against dense
    and the article's published figures beside them, searches, cost and latency per design (from
    the condition table when given, else from the saved summary). A design without a complete run
    is a row that says so."""
    table = conditions if conditions is not None and not conditions.empty else conditions_from_summary(results_dir)
    if table.empty:
        return pd.DataFrame(columns=["design", "runs", "questions"])
    if condition not in set(table.condition):
        condition = table.condition.iloc[0]
    name = design_namer(profile)
    article = shows_article(_profile(profile))
    engine = retriever_cell(_profile(profile))
    rows = []
    for _, r in _registry_order(table[table.condition == condition]).iterrows():
        row = {"design": name(r.design), **({"dense search in": engine,
                                              "BM25 search in": keyword_cell(_profile(profile), r.design)}
                                             if engine else {})}
        if not (pd.notna(r.get("questions")) and r.questions > 0):
            row.update({"runs": 0, "questions": 0, "recall@5": _not_scored_note(table, condition, r.design)})
            row.update({f"article {label} (− dense [range])": article_cell(r.design, m)
                        for m, label in METRICS.items() if article})
            rows.append(row)
            continue
        row.update({"runs": int(r.runs), "questions": int(r.questions)})
        for m, label in METRICS.items():
            cell = fixed(r[m])
            if r.runs > 1 and pd.notna(r.get(f"{m}_min")):
                cell += f" (runs {fixed(r[m + '_min'])}–{fixed(r[m + '_max'])})"
            row[label] = cell
            row[f"{label} − dense [95% range]"] = with_range(r.get(f"{m}_delta"), r.get(f"{m}_low"), r.get(f"{m}_high"),
                                                             p=r.get(f"{m}_p_holm"))
            if article:
                row[f"article {label} (− dense [range])"] = article_cell(r.design, m)
        row["searches / q"] = number(r.searches, 2)
        cost = r.get("cost_usd_per_q")
        row["cost / q (USD)"] = (f"{cost:.5f}" if pd.notna(cost) and cost else
                                 "0 (local model: no fee)" if (r.get("llm_calls") or 0) > 0 else "0")
        row["latency median (s)"] = seconds(r.latency_median_s)
        rows.append(row)
    return pd.DataFrame(rows).fillna("")




def retriever_cell(profile) -> str | None:
    """Where a study's dense search ran, for its scores table, or None for the project's own in-process search
    (no column): every result carries its ``retriever`` in its provenance, and a saved result of another
    retriever is refused when read (``pipeline.expected_settings``), so one folder's rows share it."""
    if getattr(profile, "settings", {}).get("retriever", "in-process") == "in-process":
        return None
    p = profile.settings
    if p.get("milvus_collection"):
        return f"Milvus, collection {p['milvus_collection']} (read-only)"
    return f"{engine_words(p)}, the study's own collection ({'exact' if p.get('milvus_index') == 'FLAT' else 'HNSW'})"


def engine_words(settings: dict) -> str:
    """The engine a study's own collection is in: Milvus Lite embedded (no ``milvus_uri``, or a folder ending in
    .db), or Milvus at an address."""
    uri = settings.get("milvus_uri")
    return "Milvus Lite, embedded" if not uri or str(uri).endswith(".db") else "Milvus"


def keyword_cell(profile, design: str) -> str:
    """Where a design's BM25 searched, for the scores table of a study searched in an engine (beside ``dense
    search in``): the engine's full-text search, or bm25s in process over the study's documents; a dash for a
    design without BM25. Saved results carry it too (``milvus_bm25`` in their provenance, read back checked)."""
    if not pipeline.uses_bm25(profile, design):
        return DASH
    if not pipeline.keyword_in_engine(profile):
        return "in process (bm25s), over the study's documents"
    p = profile.settings
    if p.get("milvus_collection"):
        return f"Milvus, collection {p['milvus_collection']}, field {p['milvus_sparse_field']} (read-only)"
    return f"{engine_words(p)}, the study's own collection (full-text search)"


def worth_its_cost(g: pd.DataFrame, names: Callable[[str], str] | None = None) -> str:
    """Which step is worth its cost in one condition (generated): the cheapest design measurably
    better than dense (fewest LLM calls, then lowest latency), and the best design that calls an LLM
    against the best that does not."""
    name = names or (lambda d: d)
    better = g[["better" in (verdict(r, "recall_at_5"), verdict(r, "mrr_at_10")) for _, r in g.iterrows()]]
    out = ""
    if not better.empty:
        cheap = better.sort_values(["llm_calls", "latency_median_s"]).iloc[0]
        out += (f". Cheapest measurably better step: {name(cheap.design)} (MRR@10 {fixed(cheap.mrr_at_10)}, "
                f"{fixed(cheap.llm_calls, 2)} LLM calls per question)")
    llm, plain = g[g.llm_calls.fillna(0) > 0], g[g.llm_calls.fillna(0) == 0]
    if not llm.empty and not plain.empty:
        bl, bp = llm.loc[llm.mrr_at_10.idxmax()], plain.loc[plain.mrr_at_10.idxmax()]
        above = "above" if bl.mrr_at_10 > bp.mrr_at_10 else "not above"
        out += (f". The best design calling an LLM, {name(bl.design)} (MRR@10 {fixed(bl.mrr_at_10)}, "
                f"{fixed(bl.llm_calls, 2)} calls per question), is {above} the best without one, {name(bp.design)} "
                f"({fixed(bp.mrr_at_10)})")
    return out


def split_scope(answer: str) -> list[str]:
    """The answer as its paragraphs: the scope sentence on its own, then the rest (one paragraph
    where the answer has no scope sentence)."""
    if answer.startswith("Scope:") and ". **" in answer:
        scope, rest = answer.split(". **", 1)
        return [scope + ".", "**" + rest]
    return [answer]


def readme_answer(table: pd.DataFrame, profile, figure: str | None) -> str:
    """The README's answer paragraph (the index's answer, its scope first) and the headline figure
    under it."""
    text = "\n\n".join(split_scope(headline_answer(table, profile)))
    img = (f"\n\n![Each design minus dense with its 95% range, per condition, one scale per measure; the article's "
           f"published differences in black]({figure})") if figure else ""
    return text.strip() + img


def unscored_words(table: pd.DataFrame, profile, condition: str = DEFAULT_CONDITION,
                   left_out: dict[str, str] | None = None) -> str:
    """The designs the report describes that have no row in one condition's table, each with why:
    ``left_out`` (design -> reason) for those left out on purpose, else "no complete run saved"."""
    name = design_namer(profile)
    here = set(table.design[table.condition == condition]) if not table.empty else set()
    notes = [f"{name(d)}: {(left_out or {}).get(d, 'no run saved in this condition')}"
             for d in design_names() if d not in here]
    return ("Not in this table: " + "; ".join(notes) + ".") if notes else ""


def readme_results(table: pd.DataFrame, results_dir: Path, profile, left_out: dict[str, str] | None = None) -> str:
    """The README's results block: the default condition's table (:func:`headline_table`) and, under it,
    every described design that has no row there, with why."""
    cfg = _profile(profile)
    md = headline_table(results_dir, table, cfg).to_markdown(index=False)
    if left_out is None and cfg.settings.get("escalate_threshold") == float("-inf"):
        left_out = {"escalate": "left out, as its threshold chosen on dev never escalates, so its rows would repeat "
                                "hybrid_rerank's (docs/escalation.md)"}
    missing = unscored_words(table, cfg, DEFAULT_CONDITION, left_out)
    return (f"Profile `{cfg.name}`, {DEFAULT_CONDITION} (generated from the saved runs by `make readme-table` and by "
            "`make report`; every condition is on the report index):\n\n" + md + (f"\n\n{missing}" if missing else ""))


def compact_table(table: pd.DataFrame, profile, condition: str = DEFAULT_CONDITION) -> pd.DataFrame:
    """The index's headline table, one condition: per design its recall@5 and MRR@10, each with its
    difference from dense and 95% range, the article's published difference beside ours (MRR@10),
    LLM calls and median latency per question. A design without a complete run says so."""
    cfg = _profile(profile)
    name = design_namer(cfg)
    article = shows_article(cfg)
    here = table[table.condition == condition] if not table.empty else table
    rows = []
    for _, r in _registry_order(here).iterrows():
        row = {"design": name(r.design)}
        if not (pd.notna(r.get("questions")) and r.questions > 0):
            row["recall@5"] = _not_scored_note(table, condition, r.design)
            rows.append(row)
            continue
        for m, label in METRICS.items():
            row[label] = fixed(r[m])
            row[f"{label} − dense [95% range]"] = with_range(r.get(f"{m}_delta"), r.get(f"{m}_low"), r.get(f"{m}_high"),
                                                             p=r.get(f"{m}_p_holm"))
        if article:
            cell = article_cell(r.design, "mrr_at_10")
            row["the article: MRR@10 − dense"] = cell.split(" (")[1].rstrip(")") if " (" in cell else ""
        if "cited" in here and here.cited.notna().any():
            row["source cited (loops)"] = "" if pd.isna(r.get("cited")) else fixed(r.cited)
        row["LLM calls / q"] = number(r.get("llm_calls"), 2)
        row["median latency (s)"] = seconds(r.latency_median_s)
        rows.append(row)
    return pd.DataFrame(rows).fillna("")
