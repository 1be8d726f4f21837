"""The probes of issue 49 ("Trust IV") kept as tests: each failed once on a clean clone."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lib.config import ROOT


def _notebook(path: Path, source: str) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("state_file = ''", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(source)]
    nb.metadata["kernelspec"] = {"name": "agentic-rag-evidence", "display_name": "agentic-rag-evidence",
                                 "language": "python"}
    nbformat.write(nb, str(path))


def _kernel_or_skip() -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("agentic-rag-evidence")
    except NoSuchKernel:
        pytest.skip("the project's kernel is not registered (make setup registers it)")


def _outputs(path: Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", [])]


def test_a_page_run_before_a_later_page_saved_runs_is_run_again_as_its_rerun_would_read(tmp_path):
    """Probe 3: a study's first run showed page 05 with the family of the designs run so far, page 10 with
    the whole study's; the page that read the state before a later page changed it is executed again, so
    the first run gives the pages its rerun gives."""
    from lib.report.execute import run_notebooks

    _kernel_or_skip()
    state = tmp_path / "runs.txt"
    state.write_text("dense\n")
    nbs = tmp_path / "nb"
    nbs.mkdir()
    _notebook(nbs / "a_reads.ipynb", "from pathlib import Path\nprint('family:', Path(state_file).read_text().split())")
    _notebook(nbs / "b_adds.ipynb", "from pathlib import Path\np = Path(state_file)\n"  # two designs, one after the other
              "def add(d):\n    p.write_text(p.read_text() + (d + '\\n' if d not in p.read_text().split() else ''))\n"
              "add('agent')\nprint('family:', p.read_text().split())\nadd('loop')")
    _notebook(nbs / "c_reads.ipynb", "from pathlib import Path\nprint('family:', Path(state_file).read_text().split())")
    lines: list[str] = []
    names = ["a_reads", "b_adds", "c_reads"]

    def run(out: str) -> tuple[list[str], dict[str, list[str]]]:
        done, failed = run_notebooks(names, nbs, tmp_path / out, tmp_path / "failed", {"state_file": str(state)},
                                     cwd=tmp_path, log=lines.append, state=state.read_text)
        assert not failed
        return done, {n: _outputs(tmp_path / out / f"{n}.ipynb") for n in names}

    done, first = run("first")
    assert done == names
    assert first["a_reads"] == first["b_adds"] == first["c_reads"] == ["family: ['dense', 'agent', 'loop']\n"]
    assert any(line.startswith("== again") and "a_reads b_adds" in line and "c_reads" not in line for line in lines)
    lines.clear()
    done, again = run("again")
    assert again == first and not any(line.startswith("== again") for line in lines)  # nothing changed: once each


def test_the_questions_finding_says_none_passed_instead_of_failing_on_the_median_of_nothing():
    """Probe 7: page 02 crashed (`cannot convert float NaN to integer`) when no written question passed review."""
    import pandas as pd

    from lib.report.collection import length_words, questions_reading

    failed = pd.DataFrame({"ok": [0, 0], "words": [12, 30]})
    text = questions_reading(failed, [])
    assert text.startswith("None of the 2 questions passed review") and "nan" not in text
    passed = pd.DataFrame({"ok": [1, 0, 1], "words": [10, 99, 21]})
    copied = [("q1", "question", "a b c d")]
    text = questions_reading(passed, copied)
    assert "2 of 3 questions passed review" in text and "15.5 words" in text and "and 1 copy" in text
    assert length_words(pd.Series([], dtype=int)) == "no questions"


def test_page_02_renders_when_no_question_passed_review(tmp_path):
    """Probe 7 as the page runs: the pilot's questions, every one failed by review, render page 02 with the finding."""
    import shutil

    import pandas as pd

    from lib.report.execute import run_notebooks

    _kernel_or_skip()
    os.environ["PYTHONPATH"] = str(ROOT)
    data = tmp_path / "data"
    data.mkdir()
    for name in ("collection.jsonl", "collection_manifest.json"):
        shutil.copy(ROOT / "data" / "pilot" / name, data / name)
    qs = pd.read_csv(ROOT / "data" / "pilot" / "questions.csv", dtype=str).assign(ok="0", review_note="failed")
    qs.to_csv(data / "questions.csv", index=False)
    params = {"profile": "pilot", "data_dir": str(data), "results_dir": str(tmp_path / "results"),
              "questions_path": str(data / "questions.csv")}
    done, failed = run_notebooks(["02_questions"], ROOT / "notebooks", tmp_path / "out", tmp_path / "failed", params,
                                 cwd=ROOT, log=lambda line: None)
    assert done == ["02_questions"], failed
    text = "".join(_outputs(tmp_path / "out" / "02_questions.ipynb"))
    nb = (tmp_path / "out" / "02_questions.ipynb").read_text(encoding="utf-8")
    assert f"None of the {len(qs)} questions passed review" in nb, text[-2000:]


def _store_with_two_calls(folder: Path):
    from lib.llm.base import LLMRequest, LLMResponse
    from lib.llm.records import RecordStore

    store = RecordStore(folder)
    reqs = [LLMRequest("agent", "sys", (("user", f"question {i}"),), 64, run=1) for i in (1, 2)]
    for i, r in enumerate(reqs):
        store.put(r, LLMResponse(text=f'{{"decision": "stop", "n": {i}}}', tokens_in=10, tokens_out=5, latency_s=0.5,
                                 cost_usd=0.0, model="m", backend="local"))
    return reqs, folder / "agent.jsonl"


@pytest.mark.parametrize("damage", ["key", "reply"])
def test_a_record_whose_key_or_reply_was_damaged_is_named_by_file_and_line(tmp_path, damage):
    """Probes 4 and 9: a saved record whose key was damaged dropped its whole run as "not recorded for these
    questions" (exit 0), and a reply edited by hand was replayed without notice; now either is an error naming
    the file and line, and reading writes nothing."""
    from lib.errors import DataError
    from lib.llm.records import RecordStore

    reqs, path = _store_with_two_calls(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[1])
    if damage == "key":
        rec["key"] = rec["key"][:-1] + ("0" if rec["key"][-1] != "0" else "1")
    else:
        rec["response"]["text"] = '{"decision": "search", "query": "edited"}'
    lines[1] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(DataError, match=r"agent\.jsonl: line 2: .*" + ("gives key" if damage == "key" else "digest")):
        RecordStore(tmp_path).get(reqs[0])
    assert path.read_bytes() == before


def test_a_record_read_back_replays_its_reply_and_one_without_a_digest_is_still_read(tmp_path):
    from lib.llm.records import RecordStore

    reqs, path = _store_with_two_calls(tmp_path)
    assert RecordStore(tmp_path).get(reqs[1])["response"]["text"] == '{"decision": "stop", "n": 1}'
    old = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for rec in old:  # records written before the digest existed
        del rec["response_digest"]
    path.write_text("".join(json.dumps(r) + "\n" for r in old), encoding="utf-8")
    assert RecordStore(tmp_path).count("agent") == 2


def test_a_line_that_leaves_a_design_unscored_is_on_the_page_and_marked_for_the_terminal(tmp_path, capsys):
    """Probe 5: problems were reported only inside a page, with exit 0; a page's unscored line is now marked,
    and scripts/run_notebooks.py prints every marked line and exits non-zero. Outside a kernel it goes to stderr."""
    from lib.progress import unscored
    from lib.report.execute import run_notebooks, unscored_lines

    unscored("agent run 2: not scored")
    assert "agent run 2: not scored" in capsys.readouterr().err
    _kernel_or_skip()
    nbs = tmp_path / "nb"
    nbs.mkdir()
    _notebook(nbs / "page.ipynb", "from lib.progress import unscored\nprint('before')\n"
              "unscored('agent run 2: another process is writing', markdown='**agent** was not run')")
    _notebook(nbs / "clean.ipynb", "print('nothing wrong')")
    done, failed = run_notebooks(["page", "clean"], nbs, tmp_path / "out", tmp_path / "failed", {}, cwd=ROOT,
                                 log=lambda line: None)
    assert done == ["page", "clean"] and not failed
    assert unscored_lines(tmp_path / "out" / "page.ipynb") == ["agent run 2: another process is writing"]
    assert unscored_lines(tmp_path / "out" / "clean.ipynb") == []
    nb = json.loads((tmp_path / "out" / "page.ipynb").read_text(encoding="utf-8"))
    shown = [{k: "".join(v) for k, v in o["data"].items()} for c in nb["cells"] for o in c.get("outputs", []) if "data" in o]
    assert {"text/plain": "agent run 2: another process is writing", "text/markdown": "**agent** was not run"} in shown


def test_the_runner_prints_the_unscored_lines_and_exits_non_zero(tmp_path):
    """The runner's side of probe 5: `make notebook` on a page that left a design unscored renders the page, prints
    its line in the terminal and exits 1 (it exited 0 and printed only the page's path)."""
    import subprocess
    import sys

    import nbformat

    _kernel_or_skip()
    nbs = tmp_path / "nb"
    nbs.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "agentic-rag-evidence", "display_name": "agentic-rag-evidence",
                                 "language": "python"}
    params = nbformat.v4.new_code_cell('profile = "offline"', metadata={"tags": ["parameters"]})
    nb.cells = [nbformat.v4.new_markdown_cell("# 3. Dense search"), params,
                nbformat.v4.new_code_cell("from lib.progress import unscored\n"
                                          "unscored('dense run 1: another process is writing its run file now')")]
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i}"
    nbformat.write(nb, nbs / "03_dense.ipynb")
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "scripts/run_notebooks.py", "--profile-file", "profiles/pilot.yaml",
                           "--notebooks-dir", str(nbs), "--failed-root", str(tmp_path / "failed"), "--print-page",
                           "03_dense", "--", "pilot", "-p", "results_dir", str(results)],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "not scored: 03_dense: dense run 1: another process is writing its run file now" in done.stderr
    assert (results / "report" / "03_dense.html").exists()  # the page is rendered, and says it too


def _pilot_with_changed_question(tmp_path: Path, which: int):
    import shutil

    import pandas as pd

    from lib.config import load_profile

    data = tmp_path / "data"
    data.mkdir()
    for name in ("collection.jsonl", "collection_manifest.json"):
        shutil.copy(ROOT / "data" / "pilot" / name, data / name)
    qs = pd.read_csv(ROOT / "data" / "pilot" / "questions.csv", dtype=str, keep_default_na=False)
    row = qs.index[which]
    qs.loc[row, "question"] = qs.loc[row, "question"].rstrip("?") + ", exactly?"
    qs.to_csv(data / "questions.csv", index=False)
    return load_profile("pilot", data_dir=str(data), results_dir=str(tmp_path / "results"),
                        questions_path=str(data / "questions.csv"))


@pytest.mark.parametrize("which", [0, -1])
def test_a_changed_question_is_never_read_as_an_interrupted_recording_or_as_not_recorded(tmp_path, capsys, which):
    """Probe 5: a changed question read as "a recording that was interrupted" (the last question) or made the
    run "not recorded for these questions; skipped" (the first): the first is refused as a changed question,
    the last is named as either and left unscored where the terminal shows it."""
    from lib import pipeline
    from lib.llm import ReplayMiss

    profile = _pilot_with_changed_question(tmp_path, which)
    if which == 0:
        with pytest.raises(ReplayMiss, match="was it changed"):
            pipeline.run(profile, "multiquery", runs=[1], progress=False)
        return
    pipeline.run(profile, "multiquery", runs=[1], progress=False)
    err = capsys.readouterr().err
    assert "or a question changed since it was recorded" in err and "not scored" in err


def test_an_unreachable_server_is_named_without_the_password_in_its_address():
    """Probe 8: the unreachable-server error printed OPENAI_BASE_URL with its password."""
    pytest.importorskip("openai")
    from lib.llm.base import LLMError, LLMRequest
    from lib.llm.openai_backend import OpenAIBackend

    llm = OpenAIBackend("m", base_url="http://bob:hunter2@127.0.0.1:9/v1", max_retries=0, timeout_s=5)
    with pytest.raises(LLMError) as err:
        llm.complete(LLMRequest("agent", "sys", (("user", "q"),), 16))
    assert "hunter2" not in str(err.value) and "bob:***@127.0.0.1:9" in str(err.value)


@pytest.mark.parametrize("text, shown", [
    ("http://bob:hunter2@host:8000/v1", "http://bob:***@host:8000/v1"),
    ("https://host/v1?api_key=hunter2&x=1", "https://host/v1?api_key=***&x=1"),
    ("milvus_uri 'http://root:hunter2@localhost:19530': no answer", "milvus_uri 'http://root:***@localhost:19530': no answer"),
    ("http://host:8000/v1 and https://user@host/", "http://host:8000/v1 and https://user@host/"),
])
def test_credentials_in_urls_are_redacted_in_messages_and_on_pages(text, shown):
    from lib.errors import redacted
    from lib.report.pages import setting_text

    assert redacted(text) == shown and setting_text(text) == shown


def test_a_cell_a_spreadsheet_would_run_is_written_as_text(tmp_path):
    """Probe 8: question text starting with =, @, + or - was written as is into report/tables/*.csv."""
    import pandas as pd

    from lib.config import load_profile
    from lib.report.pages import whole_table

    profile = load_profile("pilot", results_dir=str(tmp_path / "results"))
    df = pd.DataFrame({"qid": ["q1", "q2", "q3", "q4", "q5"],
                       "question": ["=HYPERLINK(\"http://x\",\"y\")", "@SUM(1,1)", "+1+1", "-2+3", "what is it?"],
                       "delta": [-0.5, 0.25, -1.0, 0.0, 1.0]})
    whole_table(df, profile, "probe")
    back = pd.read_csv(profile.report_dir / "tables" / "probe.csv")
    assert str(profile.report_dir).startswith(str(tmp_path))
    assert back.question.tolist() == ["'=HYPERLINK(\"http://x\",\"y\")", "'@SUM(1,1)", "'+1+1", "'-2+3", "what is it?"]
    assert back.delta.tolist() == [-0.5, 0.25, -1.0, 0.0, 1.0]  # numbers stay numbers


def test_an_id_with_a_zero_width_character_is_refused_by_name(tmp_path):
    """Probe 9: ids that differ only by a zero-width space became two documents, silently."""
    from lib.data.documents import read_documents
    from lib.errors import DataError

    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"id": "doc1", "text": "one"}) + "\n" + json.dumps({"id": "doc\u200b1", "text": "two"})
                    + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"docs\.jsonl: line 2: .*ZERO WIDTH SPACE \(U\+200B\)"):
        read_documents(path)
    path.write_text(json.dumps({"id": "\ufeffdoc1", "text": "one"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 1: .*ZERO WIDTH NO-BREAK SPACE"):
        read_documents(path)
    path.write_text(json.dumps({"id": "caf\u0065\u0301", "text": "one"}) + "\n", encoding="utf-8")
    assert [d["id"] for d in read_documents(path)] == ["caf\u00e9"]  # NFC, as before


def _new_study(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, str(ROOT / "scripts" / "new_study.py"), "--docs", "examples/beir-dev", *args],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_long_study_name_and_a_bad_set_value_are_refused_in_one_line():
    """Probe 9: a 300-character NAME ended in `OSError: File name too long`; a SET value error printed pydantic's
    raw four-line message. Both are refused in one line, naming what to change, before anything is written."""
    from lib.config import STUDIES_DIR

    long = _new_study("--name", "a" * 300)
    assert long.returncode == 2 and "Traceback" not in long.stderr
    assert long.stderr.strip() == "error: --name: a study name has at most 80 characters, got 300 " \
                                  "(aaaaaaaaaaaaaaaaaaaa...); give a shorter NAME="
    bad = _new_study("--name", "probe49-set", "--set", "dense_k=abc")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert bad.stderr.startswith("error: SET: setting 'dense_k':") and "pydantic" not in bad.stderr
    assert not (STUDIES_DIR / "probe49-set").exists() and not any(p.name.startswith("a" * 80) for p in STUDIES_DIR.glob("a*"))


def _sigint_by_default():
    """In the child, before it starts: SIGINT handled by default and not blocked."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_ends_a_command_with_one_line_and_no_traceback():
    """Probe 9: Ctrl-C printed a KeyboardInterrupt traceback; the commands' entry points end in one line, status 130."""
    import signal
    import subprocess
    import sys

    code = ("import sys, time\nfrom lib.progress import interruptible\n"
            "def main(argv):\n    print('ready', flush=True)\n    time.sleep(60)\n    return 0\n"
            "sys.exit(interruptible(main, []))\n")
    # Ctrl-C as a terminal sends it: a runner started in the background (or by a harness) may pass SIGINT on
    # ignored or blocked, which the child would keep
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_sigint_by_default)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err
    assert err.strip() == "interrupted (Ctrl-C): what was saved so far is kept; the same command continues from there"
    for script in ("run_notebooks", "new_study", "build_report"):
        assert "sys.exit(interruptible(main, sys.argv[1:]))" in (ROOT / "scripts" / f"{script}.py").read_text()


def test_every_p_that_is_not_the_index_familys_is_named_uncorrected():
    """Probe 3 / issue 50's "one comparison, three p-values": pages show the index family's Holm p as "p,
    Holm-corrected"; a raw p (page 10's column, page 6's merge table, which no family names) says it is uncorrected."""
    import pandas as pd

    from lib.report.display import heading
    from lib.report.merges import merges_table

    assert heading("p_value") == "p, uncorrected" and heading("p_holm") == "p, Holm-corrected"
    assert heading("mrr_at_10_p_value") == "MRR@10 p, uncorrected"
    assert heading("recall_at_5_p_holm") == "recall@5 p, Holm-corrected"
    row = {"condition": "full questions", "design": "agent", "merge_rule": "rrf", "run": "mean", "questions": 9,
           "chosen_on_dev": False, **{f"{m}{e}": 0.1 for m in ("mrr_at_10", "recall_at_5")
                                      for e in ("", "_delta", "_low", "_high", "_p_value")}}
    shown = merges_table(pd.DataFrame([row]))
    assert [c for c in shown.columns if c.endswith(" p") or " p," in c] == ["recall@5 p, uncorrected",
                                                                            "MRR@10 p, uncorrected"]


def test_a_page_whose_run_file_another_process_writes_says_so_where_the_terminal_shows_it(tmp_path, capsys):
    """Probe 5: a second writer of one run file wrote "another process is writing" into its page only (exit 0);
    the page's line is now an unscored line (printed, marked for the runner's non-zero exit)."""
    import shutil
    import subprocess
    import sys

    from lib.config import load_profile
    from lib.report import pages
    from lib.runs import run_path

    data = tmp_path / "data"
    data.mkdir()
    for name in ("collection.jsonl", "collection_manifest.json", "questions.csv"):
        shutil.copy(ROOT / "data" / "pilot" / name, data / name)
    profile = load_profile("pilot", data_dir=str(data), results_dir=str(tmp_path / "results"),
                           questions_path=str(data / "questions.csv"))
    path = run_path(profile.results_dir, "bm25", 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
                               "from lib.io import locked\nwith locked(Path(sys.argv[1])):\n"
                               "    print('held', flush=True)\n    time.sleep(120)\n", str(path)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        page = pages.run_or_read(profile, "bm25")
    finally:
        holder.kill()
        holder.wait()
    assert page["runs"] == {}
    err = capsys.readouterr().err
    assert "bm25 was not run for this page: another process is writing its run file now" in err


def test_the_worked_examples_first_run_and_its_rerun_give_byte_identical_pages(worked_example):
    """Probe 3 on the worked example (the README's `make study DOCS=examples/beir-dev ...`, tests/conftest.py
    worked_example: every page that needs no model, the scores page among them): the first run's pages (pages 04
    and 07 were rendered with the family of the designs run so far: 2, 4 and 6 tests against the rerun's 8) equal
    its rerun's byte for byte, every page, table, figure and the index; the rerun executes every page once."""
    first, again = worked_example.runs
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    pages, now = worked_example.files
    assert {"index.html", "04_rerank.html", "07_keyword_hybrid.html", "10_scores.html"} <= {str(p) for p in pages}
    assert "== again" in first.stdout  # the first run executed the pages before the last run was saved again
    assert "== again" not in again.stdout  # nothing saved by the rerun: each page once
    assert sorted(now) == sorted(pages)
    differ = [str(p) for p in pages if now[p] != pages[p]]
    assert not differ, differ


def test_a_reply_edited_by_hand_in_a_record_written_before_digests_is_named_once_its_folder_is_sealed(tmp_path):
    """Probe 9: a reply edited by hand in a record file was replayed without notice. Records written before the
    digest was stored with each record are covered by their folder's digests.json (lib.llm.records.seal)."""
    from lib.errors import DataError
    from lib.llm.records import SEAL, RecordStore, seal

    reqs, path = _store_with_two_calls(tmp_path)
    legacy = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for rec in legacy:
        del rec["response_digest"]
    path.write_text("".join(json.dumps(r) + "\n" for r in legacy), encoding="utf-8")
    seal(tmp_path)
    assert set(json.loads((tmp_path / SEAL).read_text())["agent"]) == {r["key"][:16] for r in legacy}
    assert RecordStore(tmp_path).count("agent") == 2  # sealed and unchanged: read as before
    legacy[0]["response"]["text"] = '{"decision": "search", "query": "edited by hand"}'
    path.write_text("".join(json.dumps(r) + "\n" for r in legacy), encoding="utf-8")
    with pytest.raises(DataError, match=r"agent\.jsonl: line 1: .*digests\.json"):
        RecordStore(tmp_path).get(reqs[1])


def test_every_shipped_record_is_sealed_or_carries_its_own_digest():
    """The shipped records' folders are sealed (`python scripts/seal_records.py`): a record written before the
    digest was stored with it is in its folder's digests.json, so a hand edit of any shipped reply is named."""
    from lib.llm.records import RECORDS_DIR, SEAL

    for folder in sorted(p for p in RECORDS_DIR.iterdir() if p.is_dir()):
        sealed = json.loads((folder / SEAL).read_text()) if (folder / SEAL).exists() else {}
        for f in sorted(folder.glob("*.jsonl")):
            lines = f.read_bytes().split(b"\n")
            recs = [json.loads(line) for line in lines[:-1] if line.strip()]
            loose = [r["key"][:12] for r in recs if "response_digest" not in r
                     and r["key"][:16] not in sealed.get(f.stem, {})]
            assert not loose, f"{f.relative_to(ROOT)}: {len(loose)} record(s) neither sealed nor digested " \
                              f"(first {loose[0]}): run python scripts/seal_records.py"
