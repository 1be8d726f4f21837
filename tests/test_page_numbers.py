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


# ------------------------------------------------------------------ how the p-values were computed, as each page says
# each claim a page can make about the saved comparisons' method, read by its words
FLIPS_SAID = re.compile(r"(\d[\d,]*) (?:seeded |random )?(?:sign )?flips\b")
FLOOR_SAID = re.compile(r"(?:floor of|no p is below|smallest p[^.;]{0,80}? is) 1/(\d[\d,]*)")
EXACT_SAID = re.compile(r"\bexact paired randomization test\b|\bexact test\b|\bare exact\b")
RESAMPLES_SAID = re.compile(r"(\d[\d,]*) (?:paired bootstrap )?resamples\b")
FAMILY_SAID = re.compile(r"every condition: (\d+) comparisons|(\d+) tests with the offline profile's saved runs|"
                         r"Holm's correction over the (\d+) comparisons")
SMALLEST_SAID = re.compile(r"the smallest p of the \d+ before the correction is ([\d.e+−-]+)|"
                           r"the smallest p here is [^(]*\(([\d.e+−-]+)\)")


def wrong_methods(name: str, text: str, comparisons) -> list[str]:
    """Each sentence of ``text`` that names a method, count or result the saved comparisons (results/comparisons.csv,
    their ``test`` and ``resamples`` columns) were not computed with."""
    from lib.report.statistics_doc import method_of

    m = method_of(comparisons)
    out = []
    for said in FLIPS_SAID.finditer(text):
        if int(said[1].replace(",", "")) not in m.flips:
            out.append(f"{name}: {said[0]!r}: no saved comparison was computed by {said[1]} sign flips")
    for said in FLOOR_SAID.finditer(text):
        if int(said[1].replace(",", "")) - 1 not in m.flips:
            out.append(f"{name}: {said[0]!r}: a floor of random flips no saved comparison has")
    if EXACT_SAID.search(text) and not m.exact:
        out.append(f"{name}: {EXACT_SAID.search(text)[0]!r}: no saved comparison was computed exactly")
    for said in RESAMPLES_SAID.finditer(text):
        if int(said[1].replace(",", "")) not in m.resamples:
            out.append(f"{name}: {said[0]!r}: the saved comparisons were bootstrapped {m.resamples}")
    for said in FAMILY_SAID.finditer(text):
        if int(next(g for g in said.groups() if g)) != m.tests:
            out.append(f"{name}: {said[0]!r}: the saved family has {m.tests} comparisons")
    for said in SMALLEST_SAID.finditer(text):
        if value(next(g for g in said.groups() if g)) != float(f"{m.smallest:.3g}"):
            out.append(f"{name}: {said[0]!r}: the smallest saved p is {m.smallest:.3g}")
    return out


@pytest.fixture(scope="module")
def comparisons():
    import pandas as pd

    path = ROOT / "results" / "comparisons.csv"
    if not path.exists():
        pytest.skip("results/comparisons.csv is not saved (make report)")
    return pd.read_csv(path)


def test_every_page_names_the_test_the_saved_comparisons_were_computed_with(pages, comparisons):
    """The index, every page, docs/statistics.md and the README say of the p-values only what the saved comparisons
    record: their test (exact, or so many random sign flips), the bootstrap's resamples, the family's size and the
    smallest p (lib/report/statistics_doc.py writes those sentences from the same columns)."""
    assert "test" in comparisons, "results/comparisons.csv does not say how each p was computed (make report)"
    texts = {**pages, "docs/statistics.md": (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8"),
             "README.md": (ROOT / "README.md").read_text(encoding="utf-8")}
    assert EXACT_SAID.search(texts["index"]) or FLIPS_SAID.search(texts["index"]), "the index names no test: stale pattern"
    bad = [line for name, text in texts.items() for line in wrong_methods(name, re.sub(r"\s+", " ", text), comparisons)]
    assert not bad, "\n".join(bad)


def test_the_method_reader_catches_a_sentence_that_outlived_its_method():
    """The index's sentence written for random flips, read against exact comparisons (as the saved ones were once
    computed): each stale claim is found; the sentences written from those comparisons pass."""
    import pandas as pd

    from lib.report.statistics_doc import method_sentence, p_sentence

    exact = pd.DataFrame({"p_value": [2e-28, 0.3], "test": ["exact (distribution of the scaled sum)"] * 2,
                          "resamples": [2000, 2000], "condition": "c", "design": ["a", "b"], "measurable": [True, False]})
    stale = ("[95% range]: the middle 95% of 1,000 paired bootstrap resamples of the questions. p: the paired "
             "randomization test (10,000 sign flips), Holm-corrected over every comparison with dense that this page "
             "makes (every design, both measures, every condition: 80 comparisons; with 10,000 flips the smallest p a "
             "comparison can get before the correction is 1/10,001")
    said = wrong_methods("index", stale, exact)
    assert len(said) == 5 and all(w in " ".join(said) for w in ("10,000 sign flips", "1/10,001", "1,000", "80"))
    for text in (p_sentence(exact), method_sentence(exact)):
        assert not wrong_methods("now", text, exact) and "exact" in text and "1/10,001" not in text
    flips = exact.assign(test="random sign flips (10000, seed 7)")
    assert not wrong_methods("now", p_sentence(flips), flips) and "1/10,001" in p_sentence(flips)
    assert wrong_methods("now", p_sentence(exact), flips)  # an exact sentence over flipped p-values is caught
