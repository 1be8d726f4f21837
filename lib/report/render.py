"""Executed notebooks to the report's HTML pages: the parameters cells (the page shows the run's
settings as a table instead) and stderr output (progress bars, warnings) left out, the page titled
in words, and a navigation bar linking the index and the neighbouring notebooks.

Every page leads with its generated finding: the cells tagged ``finding`` are moved up to follow
the page's title cell and shown without their code; every other code input is folded into a closed
"How this was computed" box, and so is the run's settings table (the nbconvert template
``templates/report``).

A notebook whose run did not complete (an error output, or a cell papermill marks failed or never
finished) is never rendered, and the page it would replace is left as it was.

A page speaks of what its run searched: a cell tagged ``arxiv-only`` is shown only on the arXiv study's
pages, one tagged ``study-only`` only on a study of the user's own documents (``collection_source:
documents``, read from the parameters papermill gave the run), and a cell tagged ``needs-<part>`` is left
out when the run said it has no ``<part>`` (an output marked :data:`lib.report.display.LACKS`, from
``lib.report.pages.lacking``); these tags are taken off the cells kept, so a page shows no trace of them. The random ids that
pandas' Styler and itables give their tables are replaced by ids numbered in page order, so
rendering a re-executed notebook gives the same bytes when its content is the same. Pages are
written atomically; a write that fails is a :class:`ReportError` naming the page."""
from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from nbconvert.preprocessors import Preprocessor, TagRemovePreprocessor

from ..config import load_profile, shown_path
from ..errors import ProfileError
from ..io import write_text
from .display import LACKS
from .index_numbers import notebook_titles


class ReportError(RuntimeError):
    """A page that cannot be rendered or written; the message names the file."""


class DropStderr(Preprocessor):
    """Removes stderr stream outputs (progress bars, library warnings) from every cell."""

    def preprocess_cell(self, cell, resources, index):
        if cell.get("outputs"):
            cell.outputs = [o for o in cell.outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
        return cell, resources


TEMPLATES = Path(__file__).resolve().parent / "templates"
FINDING = "finding"
ARXIV_ONLY, STUDY_ONLY, NEEDS = "arxiv-only", "study-only", "needs-"


def ran_for_study(nb) -> bool:
    """Whether an executed notebook ran for a study of the user's own documents: ``collection_source``
    among the parameters papermill injected (the profile's file and every ``-p``), else that of the
    profile they name; an arXiv study when neither says."""
    params = (nb.get("metadata", {}).get("papermill") or {}).get("parameters") or {}
    source = params.get("collection_source")
    if source is None and isinstance(params.get("profile"), str):
        try:
            source = load_profile(params["profile"]).collection_source
        except ProfileError:  # a profile that is no longer there: the page is read as the arXiv study's
            source = None
    return source == "documents"


def _lacks(output) -> list:
    parts = (output.get("metadata") or {}).get(LACKS) or []
    return [parts] if isinstance(parts, str) else list(parts)


def _blank(output) -> bool:
    text = (output.get("data") or {}).get("text/markdown")
    return isinstance(text, (str, list)) and not "".join(text).strip()


class KeepProfileCells(Preprocessor):
    """Leaves out the cells that speak of another kind of study than the run's (``study``: a study of the
    user's own documents keeps ``study-only`` cells and drops ``arxiv-only`` ones; the arXiv study the
    reverse) and the cells tagged ``needs-<part>`` for each part an output of the run said it lacks; the
    cells kept lose these tags (the page's classes are what they were without them)."""

    def __init__(self, study: bool = False, **kw):
        super().__init__(**kw)
        self.study = study

    def preprocess(self, nb, resources):
        lacks = {p for c in nb.cells for o in c.get("outputs", []) or [] for p in _lacks(o)}
        drop = {ARXIV_ONLY if self.study else STUDY_ONLY} | {NEEDS + str(p) for p in lacks}
        kept = []
        for cell in nb.cells:
            tags = cell.get("metadata", {}).get("tags", [])
            if drop.intersection(tags):
                continue
            if cell.get("outputs"):  # a mark of what the page lacks with no line to say: nothing shown
                cell.outputs = [o for o in cell.outputs if not (_lacks(o) and _blank(o))]
            ours = [t for t in tags if t in (ARXIV_ONLY, STUDY_ONLY) or t.startswith(NEEDS)]
            if ours:
                rest = [t for t in tags if t not in ours]
                if rest:
                    cell.metadata["tags"] = rest
                else:
                    del cell.metadata["tags"]
            kept.append(cell)
        nb.cells = kept
        return nb, resources


class LeadWithFinding(Preprocessor):
    """Moves the cells tagged ``finding`` up, in their order, to follow the page's title and its
    question: the first two paragraphs of its first markdown cell (the rest of that cell's prose
    follows the finding). The notebook's run is unchanged, only the page's order."""

    def preprocess(self, nb, resources):
        lead = [c for c in nb.cells if FINDING in c.get("metadata", {}).get("tags", [])]
        if lead:
            rest = [c for c in nb.cells if c not in lead]
            at = next((i for i, c in enumerate(rest) if c.cell_type == "markdown"), None)
            if at is None:
                nb.cells = lead + rest
                return nb, resources
            title = rest[at]
            paragraphs = re.split(r"\n\s*\n", title.source.strip(), maxsplit=2)
            after = []
            if len(paragraphs) > 2:
                title = nbformat.from_dict({**title, "source": "\n\n".join(paragraphs[:2])})
                # the rest of the prose as a cell of its own, its id from the title's (a random one would
                # make every render of an unchanged page differ)
                after = [nbformat.v4.new_markdown_cell(paragraphs[2], id=f"{rest[at].get('id') or 'title'}-rest"[:64])]
            nb.cells = rest[:at] + [title] + lead + after + rest[at + 1:]
        return nb, resources


_SETTINGS_TABLE = re.compile(r">\s*setting\s*</th>\s*<th[^>]*>\s*value\s*</th>", re.S)


class FoldSettings(Preprocessor):
    """Folds the run's settings table (the one with the columns setting and value that each page
    shows instead of its parameters cell) into a closed box."""

    def preprocess_cell(self, cell, resources, index):
        for o in cell.get("outputs", []) or []:
            data = o.get("data") or {}
            page = data.get("text/html")
            if isinstance(page, list):
                page = "".join(page)
            if isinstance(page, str) and _SETTINGS_TABLE.search(page):
                data["text/html"] = ('<details class="settings"><summary>The settings of this run</summary>'
                                     + page + "</details>")
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


def run_problem(nb) -> str | None:
    """Why an executed notebook's run did not complete, in words (None when it did): the first
    error output, else the first cell papermill marked failed, or left pending or running (a run
    that was killed)."""
    for i, cell in enumerate(nb.get("cells", []), start=1):
        for o in cell.get("outputs", []) or []:
            if o.get("output_type") == "error":
                return f"cell {i} raised {o.get('ename', 'an error')}: {o.get('evalue', '')}".rstrip(": ")
    for i, cell in enumerate(nb.get("cells", []), start=1):
        pm = cell.get("metadata", {}).get("papermill") or {}
        if pm.get("exception") or pm.get("status") == "failed":
            return f"cell {i} failed (papermill marks it)"
        if pm.get("status") in ("pending", "running"):
            return f"the run stopped before cell {i} completed (papermill status {pm['status']!r}: killed or interrupted?)"
    if (nb.get("metadata", {}).get("papermill") or {}).get("exception"):
        return "papermill marks the run as failed"
    return None


def read_executed(notebook: Path):
    """An executed notebook, read; a file that is missing or not a notebook is a ReportError naming it."""
    try:
        return nbformat.read(notebook, as_version=4)
    except OSError as exc:
        raise ReportError(f"{shown_path(notebook)}: cannot read the executed notebook ({exc.strerror or exc})") from exc
    except Exception as exc:  # nbformat: not JSON (a write cut off), or not a notebook
        raise ReportError(f"{shown_path(notebook)}: not a readable notebook ({type(exc).__name__}: {exc})") from exc


# ids that differ on every execution: any id holding a uuid (itables, plotly, altair, ...) and pandas
# Styler's ``T_<uuid>`` tables with the ids of their cells
_UUID = r"[0-9a-f]{8}([-_])[0-9a-f]{4}\1[0-9a-f]{4}\1[0-9a-f]{4}\1[0-9a-f]{12}|[0-9a-f]{32}"
_ID_ATTR = re.compile(r"""\bid\s*=\s*(["'])(.*?)\1""", re.S)
_UUID_IN_ID = re.compile(rf"(?<![0-9a-f])(?:{_UUID})(?![0-9a-f])")
_STYLER_ID = re.compile(r"^T_([0-9a-f]{5,32})(?:_|$)")


def _counter_like(token: str, n: int) -> str:
    """The n-th stable token in the shape of ``token`` (same length, hex digits, same separators)."""
    digits = iter(f"{n:0{sum(c not in '-_' for c in token)}x}")
    return "".join(c if c in "-_" else next(digits) for c in token)


def stable_ids(page: str) -> str:
    """The page with every random table id replaced by one numbered in order of first appearance in an id
    attribute (the same shape, so each stays unique within the page), everywhere it occurs: in the id
    attributes, the page's CSS selectors and its scripts. (Not by the token's first occurrence in the text: a
    Styler's five hex digits also turn up by chance inside other text, an image's data, which would number
    the same page differently from one run to the next.)"""
    uuids: dict[str, None] = {}
    stylers: dict[str, None] = {}
    order: dict[str, None] = {}
    for m in _ID_ATTR.finditer(page):
        value = m.group(2)
        for u in _UUID_IN_ID.finditer(value):
            uuids.setdefault(u.group(0))
            order.setdefault(u.group(0))
        if (s := _STYLER_ID.match(value)) and s.group(1) not in uuids:
            stylers.setdefault(s.group(1))
            order.setdefault(s.group(1))
    if not order:
        return page
    new = {t: _counter_like(t, n) for n, t in enumerate(order, start=1)}
    if uuids:
        page = re.sub("|".join(map(re.escape, uuids)), lambda m: new[m.group(0)], page)
    if stylers:
        alt = "|".join(map(re.escape, sorted(stylers, key=len, reverse=True)))
        page = re.sub(rf"(?<![0-9A-Za-z_])T_({alt})(?![0-9A-Za-z])", lambda m: "T_" + new[m.group(1)], page)
    return page


@lru_cache(maxsize=1)
def _exporter() -> tuple[HTMLExporter, KeepProfileCells]:
    """One exporter for every page a process renders, so its templates are compiled once (an exporter of its own
    compiled the report template's ten files again for each page), and its KeepProfileCells, told each page's
    kind of study before the page is rendered."""
    exporter = HTMLExporter(template_name="report", extra_template_basedirs=[str(TEMPLATES)])
    keep = KeepProfileCells()
    exporter.register_preprocessor(TagRemovePreprocessor(remove_cell_tags={"injected-parameters", "parameters"}), enabled=True)
    exporter.register_preprocessor(DropStderr(), enabled=True)
    exporter.register_preprocessor(keep, enabled=True)
    exporter.register_preprocessor(LeadWithFinding(), enabled=True)
    exporter.register_preprocessor(FoldSettings(), enabled=True)
    return exporter, keep


def render(notebook: Path, out_dir: Path) -> Path:
    """One executed notebook to ``out_dir/<name>.html``; a notebook whose run did not complete is a
    ReportError (nothing is written), and so is a page that cannot be written (the page it would
    have replaced stays whole)."""
    notebook, out_dir = Path(notebook), Path(out_dir)
    titles = notebook_titles()
    nb = read_executed(notebook)
    if why := run_problem(nb):
        raise ReportError(f"{shown_path(notebook)}: not rendered, its run did not complete: {why}")
    exporter, keep = _exporter()
    keep.study = ran_for_study(nb)
    title = titles.get(notebook.stem, notebook.stem)
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    if notebook.stem in titles:
        head, sep, rest = body.partition("<main")
        body = head + nav_bar(notebook.stem, titles) + sep + rest if sep else body
    body = stable_ids(body)
    out = out_dir / f"{notebook.stem}.html"
    try:
        write_text(out, body)
    except OSError as exc:
        raise ReportError(f"{shown_path(out)}: cannot write the page ({exc.strerror or exc}); "
                          "the page that was there is unchanged") from exc
    return out
