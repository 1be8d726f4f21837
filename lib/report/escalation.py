"""Notebook 8's report on bounded escalation: the signal chosen on the dev set (a chart of every
signal and rate tried) and, per condition, how often escalate called the agent, whether that helped
or hurt, and the model calls it saved against always running the agent."""
from __future__ import annotations

import json

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from .. import pipeline
from ..config import load_profile
from .display import styled
from .pages import reading, whole_table
from .plots import SMALL, _save
from . import queries


def sweep_chart(swept: pd.DataFrame, choice: dict, path):
    """Dev MRR@10 of the mixed answer minus never escalating (the first pass alone), against the share
    of questions escalated, one line per signal, the chosen point circled; and the questions helped
    minus hurt. Both axes of differences are centred on a zero line, so the differences show."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    base = swept.loc[swept["escalated"] == 0, "mrr@10"]
    base = float(base.iloc[0]) if len(base) else float(swept["mrr@10"].max())
    for signal, g in swept.groupby("signal", sort=False):
        g = g.sort_values("escalated")
        axes[0].plot(g["escalated"] * 100, g["mrr@10"] - base, marker="o", label=signal)
        axes[1].plot(g["escalated"] * 100, g["helped"] - g["hurt"], marker="o", label=signal)
    axes[0].scatter([choice["escalated"] * 100], [choice["mrr@10"] - base], s=180, facecolors="none",
                    edgecolors="black", label="chosen", zorder=3)
    axes[0].set_ylabel(f"dev MRR@10 minus never escalating\n(never escalating: {base:.3f})", fontsize=SMALL)
    axes[1].set_ylabel("questions helped minus hurt", fontsize=SMALL)
    for ax in axes:
        ax.axhline(0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("dev questions escalated (%)", fontsize=SMALL)
        ax.set_xlim(left=0)
        ax.tick_params(labelsize=SMALL)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=SMALL, loc="lower left")
    axes[0].set_title("choosing the signal on dev (full + short questions)", fontsize=10)
    axes[1].set_title("net questions helped by escalating", fontsize=10)
    return _save(fig, path)


def selection_report(profile) -> dict:
    """The dev choice of signal and threshold (``scripts/select_escalation.py``), as saved."""
    dev = load_profile("dev").results_dir
    sel_path, sweep_path = dev / "escalation_selection.json", dev / "escalation_sweep.csv"
    if not sel_path.exists():
        display(Markdown("No dev selection saved yet (`make escalation`)."))
        return {}
    sel, swept = json.loads(sel_path.read_text()), pd.read_csv(sweep_path)
    c, probe = sel["choice"], sel["probe"]
    rule = sel["rule"][:1].upper() + sel["rule"][1:]
    study = profile.collection_source == "documents"
    whose = ("\n\nThese are the arXiv study's dev questions (`results/dev/escalation_selection.json`), not this "
             "study's: this study runs the signal and threshold chosen there.") if study else ""
    dev_set = "the arXiv study's dev set" if study else "the dev set"
    display(Markdown(f"## The signal, chosen on {dev_set}\n{rule}{whose}\n\nDev questions probed: "
                     + ", ".join(f"{n} {f}" for f, n in sel["questions"].items()) + "."))
    fig = sweep_chart(swept, c, profile.figures_dir / "escalation_dev_sweep.png")
    display(fig)
    whole_table(swept.round(4), profile, "escalation_dev_sweep", "every signal and escalation rate tried on dev")
    n = sum(sel["questions"].values())
    text = (f"Escalating every dev question would give MRR@10 {probe['escalated_mrr@10']:.3f} against the first pass's "
            f"{probe['first_mrr@10']:.3f} (it helps {probe['helped']} and hurts {probe['hurt']} of {n} questions). ")
    if c["rate"] == 0:
        text += "No signal and rate beat never escalating, so the rule chose to escalate nothing."
    else:
        text += (f"The rule chose `{c['signal']}` below {c['threshold']:.4g}: it escalates {c['escalated']:.0%} of dev "
                 f"questions for MRR@10 {c['mrr@10']:.3f} ({c['helped']} helped, {c['hurt']} hurt).")
    mismatch = (profile.escalate_signal, round(profile.escalate_threshold, 6)) != (c["signal"], round(c["threshold"], 6))
    if mismatch:
        text += (f" This run uses `{profile.escalate_signal}` below {profile.escalate_threshold:.4g}, "
                 "not the dev choice.")
    reading(text)
    return {"selection": sel, "sweep": swept}


def outcomes_report(profile) -> pd.DataFrame:
    """Per condition: escalations, helped / hurt against the first pass, and model calls saved."""
    table = queries.escalation_outcomes(profile)
    display(Markdown("## How often it escalated, and what that did, per condition\n"
                     "Helped / hurt: the final MRR@10 against escalate's own first pass (hybrid_rerank), on the "
                     "escalated questions. Calls saved: escalate's LLM calls per question against the agent "
                     "design's in the same condition (always running the agent)."))
    if table.empty:
        reading("escalate has no complete saved run yet.")
        return table
    display(styled(table))
    parts = []
    for _, r in table.iterrows():
        saved = (f", {r.calls_saved_vs_agent:.0%} fewer LLM calls than always running the agent"
                 if pd.notna(r.calls_saved_vs_agent) else "")
        parts.append(f"{r.condition} (run {r.run}): escalated {r.escalated} of {r.questions} "
                     f"({r.escalated_share:.0%}); helped {r.helped}, hurt {r.hurt}{saved}")
    reading("; ".join(parts) + ".")
    return table
