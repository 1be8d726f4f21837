"""The probes of issue 57 ("Trust V") kept as tests: each failed once on a clean clone."""
from __future__ import annotations

import subprocess

import pytest

from lib.config import ROOT


@pytest.mark.parametrize("variable", ["NB", "NAME", "PROFILE", "NOT_A_VARIABLE"])
def test_a_make_variable_holding_shell_is_never_run(tmp_path, variable):
    """Probe 5: `make notebook NAME='$(shell touch ...)'` ran the command (make expanded the command-line
    variable it exported to the recipe), before the project refused the value."""
    marker = tmp_path / "ran"
    value = f"$(shell touch {marker})"
    words = {"NB": "zz", variable: value}
    done = subprocess.run(["make", "--no-print-directory", "-o", "setup", "-o", "sync", "-o", "build/.notebooks-synced",
                           "notebook", *(f"{k}={v}" for k, v in words.items())], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and not marker.exists(), done.stderr
    if variable in ("NB", "PROFILE"):  # refused by name, shown as typed
        assert f"{variable}" in done.stderr and value in done.stderr


# ------------------------------------------------------------------- passwords in a server's address
SECRET = "hunter2"


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(script: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    import os
    import sys

    return subprocess.run([sys.executable, f"scripts/{script}", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_the_runner_names_an_unreachable_server_without_its_password():
    """Probe 2: `OPENAI_BASE_URL='http://user:PW@...' make notebook NB=05` printed PW in its "cannot be reached" error."""
    url = f"http://bob:{SECRET}@127.0.0.1:{_closed_port()}/v1"
    done = _run("run_notebooks.py", "--from-env", RUN_NB="05", RUN_PROFILE="offline",
                RUN_PARAMS="-p llm_backend openai -p llm_model m", OPENAI_BASE_URL=url)
    assert done.returncode == 2 and "cannot be reached" in done.stderr
    assert SECRET not in done.stdout + done.stderr and "bob:***@127.0.0.1" in done.stderr


def test_a_study_names_the_pages_it_leaves_out_without_the_password(tmp_path):
    """Probe 2: `make study ... SET='... openai_base_url=http://u:PW@...'` printed PW in its `not run:` line."""
    import shutil

    from lib.config import STUDIES_DIR

    pytest.importorskip("papermill")
    name = "test-trust-v-password"
    shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)
    url = f"http://bob:{SECRET}@127.0.0.1:{_closed_port()}/v1"
    try:
        made = _run("new_study.py", "--name", name, "--docs", "tests/data/userdocs/beir", "--set", "llm_backend=openai",
                    "--set", "llm_model=m", "--set", f"openai_base_url={url}")
        assert made.returncode == 0, made.stderr
        (tmp_path / "notebooks").mkdir()  # no notebook to execute: the run stops after naming the pages left out
        done = _run("run_notebooks.py", "--from-env", RUN_PROFILE=name, RUN_NOTEBOOK_NAMES="01_collection 05_multiquery",
                    RUN_NOTEBOOK_DIR=str(tmp_path / "notebooks"), RUN_FAILED_ROOT=str(tmp_path / "failed"))
        said = made.stdout + made.stderr + done.stdout + done.stderr
        assert "not run: 05_multiquery" in done.stderr and "bob:***@127.0.0.1" in done.stderr
        assert SECRET not in said
    finally:
        shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)


def _raises(error):
    def main(argv):
        raise error
    return main


def _message_producers(url: str):
    """Every kind of message that can hold a server's address, each as a script's ``main`` producing it:
    (what it is, main)."""
    from lib.config import load_profile
    from lib.errors import EngineError
    from lib.preflight import pages_to_run, preflight
    from lib.report.index_numbers import notebook_designs

    def said_error(make):
        def main(argv):
            try:
                make()
            except Exception as exc:  # as every script prints its errors
                print(f"error: {exc}", file=sys.stderr)
                return 2
            return 0
        return main

    import sys

    profile = load_profile("offline", llm_backend="openai", llm_model="m", openai_base_url=url)

    def left_out(argv):
        print(pages_to_run(profile, ["03_dense", "05_multiquery"], notebook_designs())[1], file=sys.stderr)
        return 0

    def llm():
        from lib.llm.base import LLMRequest
        from lib.llm.openai_backend import OpenAIBackend

        OpenAIBackend("m", base_url=url, max_retries=0, timeout_s=5).complete(LLMRequest("agent", "s", (("user", "q"),), 8))

    def engine():
        pytest.importorskip("pymilvus")
        from lib.search.milvus_index import Connection

        Connection(url.removesuffix("/v1"), timeout_s=2).client()

    yield "an unreachable server (preflight)", said_error(lambda: preflight(profile))
    yield "the pages left out", left_out
    yield "the LLM backend's error", said_error(llm)
    yield "an unreachable engine", said_error(engine)
    yield "a settings error", said_error(lambda: load_profile("offline", openai_base_url=url, milvus_timeout_s="x"))
    yield "an unexpected error's traceback", _raises(RuntimeError(f"failed at {url}"))
    yield "a line printed to stdout", lambda argv: print(f"server: {url}") or 0
    yield "an error raised as an EngineError", _raises(EngineError(f"milvus_uri {url!r}: no answer"))


def test_every_message_that_can_hold_a_servers_address_passes_through_one_redaction(capsys):
    """Issue 57: every path that prints a message passes through one choke point (lib.errors.redacted_output,
    entered by lib.progress.interruptible, which every command's main runs in): none shows the password."""
    from lib.progress import interruptible

    url = f"http://bob:{SECRET}@127.0.0.1:{_closed_port()}/v1"
    for what, main in _message_producers(url):
        capsys.readouterr()
        interruptible(main, [])
        out = capsys.readouterr()
        said = out.out + out.err
        assert "127.0.0.1" in said and SECRET not in said, (what, said)
        assert "bob:***@127.0.0.1" in said, (what, said)


def test_every_command_that_reads_a_profile_runs_through_the_redaction():
    """The commands a user runs with a server's address (their Makefile targets, and the settings check) run
    their main inside :func:`lib.progress.interruptible`, the one redaction of what they print."""
    for script in ("run_notebooks", "new_study", "build_report", "check_settings", "place_model", "select_loop"):
        text = (ROOT / "scripts" / f"{script}.py").read_text(encoding="utf-8")
        main_block = text[text.index('if __name__ == "__main__":'):]
        assert "interruptible(main" in main_block, script


# ------------------------------------------------------------------- weaknesses
def test_page_12_names_a_sealed_record_edited_by_one_byte(tmp_path):
    """Probe 6: page 12 read a sealed record file with one byte of a reply edited, exit 0, no word; its
    decoding tables check each record as a replay does, naming the file, the line and the digest."""
    import json

    from lib.errors import DataError
    from lib.llm.records import RECORDS_DIR, SEAL
    from lib.report import why_tables

    shipped = RECORDS_DIR / "local__qwen2.5-coder-1.5b-instruct-q4_k_m"
    if not (shipped / SEAL).exists():
        pytest.skip("no sealed model records in data/llm_records")
    folder = tmp_path / "local__qwen2.5-coder-1.5b-instruct-q4_k_m"
    folder.mkdir()
    (folder / SEAL).write_bytes((shipped / SEAL).read_bytes())
    with open(shipped / "agent.jsonl", encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(3)]
    (folder / "agent.jsonl").write_text("".join(lines), encoding="utf-8")
    assert why_tables.decoding_table(tmp_path).shape[0] == 1  # as shipped: read
    rec = json.loads(lines[1])
    assert "response_digest" not in rec  # sealed by its folder's digests.json
    at = lines[1].index('"response": {"text": ')
    edited = lines[1][:at] + lines[1][at:].replace("search", "starch", 1)  # one byte of the reply's text
    assert len(edited) == len(lines[1]) and edited != lines[1]
    (folder / "agent.jsonl").write_text(lines[0] + edited + lines[2], encoding="utf-8")
    with pytest.raises(DataError, match=r"agent\.jsonl: line 2: .*does not match its digest in digests\.json"):
        why_tables.decoding_table(tmp_path)


@pytest.mark.parametrize("body, said", [
    ("", "sent an empty reply"),
    ("<html>502 Bad Gateway</html>", "sent a reply that is not JSON: '<html>502 Bad Gateway</html>'"),
    ("[1, 2]", "sent no completion (no choices) for a 'agent' request: '[1, 2]'"),
    ('{"choices": "x"}', "sent no completion (no choices)"),
])
def test_a_servers_garbage_reply_is_one_line_naming_the_server_and_what_came_back(body, said):
    """Probe 6: `make place-model` showed a raw JSONDecodeError for an empty or garbage reply of the server."""
    import http.server
    import threading

    pytest.importorskip("openai")
    from lib.llm.base import LLMError, LLMRequest
    from lib.llm.openai_backend import OpenAIBackend

    class Reply(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body.encode())))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Reply)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with pytest.raises(LLMError) as err:
            OpenAIBackend("m", base_url=url, max_retries=0, timeout_s=5).complete(
                LLMRequest("agent", "s", (("user", "q"),), 8))
    finally:
        server.shutdown()
    message = str(err.value)
    assert message.startswith(f"openai m: the server at {url} {said}") and "\n" not in message
    assert "JSONDecodeError" not in message and "AttributeError" not in message


def test_the_questions_finding_counts_questions_that_copy_title_words_not_4_grams():
    """Probe 6: page 02 said "50 copy 4 or more title words" of 5 questions (it counted the copied 4-grams)."""
    import pandas as pd

    from lib.report.collection import questions_reading

    qs = pd.DataFrame({"qid": [f"q{i}" for i in range(5)], "ok": [1, 1, 1, 1, 0], "words": [10, 12, 14, 16, 18]})
    copies = [(f"q{i}", "short" if k % 2 else "question", f"gram {k}") for i in range(2) for k in range(25)]
    assert len(copies) == 50
    text = questions_reading(qs, copies)
    assert "4 of 5 questions passed review" in text and "and 2 copy 4 or more title words" in text
    assert "50" not in text
    assert "and 0 copy" in questions_reading(qs, [])


def test_a_study_without_questions_runs_its_collection_page_without_the_model(tmp_path):
    """Probe 6: a study with no QUESTIONS (its questions to be written by a model) was refused even for page 01
    alone when the model could not answer; the collection page reads no question and runs."""
    import shutil

    from lib.config import STUDIES_DIR

    pytest.importorskip("papermill")
    name = "test-trust-v-no-questions"
    shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)
    unreachable = f"http://127.0.0.1:{_closed_port()}/v1"
    try:
        made = _run("new_study.py", "--name", name, "--docs", "tests/data/userdocs/docs.jsonl", "--set", "n_sources=3",
                    "--set", "n_lookalikes=0", "--set", "llm_backend=openai", "--set", "llm_model=m",
                    "--set", f"openai_base_url={unreachable}")
        assert made.returncode == 0, made.stderr
        env = {"RUN_PROFILE": name, "RUN_FAILED_ROOT": str(tmp_path / "failed")}
        done = _run("run_notebooks.py", "--from-env", RUN_NOTEBOOK_NAMES="01_collection", **env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert (STUDIES_DIR / name / "results" / "report" / "01_collection.html").exists()
        # a page that reads the questions still needs the model that writes them: refused in one line
        done = _run("run_notebooks.py", "--from-env", RUN_NOTEBOOK_NAMES="01_collection 02_questions", **env)
        assert done.returncode == 2 and "cannot be reached" in done.stderr
    finally:
        shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)


def test_a_studys_import_shows_its_steps_as_they_end(tmp_path, monkeypatch):
    """Probe 6: a 100 MB document sat in page 01 with no progress shown: the import shows a bar of its steps (read,
    measured, written, read back) from its start, where progress is shown (PROGRESS_TO: a file here); chunking
    shows the characters tokenized (tests/test_chunking.py)."""
    import shutil

    from lib.config import STUDIES_DIR, load_profile
    from lib.data.study import import_study

    name = "test-trust-v-import-steps"
    shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)
    log = tmp_path / "progress.log"
    monkeypatch.setenv("PROGRESS_TO", str(log))
    try:
        made = _run("new_study.py", "--name", name, "--docs", "tests/data/userdocs/beir")
        assert made.returncode == 0, made.stderr
        import_study(load_profile(name))
        shown = log.read_text(encoding="utf-8").replace("\r", "\n")
        assert "importing tests/data/userdocs/beir:   0%" in shown and "4/4" in shown
    finally:
        shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)
