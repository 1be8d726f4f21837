"""From saved runs to the report's numbers: per-design summaries, paired deltas against dense,
headroom, wins and losses, and the drift check against the expected scores (the 2CR practice:
Lin et al. 2022, "Building a culture of reproducibility in academic research")."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..designs import BASELINE, design_names, llm_design_names
from ..errors import DataError
from ..runs import RecordCheck, read_checked, run_files
from .metrics import PERMUTATIONS, holm, paired_bootstrap, paired_test, per_question

METRICS = ("recall_at_5", "mrr_at_10")
ALPHA = 0.05  # a comparison is measurable when its Holm-adjusted p-value is below this
# the family Holm's correction runs over on the index (queries.condition_table): every comparison it shows
INDEX_FAMILY = "every design minus dense, on recall@5 and MRR@10, in every condition of the index"
DESIGN_ORDER = tuple(design_names())


def load_runs(results_dir: Path, designs=DESIGN_ORDER, check: RecordCheck | None = None) -> list:
    """Every saved result under ``results_dir/<design>/run<k>.jsonl``; a file with a qid twice is
    refused, and with ``check`` every record is checked before it is counted (an error names the
    file, line, qid and field)."""
    out = []
    for d in designs:
        for path in run_files(results_dir, d):
            out.extend(read_checked(path, d, check))
    return out


def partial_runs(pq: pd.DataFrame, n_questions: int | None = None) -> list[tuple[str, int]]:
    """(design, run) pairs stopped part-way: fewer questions answered than ``n_questions`` (all the
    scored questions) or, when that is not given, than the design's fullest run. They are saved and
    marked, and left out of the scores rather than shrinking every comparison."""
    counts = pq.groupby(["design", "run"])["qid"].nunique()
    most = counts.groupby(level="design").max()
    return [(d, int(r)) for (d, r), n in counts.items() if n < (n_questions if n_questions else most[d])]


def scored_runs(pq: pd.DataFrame, n_questions: int | None = None) -> pd.DataFrame:
    """The saved results without the partial runs."""
    drop = set(partial_runs(pq, n_questions))
    keep = [(d, r) not in drop for d, r in zip(pq["design"], pq["run"])]
    return pq[keep]


def complete_questions(pq: pd.DataFrame, qids: list[str]) -> list[str]:
    """Questions that every scored run of every design has answered (paired comparisons need them)."""
    have = scored_runs(pq, len(qids)).groupby(["design", "run"])["qid"].apply(set)
    common = set(qids)
    for s in have:
        common &= s
    return [q for q in qids if q in common]


def run_scores(pq: pd.DataFrame) -> pd.DataFrame:
    """One row per design and run: means over questions (the citation hit rate ``cited`` for the
    designs that cite papers), and usage (results/scores.csv)."""
    g = pq.groupby(["design", "run"])
    df = g.agg(questions=("qid", "count"), recall_at_5=("recall_at_5", "mean"), mrr_at_10=("mrr_at_10", "mean"),
               searches=("searches", "mean"), latency_median_s=("latency_s", "median"),
               latency_p90_s=("latency_s", lambda x: float(np.quantile(x, 0.9))), llm_calls=("llm_calls", "mean"),
               tokens_in=("tokens_in", "mean"), tokens_out=("tokens_out", "mean"), cost_usd=("cost_usd", "mean"),
               cost_total_usd=("cost_usd", "sum"), **_cited(pq)).reset_index()
    return _ordered(df)


def _cited(pq: pd.DataFrame) -> dict:
    """The citation hit rate's aggregation (``cited``: the share of questions whose source the design
    cited; NaN for designs that cite nothing), where the rows carry it."""
    return {"cited": ("cited", "mean")} if "cited" in pq else {}


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["_o"] = df["design"].map({d: i for i, d in enumerate(DESIGN_ORDER)})
    return df.sort_values(["_o", "run"] if "run" in df else ["_o"]).drop(columns="_o").reset_index(drop=True)


def design_summary(pq: pd.DataFrame) -> pd.DataFrame:
    """Per design: mean over runs with the lowest and highest run, searches, latency, cost."""
    rs = run_scores(pq)
    rows = []
    for d, g in rs.groupby("design", sort=False):
        sub = pq[pq.design == d]
        row = {"design": d, "runs": len(g), "questions": int(g["questions"].iloc[0])}
        for m in METRICS:
            row[m] = g[m].mean()
            row[f"{m}_min"], row[f"{m}_max"] = g[m].min(), g[m].max()
        row.update({"searches": sub["searches"].mean(), "latency_median_s": sub["latency_s"].median(),
                    "latency_mean_s": sub["latency_s"].mean(),
                    "latency_p90_s": float(np.quantile(sub["latency_s"], 0.9)),
                    "llm_calls": sub["llm_calls"].mean(), "tokens_in": sub["tokens_in"].mean(),
                    "tokens_out": sub["tokens_out"].mean(), "cost_usd_per_q": sub["cost_usd"].mean(),
                    "cost_total_usd": g["cost_total_usd"].mean(),
                    "cited": float(sub["cited"].mean()) if "cited" in sub else float("nan")})
        for n in (1, 2, 3):
            row[f"searches_{n}"] = float((sub["searches"] == n).mean())
        rows.append(row)
    return _ordered(pd.DataFrame(rows))


def question_means(pq: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per question and design, the metric averaged over runs (qid x design)."""
    return pq.pivot_table(index="qid", columns="design", values=metric, aggfunc="mean")


def deltas(pq: pd.DataFrame, n_resamples: int = 2000, seed: int = 7, metrics=METRICS,
           n_permutations: int = PERMUTATIONS) -> pd.DataFrame:
    """Each design minus dense, paired on the same questions, with a 95% bootstrap range, the paired
    randomization test's two-sided p-value (``p_value``, :func:`metrics.paired_test`: exact, or where no exact
    distribution is computable ``n_permutations`` sign flips, the same seed; ``test`` says which, ``resamples``
    the bootstrap's) and Holm's correction over the rows of this table
    (``p_holm``; ``family`` names it; :func:`holm_family` redoes it over a larger family) with
    ``measurable`` = p_holm < ``ALPHA`` (results/deltas.csv)."""
    rows = []
    for m in metrics:
        table = question_means(pq, m)
        for d in DESIGN_ORDER:
            if d == BASELINE or d not in table:
                continue
            pair = table[[BASELINE, d]].dropna()
            a, b = pair[d].to_numpy(), pair[BASELINE].to_numpy()
            delta, lo, hi = paired_bootstrap(a, b, n_resamples, seed)
            p, test = paired_test(a, b, n_permutations, seed)
            rows.append({"design": d, "metric": m, "questions": len(pair), "delta": delta, "low": lo, "high": hi,
                         "includes_zero": bool(lo <= 0 <= hi), "p_value": p, "test": test, "resamples": n_resamples})
    out = pd.DataFrame(rows, columns=["design", "metric", "questions", "delta", "low", "high", "includes_zero", "p_value",
                                      "test", "resamples"])
    return holm_family(out, f"every design minus dense, on {' and '.join(metrics)}, in this table ({len(out)} tests)")


def holm_family(table: pd.DataFrame, family: str) -> pd.DataFrame:
    """``table`` (long: one test a row, ``p_value``) with Holm's correction over all its rows as one
    family: ``p_holm``, ``measurable`` (p_holm < ``ALPHA``) and ``family`` (its description, with the
    number of tests)."""
    out = table.copy()
    out["p_holm"] = holm(out["p_value"].to_numpy(dtype=float)) if len(out) else []
    out["measurable"] = out["p_holm"] < ALPHA
    out["family"] = family
    return out


def holm_wide(table: pd.DataFrame, metrics=METRICS, family: str = INDEX_FAMILY,
              left_out: pd.Series | None = None) -> pd.DataFrame:
    """A table with one comparison per row and measure (``<metric>_p_value``, as the condition table
    holds them) with Holm's correction over every row and measure together: ``<metric>_p_holm`` and
    ``<metric>_measurable`` (p_holm < ``ALPHA``; False where there is no test), and ``holm_family``
    (its description, with the number of tests). Rows where ``left_out`` is True (rows the tables leave
    out, such as an escalate that never escalates and so repeats hybrid_rerank) keep their p-value but
    are in no family: no ``p_holm``, never measurable."""
    out = table.copy()
    cols = [f"{m}_p_value" for m in metrics]
    for c in cols:
        if c not in out:
            out[c] = np.nan
    p = out[cols].to_numpy(dtype=float).copy()
    if left_out is not None and len(out):
        p[np.asarray(left_out, dtype=bool)] = np.nan
    adj = holm(p.ravel()).reshape(p.shape) if p.size else p
    for i, m in enumerate(metrics):
        out[f"{m}_p_holm"] = adj[:, i] if len(out) else []
        out[f"{m}_measurable"] = out[f"{m}_p_holm"] < ALPHA
    out["holm_family"] = f"{family} ({int(np.sum(~np.isnan(p)))} tests)"
    return out


def graded_table(pq: pd.DataFrame, n_resamples: int = 2000, seed: int = 7) -> pd.DataFrame:
    """With graded judgements (a study of your own data): each design's nDCG@10 (Järvelin &
    Kekäläinen 2002; ``lib.evaluation.metrics.ndcg_at_k``) and its paired difference from dense; empty
    when no question is scored by judgements."""
    if "ndcg_at_10" not in pq or pq["ndcg_at_10"].isna().all():
        return pd.DataFrame()
    means = pq.groupby("design")["ndcg_at_10"].mean()
    d = deltas(pq, n_resamples, seed, metrics=("ndcg_at_10",)).set_index("design")
    rows = [{"design": k, "ndcg_at_10": float(means[k]),
             **({"delta": d.delta[k], "low": d.low[k], "high": d.high[k]} if k in d.index else {})}
            for k in DESIGN_ORDER if k in means.index]
    return pd.DataFrame(rows)


def breakdown(pq: pd.DataFrame, groups: dict[str, str], n_resamples: int = 2000, seed: int = 7) -> pd.DataFrame:
    """Each design minus dense within groups of questions (``groups``: qid -> group name), with the
    number of questions in the group, both means and the paired bootstrap range."""
    rows = []
    for m in METRICS:
        table = question_means(pq, m)
        for g in sorted(set(groups.values()), key=str):
            sub = table[table.index.map(lambda q: groups.get(q) == g)]
            for d in table.columns:
                pair = sub[list(dict.fromkeys([BASELINE, d]))].dropna()
                if pair.empty:
                    continue
                row = {"group": g, "design": d, "metric": m, "questions": len(pair), "mean": pair[d].mean()}
                if d != BASELINE:
                    delta, lo, hi = paired_bootstrap(pair[d].to_numpy(), pair[BASELINE].to_numpy(), n_resamples, seed)
                    row.update({"delta": delta, "low": lo, "high": hi})
                rows.append(row)
    return pd.DataFrame(rows)


def length_bins(questions, n_bins: int = 3) -> dict[str, str]:
    """qid -> a question-length bin (terciles of the word count), named by its word range."""
    words = pd.Series({q.qid: len(q.text.split()) for q in questions})
    bins = pd.qcut(words.rank(method="first"), n_bins, labels=False)
    out = {}
    for b in range(n_bins):
        members = words[bins == b]
        name = f"{b + 1}: {members.min()}-{members.max()} words"
        out.update({q: name for q in members.index})
    return out


def headroom(pq: pd.DataFrame) -> dict:
    """How far dense is from a perfect recall@5, the largest gain any design can make: 1 minus dense's
    recall@5. With one relevant document a question that is the share of questions dense misses at 5;
    with several, a question whose top 5 holds some of them has room too (``dense_incomplete_at_5``:
    questions missing at least one, ``dense_misses_at_5``: missing all)."""
    dense = pq[pq.design == BASELINE]
    n = len(dense)
    recall = float(dense["recall_at_5"].mean()) if n else float("nan")
    misses = int((dense["recall_at_5"] == 0).sum())
    incomplete = int((dense["recall_at_5"] < 1).sum())
    # one relevant document a question: the gain is the misses' share, computed as such (no rounding apart)
    gain = (misses / n if incomplete == misses else 1.0 - recall) if n else float("nan")
    return {"questions": int(n), "dense_misses_at_5": misses, "dense_incomplete_at_5": incomplete,
            "dense_recall_at_5": recall, "max_recall_gain": gain,
            "dense_misses_at_10": int((dense["mrr_at_10"] == 0).sum())}


def wins_losses(pq: pd.DataFrame) -> pd.DataFrame:
    """Per design and run: questions found at 5 by it and not by dense (wins), and the reverse."""
    dense = pq[pq.design == BASELINE].set_index("qid")["recall_at_5"]
    rows = []
    for (d, run), g in pq[pq.design != BASELINE].groupby(["design", "run"]):
        r = g.set_index("qid")["recall_at_5"]
        common = r.index.intersection(dense.index)
        rows.append({"design": d, "run": run, "wins": int(((r[common] == 1) & (dense[common] == 0)).sum()),
                     "losses": int(((r[common] == 0) & (dense[common] == 1)).sum())})
    return _ordered(pd.DataFrame(rows)) if rows else pd.DataFrame(columns=["design", "run", "wins", "losses"])


def losses_by_runs(pq: pd.DataFrame) -> pd.DataFrame:
    """For LLM designs: questions dense finds at 5 that the design lost in 1, 2 or all 3 runs."""
    dense = pq[pq.design == BASELINE].set_index("qid")["recall_at_5"]
    rows = []
    for d in llm_design_names():
        g = pq[pq.design == d]
        if g.empty:
            continue
        lost = g[g["recall_at_5"] == 0].groupby("qid")["run"].nunique()
        lost = lost[lost.index.isin(dense[dense == 1].index)]
        rows.append({"design": d, "runs": int(g["run"].nunique()),
                     **{f"lost_in_{n}_runs": int((lost == n).sum()) for n in (1, 2, 3)}})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- drift (2CR)
def check_drift(summary: pd.DataFrame, expected_path: Path, tol: float = 1e-6) -> pd.DataFrame:
    """Compare each design's scores with the checked-in expected scores; one row per value."""
    expected = json.loads(Path(expected_path).read_text())
    rows = []
    for _, r in summary.iterrows():
        exp = expected.get("designs", {}).get(r["design"])
        for m in METRICS:
            want = None if exp is None else exp.get(m)
            got = float(r[m])
            rows.append({"design": r["design"], "metric": m, "expected": want, "got": got,
                         "drift": None if want is None else got - want,
                         "status": "no expectation" if want is None else ("ok" if abs(got - want) <= tol else "DRIFT")})
    return pd.DataFrame(rows)


def expected_from(summary: pd.DataFrame, profile: str) -> dict:
    return {"profile": profile, "designs": {r["design"]: {m: round(float(r[m]), 6) for m in METRICS}
                                            | {"questions": int(r["questions"]), "runs": int(r["runs"])}
                                            for _, r in summary.iterrows()}}


@dataclass
class Scored:
    """What the scores are computed from: the reviewed questions, every saved per-question row,
    and the rows and results that are scored (complete runs, questions every one of them answered)."""

    questions: list
    pq_all: pd.DataFrame
    partial: list[tuple[str, int]]
    common: list[str]
    pq: pd.DataFrame
    results: list


def load_scored(questions: list, results_dir: Path, check: RecordCheck | None = None, designs=DESIGN_ORDER,
                baseline: bool = True) -> Scored:
    """Saved runs of ``designs`` under ``results_dir`` for these questions, restricted the one way every
    table of the report uses. Runs saved without a complete baseline run are refused with what is
    missing (``baseline=False``: a folder that holds no baseline of its own, such as another model's
    runs, which are compared with the condition's dense)."""
    results = load_runs(results_dir, designs, check=check)
    pq_all = per_question(results, {q.qid: q.source_id for q in questions})
    if pq_all.empty:
        return Scored(questions, pq_all, [], [], pq_all, [])
    base = pq_all[pq_all.design == BASELINE].groupby("run")["qid"].nunique()
    if baseline and not (base >= len(questions)).any():
        have = int(base.max()) if len(base) else 0
        raise DataError(f"{Path(results_dir) / BASELINE}: the baseline ({BASELINE}) has no complete run "
                        f"({have} of {len(questions)} questions answered), so no design can be compared with it; "
                        f"run it first: python scripts/run_designs.py <profile> {BASELINE}")
    partial = partial_runs(pq_all, len(questions))
    common = complete_questions(pq_all, [q.qid for q in questions])
    keep = set(common)
    pq = scored_runs(pq_all, len(questions))
    pq = pq[pq.qid.isin(keep)].copy()
    scored = [r for r in results if r.qid in keep and (r.design, r.run) not in set(partial)]
    return Scored(questions, pq_all, partial, common, pq, scored)


def family_from(deltas_table: pd.DataFrame, conditions: pd.DataFrame, condition: str | None) -> pd.DataFrame:
    """One condition's :func:`deltas` with Holm's correction taken from the condition table (``holm_wide``
    over every comparison of every condition, the index's family) in place of the table's own: its
    ``p_holm``, ``measurable`` and ``family`` for the same design and measure. Unchanged when the
    condition is not in the table."""
    if condition is None or conditions.empty or condition not in set(conditions.condition):
        return deltas_table
    rows = conditions[conditions.condition == condition].set_index("design")
    out = deltas_table.copy()
    out["p_holm"] = [rows.at[d, f"{m}_p_holm"] if d in rows.index else np.nan for d, m in zip(out.design, out.metric)]
    out["measurable"] = out["p_holm"] < ALPHA
    out["family"] = rows["holm_family"].iloc[0]
    return out


def comparisons(conditions: pd.DataFrame, metrics=METRICS) -> pd.DataFrame:
    """The condition table's tests against dense, one row per condition, design and measure: the
    difference, its paired bootstrap range, ``p_value``, ``p_holm`` (over the table's family, named in
    ``family``), ``measurable``, and how they were computed: ``test`` (:func:`metrics.paired_test`) and the
    bootstrap's ``resamples`` (results/comparisons.csv; the pages' method sentences are read from these)."""
    rows = []
    if conditions.empty or "holm_family" not in conditions:
        return pd.DataFrame(rows)
    for r in conditions.to_dict(orient="records"):
        for m in metrics:
            if pd.isna(r.get(f"{m}_p_value")) or pd.isna(r.get(f"{m}_p_holm")):  # no test, or left out of the family
                continue
            rows.append({"condition": r["condition"], "design": r["design"], "metric": m,
                         "questions": r["questions"], "delta": r[f"{m}_delta"], "low": r[f"{m}_low"],
                         "high": r[f"{m}_high"], "p_value": r[f"{m}_p_value"], "p_holm": r[f"{m}_p_holm"],
                         "measurable": bool(r[f"{m}_measurable"]), "family": r["holm_family"],
                         "test": r.get(f"{m}_test"), "resamples": r.get(f"{m}_resamples")})
    return pd.DataFrame(rows)
