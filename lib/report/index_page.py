"""The report's index page: the headline table, the two charts and the plain-language answer,
all generated from the saved scores, with links to every rendered notebook."""
from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pandas as pd

from ..config import ROOT
from .article import article_cell

NOTEBOOK_LIST = ROOT / "notebooks" / "index.tsv"


def notebook_titles(path: Path = NOTEBOOK_LIST) -> dict[str, str]:
    """The report's notebooks in order, name -> title: the one list the Makefile runs and the index links."""
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {name: title for name, title in rows}


def headline_table(results_dir: Path) -> pd.DataFrame:
    """recall@5 and MRR@10 with their ranges, searches, cost and latency per design."""
    summary = json.loads((results_dir / "summary.json").read_text())
    deltas = pd.read_csv(results_dir / "deltas.csv")
    rows = []
    for d in summary["designs"]:
        row = {"design": d["design"], "runs": d["runs"], "questions": d["questions"]}
        for m, label in (("recall_at_5", "recall@5"), ("mrr_at_10", "MRR@10")):
            cell = f"{d[m]:.3f}"
            if d["runs"] > 1:
                cell += f" (runs {d[m + '_min']:.3f}–{d[m + '_max']:.3f})"
            row[label] = cell
            dl = deltas[(deltas.design == d["design"]) & (deltas.metric == m)]
            row[f"{label} − dense [95% range]"] = ("—" if dl.empty else
                                                   f"{dl.delta.iloc[0]:+.3f} [{dl.low.iloc[0]:+.3f}, {dl.high.iloc[0]:+.3f}]")
            row[f"article {label} (− dense [range])"] = article_cell(d["design"], m)
        row["searches / q"] = f"{d['searches']:.2f}"
        if d["cost_usd_per_q"]:
            row["cost / q (USD)"] = f"{d['cost_usd_per_q']:.5f}"
        else:
            row["cost / q (USD)"] = "0 (local model: no fee)" if d["llm_calls"] else "0"
        row["latency median (s)"] = f"{d['latency_median_s']:.2f}"
        rows.append(row)
    return pd.DataFrame(rows)


def plain_answer(results_dir: Path) -> str:
    """The answer the numbers support, in words, generated from deltas.csv and summary.json."""
    summary = json.loads((results_dir / "summary.json").read_text())
    deltas = pd.read_csv(results_dir / "deltas.csv")
    head = summary["headroom"]
    parts = [f"On {summary['questions_scored']} reviewed questions, dense search alone finds the source paper in its "
             f"top 5 for all but {head['dense_misses_at_5']} (the most any design could gain in recall@5 is "
             f"{head['max_recall_gain']:.3f})."]
    for d in dict.fromkeys(deltas.design):
        sub = deltas[deltas.design == d]
        if sub.empty:
            continue
        bits = []
        for _, r in sub.iterrows():
            label = "recall@5" if r.metric == "recall_at_5" else "MRR@10"
            verdict = ("no difference the data can tell from zero" if r.includes_zero else
                       ("better than dense" if r.delta > 0 else "worse than dense"))
            bits.append(f"{label} {r.delta:+.3f} [{r.low:+.3f}, {r.high:+.3f}]: {verdict}")
        parts.append(f"**{d}** vs dense: " + "; ".join(bits) + ".")
    agent = [x for x in summary["designs"] if x["design"] == "agent"]
    if agent:
        a = agent[0]
        parts.append(f"The agent searched {a['searches']:.2f} times per question on average "
                     f"(stopped after one search in {a['searches_1']:.0%} of cases).")
        sub = deltas[(deltas.design == "agent")]
        if not sub.empty and sub.includes_zero.all():
            parts.append("So in this setting an agent that can search again did **not** find measurably better "
                         "evidence than plain search.")
        elif not sub.empty and (sub.delta > 0).all() and not sub.includes_zero.any():
            parts.append("So in this setting the agent found measurably better evidence than plain search.")
        elif not sub.empty and (sub.delta < 0).all() and not sub.includes_zero.any():
            parts.append("So in this setting the agent found measurably worse evidence than plain search.")
    if summary.get("loop"):
        from .loop import summary_sentence

        parts.append(summary_sentence(summary["loop"]))
    if summary.get("profile") != "article":
        parts.append("These numbers come from the offline profile's parts, not the article's (see "
                     "\"What differs from the article\" below): a 1.5B local model in place of Claude Haiku, "
                     "and a rerank step chosen here on a dev set.")
    return " ".join(parts)


def _provenance_lines(results_dir: Path) -> str:
    summary = json.loads((results_dir / "summary.json").read_text())
    out = []
    for design, rows in summary["provenance"].items():
        most = max((r["questions"] for r in rows), default=0)
        for r in rows:
            items = ", ".join(f"{k}: {v}" for k, v in r.items() if k not in ("run file",))
            note = " <b>(stopped part-way: saved, not scored)</b>" if r["questions"] < most else ""
            out.append(f"<li><code>{html.escape(r['run file'])}</code>: {html.escape(items)}{note}</li>")
    return "\n".join(out)


def condition_html(table: pd.DataFrame) -> str:
    """The condition x design table as HTML: scores with ranges against dense in that condition."""
    rows = []
    for _, r in table.iterrows():
        if not r.get("questions"):
            rows.append({"condition": r.condition, "design": r.design, "runs": "—", "questions": "—",
                         "recall@5 (− dense [95% range])": f"not scored: {r.not_scored}", "MRR@10 (− dense [95% range])": "",
                         "both found @10": "",
                         "dense misses at 5": "", "searches / q": "", "latency median (s)": ""})
            continue
        cells = {}
        for m, label in (("recall_at_5", "recall@5"), ("mrr_at_10", "MRR@10")):
            cell = f"{r[m]:.3f}"
            if pd.notna(r.get(f"{m}_delta")):
                cell += f" ({r[f'{m}_delta']:+.3f} [{r[f'{m}_low']:+.3f}, {r[f'{m}_high']:+.3f}])"
            cells[f"{label} (− dense [95% range])"] = cell
        both = r.get("both_found_at_10")
        cells["both found @10"] = f"{both:.3f}" if both is not None and pd.notna(both) else ""
        rows.append({"condition": r.condition, "design": r.design, "runs": int(r.runs), "questions": int(r.questions),
                     **cells, "dense misses at 5": int(r.dense_misses_at_5), "searches / q": f"{r.searches:.2f}",
                     "latency median (s)": f"{r.latency_median_s:.2f}"})
    return pd.DataFrame(rows).to_html(index=False, escape=True, border=0)


def condition_answer(table: pd.DataFrame) -> str:
    """Per condition, in words: does any design beat dense, and by how much (generated)."""
    out = []
    for c, g in table.groupby("condition", sort=False):
        g = g[g.questions.fillna(0) > 0]
        if g.empty:
            continue
        n = int(g.questions.max())
        wins = [f"{r.design} ({r.recall_at_5_delta:+.3f} recall@5, {r.mrr_at_10_delta:+.3f} MRR@10)" for r in g.itertuples()
                if pd.notna(r.mrr_at_10_delta) and ((r.recall_at_5_low or 0) > 0 or (r.mrr_at_10_low or 0) > 0)]
        misses = int(g.dense_misses_at_5.iloc[0])
        text = f"<b>{html.escape(c)}</b> ({n} questions; dense misses {misses} at 5): "
        text += ("measurably better than dense: " + "; ".join(wins) if wins else "no design is measurably better than dense")
        text += worth_its_cost(g)
        missing = [r.design for r in table[(table.condition == c) & (table.questions.fillna(0) == 0)].itertuples()]
        if missing:
            text += f" (not yet scored here: {', '.join(missing)}, runs stopped part-way)"
        absent = [d for d in dict.fromkeys(table.design) if d not in set(table.design[table.condition == c])]
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
    items = "".join(f"<li><b>{html.escape(c)}</b>: {html.escape(power_sentence(g))}.</li>"
                    for c, g in pw.groupby("condition", sort=False))
    return ("<h3>Per condition, the power</h3><p>From the observed per-question differences from dense (breakdowns by "
            "question style and length, with their ranges, are in the scores notebook):</p><ul>" + items + "</ul>")


def worth_its_cost(g: pd.DataFrame) -> str:
    """Which step is worth its cost in one condition (generated): the cheapest design measurably
    better than dense (fewest LLM calls, then lowest latency), and the best design that calls an LLM
    against the best that does not."""
    better = g[(g.mrr_at_10_low.fillna(0) > 0) | (g.recall_at_5_low.fillna(0) > 0)]
    out = ""
    if not better.empty:
        cheap = better.sort_values(["llm_calls", "latency_median_s"]).iloc[0]
        out += (f". Cheapest measurably better step: {cheap.design} (MRR@10 {cheap.mrr_at_10:.3f}, "
                f"{cheap.llm_calls:.2f} LLM calls per question)")
    llm, plain = g[g.llm_calls.fillna(0) > 0], g[g.llm_calls.fillna(0) == 0]
    if not llm.empty and not plain.empty:
        bl, bp = llm.loc[llm.mrr_at_10.idxmax()], plain.loc[plain.mrr_at_10.idxmax()]
        verdict = "above" if bl.mrr_at_10 > bp.mrr_at_10 else "not above"
        out += (f". The best design calling an LLM, {bl.design} (MRR@10 {bl.mrr_at_10:.3f}, {bl.llm_calls:.2f} calls per "
                f"question), is {verdict} the best without one, {bp.design} ({bp.mrr_at_10:.3f})")
    return out


def build_index(report_dir: Path, results_dir: Path, profile: str, figures: list[Path], bench: Path | None = None,
                conditions: pd.DataFrame | None = None) -> Path:
    """Write ``report/index.html``; figures are copied next to it."""
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "figures").mkdir(exist_ok=True)
    imgs = []
    for f in figures:
        if f.exists():
            shutil.copy(f, report_dir / "figures" / f.name)
            imgs.append(f'<img src="figures/{f.name}" alt="{f.stem}" style="max-width:100%">')
    table = headline_table(results_dir).to_html(index=False, escape=True, border=0, classes="headline")
    links = "\n".join(f'<li><a href="{nb}.html">{title}</a></li>' for nb, title in notebook_titles().items()
                      if (report_dir / f"{nb}.html").exists())
    bench_html = speed_section(bench) if bench is not None and bench.exists() else ""
    cond_html = ""
    if conditions is not None and not conditions.empty:
        cond_html = ("<h2>Every condition</h2><p>Each design against dense <i>in the same condition</i> (the same "
                     "questions): full questions as the article wrote them, their 2-5 keyword short forms, "
                     "questions answered only by two papers together, and both question forms searched over the whole "
                     "snapshot instead of the drawn collection (for two-part questions, recall@5 is the share of the two "
                     "papers in the top 5, MRR@10 is 1/rank of the second-found paper, and both found @10 is the share "
                     "of questions with both papers in the top 10).</p>"
                     + condition_html(conditions) + "<h3>Per condition, the answer</h3>" + condition_answer(conditions)
                     + power_html(results_dir))
    style = ("body{font-family:system-ui,sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;line-height:1.45}"
             "table{border-collapse:collapse;font-size:13px}td,th{padding:4px 8px;border-bottom:1px solid #ddd;"
             "text-align:left;vertical-align:top}img{max-width:100%}")
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>Does an agent that can search again find better evidence?</title><style>{style}</style></head><body>
<h1>Does an agent that can search again find better evidence than plain search?</h1>
<p>Profile <b>{html.escape(profile)}</b>. {html.escape(intro_note(profile))} The scores on this page are computed from the saved runs by the scores notebook;
the speed figures come from the benchmark (<code>make bench</code>, <code>results/bench.json</code>).</p>
{cond_html}
<h2>Headline: the article's conditions (full questions, the default collection)</h2>{table}
<p><b>[95% range]</b>: the middle 95% of 2,000 paired bootstrap resamples of the questions of the design's score minus
dense's; a range that excludes 0 is a difference the question sample alone would not produce. The article's columns
give its published figures (<code>data/article_figures.json</code> says where each comes from; ≈: derived from its
published differences); its embedder, reranker, LLM and questions differ from the offline profile's.</p>
<h2>The answer the numbers support</h2><p>{_md_bold(plain_answer(results_dir))}</p>
<h2>Charts</h2>{''.join(imgs)}
<h2>Which models and backends produced each run</h2><ul>{_provenance_lines(results_dir)}</ul>
<h2>What differs from the article</h2><ul>{_differences(profile)}</ul>
{bench_html}
<h2>The notebooks</h2><ol style="list-style:none;padding-left:0">{links}</ol>
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


def speed_section(bench: Path) -> str:
    """The benchmark's figures as a readable table: step, what was measured, time, and the limit."""
    b = json.loads(bench.read_text())
    rows = "".join(
        f"<tr><td>{html.escape(step)}</td><td>{html.escape(what)}</td>"
        f"<td>{html.escape(str(b['steps'][k].get('summary', '')))}</td><td>{html.escape(limit)}</td></tr>"
        for k, (step, what, limit) in BENCH_STEPS.items() if k in b.get("steps", {}))
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
