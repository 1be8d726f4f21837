"""What the design notebooks display: the run's outcome, the summary of the saved runs and which
profile, models and backend produced each run (one place for notebooks 03-06)."""
from __future__ import annotations

from IPython.display import Markdown, display

from .. import pipeline


def design_page(profile, name: str, runs=None) -> dict:
    """Run (or resume) a design, then show its summary and provenance; returns what it showed."""
    page = pipeline.design_page(profile, name, runs=runs)
    display(Markdown("## Summary of the saved runs\nScores over the reviewed questions this design answered in "
                     "its complete runs; the comparison with ranges is in the scores notebook. For LLM calls the "
                     "latency is the model's time when the call was made (a replay reports the recorded time)."))
    display(page["summary"])
    display(Markdown("Which profile, models and backend produced each saved run:"))
    display(page["provenance"])
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
        display(Markdown("### The cross-encoder trained here"))
        display(out["training"])
    dev = load_profile("dev").results_dir
    sel_path, table_path = dev / "rerank_selection.json", dev / "rerank_selection.csv"
    if not sel_path.exists():
        display(Markdown("No dev selection saved yet (`python scripts/select_reranker.py`)."))
        return out
    sel, table = json.loads(sel_path.read_text()), pd.read_csv(table_path)
    out["selection"], out["variants"] = sel, table
    display(Markdown(f"### Variants tried on the dev set ({sel['questions']} questions, pre-window papers)\n"
                     f"Each reorders the same dense top {profile.rerank_k}. Rule: {sel['rule']}."))
    display(table.round(3))
    ov = sel["cross_encoder_training_overlap"]
    c, d = sel["chosen"], sel["dense"]
    verdict = "beats" if c["mrr_at_10"] > d["mrr_at_10"] else "does not beat"
    text = (f"On the dev set the chosen rerank step ({c['variant']}) reaches MRR@10 {c['mrr_at_10']:.3f} against "
            f"dense's {d['mrr_at_10']:.3f} and recall@5 {c['recall_at_5']:.3f} against {d['recall_at_5']:.3f}: it "
            f"{verdict} dense on dev.")
    if not ov["eligible"]:
        text += (f" The cross-encoder's training papers include {ov['dev_collection_papers']} papers of the dev "
                 f"collection ({ov['dev_sources']} dev sources), so variants that use it were not eligible.")
    display(Markdown(text))
    out["sentence"] = text
    return out
