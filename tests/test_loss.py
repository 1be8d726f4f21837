"""The loss taken apart (lib/evaluation/loss.py) on tiny hand-made records and a fake search, every
expected value computed by hand."""
import math

import pandas as pd
import pytest

from lib.designs import Question, Result
from lib.evaluation import loss

# the fake search: a fixed ranked list per text
LISTS = {
    # agent, q1 (source s): the question misses s in the top 5, its first query shows it, its second not
    "Q1": ["x1", "x2", "x3", "x4", "x5", "s"],
    "a1": ["s", "x1"],
    "a2": ["y1", "y2"],
    # agent, q2 (source t): shown by the question itself; the model stopped
    "Q2": ["t", "z1"],
    # agent, q3 (source u): never found; the second reply repeated the query
    "Q3": ["z1", "z2", "z3", "z4", "z5"],
    "c1": ["z2", "z3"],
    # agent, q5 (source v): shown by the question; it searched again, then stopped with v no longer in the
    # newest list (still among the titles shown: every search so far)
    "Q5": ["v", "w2"],
    "e1": ["w1", "w2"],
    # multi-query, m1 (source s): the question ranks s 1st, the rewrite 3rd
    "M1": ["s", "a", "b"],
    "m1 rewrite about transformers": ["a", "b", "s"],
    # multi-query, m2 (source t): the rewrite changes nothing
    "M2": ["t"],
    "m2 same": ["t"],
    # the loop, l1 (source s): it searches only its own query and cites "c"
    "L1": ["s"],
    "loop query": ["a", "s"],
}


def search(text):
    return LISTS[text]


def agent_results():
    qs = [Question("q1", "Q1", "s"), Question("q2", "Q2", "t"), Question("q3", "Q3", "u"), Question("q5", "Q5", "v")]
    res = [Result("q1", "agent", 1, [], 3, ["Q1", "a1", "a2"], 0.0, stop_reason="cap"),
           Result("q2", "agent", 1, ["t", "z1"], 1, ["Q2"], 0.0, stop_reason="stop"),
           Result("q3", "agent", 1, [], 2, ["Q3", "c1"], 0.0, stop_reason="repeated query"),
           Result("q5", "agent", 1, [], 2, ["Q5", "e1"], 0.0, stop_reason="stop")]
    return qs, res


def mq_results(run=1):
    qs = [Question("m1", "M1", "s"), Question("m2", "M2", "t")]
    # RRF (k = 60) of M1's lists: a = 1/62 + 1/61 > s = 1/61 + 1/63 > b = 1/63 + 1/62 -> s at rank 2
    res = [Result("m1", "multiquery", run, ["a", "s", "b"], 2, ["M1", "m1 rewrite about transformers"], 0.0),
           Result("m2", "multiquery", run, ["t"], 2, ["M2", "m2 same"], 0.0)]
    return qs, res


def loop_results():
    qs = [Question("l1", "L1", "s")]
    # citations first, then the fusion of its one search: c, a, s
    res = [Result("l1", "loop", 1, ["c", "a", "s"], 1, ["L1", "loop query"], 0.0, details={"citations": ["c"]})]
    return qs, res


def test_outcome_compares_ranks_with_missing_last():
    assert loss.outcome(1, 3) == "worse" and loss.outcome(3, 1) == "better" and loss.outcome(2, 2) == "same"
    assert loss.outcome(None, None) == "both missing"
    assert loss.outcome(None, 4) == "better" and loss.outcome(4, None) == "worse"


def test_searched_queries_leave_the_question_out_only_for_the_loop():
    _, (r, *_) = loop_results()
    assert loss.searched_queries(r) == ["loop query"] and loss.written_queries(r) == ["loop query"]
    _, (m, *_) = mq_results()
    assert loss.searched_queries(m) == ["M1", "m1 rewrite about transformers"]


def test_decisions_see_every_search_so_far_and_no_decision_after_the_cap():
    qs, res = agent_results()
    dec = loss.decisions(res, qs, search)
    got = [(r.qid, r.after_search, r.source_shown, r.decision, r.ending) for r in dec.itertuples()]
    assert got == [("q1", 1, False, "searched again", "searched again"),  # s is 6th: not among the 5 titles
                   ("q1", 2, True, "searched again", "searched again"),   # a1's top 5 shows it
                   ("q2", 1, True, "stopped", "stop"),
                   ("q3", 1, False, "searched again", "searched again"),
                   ("q3", 2, False, "stopped", "repeated query"),
                   ("q5", 1, True, "searched again", "searched again"),
                   ("q5", 2, True, "stopped", "stop")]  # e1 alone does not show v; Q5's titles still do
    table = loss.stop_table(dec).set_index(["source", "decision"])
    assert table.loc[("shown", "stopped"), "decisions"] == 2 and table.loc[("shown", "searched again"), "decisions"] == 2
    assert table.loc[("not shown", "stopped"), "decisions"] == 1
    assert table.loc[("not shown", "searched again"), "decisions"] == 2
    assert table.loc[("not shown", "searched again"), "share"] == pytest.approx(2 / 7)
    assert table.loc[("not shown", "stopped"), "share_of_row"] == pytest.approx(1 / 3)
    assert table.loc[("not shown", "stopped"), "not_explicit_stop"] == 1  # a repeated query, no "stop"
    assert table.loc[("shown", "stopped"), "not_explicit_stop"] == 0
    grid = loss.stop_grid(loss.stop_table(dec))
    assert grid.loc["source not shown", "searched again"] == "2 (29%)"


def test_search_use_beside_the_article():
    _, res = agent_results()
    use = loss.search_use(res, 3, {"stopped_after_one": 0.59, "used_all": 0.26})
    assert use["stopped_after_one"] == pytest.approx(1 / 4) and use["used_all"] == pytest.approx(1 / 4)
    assert use["searches_mean"] == pytest.approx(2.0) and use["article_used_all"] == 0.26
    assert loss.search_use(res, 2)["used_all"] == pytest.approx(2 / 4)  # with a cap of 2: q3 and q5


def test_the_articles_figures_are_read_from_its_file():
    assert loss.article_search_use() == {"stopped_after_one": 0.59, "used_all": 0.26}


def test_query_outcomes_and_added_words():
    qs, res = mq_results()
    qdf = loss.query_outcomes(res, qs, search)
    assert list(qdf.outcome) == ["worse", "same"]
    assert list(qdf.question_rank) == [1, 1] and list(qdf.query_rank) == [3, 1]
    # lowercased words not in the question ("m1" is: "M1"), stop words ("about", "same") removed
    assert qdf.added_words.iloc[0] == "rewrite transformers" and qdf.n_added.iloc[1] == 0
    counts = loss.outcome_counts(qdf)
    assert (counts["queries"], counts["worse"], counts["same"], counts["better"]) == (2, 1, 1, 0)
    assert counts["worse_share"] == 0.5


def test_added_word_table_counts_each_word_once_a_query():
    qdf = pd.DataFrame({"outcome": ["worse", "worse", "worse", "better"],
                        "added_words": ["foo bar", "foo foo", "", "baz"]})
    t = loss.added_word_table(qdf, top=5)
    assert list(t.worse_word) == ["foo", "bar"] and list(t.worse_queries) == [2, 1]
    assert t.worse_share.iloc[0] == pytest.approx(2 / 3)
    assert t.better_word.iloc[0] == "baz" and t.better_share.iloc[0] == 1.0
    assert t.better_word.iloc[1] == "" and math.isnan(t.better_share.iloc[1])


def test_oracle_stop_needs_both_papers_of_a_two_part_question():
    lists = [["a", "x"], ["b", "y"], ["z"]]
    assert loss.oracle_stop(lists, "a") == 1
    assert loss.oracle_stop(lists, "a;b") == 2
    assert loss.oracle_stop(lists, "q") == 3  # never shown: every list
    assert loss.oracle_stop([["x1", "x2", "x3", "x4", "x5", "a"]], "a") == 1  # 6th is not shown, but the lists end


def test_per_result_variants_by_hand():
    qs, res = mq_results()
    pr = loss.per_result(res, qs, search).set_index("qid")
    m1 = pr.loc["m1"]
    assert m1.fused_rank == 2 and m1.fused_mrr_at_10 == 0.5 and m1.question_mrr_at_10 == 1.0
    assert m1.best_mrr_at_10 == 1.0 and m1.oracle_mrr_at_10 == 1.0 and m1.stop_at == 1 and m1.extra_rank == 1
    assert bool(m1.reproduced) and bool(pr.loc["m2"].reproduced)
    # a saved list the searches do not rebuild is marked
    bad = Result("m1", "multiquery", 1, ["s", "a", "b"], 2, ["M1", "m1 rewrite about transformers"], 0.0)
    assert not loss.per_result([bad], qs, search).reproduced.iloc[0]


def test_the_loop_is_rebuilt_with_its_citations_and_never_searched_the_question():
    qs, res = loop_results()
    r = loss.per_result(res, qs, search).iloc[0]
    assert bool(r.reproduced) and r.fused_rank == 3
    assert r.best_mrr_at_10 == 0.5      # its one search ranks s 2nd; the question's list (1st) is not its own
    assert r.extra_mrr_at_10 == 1.0     # the question plus one of its queries
    assert r.oracle_mrr_at_10 == 0.5 and r.question_mrr_at_10 == 1.0


def test_merge_and_ceilings_pair_questions_with_runs_averaged_first():
    qs, r1 = mq_results(1)
    _, r2 = mq_results(2)
    r2[0] = Result("m1", "multiquery", 2, ["s", "a", "b"], 2, ["M1", "m1 rewrite about transformers"], 0.0)
    pr = loss.per_result(r1 + r2, qs, search)
    merge = loss.merge_table(pr, n_resamples=500).set_index("metric")
    # m1: fused MRR 0.5 in run 1 and 1.0 in run 2 -> 0.75; m2: 1.0. Mean 0.875 against 1.0
    assert merge.loc["mrr_at_10", "fused"] == pytest.approx(0.875) and merge.loc["mrr_at_10", "questions"] == 2
    assert merge.loc["mrr_at_10", "fused_minus_best_single"] == pytest.approx(-0.125)
    assert merge.loc["mrr_at_10", "fused_minus_question_only"] == pytest.approx(-0.125)
    assert merge.loc["mrr_at_10", "fused_minus_best_single_low"] == pytest.approx(-0.25)
    assert merge.loc["mrr_at_10", "fused_minus_best_single_high"] == pytest.approx(0.0)
    assert merge.loc["recall_at_5", "fused_minus_best_single"] == 0.0  # found at 5 in every list
    ceil = loss.ceilings_table(pr, n_resamples=500).set_index("variant")
    assert ceil.loc[loss.VARIANTS["oracle"], "mrr_at_10"] == 1.0
    assert ceil.loc[loss.VARIANTS["fused"], "mrr_at_10_delta"] == pytest.approx(-0.125)
    assert math.isnan(ceil.loc[loss.VARIANTS["question"], "mrr_at_10_delta"])


def test_account_of_multiquery():
    qs, res = mq_results()
    out = loss.analyse("full questions", "multiquery", res, qs, search, n_resamples=500)
    acc = out.accounts["mrr_at_10"]
    # loss = 1.0 - 0.75; the best single list is the question's own, so fusion is the whole of it
    assert acc["loss"] == pytest.approx(0.25) and acc["merge_part"] == pytest.approx(0.25)
    assert acc["queries_part"] == 0.0 and acc["merge_share"] == pytest.approx(1.0)
    assert acc["worse_share"] == 0.5 and acc["queries"] == 2
    assert "stop" in out.tables["ceilings"].variant.iloc[1] and "stop" not in out.tables  # no stop table


def test_account_of_the_loop():
    qs, res = loop_results()
    acc = loss.analyse("full questions", "loop", res, qs, search, n_resamples=500).accounts["mrr_at_10"]
    # loss 1 - 1/3; merge 1/2 - 1/3 (25%); queries 1 - 1/2 (75%)
    assert acc["merge_share"] == pytest.approx(0.25) and acc["queries_share"] == pytest.approx(0.75)


def test_the_agents_account_counts_its_stop_judgement():
    qs, res = agent_results()
    from lib.search.fusion import rrf

    for r in (res[0], res[2], res[3]):
        r.ranked_ids = [d for d, _ in rrf([LISTS[q] for q in r.queries])][:50]
    out = loss.analyse("full questions", "agent", res, qs, search, n_resamples=500,
                       article={"stopped_after_one": 0.59, "used_all": 0.26})
    acc = out.accounts["mrr_at_10"]
    pr = out.per_result.set_index("qid")
    assert acc["stopped_after_one"] == 0.25 and acc["used_all"] == 0.25 and acc["article_used_all"] == 0.26
    # q1: x1 = 1/61 + 1/62 = 0.03252 above s = 1/66 + 1/61 = 0.03154 -> s 2nd; the question alone: 6th
    assert pr.loc["q1", "fused_rank"] == 2 and pr.loc["q1", "question_rank"] == 6
    # its oracle stops after a1 (a1's titles show s): Q1 and a1 fused, s 2nd again; a1 alone has it 1st
    assert pr.loc["q1", "stop_at"] == 2 and pr.loc["q1", "oracle_rank"] == 2 and pr.loc["q1", "best_rank"] == 1
    assert pr.loc["q2", "stop_at"] == 1 and bool(pr.reproduced.all())
    assert acc["shown_decisions"] == 4 and acc["shown_searched_again"] == 2 and acc["hidden_stopped"] == 1
    # q5: the run fused e1 in: w2 = 1/62 + 1/62 = 0.03226 above v = 1/61 (v before w1, tied, by first appearance)
    # -> v 2nd; the oracle stops at the question's own list, v 1st
    assert pr.loc["q5", "fused_rank"] == 2 and pr.loc["q5", "stop_at"] == 1 and pr.loc["q5", "oracle_rank"] == 1
    assert set(out.tables) >= {"stop", "use", "merge", "ceilings", "words"}


def test_a_design_without_complete_runs_is_named(tmp_path):
    from lib.config import load_profile

    from lib.report.queries import condition_records

    cfg = load_profile("pilot", results_dir=str(tmp_path / "results"))
    out = loss.condition_loss(condition_records(cfg, ("agent", "loop")), "full questions", designs=("agent", "loop"))
    assert [(x.design, x.status) for x in out] == [("agent", "no saved run"), ("loop", "no saved run")]
    st = loss.status_table(out)
    assert list(st.status) == ["no saved run", "no saved run"] and list(st["runs analysed"]) == ["—", "—"]
    assert loss.combined(out, "merge").empty and loss.account_table(out).empty


def test_only_complete_runs_are_used_and_the_others_named():
    full = [Result(q, "agent", 1, [], 1, ["x"], 0.0) for q in ("a", "b")]
    part = [Result("a", "agent", 2, [], 1, ["x"], 0.0)]
    extra = [Result(q, "agent", 3, [], 1, ["x"], 0.0) for q in ("a", "b", "zz")]  # a question not scored is dropped
    res, named = loss.complete_runs({1: full, 2: part, 3: extra, 4: "its records fail the check (why)"}, {"a", "b"})
    assert [(r.run, r.qid) for r in res] == [(1, "a"), (1, "b"), (3, "a"), (3, "b")]
    assert named == ["run 2: 1 of 2 questions answered (a partial run; not scored)",
                     "run 4: its records fail the check (why)"]


def test_the_two_part_loop_names_the_step_that_lost_the_second_paper():
    qs = [Question(f"t{i}", "T", "a;b") for i in range(5)]
    res = [Result("t0", "loop_question_first", 1, ["a", "b"], 1, ["T", "T"], 0.0,
                  details={"citations": ["a", "b"], "read": ["a", "b"], "shown": ["a", "b"]}),
           Result("t1", "loop_question_first", 1, ["a", "b"], 1, ["T", "T"], 0.0,
                  details={"citations": ["a"], "read": ["a", "b"], "shown": ["a", "b"]}),
           Result("t2", "loop_question_first", 1, ["b", "a"], 1, ["T", "T"], 0.0,
                  details={"citations": ["b"], "read": ["b"], "shown": ["b", "a"]}),
           Result("t3", "loop_question_first", 1, ["a", "x", "b"], 2, ["T", "T", "more"], 0.0,
                  details={"citations": ["a"], "read": ["a"], "shown": ["a", "x"]}),
           Result("t4", "loop_question_first", 1, ["x"], 1, ["T", "T"], 0.0,
                  details={"citations": [], "read": [], "shown": ["x"]})]
    t = loss.two_part_table(res, qs).set_index("qid")
    assert list(t.failed) == ["both cited", "read, not cited", "shown, not read", "in its list, never shown",
                              "never found"]
    assert t.loc["t2", "first"] == "b" and t.loc["t2", "second"] == "a" and t.loc["t3", "model_searches"] == 1
    counts = loss.two_part_counts(t.reset_index())
    assert counts.loops.tolist() == [1, 1, 1, 1, 1] and counts.no_search_of_its_own.tolist() == [1, 1, 1, 0, 1]


class _Hit:
    def __init__(self, i):
        self.id = i


class _Index:
    def search_vector(self, v, k):
        return [_Hit(f"{v}-{j}") for j in range(2)]


class _Searcher:
    def __init__(self):
        self.index, self.embedded = _Index(), []

    def query_vectors(self, texts):
        self.embedded += list(texts)
        return list(texts)

    def forget_queries(self):
        pass

    def search(self, text, k):
        raise AssertionError("every text is in the batch or the cache")


class _Parts:
    collection_digest = "c1"

    def __init__(self, searcher):
        self._searcher = searcher

    @property
    def searcher(self):
        if self._searcher is None:
            raise AssertionError("the cached lists need no searcher")
        return self._searcher


def test_the_searched_lists_are_cached_and_only_new_texts_embedded(tmp_path):
    from lib.config import load_profile

    cfg = load_profile("pilot")
    first = _Searcher()
    search = loss.cached_search(cfg, _Parts(first), ["a", "b"], tmp_path)
    assert search("a") == ["a-0", "a-1"] and first.embedded == ["a", "b"]
    again = loss.cached_search(cfg, _Parts(None), ["b", "a"], tmp_path)  # all stored: read back, nothing embedded
    assert again("b") == ["b-0", "b-1"]
    other = _Searcher()
    more = loss.cached_search(cfg, _Parts(other), ["a", "c"], tmp_path)  # only the new text is embedded
    assert other.embedded == ["c"] and more("c") == ["c-0", "c-1"] and len(list(tmp_path.glob("lists-*"))) == 1
    assert loss.cached_search(cfg, _Parts(None), ["a", "b", "c"], tmp_path)("c") == ["c-0", "c-1"]
    assert loss.search_cache_key(cfg, "c1") != loss.search_cache_key(cfg, "c2")


def test_a_cached_table_is_computed_once_per_key(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"n": len(calls)}

    assert loss.cached("t", "k1", compute, tmp_path) == {"n": 1}
    assert loss.cached("t", "k1", compute, tmp_path) == {"n": 1} and len(calls) == 1
    assert loss.cached("t", "k2", compute, tmp_path) == {"n": 2}


def test_a_broken_cache_is_computed_again(tmp_path):
    (tmp_path / "t-k.pkl").write_bytes(b"not a pickle")
    assert loss.cached("t", "k", lambda: 3, tmp_path) == 3
    assert loss.cached("t", "k", lambda: 4, tmp_path) == 3  # the mended file is read back
