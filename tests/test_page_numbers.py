"""Every page's text agrees with itself and with the other pages: where two sentences state the same
quantity (a design's scores, the questions of a condition, how many sources dense misses at 5), they state
the same number, and no sentence calls a difference "no difference" beside a 95% range that excludes 0,
or better / worse against its own sign. Read from the rendered pages (report/), as a reader reads them.
Page 12 is read too."""
import html
import re
from collections import defaultdict
from pathlib import Path

import pytest

from lib.config import ROOT

REPORT = ROOT / "report"
# the index and every notebook page
PAGES = ["index", "01_collection", "02_questions", "03_dense", "04_rerank", "05_multiquery", "06_agent",
         "07_keyword_hybrid", "08_escalate", "09_loop", "10_scores", "11_failures", "12_why"]
NUMBER = r"[+−-]?\d+(?:\.\d+)?"


def page_text(path: Path) -> str:
    """The words a reader sees: no script, style or tag, entities read, whitespace as single spaces."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S | re.I)
    text = re.sub(r"<[^>]+>", " ", text)
    return re.sub(r"\s+", " ", html.unescape(text))


def value(text: str) -> float:
    return float(text.replace("−", "-"))


def stated_quantities(pages: dict[str, str]) -> dict[tuple, dict]:
    """Each quantity a sentence states -> {its value: the pages that state it}."""
    found: dict[tuple, dict] = defaultdict(lambda: defaultdict(set))
    for name, text in pages.items():
        # a design's reading (the design pages, and their findings on the index)
        for m in re.finditer(r"(\S+(?: \([^()]*\))?) \((\d+) complete runs?, (\d+) questions\) reaches recall@5 "
                             rf"({NUMBER}) and MRR@10 ({NUMBER})", text):
            found[("scores of", m[1])][m.group(2, 3, 4, 5)].add(name)
        # the questions of the default condition
        for m in re.finditer(r"\bthe (\d[\d,]*) full questions\b", text):
            found[("questions", "full questions")][m[1].replace(",", "")].add(name)
        for m in re.finditer(r"\bfull questions \((\d[\d,]*) questions\b", text):
            found[("questions", "full questions")][m[1].replace(",", "")].add(name)
        # how many sources dense misses at 5 on the full questions, said three ways
        for m in re.finditer(r"\bfull questions \((\d+) questions; dense misses (\d+) at 5\)", text):
            found[("dense misses at 5", m[1])][m[2]].add(name)
        for m in re.finditer(r"\bdense \(1 complete run, (\d+) questions\)[^;]*; it misses the source in its top 5 for "
                             r"(\d+) of \1 questions", text):
            found[("dense misses at 5", m[1])][m[2]].add(name)
        for m in re.finditer(r"plain dense search already finds the source in its top 5 for (\d+) of the (\d+)\b", text):
            found[("dense misses at 5", m[2])][str(int(m[2]) - int(m[1]))].add(name)
    return found


def contradictions_in_words(name: str, text: str) -> list[str]:
    """A difference with its 95% range, then words about it that its numbers deny."""
    out = []
    for m in re.finditer(rf"({NUMBER}) \[({NUMBER}), ({NUMBER})\](?:, p [^,;]+)?, ([^;.]+)", text):
        low, high, words = value(m[2]), value(m[3]), m[4]
        excludes_zero = low > 0 or high < 0
        if words.startswith("no difference") and excludes_zero:
            out.append(f"{name}: {m[0]!r}: a range that excludes 0 called no difference")
        if words.startswith("measurably better") and high < 0 or words.startswith("measurably worse") and low > 0:
            out.append(f"{name}: {m[0]!r}: the words against the range's sign")
    return out


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    missing = [p for p in PAGES if not (REPORT / f"{p}.html").exists()]
    if missing:
        pytest.skip(f"not rendered: {missing} (make report)")
    return {p: page_text(REPORT / f"{p}.html") for p in PAGES}


def test_two_sentences_that_state_the_same_quantity_state_the_same_number(pages):
    found = stated_quantities(pages)
    assert found[("questions", "full questions")], "no sentence states the full questions' count: the patterns are stale"
    assert any(k[0] == "scores of" for k in found), "no design reading found: the patterns are stale"
    differ = {k: {v: sorted(w) for v, w in vals.items()} for k, vals in found.items() if len(vals) > 1}
    assert not differ, f"the same quantity stated with different numbers: {differ}"


def test_no_sentence_calls_a_difference_what_its_range_denies(pages):
    bad = [line for name, text in pages.items() for line in contradictions_in_words(name, text)]
    assert not bad, "\n".join(bad)


def test_the_readers_catch_a_contradiction():
    """The patterns above on sentences made to disagree: each disagreement is found."""
    pages = {"a": "the 297 full questions ... dense (1 complete run, 297 questions) reaches recall@5 0.987 and MRR@10 "
                  "0.941; it misses the source in its top 5 for 4 of 297 questions. bm25 (1 complete run, 297 questions) "
                  "reaches recall@5 1.000 and MRR@10 0.988; recall@5 +0.013 [+0.003, +0.027], p 1, no difference the "
                  "questions can tell from zero; MRR@10 −0.046 [−0.061, −0.032], p 0.009, measurably better",
             "b": "plain dense search already finds the source in its top 5 for 290 of the 297; the 298 full questions; "
                  "bm25 (1 complete run, 297 questions) reaches recall@5 0.999 and MRR@10 0.988"}
    differ = {k for k, vals in stated_quantities(pages).items() if len(vals) > 1}
    assert differ == {("questions", "full questions"), ("dense misses at 5", "297"), ("scores of", "bm25")}
    said = contradictions_in_words("a", pages["a"])
    assert len(said) == 2 and "called no difference" in said[0] and "against the range's sign" in said[1]


def test_a_design_reading_says_a_range_that_excludes_zero_with_a_corrected_p_above_the_level_as_such():
    """The words the design pages write (lib/report/pages.py design_reading, the one rule of
    lib/report/index_numbers.py verdict_words) pass the check above."""
    import pandas as pd

    from lib.report.pages import design_reading

    row = pd.Series({"runs": 1, "questions": 297, "recall_at_5": 1.0, "mrr_at_10": 0.988, "searches": 1.0,
                     "latency_median_s": 0.001, "llm_calls": 0.0, "cost_usd_per_q": 0.0})
    deltas = pd.DataFrame([{"metric": "recall_at_5", "delta": 0.013, "low": 0.003, "high": 0.027, "p_holm": 1.0},
                           {"metric": "mrr_at_10", "delta": 0.046, "low": 0.027, "high": 0.067, "p_holm": 0.009},
                           ])
    text = design_reading("bm25", row, deltas, 297, {})
    assert not contradictions_in_words("reading", text), text
    assert "recall@5 +0.013 [+0.003, +0.027], p 1, not measurable: its 95% range excludes 0" in text
    assert "MRR@10 +0.046 [+0.027, +0.067], p 0.009, measurably better" in text
