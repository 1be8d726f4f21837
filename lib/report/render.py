"""Executed notebooks to the report's HTML pages: the parameters cells (the page shows the run's
settings as a table instead) and stderr output (progress bars, warnings) left out, the page titled in words, and a navigation bar linking the
index and the neighbouring notebooks."""
from __future__ import annotations

import html
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor, TagRemovePreprocessor

from .index_page import notebook_titles


class DropStderr(Preprocessor):
    """Removes stderr stream outputs (progress bars, library warnings) from every cell."""

    def preprocess_cell(self, cell, resources, index):
        if cell.get("outputs"):
            cell.outputs = [o for o in cell.outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
        return cell, resources


def nav_bar(name: str, titles: dict[str, str]) -> str:
    names = list(titles)
    i = names.index(name)
    links = ['<a href="index.html">Report index</a>']
    if i > 0:
        links.append(f'<a href="{names[i - 1]}.html">← {html.escape(titles[names[i - 1]])}</a>')
    if i < len(names) - 1:
        links.append(f'<a href="{names[i + 1]}.html">{html.escape(titles[names[i + 1]])} →</a>')
    return ('<nav style="font-family:system-ui,sans-serif;padding:8px 16px;border-bottom:1px solid #ddd">'
            + " · ".join(links) + "</nav>")


def render(notebook: Path, out_dir: Path) -> Path:
    """One executed notebook to ``out_dir/<name>.html``."""
    notebook, out_dir = Path(notebook), Path(out_dir)
    titles = notebook_titles()
    nb = nbformat.read(notebook, as_version=4)
    exporter = HTMLExporter()
    exporter.register_preprocessor(TagRemovePreprocessor(remove_cell_tags={"injected-parameters", "parameters"}), enabled=True)
    exporter.register_preprocessor(DropStderr(), enabled=True)
    title = titles.get(notebook.stem, notebook.stem)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    if notebook.stem in titles:
        head, sep, rest = body.partition("<main")
        body = head + nav_bar(notebook.stem, titles) + sep + rest if sep else body
    out = out_dir / f"{notebook.stem}.html"
    out.write_text(body, encoding="utf-8")
    return out
