"""What the design notebooks display: the run's outcome, the summary of the saved runs and which
profile, models and backend produced each run (one place for notebooks 03-06)."""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown, display

from .. import pipeline
from ..config import shown_path

# the settings each page shows in its short settings table (the injected parameters are hidden)
PAGE_SETTINGS = ("question_form", "embedder", "dense_k")


_TABLES_READY = False


def offline_tables() -> None:
    """Put the interactive-table library into the page once, before its first whole table, so the
    rendered HTML needs no network (itables' offline mode)."""
    global _TABLES_READY
    if not _TABLES_READY:
        import itables

        itables.init_notebook_mode(all_interactive=False, connected=False)
        _TABLES_READY = True


def open_page(profile, *settings: str) -> None:
    """A notebook page's start: numbers rounded for reading, interactive whole tables, and the run's
    settings as a short table (instead of the injected parameters cell, which the HTML hides)."""
    pd.set_option("display.precision", 3)
    pd.set_option("display.max_colwidth", None)  # whole questions, never cut mid-word
    offline_tables()
    rows = [("profile", profile.name), ("results folder", shown_path(pipeline.results_dir(profile)))]
    rows += [(k, profile.settings[k]) for k in dict.fromkeys(PAGE_SETTINGS + settings)]
    rows += [(f"override: {k}", v) for k, v in profile.overrides.items()]
    display(pd.DataFrame([(k, str(v)) for k, v in rows], columns=["setting", "value"]).style.hide(axis="index"))


def whole_table(df: pd.DataFrame, profile, name: str, caption: str = "") -> None:
    """A long table shown whole and browsable (sortable, searchable, paged in the HTML), with the same
    rows saved as a CSV beside the rendered page."""
    import itables

    path = profile.report_dir / "tables" / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    display(Markdown(f"{len(df)} rows; the same rows as CSV: [tables/{name}.csv](tables/{name}.csv)"))
    offline_tables()
    itables.show(df, caption=caption or None, pageLength=10, lengthMenu=[10, 25, 100, -1], maxBytes=0)


def reading(text: str) -> None:
    """The page's closing reading, generated from its numbers."""
    display(Markdown(f"**Reading.** {text}"))


def design_page(profile, name: str, runs=None) -> dict:
    """Run (or resume) a design, then show its summary, what the LLM wrote for the first questions
    (LLM designs), provenance, and a reading generated from the numbers; returns what it showed."""
    open_page(profile, *pipeline.design_class(name).settings)
    page = pipeline.design_page(profile, name, runs=runs)
    display(Markdown("## Summary of the saved runs\nScores over the reviewed questions this design answered in "
                     "its complete runs; the comparison with ranges is in the scores notebook. For LLM calls the "
                     "latency is the model's time when the call was made (a replay reports the recorded time)."))
    summary = page["summary"]
    display(summary.style.hide(axis="index").format(precision=3) if not summary.empty else summary)
    if pipeline.design_class(name).uses_llm and page["runs"]:
        first_run = min(page["runs"])
        shown = page["runs"][first_run][:5]
        display(Markdown(f"## What the model wrote, exactly as written: the first {len(shown)} questions, run {first_run}"))
        display(pd.DataFrame([{"qid": r.qid, "question": r.queries[0],
                               "queries written": " | ".join(r.queries[1:]) or "(none)",
                               "ended by": r.stop_reason or "-"} for r in shown]).style.hide(axis="index"))
    display(Markdown("## Which profile, models and backend produced each saved run"))
    display(page["provenance"].style.hide(axis="index"))
    if not summary.empty:
        row = summary.iloc[0]
        runs_txt = f"{int(row['runs'])} complete run" + ("s" if row["runs"] > 1 else "")
        text = (f"{name} answered {int(row['questions'])} questions in {runs_txt}: recall@5 {row['recall_at_5']:.3f}, "
                f"MRR@10 {row['mrr_at_10']:.3f}, {row['searches']:.2f} searches per question, median latency "
                f"{row['latency_median_s']:.2f} s")
        if row["llm_calls"]:
            text += (f", {row['llm_calls']:.2f} LLM calls per question"
                     + (f", {row['cost_usd_per_q']:.5f} USD per question" if row["cost_usd_per_q"] else
                        " (a local model: no fee)"))
        reading(text + ". Whether that differs from dense is measured in the scores notebook.")
    else:
        reading(f"{name} has no complete saved run yet.")
    return page


def reranker_report(profile) -> dict:
    """Notebook 04's report before the scores: how the offline cross-encoder was trained, and every
    rerank variant tried on the dev set (never on the bundled questions), with the one chosen."""
    import json

    import pandas as pd

    from ..config import ROOT, load_profile

    out = {}
    training = ROOT / profile.reranker / "training.json"
    if profile.reranker_backend == "trained-in-project" and training.exists():
        info = json.loads(training.read_text())
        out["training"] = pd.DataFrame([
            ("training queries (paper titles as pseudo-queries)", info["training_data"]["train_queries"]),
            ("negatives per query (dense top 50, hard)", info["settings"]["negatives_per_query"]),
            ("training papers first listed", " to ".join(info["training_data"]["first_seen_range"])),
            ("training time (s, 2 CPU threads)", info["train_seconds"]),
            ("loss, first 20 steps / last 20 steps (chance)",
             f"{info['loss_first_20']:.3f} / {info['loss_last_20']:.3f} ({info['loss_chance']:.3f})"),
            ("held-out title queries: MRR@10 dense / reranked",
             f"{info['heldout']['dense_mrr_at_10']:.3f} / {info['heldout']['rerank_mrr_at_10']:.3f}"),
        ], columns=["cross-encoder training", "value"])
        display(Markdown("### The cross-encoder trained here (the first model; `docs/reranker.md` records the "
                         "second, trained on abstract sentences)"))
        display(out["training"].style.hide(axis="index"))
    dev = load_profile("dev").results_dir
    sel_path, table_path = dev / "rerank_selection.json", dev / "rerank_selection.csv"
    if not sel_path.exists():
        display(Markdown("No dev selection saved yet (`python scripts/select_reranker.py`)."))
        return out
    sel, table = json.loads(sel_path.read_text()), pd.read_csv(table_path)
    out["selection"], out["variants"] = sel, table
    display(Markdown(f"### Variants tried on the dev set ({sel['questions']} questions, pre-window papers)\n"
                     f"Each reorders the same dense top {profile.rerank_k}. Rule: {sel['rule']}."))
    whole_table(table.round(3), profile, "rerank_dev_variants", "every rerank variant tried on the dev set")
    c, d = sel["chosen"], sel["dense"]
    verdict = "beats" if c["mrr_at_10"] > d["mrr_at_10"] else "does not beat"
    text = (f"On the dev set the chosen rerank step ({c['variant']}) reaches MRR@10 {c['mrr_at_10']:.3f} against "
            f"dense's {d['mrr_at_10']:.3f} and recall@5 {c['recall_at_5']:.3f} against {d['recall_at_5']:.3f}: it "
            f"{verdict} dense on dev.")
    for model, ov in sel.get("cross_encoders", {}).items():
        if not ov["eligible"]:
            text += (f" The cross-encoder {model} was trained on papers that include "
                     f"{ov['dev_collection_papers_in_training']} of the dev collection, so variants using it were "
                     "not eligible.")
    dev_profile = load_profile("dev", rerank_weights=profile.rerank_weights, rerank_k=profile.rerank_k)
    if dev_profile.results_dir == dev and (dev / "rerank").exists():
        from ..evaluation import scores

        sc = pipeline.load_scored(dev_profile)
        if not sc.pq.empty and {"dense", "rerank"} <= set(sc.pq.design):
            d = scores.deltas(sc.pq[sc.pq.design.isin(["dense", "rerank"])], profile.bootstrap_resamples,
                              profile.bootstrap_seed)
            out["dev_deltas"] = d
            display(Markdown("The chosen step run as the rerank design on the dev questions, against dense "
                             "(paired bootstrap, 95% range):"))
            display(d.style.hide(axis="index").format(precision=3))
            mrr = d[d.metric == "mrr_at_10"].iloc[0]
            text += (f" As a design on the {len(sc.common)} dev questions: MRR@10 {mrr.delta:+.3f} "
                     f"[{mrr.low:+.3f}, {mrr.high:+.3f}] against dense.")
    display(Markdown(text))
    out["sentence"] = text
    return out
