"""Page 13's comparison of the query strategies in every condition: sub-question decomposition and HyDE
(``lib/designs/query_strategies.py``) beside the agent and multi-query, each against dense with its 95%
paired range and the Holm-corrected p of the index's family (:func:`lib.report.queries.condition_table`,
the same numbers as the index), two-part questions first (decomposition's own case); and the reading
generated from it by the report's one verdict rule (:func:`lib.report.index_numbers.verdict`)."""
from __future__ import annotations

import pandas as pd

from . import queries
from .display import fixed, p_words, with_range
from .index_numbers import overall, verdict
from .index_words import QUERY_STRATEGIES

# beside the strategies: the article's two LLM designs, which write their queries from what they see (agent)
# or up front (multi-query)
COMPARED = QUERY_STRATEGIES + ("multiquery", "agent")
FIRST_CONDITION = "two-part questions"
SHORT_VERDICTS = {"better": "measurably better", "worse": "measurably worse", "same": "no measurable difference",
                  "mixed": "better on one measure, worse on the other"}


def strategies_table(profile) -> pd.DataFrame:
    """Condition x design (decompose, hyde, multiquery, agent): runs, questions, recall@5 and MRR@10 minus
    dense with range and corrected p, model calls a question, median latency; two-part questions first."""
    _, base = queries.condition_of(profile)
    table = queries.condition_table(base)
    if table.empty or "design" not in table:
        return pd.DataFrame()
    t = table[table.design.isin(COMPARED) & (table.runs > 0)].copy()
    if t.empty:
        return pd.DataFrame()
    conditions = list(dict.fromkeys([c for c in t.condition if c == FIRST_CONDITION] + list(t.condition)))
    t["_c"] = t.condition.map({c: i for i, c in enumerate(conditions)})
    t["_d"] = t.design.map({d: i for i, d in enumerate(COMPARED)})
    rows = []
    for _, r in t.sort_values(["_c", "_d"]).iterrows():
        rows.append({"condition": r.condition, "design": r.design, "runs": int(r.runs), "questions": int(r.questions),
                     **{f"{m} − dense [95% range], p": with_range(r[f"{key}_delta"], r[f"{key}_low"], r[f"{key}_high"],
                                                                 p=r.get(f"{key}_p_holm"))
                        for m, key in (("recall@5", "recall_at_5"), ("MRR@10", "mrr_at_10"))},
                     "against dense": SHORT_VERDICTS.get(overall(r), "not compared"),
                     "model calls / q": round(float(r.llm_calls or 0), 2), "searches / q": round(float(r.searches), 2),
                     "latency median (s)": round(float(r.latency_median_s), 2)})
    return pd.DataFrame(rows)


def strategies_reading(profile) -> str:
    """The finding: for each condition (two-part first), which of the compared designs is measurably better
    than dense, or that none is, with the MRR@10 differences of the strategies; "" where nothing is scored."""
    _, base = queries.condition_of(profile)
    table = queries.condition_table(base)
    if table.empty or "design" not in table:
        return ""
    t = table[table.design.isin(COMPARED) & (table.runs > 0)]
    if not t[t.design.isin(QUERY_STRATEGIES)].shape[0]:
        return ""
    conditions = list(dict.fromkeys([c for c in t.condition if c == FIRST_CONDITION] + list(t.condition)))
    wins, lines = [], []
    for c in conditions:
        g = t[t.condition == c].set_index("design")
        better = [d for d in g.index if "better" in {verdict(g.loc[d], m) for m in ("recall_at_5", "mrr_at_10")}]
        wins += [(c, d) for d in better if d in QUERY_STRATEGIES]
        parts = [f"{d} {fixed(g.loc[d].mrr_at_10_delta, sign=True)}{_p(g.loc[d])}" for d in COMPARED if d in g.index]
        lines.append(f"{c}: " + ", ".join(parts))
    if wins:
        lead = "A query strategy beats dense: " + "; ".join(
            f"**{d}** on {c}" for c, d in wins) + " (measurably, by the Holm-corrected test of the index's family)."
    else:
        lead = ("**Neither query strategy is measurably better than dense in any condition**: with this model, "
                "decomposing the question or writing a hypothetical abstract does not write better queries than "
                "the question itself.")
    return lead + " MRR@10 minus dense — " + "; ".join(lines) + "."


def _p(row) -> str:
    p = p_words(row.get("mrr_at_10_p_holm"))
    return f" ({p})" if p else ""
