"""`make report` keeps a page computed from the same inputs (lib.report.inputs, lib.report.execute.page_key):
the inputs are read by content, outputs are no inputs, and a page is executed again when its inputs, its
notebook or its parameters change, or when asked to (--again)."""
import json
import os

import nbformat

from lib.report.execute import INPUTS_KEY, recorded_key, run_notebooks
from lib.report.inputs import input_files, inputs_digest


def test_the_inputs_are_read_by_content_and_outputs_are_no_inputs(tmp_path):
    root, memo = tmp_path / "repo", tmp_path / "memo.json"
    (root / "results" / "report").mkdir(parents=True)
    table = root / "results" / "comparisons.csv"
    table.write_text("a,b\n1,2\n")
    first = inputs_digest({"x": 1}, root=root, memo=memo)
    assert [p.name for p in input_files(root)] == ["comparisons.csv"]
    os.utime(table, ns=(1, 1))  # rewritten with the same bytes: the same inputs
    assert inputs_digest({"x": 1}, root=root, memo=memo) == first
    for output in ("results/report/index.html", "results/x.ipynb", "results/run1.jsonl.lock", "results/.t.tmp"):
        (root / output).write_text("anything")
    assert inputs_digest({"x": 1}, root=root, memo=memo) == first
    assert inputs_digest({"x": 2}, root=root, memo=memo) != first  # the command's settings
    table.write_text("a,b\n1,3\n")
    assert inputs_digest({"x": 1}, root=root, memo=memo) != first
    assert json.loads(memo.read_text())[str(table)][2] != "size"  # kept by content in the memo


def test_a_page_is_kept_when_its_inputs_notebook_and_parameters_are_those_of_its_last_run(tmp_path):
    books, out, failed, count = tmp_path / "nb", tmp_path / "out", tmp_path / "failed", tmp_path / "count.txt"
    books.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("n = 0", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(f"open({str(count)!r}, 'a').write(str(n))")]
    nb.metadata["kernelspec"] = {"name": "agentic-rag-evidence", "display_name": "x", "language": "python"}
    nbformat.write(nb, str(books / "page.ipynb"))
    said = []

    def run(inputs, parameters={"n": 1}, again=False):
        said.clear()
        done, bad = run_notebooks(["page"], books, out, failed, parameters, cwd=tmp_path, log=said.append,
                                  inputs=inputs, again=again)
        assert done == ["page"] and bad == []
        return count.read_text()

    assert run("A") == "1" and recorded_key(out / "page.ipynb") is not None
    assert run("A") == "1" and any("kept" in line for line in said)  # not executed again
    assert run("B") == "11"  # other inputs
    assert run("B", {"n": 2}) == "112"  # other parameters
    nb.cells[1].source += "\n1"
    nbformat.write(nb, str(books / "page.ipynb"))
    assert run("B", {"n": 2}) == "1122"  # another notebook
    assert run("B", {"n": 2}, again=True) == "11222"  # --again: executed all the same, and marked
    assert INPUTS_KEY in json.loads((out / "page.ipynb").read_text())["metadata"]
    assert run("B", {"n": 2}) == "11222"
