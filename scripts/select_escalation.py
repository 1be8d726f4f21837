"""Choose escalate's confidence signal and threshold on the dev set (docs/escalation.md), never on
the bundled questions.

Probes every dev question in both forms with escalation forced on (escalate_threshold above every
signal; the runs go to the dev profile's variants folders and resume), then applies the rule of
``lib.evaluation.escalation``. Writes results/dev/escalation_selection.json and escalation_sweep.csv.
Usage: LLM_BACKEND=local python scripts/select_escalation.py   (replay reads the recorded probe)
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import pandas as pd  # noqa: E402

from lib import pipeline  # noqa: E402
from lib.config import load_profile, shown_path  # noqa: E402
from lib.evaluation import escalation  # noqa: E402
from lib.io import write_json, write_text  # noqa: E402

PROBE_THRESHOLD = 1e9  # above every signal: every question escalates
PROBE_SIGNAL = "margin"  # any: with that threshold the signal decides nothing (all three are recorded)
FORMS = ("full", "short")

tables = []
for form in FORMS:
    cfg = load_profile("dev", escalate_threshold=PROBE_THRESHOLD, escalate_signal=PROBE_SIGNAL, question_form=form,
                       llm_backend=os.environ.get("LLM_BACKEND"))
    parts = pipeline.ProfileParts(cfg)
    qs = pipeline.scored_questions(cfg, parts.papers)
    results = pipeline.run_many(cfg, ["escalate"], [1])[1]["escalate"]
    if len(results) < len(qs):
        sys.exit(f"dev {form}: the probe covers {len(results)} of {len(qs)} questions; run it to the end first")
    table = escalation.probe_table(results, {q.qid: q.source_id for q in qs})
    tables.append(table.assign(form=form))
    print(f"dev {form}: probe of {len(results)} questions in {shown_path(cfg.results_dir)}")

table = pd.concat(tables, ignore_index=True)
swept = escalation.sweep(table)
choice = escalation.choose(swept)
out = load_profile("dev").results_dir
write_text(out / "escalation_sweep.csv", swept.round(6).to_csv(index=False))
write_json(out / "escalation_selection.json", {
    "choice": choice, "rule": escalation.__doc__.split("Choice,")[1].strip(), "rates": list(escalation.RATES),
    "tie": escalation.TIE, "questions": {f: int((table["form"] == f).sum()) for f in FORMS},
    "probe": {"first_mrr@10": float(table["first_mrr"].mean()), "escalated_mrr@10": float(table["esc_mrr"].mean()),
              "helped": int((table["esc_mrr"] > table["first_mrr"]).sum()),
              "hurt": int((table["esc_mrr"] < table["first_mrr"]).sum())}})
print(swept.round(4).to_string(index=False))
print(f"chosen: escalate_signal {choice['signal']}, escalate_threshold {choice['threshold']:.6g} "
      f"(escalates {choice['escalated']:.0%} of dev questions; MRR@10 {choice['mrr@10']:.3f})")
