"""A study of documents that are no arXiv papers, made by the test (maintenance notes of household
appliances, long enough to be chunked, some questions with two relevant notes), run through `make study`
with no model (the loop with its scripted stub; the pages that ask a model for multi-query or the agent
are not run): its prompts, its index and every word of every page it renders (prose, tables, findings,
readings; not the folded code) speak of its documents, never of arXiv, abstracts or papers; its index's
speed section is its own; page 12 shows no section for what the study lacks; its loop read the notes'
matched passages. Then, with no notebook run: the render keeps a study's prose and the arXiv study's
apart (cell tags), and the prose every notebook shows a study speaks of its documents."""
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
ATTRIBUTION = re.compile(r"the arXiv study's (?:dev set|dev questions|collection)|arXiv dev")
PAGES = ("01_collection", "02_questions", "03_dense", "04_rerank", "07_keyword_hybrid", "09_loop", "10_scores",
         "11_failures", "12_why")
NOTEBOOKS = ROOT / "notebooks"


def notes_corpus(folder: Path) -> tuple[Path, Path, Path]:
    """12 service notes (about 600 words each: four chunks), 4 questions with two relevant notes each, 8
    judgements: the fewest that still chunk every note, give a question two sources and fill every page."""
    rng = random.Random(7)
    appliances = ["washing machine", "dishwasher", "heat pump", "vacuum robot"]
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


def shown_text(page: str) -> str:
    """Every word a rendered page shows a reader but its folded code (names such as ``papers`` in the code are
    the project's, not the page's words)."""
    return text_of(re.sub(r'<details class="code">.*?</details>', " ", page, flags=re.S))


def arxiv_words(text: str) -> list[str]:
    """The arXiv/abstract/paper words of a text, each with its context, the allowed attributions left out."""
    text = ATTRIBUTION.sub("", re.sub(r"\s+", " ", text))
    return [text[max(0, m.start() - 80):m.end() + 40] for m in ARXIV_WORDS.finditer(text)]


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
        assert "the shipped report's page" not in index and "Not run in this study." in index  # page 5 was not run
        # the index and every word of every page speak of the notes; "the arXiv study's" names where a choice it
        # runs was made (the dev set, the reranker's collection) or what make bench measured, and is allowed
        pages = {p: (report / f"{p}.html").read_text(encoding="utf-8") for p in PAGES}
        texts = {p: shown_text(page) for p, page in pages.items()}
        texts["index"] = text_of(index)
        found = {p: arxiv_words(t) for p, t in texts.items()}
        assert not any(found.values()), {p: f for p, f in found.items() if f}
        assert all(generated_text(page).strip() for page in pages.values())  # every page has its finding
        # page 12 has no section for what the study lacks (no tree, no two-part questions, one model), one line each
        why = texts["12_why"]
        for heading in ("Judges over the model's own decision trees", "The model's queries, from the trees only",
                        "Place your own model", "The two-part loop", "Model size"):
            assert heading not in why, heading
        assert why.count("No decision tree saved in any condition") == 1
        assert "no two-part questions" in why and "Only one model was run in this study" in why
        assert "0.5B" not in why  # its decodings are the study's own records, not the shipped study's
        # the loop read the notes' passages its searches matched, not their first characters
        from lib.runs import read_results

        loops = read_results(next(folder.rglob("loop_question_first/run1.jsonl")))
        assert loops and all(r.details.get("read_passages") for r in loops if r.details["read"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------- with no notebook run


def executed(source: str | None, lacks: list[str] = ()):
    """A notebook as papermill leaves it, run with ``collection_source`` ``source``: a title, a paragraph in
    the arXiv study's words and one in a study's, a section that needs two-part questions, and a cell whose
    run said which parts the page lacks (one with a line to say, one without)."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from lib.report.display import LACKS

    nb = new_notebook(cells=[
        new_markdown_cell("# 3. A page\n\n*The question?*"),
        new_markdown_cell("Searched over arXiv abstracts.", metadata={"tags": ["arxiv-only"]}),
        new_markdown_cell("Searched over the documents.", metadata={"tags": ["study-only"]}),
        new_markdown_cell("## Two-part questions, over two documents", metadata={"tags": ["study-only", "needs-twopart"]}),
        new_markdown_cell("## Two-part questions, over two papers", metadata={"tags": ["arxiv-only", "needs-twopart"]}),
        new_code_cell("twopart()", outputs=[
            new_output("display_data", data={"text/markdown": "No two-part questions here.", "text/plain": "x"},
                       metadata={LACKS: list(lacks)} if lacks else {})]
            + [new_output("display_data", data={"text/markdown": "", "text/plain": "x"}, metadata={LACKS: list(lacks)})
               for _ in lacks]),
        new_code_cell("finding(page)", metadata={"tags": ["finding"]}, outputs=[
            new_output("display_data", data={"text/markdown": "**Reading.** dense reaches 0.9.", "text/plain": "x"})])])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["papermill"] = {"parameters": {"profile": "x", **({"collection_source": source} if source else {})}}
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i}"
    return nb


@pytest.mark.parametrize("source,lacks", [("documents", []), ("snapshot", []), ("documents", ["twopart"]),
                                          ("snapshot", ["twopart"])])
def test_the_render_keeps_the_prose_of_the_study_the_notebook_ran_for(tmp_path, source, lacks):
    import nbformat

    from lib.report.render import render

    path = tmp_path / "03_page.ipynb"
    nbformat.write(executed(source, lacks), path)
    page = render(path, tmp_path).read_text(encoding="utf-8")
    text = shown_text(page)
    study = source == "documents"
    assert ("Searched over the documents." in text) == study and ("Searched over arXiv abstracts." in text) != study
    assert ("over two documents" in text) == (study and not lacks) and ("over two papers" in text) == (not study and not lacks)
    assert "No two-part questions here." in text and "dense reaches 0.9" in text and "The question?" in text
    # the tags that chose the cells leave no trace on the page; a mark with no line to say shows nothing
    assert "celltag_arxiv-only" not in page and "celltag_study-only" not in page and "celltag_needs" not in page
    assert page.count('class="jp-OutputArea-child"') == 2


def test_a_notebook_run_without_collection_source_reads_it_from_the_profile_it_names():
    from lib.report.render import ran_for_study

    nb = executed(None)
    assert not ran_for_study(nb)  # a profile that does not exist: the arXiv study's prose
    nb.metadata["papermill"]["parameters"]["profile"] = "offline"
    assert not ran_for_study(nb)
    nb.metadata["papermill"]["parameters"]["collection_source"] = "documents"
    assert ran_for_study(nb)


def test_the_prose_every_notebook_shows_a_study_speaks_of_its_documents():
    """Every Markdown cell a study's page keeps (not tagged arxiv-only), in every notebook, pages 5, 6 and 8
    included (the end-to-end test above runs no model, so it cannot render them)."""
    import jupytext

    found = {}
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py")):
        nb = jupytext.read(path)
        prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown"
                         and "arxiv-only" not in c.metadata.get("tags", []))
        if words := arxiv_words(prose):
            found[path.name] = words
    assert not found, found
    # and the arXiv study's pages keep the prose written for them
    assert any("arxiv-only" in c.metadata.get("tags", []) for c in jupytext.read(NOTEBOOKS / "03_dense.py").cells)
