"""A study of documents that are no arXiv papers, made by the test (maintenance notes of household
appliances, long enough to be chunked, some questions with two relevant notes), run through `make study`
with no model (the loop with its scripted stub; the pages that ask a model for multi-query or the agent
are not run): its prompts, its index and every page's generated finding speak of its documents, never of
arXiv, abstracts or papers; its index's speed section is its own; its loop read the notes' matched passages."""
import html
import json
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lib.config import ROOT, STUDIES_DIR

ARXIV_WORDS = re.compile(r"arxiv|abstract|paper", re.I)
# where a study names the arXiv study as the source of a choice it runs, or as what make bench measured
ATTRIBUTION = re.compile(r"the arXiv study's (?:dev set|dev questions|collection)|the arXiv study the prose describes|"
                         r"arXiv dev")
PAGES = ("01_collection", "02_questions", "03_dense", "07_keyword_hybrid", "09_loop", "10_scores")


def notes_corpus(folder: Path) -> tuple[Path, Path, Path]:
    """24 service notes (about 600 words each: several chunks), 8 questions, 15 judgements."""
    rng = random.Random(7)
    appliances = ["washing machine", "dishwasher", "dryer", "fridge", "oven", "heat pump", "boiler", "vacuum robot"]
    faults = ["drain pump", "door seal", "heating element"]
    filler = ["Switch the appliance off at the wall before any work.", "Keep the manual with the appliance.",
              "Wear gloves when handling sharp edges.", "Check the warranty card for the service interval.",
              "Record the date of every service in the log book.", "Use only the spare parts the maker lists.",
              "Let the unit cool for an hour after use.", "Clean the outside with a damp cloth only."]
    docs, questions, qrels = [], [], []
    for i, (a, f) in enumerate((a, f) for a in appliances for f in faults):
        body = [rng.choice(filler) for _ in range(70)]
        body.insert(rng.randrange(30, 70), f"The {f} of the {a} is replaced when it leaks. Order part {100 + i}.")
        docs.append({"id": f"note-{i:02d}", "title": f"{a.capitalize()}: {f} service", "text": " ".join(body)})
        if i % 3 == 0:
            questions.append((f"q{i:02d}", f"how do I know the {f} of my {a} needs replacing"))
            qrels += [(f"q{i:02d}", f"note-{i:02d}", 1), (f"q{i:02d}", f"note-{i + 1:02d}", 1)]
    folder.mkdir(parents=True, exist_ok=True)
    d, q, r = folder / "notes.jsonl", folder / "questions.csv", folder / "qrels.tsv"
    d.write_text("".join(json.dumps(x) + "\n" for x in docs), encoding="utf-8")
    q.write_text("qid,question\n" + "".join(f"{a},{b}\n" for a, b in questions), encoding="utf-8")
    r.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in qrels), encoding="utf-8")
    return d, q, r


def generated_text(page: str) -> str:
    """A rendered page's generated words: its finding (the lead section) and its readings."""
    parts = re.findall(r'<section class="finding">(.*?)</section>', page, re.S)
    parts += re.findall(r"<strong>Reading\.</strong>(.*?)</p>", page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", " ".join(parts)))


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)))


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "papermill").exists(), reason="needs the project's .venv (make setup)")
def test_a_study_of_other_documents_speaks_of_them(tmp_path):
    name = "test-notes-wording"
    folder = STUDIES_DIR / name
    shutil.rmtree(folder, ignore_errors=True)
    docs, questions, qrels = notes_corpus(tmp_path)
    try:
        done = subprocess.run(["make", "--no-print-directory", "study", f"DOCS={docs}", f"QUESTIONS={questions}",
                               f"QRELS={qrels}", f"NAME={name}", "SET=llm_backend=replay", "PARAMS=-p loop_backend scripted",
                               f"NOTEBOOKS={' '.join(PAGES)}"], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        report = next(folder.rglob("index.html")).parent  # a run with parameters renders into a folder of its own
        index = (report / "index.html").read_text(encoding="utf-8")
        speed = re.search(r"<h2>Speed</h2>(.*?)</p>", index, re.S).group(1)
        assert "this study's own time per question" in speed.lower() and "297" not in speed  # its own, not make bench's
        assert "the shipped report's page" not in index and "Not run in this study." in index  # page 4 was not run
        # the index and every page's finding and reading speak of the notes; "the arXiv study's" names where a
        # choice it runs was made (the dev set) or what make bench measured, and is allowed
        texts = {p: generated_text((report / f"{p}.html").read_text(encoding="utf-8")) for p in PAGES}
        texts["index"] = text_of(index)
        texts = {p: ATTRIBUTION.sub("", t) for p, t in texts.items()}
        found = {p: [t[max(0, m.start() - 80):m.end() + 40] for m in ARXIV_WORDS.finditer(t)] for p, t in texts.items()}
        assert not any(found.values()), {p: f for p, f in found.items() if f}
        # the loop read the notes' passages its searches matched, not their first characters
        from lib.runs import read_results

        loops = read_results(next(folder.rglob("loop_question_first/run1.jsonl")))
        assert loops and all(r.details.get("read_passages") for r in loops if r.details["read"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
