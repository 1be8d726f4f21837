"""The report's index page, generated from the saved runs: the question, the answer with its scope
first, the headline figure and the default condition's table on its first screen; then what was
compared and the scores, why the agent wins or loses, cost and latency, what differs from the
article, the notebooks (each with its own finding), how each run was produced, and speed. Also the
README's generated blocks (:func:`update_readme`).

The numbers are computed in :mod:`.index_numbers`, the sentences written in :mod:`.index_words`,
the HTML laid out in :mod:`.index_html`; this module puts the page together and re-exports the
names other modules use."""
from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pandas as pd

from ..config import ROOT
from ..evaluation import scores
from . import chart_files
from .article import shows_article
from .display import design_namer
from .index_html import (STYLE, _md_bold, _table_html, agent_html, conditions_list, cost_html, designs_html,  # noqa: F401
                         fidelity_html, notebooks_html, page_finding, power_html, scores_html, speed_section,
                         study_html, why_html, without_idle_escalate, condition_answer)
from .index_numbers import (DEFAULT_CONDITION, METRICS, _profile, _scored, conditions_from,  # noqa: F401
                            conditions_from_summary, notebook_titles, overall, runs_table, scale_rows,
                            verdict)
from .why import table as why_table
from .index_words import (QUESTION, compact_table, headline_answer, split_scope, headline_table, parts_note, readme_answer,  # noqa: F401
                          readme_results, rerank_short)
from .fidelity import fidelity_markdown
from .statistics_doc import method_of, p_sentence, resamples_words

# --------------------------------------------------------------------------- the README's first screen
README = ROOT / "README.md"

ANSWER_MARKERS = ("<!-- ANSWER START -->", "<!-- ANSWER END -->")

RESULTS_MARKERS = ("<!-- RESULTS START -->", "<!-- RESULTS END -->")

FIDELITY_MARKERS = ("<!-- FIDELITY START -->", "<!-- FIDELITY END -->")


def build_index(report_dir: Path, results_dir: Path, profile, figures: list[Path], bench: Path | None = None,
                conditions: pd.DataFrame | None = None, headline: Path | None = None, frontier: Path | None = None,
                scored=None, links: dict[str, str | None] | None = None, pages_dir: Path | None = None,
                runs: pd.DataFrame | None = None, left_out: str = "") -> Path:
    """Write ``report_dir/index.html``; the figures are copied into ``report_dir/figures``.

    ``conditions``: the condition table (else the saved summary, one condition); ``headline`` and
    ``frontier``: the two charts the index is built around (``figures``: further charts, shown at
    the end of the scores); ``scored``: the default condition's scored runs (the agent's table);
    ``links``: each notebook's page (a path relative to the index, None where there is none; by
    default the pages in ``report_dir``); ``pages_dir``: where the pages are read for their findings;
    ``runs``: the table of how each run was produced (by default read from the saved runs); ``left_out``:
    the HTML that says which design's rows were left out of ``conditions`` and why."""
    cfg = _profile(profile)
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "figures").mkdir(exist_ok=True)
    pages_dir = Path(pages_dir or report_dir)
    table = conditions if conditions is not None and not conditions.empty else conditions_from_summary(results_dir)

    def img(f: Path | None, alt: str) -> str:
        if f is None or not Path(f).exists():
            return ""
        shutil.copy(f, report_dir / "figures" / Path(f).name)
        return f'<img src="figures/{Path(f).name}" alt="{html.escape(alt)}">'

    if links is None:
        links = {nb: f"{nb}.html" if (report_dir / f"{nb}.html").exists() else None for nb in notebook_titles()}
    answer = headline_answer(table, cfg)
    note = parts_note(cfg)
    head_img = img(headline, "every design minus dense, with its 95% range, per condition")
    study = not shows_article(cfg)  # a study of your own data: no article's figure beside its own
    # how the p-values were computed, the family they are corrected over and the bootstrap's resamples: read from
    # the comparisons the table saved (their test and resamples columns), never typed
    comparisons = scores.comparisons(table) if not table.empty else pd.DataFrame()
    method = method_of(comparisons)
    caption = ("<figcaption>Each design minus dense on the same questions, a column per condition and a row per measure "
               "(every panel of a measure on one scale): the point is the difference, the line its 95% paired bootstrap "
               f"range ({resamples_words(method, cfg.bootstrap_resamples)} resamples of the questions); orange designs "
               "called a language model, blue ones did not"
               + ("." if study else "; in black, the article's published differences (its own models and questions).")
               + "</figcaption>") if head_img else ""
    article_scores = ("" if study else ' "The article\'s": its published difference from dense and range (<code>'
                      "data/article_figures.json</code> says where each comes from), beside ours in its condition; its "
                      "embedder, reranker, LLM and questions differ from the offline profile's.")
    differences = study_html(cfg) if study else "<h2>What differs from the article</h2>" + fidelity_html(cfg)
    extra = "".join(img(f, f.stem) for f in figures)
    try:
        runs = runs if runs is not None else runs_table(cfg, table)
    except Exception as exc:  # a run file that cannot be read: said, not hidden
        runs = pd.DataFrame({"could not read the saved runs": [f"{type(exc).__name__}: {exc}"]})
    bench_html = (speed_section(bench, img(ROOT / "figures" / "bench_ann.png", "recall against speed per engine"))
                  if bench is not None and Path(bench).exists() else "")
    if study:  # make bench measures the arXiv study's collection: a study's own times are its runs'
        bench_html = ("<h2>Speed</h2><p>This study's own time per question, design by design, is in the scores table "
                      "(median latency) and on page 10 (median and 90th percentile); the project's benchmark "
                      "(<code>make bench</code>) measures the arXiv study's collection, not these documents, and is "
                      "left out here.</p>")
    n_default = None
    if not table.empty and DEFAULT_CONDITION in set(table.condition):
        g = _scored(table[table.condition == DEFAULT_CONDITION])
        n_default = int(g.questions.max()) if not g.empty else None
    agent_part = ("" if study else "<p>What the article reports of its agent, beside the same counts from our saved "
                  f"agent runs on the {DEFAULT_CONDITION} (wins and losses at recall@5 against dense, per run):</p>"
                  + agent_html(scored, n_default))
    name = design_namer(cfg)
    headline_block = ""
    if not table.empty and DEFAULT_CONDITION in set(table.condition):
        whose = "" if study else ", the article's condition"
        headline_block = (f"<p>The {DEFAULT_CONDITION}{whose} (the other conditions are under \"The "
                          "scores\" below):</p>" + _table_html(compact_table(table, cfg), "compact"))
    others = table[table.condition != DEFAULT_CONDITION] if headline_block else table
    in_words = condition_answer(table, name, why_table(results_dir, "paths"), why_table(results_dir, "judges")) \
        if not table.empty else ""
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(QUESTION)}</title><style>{STYLE}</style></head><body>
<h1>{html.escape(QUESTION)}</h1>
{"".join(f'<p class="answer">{_md_bold(part)}</p>' for part in split_scope(answer))}
<figure>{head_img}{caption}</figure>
{headline_block}
<p>{html.escape(note)} Profile <b>{html.escape(cfg.name)}</b>; every number on this page is computed from the saved runs
when the report is built. A fresh <code>make report</code> reproduces this page, every other page and every table byte for
byte; each chart within a tolerance: drawn again with the same data within an RMS difference of {chart_files.TOLERANCE:g} grey
level of 255 of the file already there (matplotlib's <code>compare_images</code>), as another kind of CPU draws it, the file is
kept, and so are the pages that show it.</p>
<h2>What was compared</h2>
{designs_html(table, cfg)}
{left_out}
<p>Conditions (each design is compared with dense <i>in the same condition</i>, on the same questions):</p>
{conditions_list(table, cfg)}
<h3>The scores</h3>
<p>[95% range]: the middle 95% of {resamples_words(method, cfg.bootstrap_resamples)} paired bootstrap resamples of the
questions of the design's score minus dense's; a range that excludes 0 is a difference the question sample alone would not
produce. {html.escape(p_sentence(comparisons))}; "measurably better / worse" in the words below means p &lt; 0.05 after
the correction.{article_scores} Two runs or more:
the mean, with the lowest and highest run in brackets.</p>
{scores_html(others, cfg) if not others.empty else ("" if headline_block else "<p>No scored runs yet.</p>")}
<h3>Per condition, in words</h3>{in_words}
{power_html(Path(results_dir))}
{extra}
<h2>Why the agent wins or loses</h2>
{agent_part}
{why_html(links, pages_dir)}
<h2>Cost and latency</h2>
<p>Per question on the {DEFAULT_CONDITION}: model calls, tokens (the local model has no fee, so tokens stand for what an
API would bill), fee and latency (the median is the tables' figure):</p>
{cost_html(table, cfg)}
{img(frontier, "quality against latency per condition")}
{differences}
<h2>The notebooks</h2>
<p>Each page runs one step of the study; its finding below is the first sentence of the reading the page generates from
its numbers.</p>
{notebooks_html(links, pages_dir, own_only=study)}
<h2>How each run was produced</h2>
<p>Per design, the conditions that share the same runs, models, backend and profile (a run stopped part-way is saved, not
scored; its questions are counted):</p>
<details><summary>The table ({len(runs)} rows)</summary>{_table_html(runs)}</details>
{bench_html}
</body></html>"""
    out = report_dir / "index.html"
    out.write_text(page, encoding="utf-8")
    return out


def update_readme(answer: str | None = None, results: str | None = None, path: Path = README,
                  fidelity: str | None = None) -> bool:
    """Put the generated answer, results and fidelity table between their markers in the README (a
    section whose markers are missing is left as it is); True when the file changed."""
    if fidelity is None:
        fidelity = fidelity_markdown()
    text = before = path.read_text(encoding="utf-8")
    for new, (start, end) in ((answer, ANSWER_MARKERS), (results, RESULTS_MARKERS), (fidelity, FIDELITY_MARKERS)):
        if new is None or start not in text or end not in text:
            continue
        text = re.sub(re.escape(start) + r"\n?.*?\n?" + re.escape(end), lambda m: f"{start}\n{new}\n{end}", text,
                      flags=re.S)
    if text != before:
        path.write_text(text, encoding="utf-8")
    return text != before
