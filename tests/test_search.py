"""BM25 on real papers, score fusion for the rerank step, the hybrid designs, and the dev-set choice."""
import numpy as np
import pandas as pd
import pytest

from lib.designs import Question
from lib.designs.hybrid import HybridDesign, HybridRerankDesign
from lib.evaluation.selection import best, compare, score_variant
from lib.search.bm25 import BM25Index
from lib.search.fusion import order_by_score, rrf
from lib.search.rerank import FusedReranker, fuse_scores, zscores
from tests.fakes import ListSearcher


@pytest.fixture(scope="module")
def papers(snapshot):
    return [{"id": p.id, "title": p.title, "abstract": p.abstract} for p in snapshot[:300]]


def test_bm25_finds_a_paper_by_its_own_words_and_caches_the_index(papers, tmp_path):
    idx = BM25Index.build(papers, cache_dir=tmp_path)
    target = papers[123]
    hits = idx.search(target["title"], 5)
    assert hits[0].id == target["id"] and len(hits) == 5
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(list(tmp_path.iterdir())) == 1  # one cached index, keyed by texts and settings
    again = BM25Index.build(papers, cache_dir=tmp_path)
    assert [h.id for h in again.search(target["title"], 5)] == [h.id for h in hits]
    assert idx.scores_for(target["title"], [target["id"], papers[0]["id"]])[0] == pytest.approx(hits[0].score)


def test_fused_scores_standardise_and_weigh_each_signal():
    sig = {"dense": [0.9, 0.8, 0.7], "bm25": [1.0, 9.0, 5.0], "cross_encoder": [3.0, 2.0, 1.0]}
    ids = ["a", "b", "c"]
    assert order_by_score(ids, fuse_scores(sig, {"dense": 1.0})) == ["a", "b", "c"]  # dense itself
    assert order_by_score(ids, fuse_scores(sig, {"bm25": 1.0})) == ["b", "c", "a"]
    assert order_by_score(ids, fuse_scores(sig, {"dense": 1.0, "bm25": 2.0})) == ["b", "a", "c"]  # a, c tie: the incoming order
    assert np.allclose(zscores([2.0, 2.0]), 0.0) and np.isclose(zscores([1.0, 3.0]).std(), 1.0)
    with pytest.raises(ValueError, match="unknown signal"):
        fuse_scores(sig, {"magic": 1.0})
    with pytest.raises(ValueError, match="no BM25 index"):
        FusedReranker({"bm25": 1.0})


def test_hybrid_fuses_bm25_and_dense_and_hybrid_rerank_reorders_it():
    dense = ListSearcher({"q": ["a", "b", "c", "d"]})
    dense.scores_for = lambda q, ids: [1.0 - 0.1 * i for i, _ in enumerate(ids)]
    bm25 = ListSearcher({"q": ["c", "e", "a"]})
    r = HybridDesign(dense, bm25, depth=10).retrieve(Question("q1", "q", "c"))
    assert r.ranked_ids == [d for d, _ in rrf([["c", "e", "a"], ["a", "b", "c", "d"]], 60)]

    class ByLetter:  # a stand-in reranker that prefers later letters
        def scores(self, q, ids, dense_scores, texts):
            assert len(dense_scores) == len(ids) == len(texts)
            return [ord(i) for i in ids]

    rr = HybridRerankDesign(dense, bm25, ByLetter(), {i: i for i in "abcde"}, depth=10, k=3)
    out = rr.retrieve(Question("q1", "q", "c"))
    assert out.ranked_ids == sorted(r.ranked_ids[:3], reverse=True)


def test_the_dev_choice_takes_the_best_eligible_variant_above_the_recall_floor():
    qs = [Question("q1", "x", "b", "vague"), Question("q2", "y", "a", "specific")]
    cands = {"q1": ["a", "b"], "q2": ["a", "b"]}
    table = compare([("dense", score_variant(qs, cands, lambda q: np.array([1.0, 0.0]))),
                     ("flip", score_variant(qs, cands, lambda q: np.array([0.0, 1.0])))])
    assert list(table.mrr_at_10) == [0.75, 0.75]  # a tie: the first listed wins
    assert best(table).variant == "dense"
    table["eligible"] = [False, True]
    assert best(table[table.eligible]).variant == "flip"
    assert isinstance(table, pd.DataFrame) and "mrr_at_10 vague" in table


def test_agent_rerank_reorders_the_agents_fused_list_and_keeps_its_record():
    from lib.designs.agent import AgentDesign
    from lib.designs.agent_rerank import AgentRerankDesign
    from tests.fakes import ScriptedLLM

    s = ListSearcher({"q": ["a", "b", "c"], "more": ["d", "a"]})
    s.scores_for = lambda q, ids: [0.0] * len(ids)
    agent = AgentDesign(s, ScriptedLLM(['{"decision":"search","query":"more"}', '{"decision":"stop"}']),
                        {i: i for i in "abcd"}, "anthropic")

    class Reverse:
        def scores(self, q, ids, dense, texts):
            return [-i for i in range(len(ids))][::-1]

    r = AgentRerankDesign(agent, Reverse(), {i: i for i in "abcd"}, k=3).retrieve(Question("q1", "q", "a"))
    plain = [d for d, _ in rrf([["a", "b", "c"], ["d", "a"]], 60)]
    assert r.design == "agent_rerank" and r.queries == ["q", "more"] and r.llm_calls == 2
    assert r.ranked_ids == plain[:3][::-1]


def test_metadata_filters_apply_inside_every_designs_searches_and_depth_is_met(tmp_path):
    from lib import pipeline
    from lib.config import load_profile
    from lib.llm import RecordedLLM, RecordStore
    from tests.fakes import ScriptedLLM

    cfg = load_profile("pilot", filter_categories=["cs.CL"], filter_first_seen=["2025-01-01", "2026-12-31"],
                       rerank_weights={"dense": 1.0, "bm25": 1.5}, loop_backend="scripted")  # the loop: its stub
    parts = pipeline.ProfileParts(cfg, progress=False)
    allowed = parts.allowed
    by_id = {p["id"]: p for p in parts.papers}
    assert 50 < len(allowed) < len(parts.papers)
    assert all("cs.CL" in by_id[i]["categories"] for i in allowed)
    q = pipeline.scored_questions(cfg, parts.papers)[0]
    for name in pipeline.design_names():
        if pipeline.design_class(name).uses_llm:  # a scripted model in place of the recorded one
            parts.__dict__["_llm"] = RecordedLLM(ScriptedLLM(['{"decision":"search","query":"language models"}',
                                                              '{"decision":"stop"}', "a\nb\nc"] * 3),
                                                 RecordStore(tmp_path), backend_name="scripted", model="m")
        design = pipeline.make_design(name, cfg, parts)
        r = design.retrieve(q, 1)
        assert set(r.ranked_ids) <= allowed, f"{name} returned a filtered-out paper"
        assert len(r.ranked_ids) >= 10, f"{name}: depth not met ({len(r.ranked_ids)})"
        assert design.provenance["filter_categories"] == ["cs.CL"]
