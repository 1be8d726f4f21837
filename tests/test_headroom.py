"""Dense's headroom, the most any design can raise recall@5 by, counted from recall: with one relevant
document a question it is the share dense misses at 5; with several, a question whose top 5 holds one of
two relevant documents leaves room too. The index, the dense page and the scores page say the same."""
import pandas as pd

from lib.evaluation import scores
from lib.report.display import headroom_words
from lib.report.index_numbers import conditions_from
from lib.report.index_words import scope_sentence
from lib.report.pages import design_reading


def rows(recalls, mrrs=None):
    mrrs = mrrs or [1.0 if r else 0.0 for r in recalls]
    return pd.DataFrame({"qid": [f"q{i}" for i in range(len(recalls))], "design": "dense", "run": 1,
                         "recall_at_5": recalls, "mrr_at_10": mrrs})


def test_headroom_with_one_relevant_document_is_the_share_missed():
    head = scores.headroom(rows([1.0, 0.0, 1.0, 1.0]))
    assert head["max_recall_gain"] == 0.25 and head["dense_misses_at_5"] == 1 == head["dense_incomplete_at_5"]
    words = headroom_words(head)
    assert words == ("misses the source in its top 5 for 1 of 4 questions (in its top 10 for 1), so no design can "
                     "raise recall@5 by more than 0.250")


def test_headroom_with_several_relevant_documents_counts_recall():
    # dense finds 1 of 2 relevant documents for q1 and none for q2: recall@5 0.625, room 0.375, not 1/4
    head = scores.headroom(rows([1.0, 0.5, 0.0, 1.0]))
    assert head["dense_misses_at_5"] == 1 and head["dense_incomplete_at_5"] == 2
    assert abs(head["max_recall_gain"] - 0.375) < 1e-12 and abs(head["dense_recall_at_5"] - 0.625) < 1e-12
    words = headroom_words(head, "the relevant document")
    assert "recall@5 0.625" in words and "more than 0.375" in words and "0.250" not in words
    assert "every relevant document for 2 of 4 questions, some of them for 1 and none for 1" in words
    # the dense page's reading and the index's scope sentence give the same ceiling
    summary = [{"design": "dense", "runs": 1, "questions": 4, "recall_at_5": 0.625, "mrr_at_10": 0.6, "searches": 1.0,
                "latency_median_s": 0.1, "llm_calls": 0, "cost_usd_per_q": 0.0}]
    reading = design_reading("dense", pd.Series(summary[0]), pd.DataFrame(), 4, head, source="the relevant document")
    assert "more than 0.375 on these questions" in reading
    table = conditions_from(summary, pd.DataFrame(columns=["design", "metric"]), head)
    assert table.max_recall_gain.iloc[0] == head["max_recall_gain"]
    assert "more than 0.375" in scope_sentence(table, "offline")
