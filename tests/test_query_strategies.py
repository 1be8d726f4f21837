"""Sub-question decomposition and HyDE (lib/designs/query_strategies.py) over scripted models."""
import numpy as np
import pytest

from lib.designs import REGISTRY, Question, design_class
from lib.designs.query_strategies import DecomposeDesign, HydeDesign
from lib.llm import LLMResponse, prompts
from lib.llm.base import MAX_TOKENS, REFUSAL
from lib.search.dense import DenseIndex, DenseSearcher
from lib.search.fusion import rrf
from tests.fakes import ListSearcher, ScriptedLLM

Q = Question("q1", "Which method prunes heads without retraining, and how is memorisation measured?", "b")


class StopLLM(ScriptedLLM):
    """A scripted model whose replies end with a given stop reason."""

    def __init__(self, replies, stop):
        super().__init__(replies)
        self.stop = stop

    def complete(self, request):
        r = super().complete(request)
        return LLMResponse(text=r.text, tokens_in=1, tokens_out=1, latency_s=0.1, cost_usd=0.0, model=r.model,
                           backend=r.backend, stop_reason=self.stop)


def test_both_are_registered_llm_designs():
    assert design_class("decompose") is DecomposeDesign and design_class("hyde") is HydeDesign
    assert REGISTRY["decompose"].uses_llm and REGISTRY["hyde"].uses_llm


def test_decompose_searches_the_question_and_each_part_and_fuses():
    llm = ScriptedLLM(["pruning heads without retraining\n- measuring memorisation\n" + Q.text])
    s = ListSearcher({Q.text: ["a", "b"], "pruning heads without retraining": ["c", "b"],
                      "measuring memorisation": ["d", "c"]})
    r = DecomposeDesign(s, llm, "anthropic").retrieve(Q, run=2)
    assert r.queries == [Q.text, "pruning heads without retraining", "measuring memorisation"]
    assert r.searches == 3 and r.details == {"parts": 2} and r.stop_reason == ""
    lists = [["a", "b"], ["c", "b"], ["d", "c"]]
    assert r.ranked_ids == [d for d, _ in rrf(lists, 60)] == ["c", "b", "a", "d"]  # c: 1/61 + 1/62 > b: 2/62
    req = llm.requests[0]
    assert req.kind == "decompose" and req.run == 2 and req.grammar is None
    assert req.messages == (("user", f"Question: {Q.text}"),)


def test_decompose_local_style_has_examples_and_grammar():
    llm = ScriptedLLM(["one part only"])
    r = DecomposeDesign(ListSearcher({}), llm, "local").retrieve(Q)
    req = llm.requests[0]
    assert req.grammar == prompts.DECOMPOSE_GRAMMAR and len(req.messages) == 5
    assert req.messages[3] == ("assistant", prompts.DECOMPOSE_EXAMPLES[1][1])
    assert r.queries == [Q.text, "one part only"] and r.details == {"parts": 1}


@pytest.mark.parametrize("stop, expect, reason", [
    (REFUSAL, [Q.text], "refusal; no usable part: the question alone"),
    (MAX_TOKENS, [Q.text, "complete first part"], "max_tokens"),
])
def test_decompose_incomplete_replies(stop, expect, reason):
    llm = StopLLM(["complete first part\ncut second pa"], stop)
    r = DecomposeDesign(ListSearcher({}), llm, "anthropic").retrieve(Q)
    assert r.queries == expect and r.stop_reason == reason


class CharEmbedder:
    """Each text's vector: letter counts of a, b, c (normalised), so the mean of two texts is known."""

    def encode_raw(self, texts):
        v = np.array([[t.count("a"), t.count("b"), t.count("c")] for t in texts], dtype=np.float32) + 1e-3
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def _searcher():
    vecs = np.eye(3, dtype=np.float32)
    vecs = np.vstack([vecs, np.array([[0.7071, 0.7071, 0]], dtype=np.float32)])
    return DenseSearcher(DenseIndex(["pa", "pb", "pc", "pab"], vecs), CharEmbedder())


def test_hyde_searches_the_mean_of_question_and_passage():
    question = Question("q2", "aaaa", "pab")
    passage = "bbbb, a hypothetical abstract"
    llm = ScriptedLLM([passage + "\n"])
    s = _searcher()
    r = HydeDesign(s, llm, "anthropic").retrieve(question)
    # the question alone ranks pa first; the mean of its vector and the passage's ranks pab first
    assert [h.id for h in s.search(question.text, 4)][0] == "pa"
    assert r.ranked_ids[0] == "pab" and r.searches == 1
    assert r.queries == [question.text, passage] and r.stop_reason == ""
    assert llm.requests[0].kind == "hyde" and llm.requests[0].grammar is None


def test_hyde_local_style_and_a_refused_reply_searches_the_question_alone():
    question = Question("q2", "aaaa", "pab")
    llm = StopLLM(["bbbbbbbb"], REFUSAL)
    r = HydeDesign(_searcher(), llm, "local").retrieve(question)
    assert llm.requests[0].grammar == prompts.HYDE_GRAMMAR and len(llm.requests[0].messages) == 3
    assert r.queries == [question.text] and r.ranked_ids[0] == "pa"
    assert r.stop_reason == "refusal; no usable passage: the question alone"


def test_prompts_in_a_studys_words():
    c = prompts.corpus_of("maintenance reports of wind turbines")
    assert "paper" not in prompts.hyde_system(c) and "wind turbines" in prompts.hyde_system(c)
    assert "paper" not in prompts.decompose_system(c)
    llm = ScriptedLLM(["x" * 50])
    HydeDesign(_searcher(), llm, "local", corpus=c).retrieve(Q)
    assert all("paper" not in str(m) for m in llm.requests[0].messages)


def _row(condition, design, delta, p):
    return {"condition": condition, "design": design, "mrr_at_10_delta": delta, "mrr_at_10_p_holm": p,
            "recall_at_5_delta": 0.0, "recall_at_5_p_holm": 1.0}


def test_the_answer_says_where_a_query_strategy_wins_and_where_not():
    import pandas as pd

    from lib.report.index_words import strategies_sentence

    scored = pd.DataFrame([_row("full questions", "decompose", -0.02, 0.001),
                           _row("two-part questions", "decompose", 0.031, 0.004),
                           _row("full questions", "hyde", 0.004, 0.6),
                           _row("two-part questions", "agent", 0.05, 0.001)])
    text = strategies_sentence(scored, ["full questions", "two-part questions"], str)
    assert "**decompose** is measurably worse than dense on full questions (−0.020); measurably better than " \
           "dense on two-part questions (+0.031)" in text
    assert "**hyde** is not measurably different from dense on full questions (+0.004)" in text
    assert strategies_sentence(scored[scored.design == "agent"], ["two-part questions"], str) == ""


def _wide(condition, design, mrr, p_mrr, runs=1):
    return {"condition": condition, "design": design, "runs": runs, "questions": 10, "mrr_at_10_delta": mrr,
            "mrr_at_10_low": mrr - 0.01, "mrr_at_10_high": mrr + 0.01, "mrr_at_10_p_holm": p_mrr,
            "recall_at_5_delta": 0.0, "recall_at_5_low": -0.01, "recall_at_5_high": 0.01, "recall_at_5_p_holm": 1.0,
            "llm_calls": 1.0, "searches": 2.0, "latency_median_s": 3.0}


def test_page_13_puts_two_part_questions_first_and_says_which_strategy_wins(monkeypatch):
    import pandas as pd

    from lib.config import load_profile
    from lib.report import queries, strategies

    table = pd.DataFrame([_wide("full questions", "agent", -0.04, 0.001), _wide("full questions", "hyde", 0.002, 0.9),
                          _wide("two-part questions", "decompose", 0.05, 0.01),
                          _wide("two-part questions", "bm25", 0.09, 0.001),
                          _wide("full questions", "decompose", 0.0, 1.0, runs=0)])
    monkeypatch.setattr(queries, "condition_table", lambda profile: table)
    profile = load_profile("offline")
    t = strategies.strategies_table(profile)
    assert list(zip(t.condition, t.design)) == [("two-part questions", "decompose"), ("full questions", "hyde"),
                                                ("full questions", "agent")]
    assert list(t["against dense"]) == ["measurably better", "no measurable difference", "measurably worse"]
    text = strategies.strategies_reading(profile)
    assert text.startswith("A query strategy beats dense: **decompose** on two-part questions")
    assert "two-part questions: decompose +0.050 (p 0.010); full questions: hyde +0.002 (p 0.900), agent −0.040" in text
    table.loc[2, "mrr_at_10_p_holm"] = 0.2
    assert strategies.strategies_reading(profile).startswith("**Neither query strategy is measurably better")
