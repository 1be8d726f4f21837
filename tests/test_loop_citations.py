"""Page 9's citation measures beside the hit rate: the share of all citations that are relevant (citation
precision) and how many loops cite exactly the first search's top results (the loop found nothing of its
own); and what a read showed the model."""

from lib.config import load_profile
from lib.designs import Result
from lib.designs.loop import SHOWN_SEP, first_shown
from lib.report import loop as loop_report


def loop_result(qid, cites, first, later=()):
    trace = [{"step": 1, "kind": "code", "decided_by": "model", "title": "search",
              "detail": f'"q"{SHOWN_SEP}{", ".join(first)}'}]
    trace += [{"step": 2, "kind": "code", "decided_by": "model", "title": "search",
               "detail": f'"r"{SHOWN_SEP}{", ".join(later)}'}]
    return Result(qid, "loop", 1, list(dict.fromkeys(list(cites) + list(first))), 2, [qid, "q", "r"], 1.0,
                  details={"citations": list(cites), "read": [], "turns": 3}, trace=trace)


def test_citation_precision_and_loops_citing_the_first_page():
    top = ["a", "b", "c", "d", "e"]
    results = [loop_result("q1", ["e", "d", "c", "b", "a"], top),   # the first page, reordered: counts
               loop_result("q2", ["a", "b"], top),                   # part of it: does not
               loop_result("q3", ["z"], top, ["z", "y"]),            # found later: does not
               loop_result("q4", [], top)]                           # no citation: does not
    sources = {"q1": "a", "q2": "x", "q3": "z", "q4": "a"}
    assert first_shown(results[2]) == top
    pq = loop_report.measures(results, sources)
    assert pq.set_index("qid").cites_first_top.to_dict() == {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 0.0}
    row = loop_report.summary(pq).iloc[0]
    # 8 citations, 2 of them relevant (q1's a, q3's z): 0.25 pooled, while the hit rate is 2 of 4
    assert row.citations_relevant_share == 0.25 and row.citation_hit_rate == 0.5
    assert row.cites_first_top_rate == 0.25
    # the per-question mean of precision weighs q3's single relevant citation as much as q1's five
    assert abs(row.citation_precision - (0.2 + 0 + 1) / 3) < 1e-12
    shown = loop_report.transposed(loop_report.summary(pq), shares=loop_report.LOOP_SHARES)
    assert any("citation precision" in str(m) for m in shown.iloc[:, 0])


def test_page_9_says_what_a_read_showed():
    words = loop_report.read_words(load_profile("offline"), [])
    assert words == "A read showed the model one paper's title and abstract, cut at 2,000 characters."
    study = load_profile("pilot", collection_source="documents", chunk_documents=True)
    r = loop_result("q1", [], ["a"])
    r.details.update(read=["a", "b"], read_chars=3000, read_passages={"a": [[0, 1]], "b": [[2, 3]]})
    words = loop_report.read_words(study, [r])
    assert "one document's title and 2 of its passages" in words and "1,500 characters each" in words
    assert "paper" not in words and "abstract" not in words
