# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: agentic-rag-evidence
#     language: python
#     name: agentic-rag-evidence
# ---

# %% [markdown] tags=["arxiv-only"]
# # 10. Scores
#
# *Does any design find the source paper more often, or higher, than plain dense search?*
#
# Per question: **recall@5** (the source paper is in the top 5) and **MRR@10** (1 / its rank if
# within 10, else 0). Per design: the mean over questions; for the LLM designs, the mean over runs
# with the lowest and highest run. Each design is compared with dense **on the same questions**: a
# paired bootstrap of design minus dense (the profile's number of resamples of the questions, 95%
# percentile range, fixed seed; for LLM designs the per-question value is the mean over runs).
# **[95% range]** is the range that holds the middle 95% of those resampled differences: when it
# excludes 0, the difference is larger than the question sample alone would produce. Beside each
# range, the paired randomization test's two-sided **p-value** (the per-question differences'
# signs flipped; Smucker et al. 2007; how they were computed is said under the tests against dense
# below) and **Holm's correction** over the family of
# comparisons the index makes (every design minus dense, on both measures, in every condition):
# a difference is *measurable* when its Holm-adjusted p-value is below 0.05. Only questions
# that passed review, and that every complete run of every design answered, are scored.

# %% [markdown] tags=["study-only"]
# # 10. Scores
#
# *Does any design find a relevant document more often, or higher, than plain dense search?*
#
# Per question: **recall@5** (the share of its relevant documents in the top 5) and **MRR@10** (1 / the
# rank of the first relevant document if within 10, else 0; with graded judgements, also **nDCG@10**).
# Per design: the mean over questions; for the LLM designs, the mean over runs with the lowest and
# highest run. Each design is compared with dense **on the same questions**: a
# paired bootstrap of design minus dense (the profile's number of resamples of the questions, 95%
# percentile range, fixed seed; for LLM designs the per-question value is the mean over runs).
# **[95% range]** is the range that holds the middle 95% of those resampled differences: when it
# excludes 0, the difference is larger than the question sample alone would produce. Beside each
# range, the paired randomization test's two-sided **p-value** (the per-question differences'
# signs flipped; Smucker et al. 2007; how they were computed is said under the tests against dense
# below) and **Holm's correction** over the family of
# comparisons the index makes (every design minus dense, on both measures, in every condition):
# a difference is *measurable* when its Holm-adjusted p-value is below 0.05. Only questions
# that passed review, and that every complete run of every design answered, are scored.

# %% tags=["parameters"]
profile = "offline"
question_form = None   # full | short

# %%
from IPython.display import Markdown, display

from lib import pipeline
from lib.report import queries
from lib.config import ROOT, shown_path
from lib.preflight import notebook_profile
from lib.evaluation import power, scores
from lib.io import write_json, write_text
from lib.report import loop as loop_report
from lib.report import plots, statistics_doc
from lib.report.display import design_namer, fixed, headroom_words, source_words
from lib.report.index_page import conditions_from, headline_table, without_idle_escalate
from lib.report.pages import lacking, open_page, reading, show, whole_table

cfg = notebook_profile(globals())
open_page(cfg, "bootstrap_resamples", "bootstrap_seed")
names = design_namer(cfg)
rdir = pipeline.results_dir(cfg)
sc = queries.load_scored(cfg)
qs, pq_all, pq, common, partial = sc.questions, sc.pq_all, sc.pq, sc.common, sc.partial
runs_saved = pq_all.groupby(["design", "run"]).qid.count().rename("questions answered").reset_index()
runs_saved["scored"] = [(d, r) not in set(partial) for d, r in zip(runs_saved.design, runs_saved.run)]
display(Markdown(f"**{len(qs)}** reviewed questions; **{len(common)}** answered by every scored run of every design "
                 f"and scored below. Runs stopped part-way are saved but not scored: "
                 f"{', '.join(f'{names(d)} run {r}' for d, r in partial) or 'none'}."))
show(runs_saved, profile=cfg)

# %% [markdown] tags=["arxiv-only"]
# ## Per design: scores, beside the article's
# The article's column: its reported value (its difference from dense and range in brackets;
# `data/article_figures.json` says where each comes from). Its parts differ from the offline ones.

# %% [markdown] tags=["study-only"]
# ## Per design: scores
# Each design's scores on the scored questions, and its difference from dense with its range.

# %%
summary = scores.design_summary(pq)
deltas = scores.deltas(pq, n_resamples=cfg.bootstrap_resamples, seed=cfg.bootstrap_seed)
head = scores.headroom(pq)
score_table = headline_table(rdir, conditions_from(summary.to_dict(orient="records"), deltas, head), cfg)
show(score_table.drop(columns=["searches / q", "cost / q (USD)", "latency median (s)"], errors="ignore"))

# %% [markdown] tags=["arxiv-only"]
# ## nDCG@10, where judgements are graded
# A study of your own data with graded judgements (`make study`, docs/your-data.md) is also scored by
# nDCG@10, each design beside dense with its paired 95% range; the arXiv study has one source per
# question and no grades.

# %% [markdown] tags=["study-only", "needs-graded"]
# ## nDCG@10, where judgements are graded
# With graded judgements (docs/your-data.md), every design is also scored by nDCG@10, each beside
# dense with its paired 95% range.

# %%
graded = scores.graded_table(pq, cfg.bootstrap_resamples, cfg.bootstrap_seed)
show(graded, profile=cfg) if not graded.empty else lacking("graded", "No graded judgements in this study.")

# %% [markdown]
# ## Per design: effort and cost
# Searches per question (and the share of questions with 1, 2 or 3 searches), latency per question
# (median and 90th percentile, seconds), LLM calls and tokens per question, cost per question (USD;
# the local model has no fee).

# %%
effort = summary[["design", "searches", "searches_1", "searches_2", "searches_3", "latency_median_s", "latency_p90_s",
                  "llm_calls", "tokens_in", "tokens_out", "cost_usd_per_q"]]
show(effort, profile=cfg, decimals_for={"tokens_in": 0, "tokens_out": 0, "cost_usd_per_q": 5})

# %% [markdown] tags=["arxiv-only"]
# ## The tool-calling loops' own measures
# Over the same scored questions (notebook 9 shows the loops step by step), for each loop design with
# a scored run (the model-first and the question-first loop) and the prompt it ran with: the share of
# questions whose citations include the source (the citation hit rate, also in the index's scores
# table), citations, papers read, searches and model turns per question, tokens, and how loops
# ended, with the caps the loops ran under.

# %% [markdown] tags=["study-only"]
# ## The tool-calling loops' own measures
# Over the same scored questions (notebook 9 shows the loops step by step), for each loop design with
# a scored run (the model-first and the question-first loop) and the prompt it ran with: the share of
# a question's relevant documents among its citations (the citation hit rate, also in the index's
# scores table), citations, documents read, searches and model turns per question, tokens, and how loops
# ended, with the caps the loops ran under.

# %%
loop_measures = loop_report.scores_section(cfg, sc)

# %% [markdown]
# ## Headroom and power

# %%
pw = power.power_table(pq)
display(Markdown(
    f"**Headroom.** Dense {headroom_words(head, source_words(cfg))}.\n\n**Power.** From the observed per-question "
    f"differences, {power.power_sentence(pw)}."))
show(pw, profile=cfg)

# %% [markdown]
# ## By question style and by question length
# Each design minus dense within each group, with the group's question count and its own range.

# %%
styles = {q.qid: q.style or "(none)" for q in qs}
by_style = scores.breakdown(pq, styles, cfg.bootstrap_resamples, cfg.bootstrap_seed)
by_length = scores.breakdown(pq, scores.length_bins([q for q in qs if q.qid in set(common)]),
                             cfg.bootstrap_resamples, cfg.bootstrap_seed)
whole_table(by_style, cfg, "by_style", "by question style")
whole_table(by_length, cfg, "by_length", "by question length (terciles of words)")

# %% [markdown]
# ## Wins and losses against dense
# A win: the source is in the design's top 5 and not in dense's; a loss: the reverse.

# %%
show(scores.wins_losses(pq), profile=cfg)
show(scores.losses_by_runs(pq), profile=cfg)

# %% [markdown]
# ## Charts

# %%
rs = scores.run_scores(pq)
plots.scores_chart(rs, cfg.figures_dir / f"{cfg.name}_scores.png", names=names)

# %%
plots.deltas_chart(deltas, cfg.figures_dir / f"{cfg.name}_deltas.png", names=names)

# %% [markdown] tags=["arxiv-only"]
# ## Every condition
# The same designs under harder conditions, each against dense in that condition: the questions'
# 2-5 keyword short forms, questions answered only by two papers together (recall@5 there is the
# share of the two papers in the top 5; MRR@10 is 1/rank of the second-found paper), and both question
# forms searched over the whole snapshot instead of the drawn collection. A run stopped part-way is
# saved and named, not scored.

# %% [markdown] tags=["study-only"]
# ## Every condition
# The same designs in every condition this study has (the questions as written, and their short forms
# where its questions have them), each against dense in that condition. A run stopped part-way is saved
# and named, not scored.

# %% [markdown]
# The charts of this section are the index's, drawn from the same table (escalate left out where it
# never escalates: its points would be hybrid_rerank's); the tables have every row.

# %%
conditions = queries.condition_table(cfg)
charted, _ = without_idle_escalate(conditions, cfg)
plots.conditions_chart(charted, cfg.figures_dir / f"{cfg.name}_conditions.png", names=names)

# %%
shown = ["condition", "design", "runs", "questions", "recall_at_5", "recall_at_5_delta", "recall_at_5_low",
         "recall_at_5_high", "recall_at_5_p_value", "recall_at_5_p_holm", "mrr_at_10", "mrr_at_10_delta",
         "mrr_at_10_low", "mrr_at_10_high", "mrr_at_10_p_value", "mrr_at_10_p_holm", "both_found_at_10",
         "searches", "latency_median_s", "llm_calls", "tokens", "not_scored"]
whole_table(conditions[[c for c in shown if c in conditions]] if not conditions.empty else conditions, cfg,
            "conditions", "every design in every condition (the CSV has every column)")

# %% [markdown]
# ## Tests against dense, corrected for every comparison the index makes
# Each design minus dense in this condition: the paired bootstrap range, the randomization test's
# p-value, and the p-value after Holm's correction over the family named in the last column (every
# design minus dense, both measures, every condition of the table above); *measurable* is a
# Holm-adjusted p-value below 0.05. The same columns are in `deltas.csv` and `summary.json`.

# %%
here = next((c for c, cp in queries.condition_profiles(cfg).items() if pipeline.results_dir(cp) == rdir), None)
deltas = scores.family_from(deltas, conditions, here)
show(deltas[["design", "metric", "questions", "delta", "low", "high", "p_value", "p_holm", "measurable"]], profile=cfg,
     decimals_for={"p_value": 4, "p_holm": 4})
display(Markdown(f"Holm's family: {deltas.family.iloc[0]}." if len(deltas) else "No comparison."))
display(Markdown(statistics_doc.method_sentence(scores.comparisons(conditions))))

# %% [markdown]
# ## Which step is worth its cost
# Per condition, each design's MRR@10 against its median latency per question (the tables' latency),
# each point labelled with its LLM tokens per question (offline the local model has no fee, so tokens
# stand for what an API would bill; with the article profile, list-price USD). A design on a panel's
# frontier (filled) has no other design that is at least as good for at most the same latency; a line
# spans its lowest to highest run; points that would cover each other are moved sideways just enough
# to show each one.

# %%
plots.frontier_chart(charted, cfg.figures_dir / f"{cfg.name}_frontier.png", names=names)

# %% [markdown]
# ## Every condition: by style, by length, and power
# In each condition, each design minus dense within each question style and each length tercile
# (the group's question count and its own paired range), and the smallest difference from dense that
# condition's question count can detect.

# %%
per_condition = queries.condition_breakdowns(cfg)
whole_table(per_condition["by_style"], cfg, "conditions_by_style", "every condition, by question style")
whole_table(per_condition["by_length"], cfg, "conditions_by_length", "every condition, by question length")
whole_table(per_condition["power"], cfg, "conditions_power", "every condition, power against dense", decimals=4)

# %%
display(Markdown("**Power in every condition.** " + (
    " ".join(f"*{c}*: {power.power_sentence(g)}." for c, g in per_condition["power"].groupby("condition", sort=False))
    if not per_condition["power"].empty else "No condition has scored runs yet.")))

# %% [markdown]
# ## Saved, and checked against the expected scores
# Per design and run (`scores.csv`), the differences (`deltas.csv`), every condition's tests against
# dense with Holm's correction over all of them (`comparisons.csv`) and a summary (`summary.json`)
# are saved in the results folder. The expected scores checked in beside them are compared with
# what was computed now (the 2CR practice); any drift is flagged here and fails `make test` in the
# pilot setting.

# %%
rs.to_csv(rdir / "scores.csv", index=False)
deltas.to_csv(rdir / "deltas.csv", index=False)
by_style.to_csv(rdir / "by_style.csv", index=False)
by_length.to_csv(rdir / "by_length.csv", index=False)
pw.to_csv(rdir / "power.csv", index=False)
for k, df in per_condition.items():
    df.to_csv(rdir / f"conditions_{k}.csv", index=False)
comparisons = scores.comparisons(conditions)
comparisons.to_csv(rdir / "comparisons.csv", index=False)
if cfg.shipped:  # docs/statistics.md: its counts (tests in the family, the smallest p) from these tests
    write_text(ROOT / statistics_doc.DOC, statistics_doc.statistics_doc(comparisons, cfg.bootstrap_resamples,
                                                                        cfg.bootstrap_seed))
write_json(rdir / "summary.json", {"profile": cfg.name, "question_form": cfg.question_form,
                                    "questions_reviewed": len(qs), "questions_scored": len(common),
                                    "headroom": head, "designs": summary.to_dict(orient="records"),
                                    "against_dense": deltas.to_dict(orient="records"),
                                    "loop": loop_report.summary_record(sc),
                                    "provenance": {d: queries.provenance_table(cfg, d).to_dict(orient="records")
                                                   for d in pipeline.design_names()}})
expected = rdir / "expected_scores.json"
drift = scores.check_drift(summary, expected) if expected.exists() else None
if drift is None:
    display(Markdown(f"No expected-scores file in `{shown_path(rdir)}` (`make expected` writes one)."))
else:
    flagged = drift[drift.status == "DRIFT"]
    display(Markdown("**No drift**: every design matches the expected scores." if flagged.empty else
                     f"**DRIFT** in {len(flagged)} value(s): see the table."))
    show(drift, profile=cfg, decimals_for={"expected": 6, "got": 6, "drift": 6})

# %% tags=["finding"]
better = deltas[deltas.measurable & (deltas.delta > 0)]
worse = deltas[deltas.measurable & (deltas.delta < 0)]
measure = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}
dense_row = summary.set_index("design").loc["dense"]
text = (f"Over {len(common)} questions (dense: recall@5 {dense_row.recall_at_5:.3f}, MRR@10 {dense_row.mrr_at_10:.3f}), "
        + "with measurably meaning a Holm-adjusted p below 0.05 over every comparison the index makes: "
        + ("measurably better than dense: " + "; ".join(f"{names(r.design)} on {measure[r.metric]} ({fixed(r.delta, sign=True)}, "
                                                        f"p_holm {r.p_holm:.3g})" for r in better.itertuples())
           if len(better) else
           "no design is measurably better than dense on either measure")
        + ("; measurably worse: " + "; ".join(f"{names(r.design)} on {measure[r.metric]} ({fixed(r.delta, sign=True)}, "
                                              f"p_holm {r.p_holm:.3g})" for r in worse.itertuples()) + "." if len(worse) else
           "; none is measurably worse."))
reading(text)
