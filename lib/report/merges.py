"""Other merges of the agent's lists beside RRF, for the agent notebook (docs/merge.md): the saved
table (``results/merges.csv``, ``scripts/select_merge.py --conditions``) and the dev choice
(``results/dev/merge_selection.json``) shown as a table and a reading generated from
``lib.evaluation.merges.merge_findings``."""
from __future__ import annotations

import json

import pandas as pd

from ..config import load_profile
from ..evaluation.merges import ARM_NAMES, merge_findings
from .display import with_range
from .pages import reading, show

RULE_WORDS = {"rrf": "RRF (the article's)", "question_first": "the question's list first",
              "best_score": "best score", "weighted_rrf_w2": "weighted RRF, w = 2",
              "weighted_rrf_w4": "weighted RRF, w = 4", "weighted_rrf_w8": "weighted RRF, w = 8"}
MEASURES = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}


def merges_table(table: pd.DataFrame, design: str = "agent") -> pd.DataFrame:
    """Per condition and rule (the runs' mean): each measure minus dense with its range and p-value,
    the dev choice marked."""
    rows = []
    g = table[(table.design == design) & (table.run.astype(str) == "mean")]
    for r in g.itertuples():
        row = {"condition": r.condition, "merge rule": RULE_WORDS.get(r.merge_rule, r.merge_rule)
               + (" (chosen on dev)" if r.chosen_on_dev else ""), "questions": r.questions}
        for m, label in MEASURES.items():
            row[label] = getattr(r, m)
            row[f"{label} − dense [95% range]"] = with_range(getattr(r, f"{m}_delta"), getattr(r, f"{m}_low"),
                                                             getattr(r, f"{m}_high"))
            row[f"{label} p, uncorrected"] = getattr(r, f"{m}_p_value")  # no family: not the index's p
        rows.append(row)
    return pd.DataFrame(rows)


def merges_reading(findings: list[dict], choice: dict | None) -> str:
    """The section's reading, from the findings' numbers."""
    if not findings:
        return "No merge table is saved yet (`python scripts/select_merge.py --conditions` writes it)."
    out = []
    if choice:
        c = choice["choice"]
        out.append(f"On the {choice['questions']} dev questions ({choice['with_new_query']} with a new query) the rule "
                   f"chose {RULE_WORDS.get(c['arm'], c['arm'])} (MRR@10 {c['mrr_at_10']:.3f}; RRF "
                   f"{choice['arms']['rrf']['mrr_at_10']:.3f}, dense {choice['dense']['mrr_at_10']:.3f}).")
    if choice and choice["choice"]["arm"] == "question_first":
        out.append("With every list 50 deep, that rule returns dense's own top 10 for every question and run: the new "
                   "queries' finds all rank below 50. On dev, the best use of the agent's extra searches was to ignore "
                   "them.")
    for f in findings:
        rrf, best = f["rrf"], f["best"]
        bits = [f"In {f['condition']} ({f['questions']} questions), RRF puts the agent's MRR@10 "
                f"{with_range(rrf['delta'], rrf['low'], rrf['high'])} from dense"]
        if f["chosen"] and f["chosen"]["arm"] != "rrf":
            ch = f["chosen"]
            bits.append(f"the dev choice {with_range(ch['delta'], ch['low'], ch['high'])}")
        if best["arm"] not in ("rrf", (f["chosen"] or {}).get("arm")):
            bits.append(f"the best rule here, {RULE_WORDS.get(best['arm'], best['arm'])}, "
                        f"{with_range(best['delta'], best['low'], best['high'])}")
        other = f.get("best_other")
        if other and other["arm"] != best["arm"]:
            bits.append(f"the best of the others that let new finds move up, {RULE_WORDS.get(other['arm'], other['arm'])}, "
                        f"{with_range(other['delta'], other['low'], other['high'])}")
        above = [RULE_WORDS.get(a, a) for a in f["above_dense"]]
        out.append(", ".join(bits) + "; " + (f"above dense by its range: {', '.join(above)}." if above else
                                             "no rule lifts it above dense by its range."))
    return " ".join(out)


def merges_section(profile, design: str = "agent") -> pd.DataFrame:
    """Show the rules beside RRF in every condition (the saved table) and the generated reading; the
    table shown is returned (empty when nothing is saved)."""
    path = profile.results_dir / "merges.csv"
    sel = load_profile("dev").results_dir / "merge_selection.json"
    choice = json.loads(sel.read_text()) if sel.exists() else None
    if not path.exists():
        reading(merges_reading([], choice))
        return pd.DataFrame()
    table = pd.read_csv(path)
    table = table[table.merge_rule.isin(ARM_NAMES)]
    shown = merges_table(table, design)
    show(shown, profile=profile, decimals_for={"MRR@10 p, uncorrected": 4, "recall@5 p, uncorrected": 4})
    reading(merges_reading(merge_findings(table, design), choice))
    return shown
