"""The report's index page, generated from the saved runs: the question, the answer in a few
sentences and the headline figure on its first screen; then what was compared and the scores,
why the agent wins or loses, cost and latency, what differs from the article, the notebooks (each
with its own finding), how each run was produced, and speed.

Every number comes from the condition table (``pipeline.condition_table``, computed from the saved
runs when the report is built) or, where none is given, from the scores notebook's saved summary;
a design without a complete run is named as such, never left out silently."""
from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Callable

import pandas as pd

from ..config import ROOT
from .article import article_cell, article_figures, shows_article
from .display import DASH, calls_a_model, design_namer, fixed, missing, number, seconds, with_range

NOTEBOOK_LIST = ROOT / "notebooks" / "index.tsv"
DEFAULT_CONDITION = "full questions"
METRICS = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}
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
    "loop": "a tool-calling loop: the model calls search and read itself and cites the papers it relies on",
    "loop_question_first": "the tool-calling loop with the question searched first by the code, its result the "
                           "model's first tool result",
}
ARTICLE_DESIGNS = ("dense", "rerank", "multiquery", "agent")


def notebook_titles(path: Path = NOTEBOOK_LIST) -> dict[str, str]:
    """The report's notebooks in order, name -> title: the one list the Makefile runs and the index links."""
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {name: title for name, title in rows}


def _profile(profile):
    from ..config import load_profile

    return load_profile(profile) if isinstance(profile, str) else profile


# --------------------------------------------------------------------------- the numbers
def conditions_from(designs: list[dict], deltas: pd.DataFrame, headroom: dict | None = None,
                    condition: str = DEFAULT_CONDITION) -> pd.DataFrame:
    """Per-design summaries (``scores.design_summary`` records) and their differences from dense
    (``scores.deltas``) in the condition table's columns (one condition)."""
    head = headroom or {}
    rows = []
    for d in designs:
        row = {"condition": condition, **{k: d.get(k) for k in (
            "design", "runs", "questions", "recall_at_5", "mrr_at_10", "cited", "searches", "latency_median_s", "latency_mean_s",
            "llm_calls", "cost_usd_per_q", "recall_at_5_min", "recall_at_5_max", "mrr_at_10_min", "mrr_at_10_max")},
               "tokens": (d.get("tokens_in") or 0) + (d.get("tokens_out") or 0),
               "dense_misses_at_5": head.get("dense_misses_at_5"), "not_scored": ""}
        for m in METRICS:
            dl = deltas[(deltas.design == d["design"]) & (deltas.metric == m)] if not deltas.empty else deltas
            row.update({f"{m}_delta": dl.delta.iloc[0] if len(dl) else None,
                        f"{m}_low": dl.low.iloc[0] if len(dl) else None,
                        f"{m}_high": dl.high.iloc[0] if len(dl) else None})
        rows.append(row)
    return pd.DataFrame(rows)


def conditions_from_summary(results_dir: Path, condition: str = DEFAULT_CONDITION) -> pd.DataFrame:
    """The scores notebook's saved summary (``summary.json``, ``deltas.csv``) in the condition table's
    columns, for an index built without the table (one condition)."""
    path = Path(results_dir) / "summary.json"
    if not path.exists():
        return pd.DataFrame()
    summary = json.loads(path.read_text())
    dpath = Path(results_dir) / "deltas.csv"
    deltas = pd.read_csv(dpath) if dpath.exists() else pd.DataFrame(columns=["design", "metric"])
    return conditions_from(summary.get("designs", []), deltas, summary.get("headroom"), condition)


def _scored(table: pd.DataFrame) -> pd.DataFrame:
    """The rows with a complete, scored run."""
    if table.empty or "questions" not in table:
        return table.iloc[0:0]
    return table[table.questions.fillna(0) > 0]


def verdict(row, metric: str) -> str | None:
    """better / worse / same (the 95% range holds 0) against dense, or None where not compared."""
    low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return None
    return "better" if low > 0 else ("worse" if high < 0 else "same")


def overall(row) -> str | None:
    """One word for both measures: better (one better, none worse), worse, mixed, same."""
    vs = {verdict(row, m) for m in METRICS} - {None}
    if not vs:
        return None
    if "better" in vs and "worse" in vs:
        return "mixed"
    return "better" if "better" in vs else ("worse" if "worse" in vs else "same")


VERDICT_WORDS = {"better": "measurably better than", "worse": "measurably worse than",
                 "same": "not measurably different from", "mixed": "better on one measure and worse on the other than"}


def _not_scored_note(table: pd.DataFrame, condition: str, design: str) -> str:
    rows = table[(table.condition == condition) & (table.design == design)]
    if rows.empty:
        return "not run yet"
    note = str(rows.not_scored.iloc[0]) if "not_scored" in rows and pd.notna(rows.not_scored.iloc[0]) else ""
    return "no complete run yet" + (f" ({note}: saved, not scored)" if note else "")


def headline_answer(table: pd.DataFrame, profile="offline", default: str = DEFAULT_CONDITION,
                    design: str = "agent") -> str:
    """The answer in three to five sentences, generated from the condition table: the agent against
    dense in the default condition beside the article's published difference; how that holds in the
    other conditions; which step does beat dense; the headroom; and whose parts produced it.
    Text with **bold** marks (``_md_bold`` turns it into HTML)."""
    name = design_namer(profile)
    scored = _scored(table)
    if scored.empty:
        return ("Not answered yet: no design has a complete, scored run, so nothing can be compared with dense. "
                "The runs saved so far are listed under \"How each run was produced\".")
    conditions = list(dict.fromkeys(table.condition))
    default = default if default in conditions else conditions[0]
    art = article_figures()["results"].get(design, {}) if shows_article(_profile(profile)) else {}
    out = []
    row = scored[(scored.condition == default) & (scored.design == design)]
    if not row.empty and overall(row.iloc[0]) is not None:
        r = row.iloc[0]
        word = overall(r)
        lead = {"worse": "**No**", "better": "**Yes**", "same": "**Not measurably**", "mixed": "**Not clearly**"}[word]
        runs = f"{int(r.runs)} run" + ("s" if r.runs > 1 else "")
        art_text = ""
        if art.get("delta_recall_at_5") and art.get("delta_mrr_at_10"):
            a5, a10 = art["delta_recall_at_5"], art["delta_mrr_at_10"]
            art_text = (f"; the article measured {with_range(*a5)} and {with_range(*a10)}, no difference its questions "
                        "could tell from zero" if all(x[1] <= 0 <= x[2] for x in (a5, a10)) else
                        f"; the article measured {with_range(*a5)} and {with_range(*a10)}")
        out.append(f"{lead}: on the {int(r.questions)} {default} the agent ({runs}) is {VERDICT_WORDS[word]} plain dense "
                   f"search: recall@5 {with_range(r.recall_at_5_delta, r.recall_at_5_low, r.recall_at_5_high)} and "
                   f"MRR@10 {with_range(r.mrr_at_10_delta, r.mrr_at_10_low, r.mrr_at_10_high)} against dense (95% "
                   f"ranges){art_text}.")
    else:
        out.append(f"**Not answered yet for the {default}**: the agent has {_not_scored_note(table, default, design)} "
                   "there, so its comparison with dense waits for a complete run.")
    # the other conditions, grouped by what the agent did there
    groups: dict[str, list[str]] = {}
    waiting = []
    for c in conditions:
        if c == default:
            continue
        rr = scored[(scored.condition == c) & (scored.design == design)]
        if rr.empty or overall(rr.iloc[0]) is None:
            waiting.append(c)
            continue
        groups.setdefault(overall(rr.iloc[0]), []).append(
            f"{c} (MRR@10 {fixed(rr.iloc[0].mrr_at_10_delta, sign=True)})")
    pending = {}
    for c in waiting:
        pending.setdefault(_not_scored_note(table, c, design).split(" (")[0], []).append(c)
    later = "; ".join(f"{note} on {_join(cs)}" for note, cs in pending.items())
    if groups:
        parts = [f"{VERDICT_WORDS[w]} dense on {_join(items)}" for w, items in groups.items()]
        out.append("Elsewhere it is " + "; and ".join(parts) + (f" ({later})" if later else "") + ".")
    elif later:
        out.append(f"In the other conditions it is {later}.")
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
    dense = scored[(scored.condition == default) & (scored.design != "dense")]
    if not dense.empty and pd.notna(dense.dense_misses_at_5.iloc[0]):
        n, miss = int(dense.questions.max()), int(dense.dense_misses_at_5.iloc[0])
        out.append(f"Dense already finds the source in its top 5 for {n - miss} of the {n} {default}, so no design "
                   f"can raise recall@5 there by more than {miss / n:.3f}.")
    return " ".join(out)


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
    rows = []
    for _, r in _registry_order(table[table.condition == condition]).iterrows():
        row = {"design": name(r.design)}
        if not (pd.notna(r.get("questions")) and r.questions > 0):
            row.update({"runs": 0, "questions": 0, "recall@5": _not_scored_note(table, condition, r.design)})
            row.update({f"article {label} (− dense [range])": article_cell(r.design, m).replace("-", "−")
                        for m, label in METRICS.items() if article})
            rows.append(row)
            continue
        row.update({"runs": int(r.runs), "questions": int(r.questions)})
        for m, label in METRICS.items():
            cell = fixed(r[m])
            if r.runs > 1 and pd.notna(r.get(f"{m}_min")):
                cell += f" (runs {fixed(r[m + '_min'])}–{fixed(r[m + '_max'])})"
            row[label] = cell
            row[f"{label} − dense [95% range]"] = with_range(r.get(f"{m}_delta"), r.get(f"{m}_low"), r.get(f"{m}_high"))
            if article:
                row[f"article {label} (− dense [range])"] = article_cell(r.design, m).replace("-", "−")
        row["searches / q"] = number(r.searches, 2)
        cost = r.get("cost_usd_per_q")
        row["cost / q (USD)"] = (f"{cost:.5f}" if pd.notna(cost) and cost else
                                 "0 (local model: no fee)" if (r.get("llm_calls") or 0) > 0 else "0")
        row["latency median (s)"] = seconds(r.latency_median_s)
        rows.append(row)
    return pd.DataFrame(rows).fillna("")


# --------------------------------------------------------------------------- the page's parts
def _table_html(df: pd.DataFrame, cls: str = "") -> str:
    """A table in a box of its own that scrolls sideways when it is wider than the page."""
    return f'<div class="scroll">{df.to_html(index=False, escape=True, border=0, classes=cls or None, na_rep=DASH)}</div>'


def designs_html(table: pd.DataFrame, profile) -> str:
    """What was compared: each design in words, whether it calls a model, whether the article ran it."""
    cfg = _profile(profile)
    name = design_namer(cfg)
    from ..designs import design_names

    designs = list(design_names())
    words = {**DESIGN_WORDS, "rerank": f"the dense top {cfg.rerank_k} reordered by "
                                       f"{rerank_short(cfg).removeprefix('a rerank step of ')}"
                                       + ("" if cfg.rerank_weights.get("cross_encoder") else
                                          " (chosen on a dev set; the article's rerank was a cross-encoder)")}
    calls = {d: "yes" if calls_a_model(d) else "no" for d in designs}
    calls.update({d: "when it escalates" for d in designs if d == "escalate"})
    rows = [{"design": name(d), "what it does": words.get(d, ""), "calls a language model": calls[d],
             **({"in the article": "yes" if d in ARTICLE_DESIGNS else "no (beyond it)"} if shows_article(cfg) else {})}
            for d in designs]
    return _table_html(pd.DataFrame(rows))


def conditions_list(table: pd.DataFrame, profile=None) -> str:
    from .. import pipeline

    words = {"full questions": "the questions as the article wrote them, over the drawn collection of 2,000 papers",
             "short questions": "their 2-5 keyword short forms",
             "two-part questions": "questions that only two papers answer together (recall@5: the share of the two "
                                   "in the top 5; MRR@10: 1/rank of the second-found; both found @10)",
             "full questions, whole snapshot": "the full questions searched over the whole snapshot (all its papers)",
             "short questions, whole snapshot": "the short forms over the whole snapshot"}
    items = []
    studied = list(dict.fromkeys(table.condition)) if not table.empty else []
    for c in pipeline.CONDITIONS:
        if studied and c not in studied and profile is not None and not shows_article(_profile(profile)):
            continue  # a study of your own data has its one condition
        g = _scored(table[table.condition == c]) if not table.empty else table
        n = f"{int(g.questions.max())} questions" if not g.empty else "nothing scored yet"
        what = words.get(c, "")
        if c == "full questions" and profile is not None and not shows_article(_profile(profile)):
            what = "your questions as written, over your documents"
        items.append(f"<li><b>{html.escape(c)}</b> ({n}): {html.escape(what)}</li>")
    return "<ul>" + "".join(items) + "</ul>"


def scores_html(table: pd.DataFrame, profile, default: str = DEFAULT_CONDITION) -> str:
    """Every condition's scores, one block of rows per condition: each design's recall@5 and MRR@10
    with its difference from dense and the 95% range (in the default condition the article's
    published difference beneath ours, in grey); the citation hit rate of the designs that cite papers
    (the tool-calling loops' own measure: the share of questions whose source is among their
    citations); runs, searches and median latency."""
    name = design_namer(profile)
    article = shows_article(_profile(profile))
    head = ["design", "runs", "recall@5", "recall@5 − dense [95% range]", "MRR@10", "MRR@10 − dense [95% range]",
            "source cited (loops)", "searches per question", "median latency (s)", "both found @10"]
    body = []
    for c, g in table.groupby("condition", sort=False):
        scored = _scored(g)
        n = int(scored.questions.max()) if not scored.empty else 0
        counts = f" ({n} questions; dense misses {int(scored.dense_misses_at_5.iloc[0])} at 5)" if n else ""
        body.append(f'<tr class="group"><th colspan="{len(head)}">{html.escape(c + counts)}</th></tr>')
        for _, r in _registry_order(g).iterrows():
            if not (pd.notna(r.get("questions")) and r.questions > 0):
                cells = [html.escape(name(r.design)), "0", html.escape(_not_scored_note(table, c, r.design))]
                for m in METRICS:  # the article's figure still stands beside the row
                    art = article_cell(r.design, m) if c == default and article else ""
                    cells += ([f'<span class="art">the article: {html.escape(art)}</span>'] if art not in ("—", "")
                              else [""]) + ([""] if m == "recall_at_5" else [])
                body.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells)
                            + f'<td colspan="{len(head) - len(cells)}"></td></tr>')
                continue
            cells = [html.escape(name(r.design)), str(int(r.runs))]
            for m in METRICS:
                v = fixed(r[m]) + (f" ({fixed(r[m + '_min'])}–{fixed(r[m + '_max'])})" if r.runs > 1 else "")
                ours = with_range(r.get(f"{m}_delta"), r.get(f"{m}_low"), r.get(f"{m}_high"))
                art = article_cell(r.design, m) if c == default and article else ""
                if " (" in art:
                    ours += f'<br><span class="art">the article: {html.escape(art.split(" (")[1].rstrip(")"))}</span>'
                elif c == default and art not in ("—", ""):
                    v += f'<br><span class="art">the article: {html.escape(art)}</span>'
                cells += [v, ours]
            both, cited = r.get("both_found_at_10"), r.get("cited")
            cells += ["" if missing(cited) else fixed(cited), number(r.searches, 2), seconds(r.latency_median_s),
                      "" if missing(both) else fixed(both)]
            body.append("<tr>" + "".join(f'<td class="n">{x}</td>' for x in cells) + "</tr>")
    return ('<div class="scroll"><table class="scores"><thead><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(body) + "</tbody></table></div>")


def _registry_order(g: pd.DataFrame) -> pd.DataFrame:
    """A condition's rows in the designs' registry order (a design with only a partial run at its place)."""
    from ..designs import design_names

    order = {d: i for i, d in enumerate(design_names())}
    return g.sort_values("design", key=lambda s: s.map(lambda d: order.get(d, len(order))), kind="stable")


def condition_html(table: pd.DataFrame, profile="offline") -> str:
    """The condition x design table as HTML (kept for callers of the earlier index): see :func:`scores_html`."""
    return scores_html(table, profile)


def cost_html(table: pd.DataFrame, profile, condition: str = DEFAULT_CONDITION) -> str:
    """What each design costs per question in one condition: model calls, tokens, fee, latency."""
    name = design_namer(profile)
    here = _registry_order(table[table.condition == condition]) if not table.empty else table
    g = _scored(here)
    if g.empty:
        return "<p>No design has a complete run in this condition yet.</p>"
    rows = [{"design": name(r.design), "LLM calls per question": _not_scored_note(table, condition, r.design)}
            if r.design not in set(g.design) else
            {"design": name(r.design), "LLM calls per question": number(r.llm_calls, 2),
             "LLM tokens per question": f"{r.tokens:,.0f}", "cost per question (USD)":
             (f"{r.cost_usd_per_q:.5f}" if pd.notna(r.cost_usd_per_q) and r.cost_usd_per_q else
              "0 (local model: no fee)" if (r.llm_calls or 0) > 0 else "0"),
             "median latency (s)": seconds(r.latency_median_s), "mean latency (s)": seconds(r.latency_mean_s)}
            for _, r in here.iterrows()]
    return _table_html(pd.DataFrame(rows).fillna(""))


ESCALATION_CHOICE = ROOT / "results" / "dev" / "escalation_selection.json"


def without_idle_escalate(table: pd.DataFrame, profile) -> tuple[pd.DataFrame, str]:
    """The condition table without escalate where it never escalates (its dev-chosen threshold is -inf and
    it called no model in any condition), so its rows would only repeat hybrid_rerank's; and the HTML that
    says so, with the dev probe's counts (``results/dev/escalation_selection.json``) and a link to page 8's
    dev curve. Unchanged (and no text) where escalate escalates or has no rows."""
    cfg = _profile(profile)
    if table.empty or "escalate" not in set(table.design) or cfg.settings.get("escalate_threshold") != float("-inf"):
        return table, ""
    rows = table[table.design == "escalate"]
    if "llm_calls" in rows and (rows.llm_calls.fillna(0) > 0).any():
        return table, ""
    probe = ""
    if ESCALATION_CHOICE.exists():
        sel = json.loads(ESCALATION_CHOICE.read_text(encoding="utf-8"))
        p, n = sel.get("probe", {}), sum(sel.get("questions", {}).values())
        if p:
            probe = (f" Escalating every dev question ({n} question forms) helped {p.get('helped')} and hurt "
                     f"{p.get('hurt')} against its first pass (MRR@10 {p.get('first_mrr@10', float('nan')):.3f} → "
                     f"{p.get('escalated_mrr@10', float('nan')):.3f}), and no escalation rate raised dev MRR@10.")
    text = ("<p><b>escalate</b> is left out of these tables and charts: its signal and threshold, chosen on the dev "
            "questions (docs/escalation.md), are never to escalate, so every answer it gives is hybrid_rerank's and its "
            f"rows would repeat them.{html.escape(probe)} The dev curve is on "
            '<a href="08_escalate.html">page 8</a>.</p>')
    return table[table.design != "escalate"], text


LOSS_ACCOUNT = "loss_account.csv"  # page 12's account of each LLM design's MRR@10 loss, per condition (saved data)


def loss_account(results_dir: Path) -> pd.DataFrame:
    """The saved account of the LLM designs' losses (written by the loss notebook); empty when none."""
    path = Path(results_dir) / LOSS_ACCOUNT
    return pd.read_csv(path) if path.exists() else pd.DataFrame()


def why_words(accounts: pd.DataFrame, condition: str, design: str = "agent",
              names: Callable[[str], str] | None = None) -> str:
    """Which part accounts for a design's MRR@10 loss in one condition, with its numbers (from the saved
    account: the merge's part, best single list − fused; the queries' part, dense − best single list;
    the gain of an oracle stop over the same queries); empty when not analysed or no loss."""
    name = "the agent" if design == "agent" else (names or (lambda d: d))(design)
    if accounts.empty:
        return ""
    row = accounts[(accounts.condition == condition) & (accounts.design == design)]
    if row.empty or not round(float(row.iloc[0].loss), 3) > 0:
        return ""
    r = row.iloc[0]
    if r.queries_part <= 0:
        part = (f"the merge accounts for all of it: the best single list among its own searches is "
                f"{-r.queries_part:.3f} above dense, and fusing them costs {r.merge_part:.3f}")
    elif r.merge_part <= 0:
        part = f"its queries account for all of it ({r.queries_part:.3f}); the merge costs nothing"
    else:
        part = (f"the merge accounts for {r.merge_share:.0%} ({r.merge_part:.3f}) and its queries for "
                f"{r.queries_share:.0%} ({r.queries_part:.3f})")
    return (f". Why {name} loses here (MRR@10 {-r.loss:+.3f} against dense, page 12): {part}; stopping exactly when the source was "
            f"shown would change it by {r.stop_part:+.3f}, and {r.worse_share:.0%} of its new queries ranked the "
            f"source worse than the question, {r.better_share:.0%} better")


def condition_answer(table: pd.DataFrame, names: Callable[[str], str] | None = None,
                     accounts: pd.DataFrame | None = None) -> str:
    """Per condition, in words: does any design beat dense, and by how much, and (where the loss
    notebook has taken it apart) which part accounts for the agent's loss (generated)."""
    name = names or (lambda d: d)
    accounts = accounts if accounts is not None else pd.DataFrame()
    out = []
    for c, g in table.groupby("condition", sort=False):
        g = g[g.questions.fillna(0) > 0]
        if g.empty:
            continue
        n = int(g.questions.max())
        wins = [f"{name(r.design)} ({r.recall_at_5_delta:+.3f} recall@5, {r.mrr_at_10_delta:+.3f} MRR@10)"
                for r in g.itertuples()
                if pd.notna(r.mrr_at_10_delta) and ((r.recall_at_5_low or 0) > 0 or (r.mrr_at_10_low or 0) > 0)]
        misses = int(g.dense_misses_at_5.iloc[0])
        text = f"<b>{html.escape(c)}</b> ({n} questions; dense misses {misses} at 5): "
        text += ("measurably better than dense: " + "; ".join(wins) if wins else "no design is measurably better than dense")
        text += worth_its_cost(g, name)
        text += html.escape(why_words(accounts, c, "agent", name))
        missing = [name(r.design) for r in table[(table.condition == c) & (table.questions.fillna(0) == 0)].itertuples()]
        if missing:
            text += f" (not yet scored here: {', '.join(missing)}, runs stopped part-way)"
        absent = [name(d) for d in dict.fromkeys(table.design) if d not in set(table.design[table.condition == c])]
        if absent:
            text += f" (not run in this condition yet: {', '.join(absent)})"
        out.append(f"<li>{text}.</li>")
    return "<ul>" + "".join(out) + "</ul>"


def power_html(results_dir: Path) -> str:
    """Per condition, the power of the comparison with dense (from the scores notebook's
    ``conditions_power.csv``; empty where it has not been written)."""
    from ..evaluation.power import power_sentence

    path = results_dir / "conditions_power.csv"
    if not path.exists():
        return ""
    pw = pd.read_csv(path)
    if pw.empty:
        return ""
    items = "".join(f"<li><b>{html.escape(c)}</b>: {html.escape(power_sentence(g))}.</li>"
                    for c, g in pw.groupby("condition", sort=False))
    return ("<h3>How small a difference each condition can detect</h3><p>From the observed per-question differences "
            "from dense (breakdowns by question style and length, with their ranges, are in the scores notebook):</p>"
            "<ul>" + items + "</ul>")


def worth_its_cost(g: pd.DataFrame, names: Callable[[str], str] | None = None) -> str:
    """Which step is worth its cost in one condition (generated): the cheapest design measurably
    better than dense (fewest LLM calls, then lowest latency), and the best design that calls an LLM
    against the best that does not."""
    name = names or (lambda d: d)
    better = g[(g.mrr_at_10_low.fillna(0) > 0) | (g.recall_at_5_low.fillna(0) > 0)]
    out = ""
    if not better.empty:
        cheap = better.sort_values(["llm_calls", "latency_median_s"]).iloc[0]
        out += (f". Cheapest measurably better step: {name(cheap.design)} (MRR@10 {cheap.mrr_at_10:.3f}, "
                f"{cheap.llm_calls:.2f} LLM calls per question)")
    llm, plain = g[g.llm_calls.fillna(0) > 0], g[g.llm_calls.fillna(0) == 0]
    if not llm.empty and not plain.empty:
        bl, bp = llm.loc[llm.mrr_at_10.idxmax()], plain.loc[plain.mrr_at_10.idxmax()]
        verdict = "above" if bl.mrr_at_10 > bp.mrr_at_10 else "not above"
        out += (f". The best design calling an LLM, {name(bl.design)} (MRR@10 {bl.mrr_at_10:.3f}, {bl.llm_calls:.2f} calls "
                f"per question), is {verdict} the best without one, {name(bp.design)} ({bp.mrr_at_10:.3f})")
    return out


def agent_html(scored, n_questions: int | None = None) -> str:
    """The agent's searches and its wins and losses against dense beside the article's, from the
    default condition's scored runs (``scored``: ``lib.evaluation.scores.Scored``, or None)."""
    from .agent import agent_shares, agent_shares_sentence

    if scored is None:
        return "<p>The agent's saved runs could not be read for this page.</p>"
    table = agent_shares(scored.pq, scored.pq_all, scored.partial, n_questions or len(scored.questions))
    return (_table_html(table) + f"<p>{html.escape(agent_shares_sentence(table))}</p>")


def fidelity_html(profile) -> str:
    """The fidelity table (``lib.report.fidelity``): the rows where this profile substitutes a part
    first and whole, then every row in a box that opens."""
    from .fidelity import PROFILE_COLUMNS, fidelity_table

    cfg = _profile(profile)
    title = dict(PROFILE_COLUMNS.values()).get(cfg.name)
    table = fidelity_table()
    if title is None:
        return _table_html(table)
    subs = table[table[title].str.startswith("substitute")][["what", "article", title]]
    same = int(table[title].str.startswith("same").sum())
    return (f"<p>{len(subs)} of {len(table)} settings and procedures differ from the article in the {cfg.name} profile "
            f"({same} are the same); each with why (<code>data/fidelity.yaml</code>, checked against the profile files "
            "by the tests):</p>" + _table_html(subs, "fidelity")
            + "<details><summary>Every row, both profiles</summary>" + _table_html(table, "fidelity") + "</details>")


def study_html(profile) -> str:
    """A study of your own data, told as it is: which files, how many documents, chunks and questions,
    which models and backends (from its manifest and settings); no article's column beside it."""
    m = json.loads((profile.data_dir / "collection_manifest.json").read_text())
    rows = [(f"file: {k}", f"<code>{html.escape(v)}</code>") for k, v in m.get("files", {}).items()]
    from ..pipeline import collection
    from .collection import chunk_counts

    counts = chunk_counts(profile, collection(profile))
    size = f"{profile.chunk_tokens} word pieces" if profile.chunk_tokens else "the embedder's maximum input"
    overlap = f"{profile.chunk_overlap} word pieces" if profile.chunk_overlap is not None else "15%"
    rows += [("documents", f"{m['n_papers']:,}"),
             ("searched as", f"{counts['chunks']:,} chunks of up to {size}, {overlap} overlap; a document ranks where "
                             "its best chunk ranks" if counts else "whole documents (title and text)")]
    if "questions_scored" in m:
        rows += [("questions", f"{m['questions_scored']} scored of {m['questions']} in the file"),
                 ("relevant documents per question", f"{m['relevant_per_question']['median']:g} at the median "
                  f"({m['relevant_per_question']['min']} to {m['relevant_per_question']['max']})"),
                 ("judgements", "graded (nDCG@10 on the scores page)" if m["graded"] else "binary")]
    else:
        rows.append(("questions", "written and reviewed by the question model for "
                                  f"{len(m.get('source_order', []))} drawn documents"))
    rows += [("embedder", html.escape(f"{profile.embedder} ({profile.embedder_backend})")),
             ("rerank", html.escape(rerank_step_words(profile))),
             ("language model", html.escape(f"{profile.llm_model} through {profile.llm_backend}"
                                            + (f" (records of {profile.llm_record_backend})"
                                               if profile.llm_backend == "replay" else ""))),
             ("dense search", html.escape(profile.dense_backend))]
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>" for k, v in rows)
    return ("<h2>This study</h2><p>A study of your own data (<code>make study</code>, docs/your-data.md): the article's "
            "figures are not shown beside it, since its questions are not scored here.</p>"
            f'<table class="fidelity">{body}</table>')


WHY_NOTEBOOK = "12_why"  # the notebook that takes the LLM designs' loss apart, where the study has it


def why_html(links: dict[str, str | None], pages_dir: Path) -> str:
    """Why the agent wins or loses: the finding of the notebook that measures it, linked, where its page
    is rendered; otherwise a sentence that says the analysis is not built (or not rendered) yet."""
    titles = notebook_titles()
    href = links.get(WHY_NOTEBOOK) if WHY_NOTEBOOK in titles else None
    finding = page_finding(pages_dir / href) if href else None
    failures = links.get("11_failures")
    cases = (f' <a href="{html.escape(failures)}">{html.escape(titles.get("11_failures", "The failure cases"))}</a> '
             "lists every question where a design's rank of the source differs from dense's, with every query the "
             "model wrote.") if failures else ""
    if href and finding:
        return (f'<p><a href="{html.escape(href)}">{html.escape(titles[WHY_NOTEBOOK])}</a> takes the loss apart from the '
                f"saved records (the stop judgement, the queries, the merge, and ceilings): {html.escape(finding)}</p>"
                f"<p>{cases.strip()}</p>")
    state = "not rendered yet" if WHY_NOTEBOOK in titles else "not built yet"
    return (f"<p>Why it wins or loses (which queries it writes, and what they bring back) is <b>not analysed here "
            f"yet</b>: that analysis is {state}.{cases}</p>")


def page_finding(page: Path) -> str | None:
    """A rendered notebook's finding: the first sentence of its first generated reading (the
    paragraph that starts "Reading."), as plain text; None when the page has none."""
    if not page.exists():
        return None
    text = page.read_text(encoding="utf-8", errors="replace")
    m = re.search(r"<strong>Reading\.</strong>(.*?)</p>", text, re.S)
    if not m:
        return None
    plain = html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()
    plain = " ".join(plain.split())
    first = re.split(r"(?<=[a-z0-9)\]%])\.\s+(?=[A-Z])", plain, maxsplit=1)[0]
    return first.rstrip(".") + "."


def notebooks_html(links: dict[str, str | None], pages_dir: Path) -> str:
    """Each notebook as a section: its title (linked where a page exists) and its one-line finding."""
    out = []
    for nb, title in notebook_titles().items():
        href = links.get(nb)
        finding = page_finding(pages_dir / href) if href else None
        head = f'<a href="{html.escape(href)}">{html.escape(title)}</a>' if href else html.escape(title)
        note = "" if href is None or not href.startswith("..") else " <small>(the shipped report's page)</small>"
        text = html.escape(finding) if finding else ("Not rendered yet." if not href else "(no generated finding on "
                                                                                        "this page)")
        out.append(f'<section class="nb"><h3>{head}{note}</h3><p>{text}</p></section>')
    return "".join(out)


def runs_table(profile, table: pd.DataFrame) -> pd.DataFrame:
    """How each run was produced, compactly: per design, the conditions with the same runs, models,
    backend and profile; a run stopped part-way is named with its question count (saved, not scored)."""
    from .. import pipeline
    from ..designs import design_names

    cfg = _profile(profile)
    name = design_namer(cfg)
    rows = []
    for cname, cp in pipeline.condition_profiles(cfg).items():
        scored = _scored(table[table.condition == cname]) if not table.empty else table
        n = int(scored.questions.max()) if not scored.empty else None
        for d in design_names():
            prov = pipeline.provenance_table(cp, d)
            if prov.empty:
                continue
            runs, partial = [], []
            for f, q in zip(prov["run file"], prov["questions"]):
                k = int(Path(f).stem[3:])
                (runs if n is None or q >= n else partial).append(k if n is None or q >= n else f"run {k}: {q} of {n}")
            text = ", ".join(map(str, runs)) if runs else "none complete"
            if partial:
                text += f" ({'; '.join(partial)} questions, saved, not scored)"
            first = prov.iloc[0]
            models = []
            if pd.notna(first.get("embedder", None)):
                models.append(str(first["embedder"]))
            if isinstance(first.get("rerank_weights", None), dict):
                w = first["rerank_weights"]
                models.append("rerank " + " + ".join(f"{v:g}·{k}" for k, v in w.items() if v)
                              + (f" ({first['reranker']})" if w.get("cross_encoder") else ""))
            if "bm25" in prov and isinstance(first.get("bm25", None), dict):
                models.append("BM25")
            if pd.notna(first.get("llm_model", None)) and "llm_backend" in prov:
                models.append(str(first["llm_model"]))
            backend = ", ".join(sorted({str(b) for b in prov.get("llm_backend", pd.Series(dtype=str)).dropna()})) or DASH
            rows.append({"design": name(d), "condition": cname, "runs": text, "models": "; ".join(models) or DASH,
                         "backend": backend, "profile": ", ".join(sorted(set(prov.profile.astype(str))))})
    if not rows:
        return pd.DataFrame(columns=["design", "conditions", "runs", "models", "backend", "profile"])
    df = pd.DataFrame(rows)
    keys = ["design", "runs", "models", "backend", "profile"]
    grouped = df.groupby(keys, sort=False).condition.apply(lambda s: "; ".join(s)).reset_index()
    order = {n: i for i, n in enumerate(dict.fromkeys(df.design))}
    grouped = grouped.sort_values("design", key=lambda s: s.map(order), kind="stable")
    return grouped.rename(columns={"condition": "conditions"})[["design", "conditions", "runs", "models", "backend",
                                                                "profile"]]


STYLE = ("body{font-family:system-ui,sans-serif;max-width:1300px;margin:1.2em auto;padding:0 1em;line-height:1.45}"
         "h1{font-size:1.75em;margin:0 0 .35em}h2{margin-top:1.6em}.answer{font-size:1.05em;margin:.2em 0 .6em}"
         "table{border-collapse:collapse;font-size:13px}td,th{padding:4px 8px;border-bottom:1px solid #ddd;"
         "text-align:left;vertical-align:top}tr.group th{background:#f3f3f3;padding-top:8px}"
         ".scroll{overflow-x:auto;max-width:100%;margin:.5em 0}td.n{white-space:nowrap}.art{color:#666;font-size:12px}"
         "img{max-width:100%;height:auto}"
         ".nb h3{margin:.9em 0 .2em;font-size:1.05em}.nb p{margin:0}small{color:#666}figcaption{font-size:.9em;color:#444}"
         "figure{margin:0}")


def build_index(report_dir: Path, results_dir: Path, profile, figures: list[Path], bench: Path | None = None,
                conditions: pd.DataFrame | None = None, headline: Path | None = None, frontier: Path | None = None,
                scored=None, links: dict[str, str | None] | None = None, pages_dir: Path | None = None,
                runs: pd.DataFrame | None = None, left_out: str = "") -> Path:
    """Write ``report_dir/index.html``; the figures are copied into ``report_dir/figures``.

    ``conditions``: the condition table (else the saved summary, one condition); ``headline`` and
    ``frontier``: the two charts the index is built around (``figures``: further charts, shown at
    the end of the scores); ``scored``: the default condition's scored runs (the agent's table);
    ``links``: each notebook's page (a path relative to the index, None where there is none; by
    default the pages in ``report_dir``); ``pages_dir``: where the pages are read for their findings;
    ``runs``: the table of how each run was produced (by default read from the saved runs); ``left_out``:
    the HTML that says which design's rows were left out of ``conditions`` and why."""
    cfg = _profile(profile)
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "figures").mkdir(exist_ok=True)
    pages_dir = Path(pages_dir or report_dir)
    table = conditions if conditions is not None and not conditions.empty else conditions_from_summary(results_dir)

    def img(f: Path | None, alt: str) -> str:
        if f is None or not Path(f).exists():
            return ""
        shutil.copy(f, report_dir / "figures" / Path(f).name)
        return f'<img src="figures/{Path(f).name}" alt="{html.escape(alt)}">'

    if links is None:
        links = {nb: f"{nb}.html" if (report_dir / f"{nb}.html").exists() else None for nb in notebook_titles()}
    answer = headline_answer(table, cfg)
    note = parts_note(cfg)
    head_img = img(headline, "every design minus dense, with its 95% range, per condition")
    study = not shows_article(cfg)  # a study of your own data: no article's figure beside its own
    caption = ("<figcaption>Each design minus dense on the same questions, per condition: the point is the difference, "
               "the line its 95% paired bootstrap range (2,000 resamples of the questions); circles recall@5, squares "
               "MRR@10; orange designs called a language model, blue ones did not"
               + ("." if study else "; in black, the article's published differences (its own models and questions).")
               + "</figcaption>") if head_img else ""
    article_scores = ("" if study else ' "The article\'s": its published difference from dense and range (<code>'
                      "data/article_figures.json</code> says where each comes from), beside ours in its condition; its "
                      "embedder, reranker, LLM and questions differ from the offline profile's.")
    differences = study_html(cfg) if study else "<h2>What differs from the article</h2>" + fidelity_html(cfg)
    extra = "".join(img(f, f.stem) for f in figures)
    try:
        runs = runs if runs is not None else runs_table(cfg, table)
    except Exception as exc:  # a run file that cannot be read: said, not hidden
        runs = pd.DataFrame({"could not read the saved runs": [f"{type(exc).__name__}: {exc}"]})
    bench_html = speed_section(bench) if bench is not None and Path(bench).exists() else ""
    n_default = None
    if not table.empty and DEFAULT_CONDITION in set(table.condition):
        g = _scored(table[table.condition == DEFAULT_CONDITION])
        n_default = int(g.questions.max()) if not g.empty else None
    agent_part = ("" if study else "<p>What the article reports of its agent, beside the same counts from our saved "
                  f"agent runs on the {DEFAULT_CONDITION} (wins and losses at recall@5 against dense, per run):</p>"
                  + agent_html(scored, n_default))
    name = design_namer(cfg)
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(QUESTION)}</title><style>{STYLE}</style></head><body>
<h1>{html.escape(QUESTION)}</h1>
<p class="answer">{_md_bold(answer)}</p>
<figure>{head_img}{caption}</figure>
<p>{html.escape(note)} Profile <b>{html.escape(cfg.name)}</b>; every number on this page is computed from the saved runs
when the report is built.</p>
<h2>What was compared</h2>
{designs_html(table, cfg)}
{left_out}
<p>Conditions (each design is compared with dense <i>in the same condition</i>, on the same questions):</p>
{conditions_list(table, cfg)}
<h3>The scores</h3>
<p>[95% range]: the middle 95% of 2,000 paired bootstrap resamples of the questions of the design's score minus dense's; a
range that excludes 0 is a difference the question sample alone would not produce.{article_scores} Two runs or more:
the mean, with the lowest and highest run in brackets.</p>
{scores_html(table, cfg) if not table.empty else "<p>No scored runs yet.</p>"}
<h3>Per condition, in words</h3>{condition_answer(table, name, loss_account(results_dir)) if not table.empty else ""}
{power_html(Path(results_dir))}
{extra}
<h2>Why the agent wins or loses</h2>
{agent_part}
{why_html(links, pages_dir)}
<h2>Cost and latency</h2>
<p>Per question on the {DEFAULT_CONDITION}: model calls, tokens (the local model has no fee, so tokens stand for what an
API would bill), fee and latency (the median is the tables' figure):</p>
{cost_html(table, cfg)}
{img(frontier, "quality against latency per condition")}
{differences}
<h2>The notebooks</h2>
<p>Each page runs one step of the study; its finding below is the first sentence of the reading the page generates from
its numbers.</p>
{notebooks_html(links, pages_dir)}
<h2>How each run was produced</h2>
<p>Per design, the conditions that share the same runs, models, backend and profile (a run stopped part-way is saved, not
scored; its questions are counted):</p>
{_table_html(runs)}
{bench_html}
</body></html>"""
    out = report_dir / "index.html"
    out.write_text(page, encoding="utf-8")
    return out


BENCH_STEPS = {  # key in results/bench.json -> (step, what was measured, limit it is held to)
    "dense_query": ("dense search", "embed one question and search the collection exactly", "50 ms per query"),
    "embed_batch16": ("embedding the collection", "abstracts embedded per second, batches of 16", "1.5x the FLOP limit"),
    "rerank_offline_step": ("rerank, as the offline profile runs it", "dense top 50 reordered by the profile's weights",
                            "1.5 s per question"),
    "rerank_fp32_len128_b16": ("the cross-encoder alone", "cross-encoder over 50 candidates, 128 tokens",
                               "1.5 s per question"),
    "bm25_index": ("BM25 index", "bm25s over the collection's title + abstract", "none"),
    "bm25_query": ("BM25 query", "one question, top 50", "none"),
    "hybrid_query": ("hybrid query", "BM25 + dense (question embedded) + RRF, top 50", "none"),
    "snapshot_embed": ("embedding the whole snapshot", "papers embedded per second, projected to all papers",
                       "resumable; done once, shipped at float16"),
    "snapshot_dense_query": ("dense search over the whole snapshot", "exact search, one question",
                             "50 ms per query, else faiss-cpu"),
    "rerank_fp32_len256_b16": ("rerank at 256 tokens (not used)", "the same at 256 tokens", "1.5 s per question"),
    "llm_rewrite_call": ("multi-query rewrite (local LLM)", "median of the recorded calls", "none (recorded when run)"),
    "llm_agent_call": ("agent decision (local LLM)", "median of the recorded calls", "none (recorded when run)"),
    "llm_escalate_call": ("escalation decision (local LLM)", "median of the recorded calls", "none (recorded when run)"),
    "llm_loop_call": ("one tool-calling loop turn (local LLM)", "median of the recorded turns, prefix reuse on",
                      "none (recorded when run)"),
    "report_rerender": ("re-rendering the report", "make report from the saved runs", "2 minutes"),
}


SCALE_BACKEND_WORDS = {"numpy": "exact (numpy)", "faiss-flat": "exact (faiss flat)", "faiss-hnsw": "approximate (faiss HNSW)"}


def scale_rows(steps: dict) -> list[tuple[str, str, str, str]]:
    """The ``make bench ARGS="--scale ..."`` figures, smallest collection first: dense search by backend
    over synthetic (or the snapshot's) vectors, and BM25 over synthetic chunks."""
    rows = []
    for key, row in steps.items():
        if key.startswith("dense_scale_"):
            label, backend = key[len("dense_scale_"):].rsplit("_", 1)
            kind = "the snapshot's own vectors" if label == "snapshot" else (
                "synthetic vectors like the snapshot's" if label.endswith("_spectrum") else "synthetic uniform vectors")
            what = f"{SCALE_BACKEND_WORDS.get(backend, backend)} search, {row['rows']:,} x {row['dim']} {kind}"
            summary = row.get("summary", "")
            if row.get("sweep"):
                summary += "; recall@10 / ms at ef_search " + ", ".join(
                    f"{ef}: {v['recall_at_10']:.3f} / {v['median_ms']:.1f}" for ef, v in sorted(row["sweep"].items(), key=lambda kv: int(kv[0])))
            order = list(SCALE_BACKEND_WORDS).index(backend) if backend in SCALE_BACKEND_WORDS else len(SCALE_BACKEND_WORDS)
            rows.append((row["rows"], label, order, ("dense search at scale", what, summary,
                                                     "50 ms per query exact, else faiss")))
        elif key.startswith("bm25_scale_"):
            what = f"bm25s over {row['rows']:,} synthetic chunks, read back memory-mapped"
            rows.append((row["rows"], "~", 0, ("BM25 at scale", what, row.get("summary", ""), "none")))
    return [r[-1] for r in sorted(rows, key=lambda r: r[:3])]


def speed_section(bench: Path) -> str:
    """The benchmark's figures as a readable table: step, what was measured, time, and the limit."""
    b = json.loads(bench.read_text())
    steps = b.get("steps", {})
    cells = [(step, what, str(steps[k].get("summary", "")), limit) for k, (step, what, limit) in BENCH_STEPS.items()
             if k in steps] + scale_rows(steps)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)
    m = b.get("machine", {})
    return (f"<h2>Speed</h2><p>Measured by <code>make bench</code> on {m.get('threads', '?')} CPU threads (torch "
            f"{html.escape(str(m.get('torch', '?')))}). The design tables' latency is per question as the run "
            "recorded it: the design's own work, embedding its own queries included (no design reuses another's), "
            "plus, for LLM designs, the model's time recorded when each call was made. Runs may have shared the "
            "cores with other jobs, so these are upper bounds next to the benchmark's.</p>"
            "<table><tr><th>step</th><th>what was measured</th><th>time</th><th>held to</th></tr>"
            f"{rows}</table>")


def intro_note(profile: str) -> str:
    """The first paragraph's warning where a part is not what the article's design card says."""
    from ..config import load_profile

    cfg = load_profile(profile)
    if cfg.rerank_weights.get("cross_encoder"):
        return ""
    return "Offline, the rerank row is not a cross-encoder: it is " + rerank_step_words(cfg).split(" (docs")[0] + "."


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


def _differences(profile: str) -> str:
    """The stated differences between this profile's parts and the article's."""
    from ..config import load_profile
    from ..llm.prompts import PROMPT_DIFFERENCES

    cfg = load_profile(profile)
    if cfg.llm_backend == "anthropic":
        return "<li>None: the article's parts (arXiv API, hub models, Anthropic).</li>"
    items = [f"Embedder {cfg.embedder} (PyPI package {cfg.embedder_backend}) instead of BAAI/bge-small-en-v1.5.",
             "Rerank: " + rerank_step_words(cfg) + " Notebook 4 shows every variant tried on the dev set.",
             f"LLM: {cfg.llm_model} run by llama.cpp on the CPU (replayed from data/llm_records/), not Claude Haiku; "
             f"sampling temperature {cfg.llm_temperature}, one seed per call.",
             "Prompts: " + PROMPT_DIFFERENCES["local"],
             "Questions: the bundled set written and reviewed by a language model in the authoring session "
             "(data/README.md), not generated through the API."]
    return "".join(f"<li>{html.escape(i)}</li>" for i in items)


def _md_bold(text: str) -> str:
    import re

    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))


# --------------------------------------------------------------------------- the README's first screen
README = ROOT / "README.md"
ANSWER_MARKERS = ("<!-- ANSWER START -->", "<!-- ANSWER END -->")
RESULTS_MARKERS = ("<!-- RESULTS START -->", "<!-- RESULTS END -->")


def readme_answer(table: pd.DataFrame, profile, figure: str | None) -> str:
    """The README's answer paragraph (the index's answer and whose parts produced it) and the
    headline figure under it."""
    text = headline_answer(table, profile) + " " + parts_note(profile, "on the report index")
    img = (f"\n\n![Each design minus dense with its 95% range, per condition; the article's published differences in "
           f"black]({figure})") if figure else ""
    return text.strip() + img


def readme_results(table: pd.DataFrame, results_dir: Path, profile) -> str:
    cfg = _profile(profile)
    md = headline_table(results_dir, table, cfg).to_markdown(index=False)
    return (f"Profile `{cfg.name}`, {DEFAULT_CONDITION} (generated from the saved runs by `make readme-table` and by "
            "`make report`; every condition is on the report index):\n\n" + md)


FIDELITY_MARKERS = ("<!-- FIDELITY START -->", "<!-- FIDELITY END -->")


def update_readme(answer: str | None = None, results: str | None = None, path: Path = README,
                  fidelity: str | None = None) -> bool:
    """Put the generated answer, results and fidelity table between their markers in the README (a
    section whose markers are missing is left as it is); True when the file changed."""
    if fidelity is None:
        from .fidelity import fidelity_markdown

        fidelity = fidelity_markdown()
    text = before = path.read_text(encoding="utf-8")
    for new, (start, end) in ((answer, ANSWER_MARKERS), (results, RESULTS_MARKERS), (fidelity, FIDELITY_MARKERS)):
        if new is None or start not in text or end not in text:
            continue
        text = re.sub(re.escape(start) + r"\n?.*?\n?" + re.escape(end), lambda m: f"{start}\n{new}\n{end}", text,
                      flags=re.S)
    if text != before:
        path.write_text(text, encoding="utf-8")
    return text != before
