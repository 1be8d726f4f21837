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

# %% [markdown]
# # 7. Scores
#
# Per question: **recall@5** (the source paper is in the top 5) and **MRR@10** (1 / its rank if
# within 10, else 0). Per design: the mean over questions; for the LLM designs, the mean over runs
# with the lowest and highest run. Each design is compared with dense **on the same questions**: a
# paired bootstrap of design minus dense (2,000 resamples of the questions, 95% percentile range,
# fixed seed; for LLM designs the per-question value is the mean over runs). Only questions that
# passed review, and that every saved run of every design answered, are scored.

# %% tags=["parameters"]
profile = "offline"
question_form = None   # full | short

# %%

from IPython.display import Markdown, display

from lib import pipeline
from lib.config import notebook_profile
from lib.evaluation import scores
from lib.io import write_json
from lib.report import plots

cfg = notebook_profile(globals())
rdir = pipeline.results_dir(cfg)
sc = pipeline.load_scored(cfg)
qs, pq_all, pq, common, partial = sc.questions, sc.pq_all, sc.pq, sc.common, sc.partial
runs_saved = pq_all.groupby(["design", "run"]).qid.count().rename("questions answered").reset_index()
runs_saved["scored"] = [(d, r) not in set(partial) for d, r in zip(runs_saved.design, runs_saved.run)]
display(Markdown(f"**{len(qs)}** reviewed questions; **{len(common)}** answered by every scored run of every design "
                 f"and scored below. Runs stopped part-way are saved but not scored: "
                 f"{', '.join(f'{d} run {r}' for d, r in partial) or 'none'}."))
runs_saved

# %% [markdown]
# ## Per design

# %%
summary = scores.design_summary(pq)
table = summary[["design", "runs", "questions", "recall_at_5", "recall_at_5_min", "recall_at_5_max", "mrr_at_10",
                 "mrr_at_10_min", "mrr_at_10_max", "searches", "searches_1", "searches_2", "searches_3",
                 "latency_median_s", "latency_p90_s", "llm_calls", "tokens_in", "tokens_out", "cost_usd_per_q",
                 "cost_total_usd"]]
table.round(4)

# %% [markdown]
# ## Each design minus dense, with its 95% paired bootstrap range

# %%
deltas = scores.deltas(pq, n_resamples=cfg.bootstrap_resamples, seed=cfg.bootstrap_seed)
deltas.round(4)

# %%
head = scores.headroom(pq)
display(Markdown(f"**Headroom.** Dense misses the source at 5 for **{head['dense_misses_at_5']}** of "
                 f"{head['questions']} questions, so no design can raise recall@5 by more than "
                 f"**{head['max_recall_gain']:.3f}**. (Dense misses it at 10 for {head['dense_misses_at_10']}.)"))

# %% [markdown]
# ## Wins and losses against dense
# A win: the source is in the design's top 5 and not in dense's; a loss: the reverse.

# %%
scores.wins_losses(pq)

# %%
scores.losses_by_runs(pq)

# %% [markdown]
# ## Charts

# %%
rs = scores.run_scores(pq)
plots.scores_chart(rs, cfg.figures_dir / f"{cfg.name}_scores.png");

# %%
plots.deltas_chart(deltas, cfg.figures_dir / f"{cfg.name}_deltas.png");

# %% [markdown]
# ## Saved, and checked against the expected scores
# `results/scores.csv` (per design and run) and `results/deltas.csv`. The expected scores checked
# into `results/expected_scores.json` are compared with what was computed now (the 2CR practice);
# any drift is flagged here and fails `make test` in the pilot setting.

# %%
rs.to_csv(rdir / "scores.csv", index=False)
deltas.to_csv(rdir / "deltas.csv", index=False)
write_json(rdir / "summary.json", {"profile": cfg.name, "question_form": cfg.question_form,
                                    "questions_reviewed": len(qs), "questions_scored": len(common),
                                    "headroom": head, "designs": summary.to_dict(orient="records"),
                                    "provenance": {d: pipeline.provenance_table(cfg, d).to_dict(orient="records")
                                                   for d in pipeline.design_names()}})
expected = rdir / "expected_scores.json"
drift = scores.check_drift(summary, expected) if expected.exists() else None
if drift is None:
    display(Markdown("No expected-scores file for this profile yet (`make expected` writes one)."))
else:
    flagged = drift[drift.status == "DRIFT"]
    display(Markdown("**No drift**: every design matches the expected scores." if flagged.empty else
                     f"**DRIFT** in {len(flagged)} value(s): see the table."))
    display(drift)
