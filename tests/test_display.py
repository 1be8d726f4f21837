"""How the report names designs and shows numbers (lib/report/display.py), the agent's table beside
the article's (lib/report/agent.py), the index's generated answer and sections (lib/report/index_page.py),
the links of a one-notebook rerun (scripts/build_report.py), the notebooks' titles, and the project
importable from a kernel with no PYTHONPATH (make setup's editable install)."""
import importlib.util
import math
import os
import re
import shutil
import subprocess

import pandas as pd
import pytest

from lib.config import ROOT, load_profile
from lib.report import display
from lib.report.index_page import (build_index, headline_answer, headline_table, notebook_titles, page_finding,
                                   update_readme)


# --------------------------------------------------------------------------- names and numbers
def test_the_rerank_step_is_named_by_what_it_fuses_where_it_is_no_cross_encoder():
    assert display.design_label("rerank", "offline") == "rerank (dense+BM25)"
    assert display.design_label("rerank", load_profile("offline")) == "rerank (dense+BM25)"
    assert display.design_label("rerank", "article") == "rerank"  # the cross-encoder alone, as in the article
    assert display.design_label("rerank", {"cross_encoder": 1.0, "bm25": 0.5}) == "rerank (cross-encoder+BM25)"
    assert display.design_label("rerank", {"dense": 1.0, "bm25": 0.0}) == "rerank (dense)"
    assert display.design_label("agent", "offline") == "agent"
    names = display.design_namer("offline")
    assert [names(d) for d in ("dense", "rerank", "hybrid_rerank")] == ["dense", "rerank (dense+BM25)", "hybrid_rerank"]


def test_numbers_are_rounded_for_reading():
    n = display.number
    assert [n(0.95), n(0.9876), n(297.0), n(1.0), n(0)] == ["0.95", "0.988", "297", "1", "0"]
    assert [n(None), n(float("nan")), n(pd.NA)] == ["—", "—", "—"]
    assert n(0.0104, sign=True) == "+0.01" and n(-0.0001, sign=True) == "0" and n(-0.25) == "−0.25"
    assert n(-math.inf) == "−∞" and n(True) == "yes" and n("text") == "text"
    assert display.fixed(0.01, sign=True) == "+0.010" and display.fixed(None) == "—"
    assert display.with_range(0.0104, -0.002, 0.0241) == "+0.010 [−0.002, +0.024]"
    assert display.with_range(None, None, None) == "—"
    assert display.percent(0.354) == "35%" and display.seconds(0.0011) == "0.001" and display.seconds(6.234) == "6.23"


def test_a_readable_table_has_headings_in_words_dashes_and_no_index():
    df = pd.DataFrame({"design": ["dense", "rerank"], "metric": ["recall_at_5", "mrr_at_10"],
                       "mrr_at_10_delta": [float("nan"), 0.046], "searches_1": [1.0, 0.354],
                       "latency_median_s": [0.10912, 0.108], "questions": [297, 297]})
    out = display.readable(df, profile="offline")
    assert list(out.columns) == ["design", "measure", "MRR@10 − dense", "share with 1 search", "median latency (s)",
                                 "questions"]
    assert out.iloc[1].tolist() == ["rerank (dense+BM25)", "MRR@10", "+0.046", "35%", "0.108", "297"]
    assert out.iloc[0, 2] == "—"
    html = display.styled(df).to_html()
    assert "nan" not in html.lower().replace("nan-", "") and 'class="row_heading' not in html
    assert display.heading("recall_at_5_min") == "recall@5 lowest run" and display.heading("odd_name") == "odd name"


def test_a_wide_table_of_few_runs_is_turned_on_its_side():
    df = pd.DataFrame({"run": [1, 2], "questions": [297, 297], "citation_hit_rate": [0.45, 0.5]})
    out = display.transposed(df, shares={"citation_hit_rate"})
    assert list(out.columns) == ["measure", "run 1", "run 2"]
    assert out.iloc[1].tolist() == ["source cited (share)", "45%", "50%"]


# --------------------------------------------------------------------------- the agent beside the article
def _pq(agent_runs: dict[int, list[tuple[float, int]]], dense: list[float]) -> pd.DataFrame:
    rows = [{"design": "dense", "run": 1, "qid": f"q{i}", "recall_at_5": v, "mrr_at_10": v, "searches": 1}
            for i, v in enumerate(dense)]
    for run, vals in agent_runs.items():
        rows += [{"design": "agent", "run": run, "qid": f"q{i}", "recall_at_5": r, "mrr_at_10": r, "searches": s}
                 for i, (r, s) in enumerate(vals)]
    return pd.DataFrame(rows)


def test_the_agents_table_prints_the_article_beside_our_runs():
    from lib.report.agent import COLUMNS, agent_shares, agent_shares_sentence

    dense = [1.0, 1.0, 1.0, 0.0]  # dense misses q3
    pq = _pq({1: [(1.0, 1), (0.0, 3), (1.0, 1), (1.0, 3)], 2: [(1.0, 1), (1.0, 2), (1.0, 1), (0.0, 3)]}, dense)
    table = agent_shares(pq)
    assert table[COLUMNS[1]].tolist() == ["≈59%", "≈26%", "7–8 of 13", "3–5 (4, 3, 5)"]
    assert table[COLUMNS[2]].tolist() == ["50% (50%, 50%)", "25%–50% (50%, 25%)", "0–1 (1, 0) of 1", "0–1 (1, 0)"]
    assert "used all three on 25%–50% (50%, 25%)" in agent_shares_sentence(table)


def test_the_agents_table_says_when_there_is_no_complete_run():
    from lib.report.agent import COLUMNS, agent_shares, agent_shares_sentence

    dense = [1.0, 1.0, 0.0]
    pq_all = _pq({1: [(1.0, 1)]}, dense)  # run 1 stopped after one of three questions
    table = agent_shares(pq_all[pq_all.design == "dense"], pq_all, [("agent", 1)], 3)
    assert set(table[COLUMNS[2]]) == {"no complete run yet"}
    assert agent_shares_sentence(table).startswith("The agent has no complete run yet (run 1 saved for 1 of 3 "
                                                   "questions: saved, not scored)")


# --------------------------------------------------------------------------- the index
def _row(condition, design, questions=297, runs=1, r5=None, mrr=None, calls=0.0, misses=4, note=""):
    """A condition-table row; r5 / mrr: (delta, low, high) against dense."""
    row = {"condition": condition, "design": design, "runs": runs, "questions": questions, "recall_at_5": 0.95,
           "mrr_at_10": 0.9, "recall_at_5_min": 0.95, "recall_at_5_max": 0.95, "mrr_at_10_min": 0.9,
           "mrr_at_10_max": 0.9, "searches": 1.0, "latency_median_s": 0.1, "latency_mean_s": 0.1, "llm_calls": calls,
           "tokens": 900 if calls else 0, "cost_usd_per_q": 0.0, "dense_misses_at_5": misses, "not_scored": note,
           "both_found_at_10": None}
    for m, v in (("recall_at_5", r5), ("mrr_at_10", mrr)):
        row.update(dict(zip((f"{m}_delta", f"{m}_low", f"{m}_high"), v or (None, None, None))))
    return row


def _table(agent_full=True):
    rows = [_row("full questions", "dense"), _row("full questions", "rerank", r5=(0.01, 0.0, 0.02), mrr=(0.05, 0.03, 0.07)),
            _row("short questions", "dense", misses=15),
            _row("short questions", "rerank", r5=(0.04, 0.02, 0.06), mrr=(0.09, 0.06, 0.12)),
            _row("short questions", "agent", r5=(-0.02, -0.04, -0.01), mrr=(-0.05, -0.07, -0.03), calls=1.5)]
    if agent_full:
        rows.append(_row("full questions", "agent", runs=3, r5=(-0.04, -0.06, -0.02), mrr=(-0.09, -0.11, -0.07),
                         calls=1.6))
    else:
        rows.append({"condition": "full questions", "design": "agent", "runs": 0, "questions": 0,
                     "not_scored": "run 1 stopped part-way"})
    return pd.DataFrame(rows)


def _sentences(text: str) -> int:
    return len(re.findall(r"[a-z0-9)\]]\.(?:\s|$)", text))


def test_the_answer_is_generated_from_the_numbers_in_three_to_five_sentences():
    text = headline_answer(_table(), "offline")
    scope, rest = text.split(" **No**: ", 1)
    # the first sentence says what the answer holds for: which model, which collection, how close dense is
    assert scope.startswith("Scope: the language model here is a local 1.5B model (qwen2.5-coder-1.5b-instruct")
    assert "replayed from its recorded calls), not the article's Claude Haiku" in scope
    assert "the 297 full questions are searched over 2,000 arXiv abstracts (drawn from a snapshot of" in scope
    assert "dense search already finds the source in its top 5 for 293 of the 297" in scope
    assert rest.startswith("on the 297 full questions the agent (3 runs) is measurably worse than plain dense")
    assert "recall@5 −0.040 [−0.060, −0.020], MRR@10 −0.090 [−0.110, −0.070] (95% ranges)" in text
    assert "the article measured +0.012 and +0.011, ranges that include 0" in text
    assert "It is measurably worse than dense on short questions too (MRR@10 −0.050)" in text
    assert "**rerank (dense+BM25)** in 2 of 2 conditions" in text
    assert "-0" not in text  # one minus sign
    assert 3 <= _sentences(text) <= 5, text


def test_measurably_follows_the_holm_corrected_test_where_the_saved_differences_carry_it():
    from lib.report.index_numbers import delta_columns, verdict

    # the range excludes 0, but the corrected test does not call the difference measurable: same
    row = {"mrr_at_10_delta": 0.02, "mrr_at_10_low": 0.001, "mrr_at_10_high": 0.04, "mrr_at_10_p_holm": 0.09}
    assert verdict(row, "mrr_at_10") == "same"
    assert verdict({**row, "mrr_at_10_p_holm": None}, "mrr_at_10") == "better"  # no test saved: the range
    assert verdict({**row, "mrr_at_10_delta": -0.02, "mrr_at_10_p_holm": 0.01}, "mrr_at_10") == "worse"
    # the range holds 0, the corrected test says measurable
    assert verdict({"recall_at_5_delta": 0.01, "recall_at_5_low": -0.001, "recall_at_5_high": 0.02,
                    "recall_at_5_p_holm": 0.03}, "recall_at_5") == "better"
    assert verdict({"recall_at_5_delta": 0.01, "recall_at_5_low": -0.001, "recall_at_5_high": 0.02},
                   "recall_at_5") == "same"
    saved = pd.DataFrame([{"design": "agent", "metric": "mrr_at_10", "delta": -0.05, "low": -0.07, "high": -0.03,
                           "p_value": 0.001, "p_holm": 0.004, "measurable": True}])
    assert delta_columns(saved, "mrr_at_10") == {"mrr_at_10_delta": -0.05, "mrr_at_10_low": -0.07,
                                                 "mrr_at_10_high": -0.03, "mrr_at_10_p_value": 0.001, "mrr_at_10_p_holm": 0.004}
    assert "mrr_at_10_p_holm" not in delta_columns(saved.drop(columns=["p_value", "p_holm"]), "mrr_at_10")
    table = _table()
    table.loc[table.design == "agent", ["mrr_at_10_p_holm", "recall_at_5_p_holm"]] = 0.2
    text = headline_answer(table, "offline")
    assert "**Not measurably**: on the 297 full questions the agent (3 runs) is not measurably different" in text
    assert "Holm-corrected p < 0.05" in text


def test_the_answer_says_when_the_agent_has_no_complete_run():
    text = headline_answer(_table(agent_full=False), "offline")
    assert text.startswith("Scope: ")
    assert (" **Not answered yet for the full questions**: the agent has no complete run yet "
            "(run 1 stopped part-way: saved, not scored)") in text
    assert "It is measurably worse than dense on short questions (MRR@10 −0.050)" in text
    assert headline_answer(pd.DataFrame(), "offline").startswith("Not answered yet")
    assert 3 <= _sentences(text) <= 5, text


def test_the_readme_table_names_the_rerank_step_and_a_run_not_complete():
    table = headline_table(ROOT / "results", _table(agent_full=False), "offline")
    assert table.design.tolist() == ["dense", "rerank (dense+BM25)", "agent"]
    assert table.set_index("design").loc["agent", "recall@5"] == "no complete run yet (run 1 stopped part-way: " \
                                                                 "saved, not scored)"
    assert table.set_index("design").loc["rerank (dense+BM25)", "article recall@5 (− dense [range])"].startswith("≈0.969")


def test_the_index_puts_the_question_answer_and_figure_first_then_the_sections_in_order(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from lib.report import plots
    from lib.report.article import article_figures

    table = _table(agent_full=False)
    fig = tmp_path / "charts" / "offline_headline.png"
    plots.headline_chart(table, fig, names=display.design_namer("offline"), article=article_figures())
    runs = pd.DataFrame([{"design": "agent", "conditions": "full questions", "runs": "none complete (run 1: 5 of 297 "
                          "questions, saved, not scored)", "models": "m", "backend": "local", "profile": "offline"}])
    page = build_index(tmp_path / "out", tmp_path, "offline", [], conditions=table, headline=fig, runs=runs,
                       links={nb: None for nb in notebook_titles()}).read_text()
    order = ["<h1>Does an agent that can search again find better evidence than plain search?</h1>",
             '<p class="answer">', 'src="figures/offline_headline.png"', "<h2>What was compared</h2>",
             "<h2>Why the agent wins or loses</h2>", "<h2>Cost and latency</h2>", "<h2>What differs from the article</h2>",
             "<h2>The notebooks</h2>", "<h2>How each run was produced</h2>"]
    where = [page.find(x) for x in order]
    assert -1 not in where and where == sorted(where), list(zip(order, where))
    assert (tmp_path / "out" / "figures" / "offline_headline.png").exists()
    assert "rerank (dense+BM25)" in page and "no complete run yet" in page and "not analysed here yet" in page
    assert "Not rendered yet." in page  # no page anywhere: no link
    assert "nan" not in re.sub(r"<[^>]+>", " ", page).lower().split()


def test_a_pages_finding_is_the_first_sentence_of_its_reading(tmp_path):
    page = tmp_path / "p.html"
    page.write_text("<p><strong>Reading.</strong> agent (3 complete runs, 297 questions) reaches recall@5 0.946 "
                    "[−0.058, −0.025]; worse. It makes 1.72 searches.</p>")
    assert page_finding(page) == "agent (3 complete runs, 297 questions) reaches recall@5 0.946 [−0.058, −0.025]; worse."
    assert page_finding(tmp_path / "missing.html") is None


def test_the_readme_sections_are_replaced_between_their_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- ANSWER START -->\nold\n<!-- ANSWER END -->\nkeep\n<!-- RESULTS START -->\n"
                      "t\n<!-- RESULTS END -->\n")
    assert update_readme("new answer", "new table", readme)
    assert readme.read_text() == ("# x\n<!-- ANSWER START -->\nnew answer\n<!-- ANSWER END -->\nkeep\n"
                                  "<!-- RESULTS START -->\nnew table\n<!-- RESULTS END -->\n")
    assert not update_readme("new answer", "new table", readme)
    text = (ROOT / "README.md").read_text()
    assert "<!-- ANSWER START -->" in text and "<!-- RESULTS START -->" in text


# --------------------------------------------------------------------------- links of a one-notebook rerun
def _build_report():
    spec = importlib.util.spec_from_file_location("build_report", ROOT / "scripts" / "build_report.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_rerun_into_its_own_folder_links_the_shipped_pages_it_did_not_run(tmp_path):
    br = _build_report()
    shipped, folder = tmp_path / "report", tmp_path / "results" / "short" / "report"
    shipped.mkdir(parents=True)
    folder.mkdir(parents=True)
    for name in ("index", "02_questions", "04_rerank"):
        (shipped / f"{name}.html").write_text("x")
    page = folder / "03_dense.html"
    page.write_text('<nav><a href="index.html">Report index</a> · <a href="02_questions.html">← 2</a> · '
                    '<a href="04_rerank.html">4 →</a></nav><a href="tables/x.csv">csv</a>')
    links = br.page_links(folder, shipped)
    assert links["03_dense"] == "03_dense.html" and links["04_rerank"] == "../../../report/04_rerank.html"
    assert links["05_multiquery"] is None
    assert br.relink(page, links)
    text = page.read_text()
    assert '<a href="../../../report/index.html">Report index</a>' in text
    assert '<a href="../../../report/04_rerank.html">4 →</a>' in text and 'href="tables/x.csv"' in text
    for href in re.findall(r'href="([^"]+\.html)"', text):
        assert (folder / href).exists(), href
    # once the folder has its own page, the link goes there; a page that exists nowhere becomes text
    (folder / "04_rerank.html").write_text("y")
    (shipped / "02_questions.html").unlink()
    br.relink(page, br.page_links(folder, shipped))
    text = page.read_text()
    assert '<a href="04_rerank.html">4 →</a>' in text and "02_questions.html" not in text and "← 2" in text
    assert not br.relink(page, br.page_links(folder, shipped))  # nothing left to change


def test_relinking_a_folder_skips_what_is_no_page_and_touches_only_the_pages_given(tmp_path):
    from types import SimpleNamespace

    br = _build_report()
    folder = tmp_path / "report"
    (folder / "03_dense.html").mkdir(parents=True)  # a folder where a page would go: not a page
    old = folder / "10_scores.html"
    old.write_text('<a href="11_failures.html">next</a>')
    cfg = SimpleNamespace(report_dir=folder)
    br.relink_folder(cfg, [])  # a command that failed and wrote nothing: the pages stay as they were
    assert old.read_text() == '<a href="11_failures.html">next</a>'
    br.relink_folder(cfg)  # a command that succeeded: every page, the folder skipped
    hrefs = re.findall(r'href="([^"]+)"', old.read_text())
    assert all((folder / h).exists() for h in hrefs) and "next" in old.read_text()  # the shipped page, or text


# --------------------------------------------------------------------------- titles agree
def test_every_notebooks_title_is_the_one_the_index_and_navigation_use():
    for name, title in notebook_titles().items():
        text = (ROOT / "notebooks" / f"{name}.py").read_text()
        first = re.search(r"^# # (.+)$", text, re.M).group(1)
        assert first.startswith(title.split(" (")[0]), (name, first, title)


# --------------------------------------------------------------------------- importable from any kernel
def test_a_notebook_runs_with_plain_nbconvert_and_no_pythonpath(tmp_path):
    """The project's kernel imports the project with no PYTHONPATH (make setup installs it in
    development mode): the quickest notebook (2, the questions, on the pilot profile, whose outputs
    are git-ignored) executed by plain `jupyter nbconvert --execute`, started in notebooks/ with
    the copy in a scratch folder. Skipped where the kernel or jupyter is missing, or past a minute."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("agentic-rag-evidence")
    except NoSuchKernel:
        pytest.skip("the project's kernel is not registered (make setup registers it)")
    jupyter = ROOT / ".venv" / "bin" / "jupyter"
    if not jupyter.exists():
        jupyter = shutil.which("jupyter")
        if jupyter is None:
            pytest.skip("jupyter is not installed")
    nb = nbformat.read(ROOT / "notebooks" / "02_questions.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = cell.source.replace('profile = "offline"', 'profile = "pilot"')
    src = tmp_path / "02_questions_pilot.ipynb"
    nbformat.write(nb, src)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cmd = [str(jupyter), "nbconvert", "--to", "notebook", "--execute", "--output-dir", str(tmp_path / "out"),
           "--ExecutePreprocessor.kernel_name=agentic-rag-evidence", str(src)]
    try:
        done = subprocess.run(cmd, cwd=ROOT / "notebooks", env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.skip("executing the notebook took more than a minute on this machine")
    assert done.returncode == 0, done.stderr[-3000:]
    out = nbformat.read(tmp_path / "out" / src.name, as_version=4)
    errors = [o for c in out.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors[0]
    assert any("Reading." in str(o.get("data", {})) for c in out.cells for o in c.get("outputs", []))


def test_a_range_carries_its_holm_corrected_p_value_where_one_is_saved():
    from lib.report.display import p_words, with_range

    assert with_range(-0.046, -0.061, -0.032) == "−0.046 [−0.061, −0.032]"
    assert with_range(-0.046, -0.061, -0.032, p=0.0001) == "−0.046 [−0.061, −0.032], p < 0.001"
    assert with_range(0.021, 0.005, 0.037, p=0.17) == "+0.021 [+0.005, +0.037], p 0.170"
    assert with_range(0.0, 0.0, 0.0, p=1.0).endswith(", p 1") and p_words(float("nan")) == ""
    # a p-value just below 0.05 never prints as 0.050 (it counts as measurable)
    assert p_words(0.049995) == "p < 0.05" and p_words(0.0504) == "p 0.050" and p_words(0.0494) == "p 0.049"
