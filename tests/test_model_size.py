"""The model-size axis (lib/report/model_size.py): each LLM design minus dense per local model, read from
the saved runs; another model's runs live beside the profile's (results/<condition>/models/<model>/)."""
import matplotlib

matplotlib.use("Agg")
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from lib import pipeline  # noqa: E402
from lib.report import queries  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.report import model_size as ms  # noqa: E402
from lib.report.article import article_figures  # noqa: E402

SMALL = "qwen2.5-coder-0.5b-instruct-awq-q4_k_m"
OWN = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def test_model_names_and_order():
    assert ms.model_label(SMALL) == "Qwen2.5-Coder 0.5B" and ms.model_label(OWN) == "Qwen2.5-Coder 1.5B"
    assert ms.axis_models() == [SMALL, OWN]
    assert ms.model_label("some-model") == "some-model" and ms.model_size("some-model") == float("inf")


def test_the_profiles_own_model_reads_its_own_folder_and_another_reads_its_models_folder():
    cp = load_profile("pilot")
    assert ms.model_profile(cp, OWN) is cp
    other = ms.model_profile(cp, SMALL)
    assert other.results_dir == cp.results_dir / "models" / SMALL and other.llm_model == SMALL


def test_axis_table_agrees_with_the_condition_table_for_the_profiles_model():
    """The pilot's saved runs: the 1.5B agent's delta is the condition table's; the 0.5B has no pilot run."""
    cfg = load_profile("pilot")
    table = ms.axis_table(cfg, designs=("agent",), conditions=("full questions",))
    own = table[table.model == OWN].iloc[0]
    assert own.status == "scored" and own.folder == "results/pilot"
    cond = queries.condition_table(load_profile("pilot"))
    ref = cond[(cond.condition == "full questions") & (cond.design == "agent")].iloc[0]
    for m in ("recall_at_5", "mrr_at_10"):
        assert own[f"{m}_delta"] == pytest.approx(ref[f"{m}_delta"]) and own[m] == pytest.approx(ref[m])
        assert own[f"{m}_delta_low"] == pytest.approx(ref[f"{m}_low"])
    small = table[table.model == SMALL].iloc[0]
    assert small.status == "not run" and small.questions == 0


def _table():
    rows = []
    for model, d, delta in ((SMALL, "agent", -0.12), (OWN, "agent", -0.05), (OWN, "multiquery", -0.15)):
        rows.append({"condition": "full questions", "model": model, "model_label": ms.model_label(model),
                     "design": d, "status": "scored", "runs": 1, "questions": 100,
                     "mrr_at_10": 0.8, "mrr_at_10_delta": delta, "mrr_at_10_delta_low": delta - 0.02,
                     "mrr_at_10_delta_high": delta + 0.02, "recall_at_5": 0.9, "recall_at_5_delta": delta / 2,
                     "recall_at_5_delta_low": delta, "recall_at_5_delta_high": 0.0})
    rows.append({"condition": "full questions", "model": SMALL, "model_label": ms.model_label(SMALL),
                 "design": "multiquery", "status": "not run", "runs": 0, "questions": 0})
    return pd.DataFrame(rows)


def test_reading_names_the_change_with_size_the_article_and_what_was_not_run(tmp_path):
    t = _table()
    text = ms.axis_reading(t, article_figures())
    assert "Qwen2.5-Coder 0.5B −0.120 [−0.140, −0.100], Qwen2.5-Coder 1.5B −0.050 [−0.070, −0.030]" in text
    assert "+0.070 from Qwen2.5-Coder 0.5B to Qwen2.5-Coder 1.5B, and every model loses to dense" in text
    assert "the article's Haiku 5.5: +0.011" in text
    assert "multiquery with Qwen2.5-Coder 0.5B in full questions (not run)" in text
    assert ms.axis_chart(t, tmp_path / "axis.png", article_figures()) is not None and (tmp_path / "axis.png").stat().st_size > 0
    none = t.assign(status="not run")
    assert "says nothing yet" in ms.axis_reading(none)


def test_another_models_runs_are_scored_against_the_conditions_dense(tmp_path):
    """A second model's folder holds only its LLM designs (dense calls no model): its complete run is
    paired with the condition's dense; a run stopped part-way is named, not scored. The pilot's saved
    agent run stands in for the 0.5B's, its records keyed for that model."""
    import dataclasses
    import json
    import shutil

    from lib.runs import inputs_key, read_results

    pilot = ROOT / "results" / "pilot"
    shutil.copytree(pilot / "dense", tmp_path / "dense")
    shutil.copytree(pilot / "agent", tmp_path / "agent")
    cp = load_profile("pilot", results_dir=str(tmp_path))
    questions = {q.qid: q for q in pipeline.scored_questions(cp)}
    runs = read_results(pilot / "agent" / "run1.jsonl")
    folder = tmp_path / "models" / SMALL / "agent"
    folder.mkdir(parents=True)

    def write(results):
        lines = []
        for r in results:
            prov = {**r.provenance, "llm_model": SMALL}
            r2 = dataclasses.replace(r, provenance=prov, inputs=inputs_key("agent", 1, questions[r.qid], prov))
            lines.append(json.dumps(dataclasses.asdict(r2)))
        (folder / "run1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    write(runs)
    table = ms.axis_table(cp, designs=("agent",), conditions=("full questions",)).set_index("model")
    assert table.loc[SMALL, "status"] == "scored" and table.loc[SMALL, "folder"].endswith(f"models/{SMALL}")
    for m in ("recall_at_5", "mrr_at_10"):  # the same lists as the profile's own model: the same deltas
        assert table.loc[SMALL, f"{m}_delta"] == pytest.approx(table.loc[OWN, f"{m}_delta"])
    write(runs[: len(runs) // 2])
    table = ms.axis_table(cp, designs=("agent",), conditions=("full questions",)).set_index("model")
    assert table.loc[SMALL, "status"] == "no complete run (run 1 stopped part-way)"
