"""The index page's HTML: its tables and sections (every value escaped), its style, and the
findings read back from the rendered notebook pages. Numbers come from ``index_numbers``, sentences
from ``index_words``."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Callable

import pandas as pd

from .article import article_cell, shows_article
from .display import DASH, calls_a_model, design_namer, fixed, missing, number, seconds, with_range
from .why import index_clause

from .index_numbers import (BENCH_STEPS, DEFAULT_CONDITION, ESCALATION_CHOICE, METRICS, _profile, _registry_order, _scored,
                            notebook_titles, scale_rows, verdict)
from .index_words import (ARTICLE_DESIGNS, DEV_SET, _not_scored_note, design_words, rerank_short, rerank_step_words,
                          worth_its_cost)
from . import queries
from ..designs import design_names
from .. import pipeline
from ..evaluation.power import power_sentence
from .agent import agent_shares, agent_shares_sentence
from .fidelity import PROFILE_COLUMNS, fidelity_table
from ..pipeline import collection
from .collection import chunk_counts

# the LLM designs besides the agent whose loss page 12 splits, in the order the index names them


STYLE = ("body{font-family:system-ui,sans-serif;max-width:1300px;margin:1.2em auto;padding:0 1em;line-height:1.45}"
         "h1{font-size:1.75em;margin:0 0 .35em}h2{margin-top:1.6em}.answer{font-size:1.05em;margin:.2em 0 .6em}"
         "table{border-collapse:collapse;font-size:13px}td,th{padding:4px 8px;border-bottom:1px solid #ddd;"
         "text-align:left;vertical-align:top}tr.group th{background:#f3f3f3;padding-top:8px}"
         ".scroll{overflow-x:auto;max-width:100%;margin:.5em 0}td.n{white-space:nowrap}.art{color:#666;font-size:12px}"
         "img{max-width:100%;height:auto}.compact td{white-space:nowrap}"
         ".nb h3{margin:.9em 0 .2em;font-size:1.05em}.nb p{margin:0}small{color:#666}figcaption{font-size:.9em;color:#444}"
         "figure{margin:0}summary{cursor:pointer;color:#444}")

# --------------------------------------------------------------------------- the page's parts
def _table_html(df: pd.DataFrame, cls: str = "") -> str:
    """A table in a box of its own that scrolls sideways when it is wider than the page."""
    return f'<div class="scroll">{df.to_html(index=False, escape=True, border=0, classes=cls or None, na_rep=DASH)}</div>'


def _md_bold(text: str) -> str:
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))


def designs_html(table: pd.DataFrame, profile) -> str:
    """What was compared: each design in words, whether it calls a model, whether the article ran it."""
    cfg = _profile(profile)
    name = design_namer(cfg)

    designs = list(design_names())
    study = cfg.collection_source == "documents"
    dev = DEV_SET if study else "dev"
    chosen = f"; the loop chosen on {dev} (docs/loop.md), prompt {cfg.loop_prompt}" if cfg.settings.get("loop_prompt") else ""
    base = design_words(cfg)
    words = {**base, "loop_question_first": base["loop_question_first"] + chosen,
             "rerank": f"the dense top {cfg.rerank_k} reordered by "
                                       f"{rerank_short(cfg).removeprefix('a rerank step of ')}"
                                       + ("" if cfg.rerank_weights.get("cross_encoder") else
                                          f" (chosen on {DEV_SET})" if study else
                                          " (chosen on a dev set; the article's rerank was a cross-encoder)")}
    calls = {d: "yes" if calls_a_model(d) else "no" for d in designs}
    calls.update({d: "when it escalates" for d in designs if d == "escalate"})
    rows = [{"design": name(d), "what it does": words.get(d, ""), "calls a language model": calls[d],
             **({"in the article": "yes" if d in ARTICLE_DESIGNS else "no (beyond it)"} if shows_article(cfg) else {})}
            for d in designs]
    return _table_html(pd.DataFrame(rows))


def conditions_list(table: pd.DataFrame, profile=None) -> str:
    words = {"full questions": "the questions as the article wrote them, over the drawn collection of 2,000 papers",
             "short questions": "their 2-5 keyword short forms",
             "two-part questions": "questions that only two papers answer together (recall@5: the share of the two "
                                   "in the top 5; MRR@10: 1/rank of the second-found; both found @10)",
             "full questions, whole snapshot": "the full questions searched over the whole snapshot (all its papers)",
             "short questions, whole snapshot": "the short forms over the whole snapshot"}
    items = []
    studied = list(dict.fromkeys(table.condition)) if not table.empty else []
    for c in queries.CONDITIONS:
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
                ours = with_range(r.get(f"{m}_delta"), r.get(f"{m}_low"), r.get(f"{m}_high"), p=r.get(f"{m}_p_holm"))
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
    dev = "dev" if cfg.collection_source != "documents" else "arXiv dev"  # a study runs the arXiv dev set's choice
    if ESCALATION_CHOICE.exists():
        sel = json.loads(ESCALATION_CHOICE.read_text(encoding="utf-8"))
        p, n = sel.get("probe", {}), sum(sel.get("questions", {}).values())
        if p:
            probe = (f" Escalating every {dev} question ({n} question forms) helped {p.get('helped')} and hurt "
                     f"{p.get('hurt')} against its first pass (MRR@10 {p.get('first_mrr@10', float('nan')):.3f} → "
                     f"{p.get('escalated_mrr@10', float('nan')):.3f}), and no escalation rate raised {dev} MRR@10.")
    text = (f"<p><b>escalate</b> is left out of these tables and charts: its signal and threshold, chosen on the {dev} "
            "questions (docs/escalation.md), are never to escalate, so every answer it gives is hybrid_rerank's and its "
            f"rows would repeat them.{html.escape(probe)} The {dev} curve is on "
            '<a href="08_escalate.html">page 8</a>.</p>')
    return table[table.design != "escalate"], text


def condition_answer(table: pd.DataFrame, names: Callable[[str], str] | None = None,
                     accounts: pd.DataFrame | None = None, breakeven: pd.DataFrame | None = None) -> str:
    """Per condition, in words: does any design beat dense, and by how much, and (where page 12 has
    taken it apart) where the agent's difference comes from, decision by decision, and what a judge over
    its own decision trees predicts (the sentences of :mod:`lib.report.why`, from page 12's saved
    ``why_paths.csv`` as ``accounts`` and ``judges.csv`` as ``breakeven``)."""
    name = names or (lambda d: d)
    accounts = accounts if accounts is not None else pd.DataFrame()
    out = []
    for c, g in table.groupby("condition", sort=False):
        g = g[g.questions.fillna(0) > 0]
        if g.empty:
            continue
        n = int(g.questions.max())
        # only the measures on which a design is measurably better (the other may be a range that excludes 0
        # with a corrected p of 0.05 or more: not measurable, so not listed here)
        wins = []
        for _, r in g.iterrows():
            gains = [f"{fixed(r[f'{m}_delta'], sign=True)} {label}" for m, label in METRICS.items()
                     if verdict(r, m) == "better"]
            if gains:
                wins.append(f"{name(r.design)} ({', '.join(gains)})")
        misses = int(g.dense_misses_at_5.iloc[0])
        text = f"<b>{html.escape(c)}</b> ({n} questions; dense misses {misses} at 5): "
        text += ("measurably better than dense: " + "; ".join(wins) if wins else "no design is measurably better than dense")
        # the notes on designs not scored here stand on their own, before any design's explanation
        missing = [name(r.design) for r in table[(table.condition == c) & (table.questions.fillna(0) == 0)].itertuples()]
        if missing:
            text += f". Not yet scored here: {html.escape(', '.join(missing))} (runs stopped part-way)"
        absent = [name(d) for d in dict.fromkeys(table.design) if d not in set(table.design[table.condition == c])]
        if absent:
            text += f". Not run in this condition yet: {html.escape(', '.join(absent))}"
        text += html.escape(worth_its_cost(g, name))
        why_words = index_clause(accounts, breakeven if breakeven is not None else pd.DataFrame(), c, name)
        text += html.escape(f". {why_words}" if why_words else "")
        out.append(f"<li>{text}.</li>")
    return "<ul>" + "".join(out) + "</ul>"


def power_html(results_dir: Path) -> str:
    """Per condition, the power of the comparison with dense (from the scores notebook's
    ``conditions_power.csv``; empty where it has not been written)."""
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


def agent_html(scored, n_questions: int | None = None) -> str:
    """The agent's searches and its wins and losses against dense beside the article's, from the
    default condition's scored runs (``scored``: ``lib.evaluation.scores.Scored``, or None)."""
    if scored is None:
        return "<p>The agent's saved runs could not be read for this page.</p>"
    table = agent_shares(scored.pq, scored.pq_all, scored.partial, n_questions or len(scored.questions))
    return (_table_html(table) + f"<p>{html.escape(agent_shares_sentence(table))}</p>")


def fidelity_html(profile) -> str:
    """The fidelity table (``lib.report.fidelity``): the rows where this profile substitutes a part
    first and whole, then every row in a box that opens."""
    cfg = _profile(profile)
    title = dict(PROFILE_COLUMNS.values()).get(cfg.name)
    table = fidelity_table()
    if title is None:
        return _table_html(table)
    subs = table[table[title].str.startswith("substitute")][["what", "article", title]]
    same = int(table[title].str.startswith("same").sum())
    return (f"<p>{len(subs)} of {len(table)} settings and procedures differ from the article in the {cfg.name} profile "
            f"({same} are the same); each with why (<code>data/fidelity.yaml</code>, checked against the profile files "
            "by the tests):</p>" + f"<details><summary>The {len(subs)} that differ, each with why</summary>"
            + _table_html(subs, "fidelity") + "</details>"
            + "<details><summary>Every row, both profiles</summary>" + _table_html(table, "fidelity") + "</details>")


def study_html(profile) -> str:
    """A study of your own data, told as it is: which files, how many documents, chunks and questions,
    which models and backends (from its manifest and settings); no article's column beside it."""
    m = json.loads((profile.data_dir / "collection_manifest.json").read_text())
    rows = [(f"file: {k}", f"<code>{html.escape(v)}</code>") for k, v in m.get("files", {}).items()]

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


_LABEL = re.compile(r"<strong>(Reading|In short|Finding)\.</strong>", re.S)


def page_finding(page: Path) -> str | None:
    """A rendered notebook's finding, as plain text: the first sentence of the generated text that
    follows the first "Reading.", "In short." or "Finding." label in the page's finding section (the
    cells tagged ``finding``, shown first), else of its first paragraph that starts "Reading."; a
    first sentence with no number is followed by the next one (page 9's "In short." first says which
    loop it leads with). None when the page has none."""
    if not page.exists():
        return None
    text = page.read_text(encoding="utf-8", errors="replace")
    lead = re.search(r'<section class="finding">(.*?)</section>', text, re.S)
    label = _LABEL.search(lead.group(1)) if lead else None
    if label is not None:
        body = lead.group(1)[label.end():]
    else:
        m = re.search(r"<strong>Reading\.</strong>(.*?)</p>", text, re.S)
        if not m:
            return None
        body = m.group(1)
    plain = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())
    plain = re.sub(r"\s+([.,;:)\]])", r"\1", plain).replace("( ", "(")
    sentences = re.split(r"(?<=[a-z0-9)\]%])\.\s+(?=[A-Z])", plain)
    first = sentences[0]
    if not re.search(r"\d", first) and len(sentences) > 1:
        first += ". " + sentences[1]
    return first.rstrip(".") + "."


def notebooks_html(links: dict[str, str | None], pages_dir: Path, own_only: bool = False) -> str:
    """Each notebook as a section: its title (linked where a page exists) and its one-line finding;
    ``own_only`` (a study of your own data): a page it did not run is said so, never the shipped one's."""
    out = []
    for nb, title in notebook_titles().items():
        href = links.get(nb)
        if own_only and href and href.startswith(".."):
            out.append(f'<section class="nb"><h3>{html.escape(title)}</h3><p>Not run in this study.</p></section>')
            continue
        finding = page_finding(pages_dir / href) if href else None
        head = f'<a href="{html.escape(href)}">{html.escape(title)}</a>' if href else html.escape(title)
        note = "" if href is None or not href.startswith("..") else " <small>(the shipped report's page)</small>"
        text = html.escape(finding) if finding else ("Not rendered yet." if not href else "(no generated finding on "
                                                                                        "this page)")
        out.append(f'<section class="nb"><h3>{head}{note}</h3><p>{text}</p></section>')
    return "".join(out)


def _measured(key: str, step: dict, what: str) -> str:
    """What a benchmark step measured; a re-render recorded before its CPU time was measured says so."""
    if key == "report_rerender_versus":  # which commits, on which machine
        return f"{what}: {step.get('commit', '?')} against {step.get('base', '?')} on {step.get('machine', '?')}"
    if key.startswith("report_rerender") and "cpu_s" not in step:
        return ("make report from the saved runs: wall time only, on a machine whose cores other jobs may have "
                "shared; its CPU time is not recorded (python scripts/bench_render.py measures it)")
    if key.startswith("report_rerender"):  # where, on which commit, caches cold or warm
        return f"{what}: " + (step.get("how") or "in the working copy it was run in, its caches warm, not a fresh "
                              "clone; CPU time of every process it started, user + system (scripts/bench_render.py "
                              "--clone measures a fresh clone)")
    return what


def speed_section(bench: Path, chart: str = "") -> str:
    """The benchmark's figures as a readable table: step, what was measured, time, and the limit; ``chart``:
    the recall-against-speed chart's HTML, shown below it."""
    b = json.loads(bench.read_text())
    steps = b.get("steps", {})
    cells = [(step, _measured(k, steps[k], what), str(steps[k].get("summary", "")), limit)
             for k, (step, what, limit) in BENCH_STEPS.items() if k in steps] + scale_rows(steps)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in cells)
    m = b.get("machine", {})
    return (f"<h2>Speed</h2><p>Measured by <code>make bench</code> on {m.get('threads', '?')} CPU threads (torch "
            f"{html.escape(str(m.get('torch', '?')))}). The design tables' latency is per question as the run "
            "recorded it: the design's own work, embedding its own queries included (no design reuses another's), "
            "plus, for LLM designs, the model's time recorded when each call was made. Runs may have shared the "
            "cores with other jobs, so these are upper bounds next to the benchmark's.</p>"
            f"<details><summary>Every step measured ({len(cells)} rows)</summary><div class=\"scroll\"><table><tr><th>step</th>"
            "<th>what was measured</th><th>time</th><th>held to</th></tr>"
            f"{rows}</table></div></details>" + (f"<figure>{chart}<figcaption>Recall@10 against queries per second, "
            "per engine and setting, for the study's questions (<code>make bench ARGS=\"--ann real,1000000\"</code>; "
            "docs/engine.md)</figcaption></figure>" if chart else ""))
