"""An unchanged notebook renders to the same bytes every time: the cell that lib/report/render.py
splits off a page's opening prose (to put the finding after the title and question) has an id of its
own derived from the title cell's, not a random one."""
import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from lib.report.render import render


def test_a_page_whose_opening_prose_is_split_renders_the_same_twice(tmp_path):
    nb = new_notebook(cells=[
        new_markdown_cell("# 3. A page\n\nThe question.\n\nThe rest of the opening prose."),
        new_code_cell("finding(page)", metadata={"tags": ["finding"]}, outputs=[
            new_output("display_data", data={"text/markdown": "**Reading.** dense reaches 0.987.", "text/plain": "x"})])])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "03_page.ipynb"
    nbformat.write(nb, path)
    first = render(path, tmp_path).read_bytes()
    page = first.decode()
    assert page.find("The question.") < page.find("dense reaches 0.987") < page.find("The rest of the opening prose.")
    assert render(path, tmp_path).read_bytes() == first
