"""What the design notebooks display: the run's outcome, the summary of the saved runs and which
profile, models and backend produced each run (one place for notebooks 03-06)."""
from __future__ import annotations

import pandas as pd
from IPython.display import Markdown, display

from .. import pipeline
from ..config import shown_path
from ..errors import redacted
from ..evaluation import scores
from ..llm.contract import comparison_words, route_words, served_route
from ..llm.prompts import corpus_for
from .display import (LACKS, is_study, markdown_code, markdown_text, readable, safe_table, source_words,
                      spreadsheet_safe, styled, with_range)
from . import queries
import json
from .display import number
from ..designs import BASELINE
from ..evaluation.metrics import per_question
from ..runs import read_checked, run_files
from pathlib import Path
from .display import fixed, headroom_words, with_range
from .index_numbers import verdict_words
from ..io import LockedError
from ..progress import unscored
from ..runs import ReadOnlyResults, read_results, run_files
from ..errors import DataError
from .display import design_label
from ..evaluation.loss import written_queries
from ..config import ROOT, load_profile

# the settings each page shows in its short settings table (the injected parameters are hidden)
PAGE_SETTINGS = ("question_form", "embedder", "dense_k")
# the settings of an arXiv draw, which a study of your own documents does not use: its page shows what it
# reads instead (STUDY_SETTINGS)
DRAW_SETTINGS = ("window_start", "window_end", "n_sources", "n_papers", "seed", "categories", "n_lookalikes")
STUDY_SETTINGS = ("documents_path", "chunk_documents", "corpus_description")


_TABLES_READY = False


def offline_tables() -> None:
    """Put the interactive-table library into the page once, before its first whole table, so the
    rendered HTML needs no network (itables' offline mode)."""
    global _TABLES_READY
    if not _TABLES_READY:
        import itables  # itables is only needed inside a notebook

        itables.init_notebook_mode(all_interactive=False, connected=False)
        _TABLES_READY = True


def new_page() -> None:
    """The next notebook starts a new page in the same kernel (:mod:`lib.report.execute`): its
    interactive-table library is put into that page again, before its first whole table."""
    global _TABLES_READY
    _TABLES_READY = False


# the page's own style: a wide table scrolls inside its box; tables read as tables
PAGE_STYLE = ("<style>.jp-RenderedHTMLCommon table{font-size:12.5px}.jp-OutputArea-output{overflow-x:auto}"
              ".jp-OutputArea .jp-RenderedHTMLCommon td,.jp-OutputArea .jp-RenderedHTMLCommon th"
              "{white-space:normal;max-width:40em;text-align:left}</style>")


def open_page(profile, *settings: str) -> None:
    """A notebook page's start: numbers rounded for reading, interactive whole tables, and the run's
    settings as a short table (instead of the injected parameters cell, which the HTML hides)."""
    from IPython.display import HTML  # IPython is only needed inside a notebook

    pd.set_option("display.precision", 3)
    pd.set_option("display.max_colwidth", None)  # whole questions, never cut mid-word
    display(HTML(PAGE_STYLE))
    offline_tables()
    if is_study(profile) and set(settings) & set(DRAW_SETTINGS):  # nothing is drawn: what is read instead
        settings = tuple(k for k in settings if k not in DRAW_SETTINGS) + STUDY_SETTINGS
    rows = [("profile", profile.name), ("results folder", shown_path(pipeline.results_dir(profile)))]
    rows += [(k, profile.settings[k]) for k in dict.fromkeys(PAGE_SETTINGS + settings)]
    rows += [(f"override: {k}", v) for k, v in profile.overrides.items()]
    rows += served_rows(profile.settings)
    display(safe_table(pd.DataFrame([(k.replace("_", " "), setting_text(v)) for k, v in rows],
                         columns=["setting", "value"])))
    if profile.collection_source == "documents":
        display(Markdown(study_banner(profile)))


def served_rows(settings: dict) -> list[tuple[str, str]]:
    """A served model's rows of the settings table: the prompt and the constraint its replies were measured
    under, and whether its points stand beside the shipped ones (:mod:`lib.llm.contract`); none otherwise."""
    route = served_route(settings)
    if route is None:
        return []
    return [("model prompt and constraint", route_words(*route)), ("beside the shipped points", comparison_words(*route))]


def lacking(part: str, line: str = "") -> None:
    """Say that the page has no ``part`` (two-part questions, a decision tree, a second model): ``line``
    (Markdown) is shown, and the rendered page leaves out the cells tagged ``needs-<part>`` (the section's
    heading and prose; lib/report/render.py), so a page shows no section for what its study lacks."""
    display(Markdown(line), metadata={LACKS: [part]})


def study_banner(profile) -> str:
    """The line every page of a study of your own data opens with: its files and counts, so no page
    is read as the arXiv study's (the page's prose speaks of the documents, cells tagged study-only)."""
    man = profile.data_dir / "collection_manifest.json"
    if not man.exists():
        return f"**A study of your own data** ({markdown_code(shown_path(profile.path('documents_path')))}); not imported yet."
    m = json.loads(man.read_text())
    files = "; ".join(f"{k}: {markdown_code(v)}" for k, v in m.get("files", {}).items())
    qs = f", {m['questions_scored']} questions with a relevant document" if "questions_scored" in m else ""
    described = corpus_for(profile).description
    return (f"**A study of your own data**: {m['n_papers']:,} documents{qs} "
            f"({files}), described to the model as \"{markdown_text(described)}\" (`corpus_description`). Each "
            "design, setting and score is computed on these files.")


def setting_text(value) -> str:
    """A setting's value for reading: a mapping as "dense: 1, bm25: 1.5", a list joined, a number rounded."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {setting_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(setting_text(v) for v in value)
    if value is None:
        return "—"
    return number(value, 6) if isinstance(value, (int, float)) else redacted(value)  # a server's password never shown


def show(df: pd.DataFrame, profile=None, **kwargs) -> None:
    """A table as the report shows one: numbers rounded for reading, dashes for missing values,
    headings in words, design names as the report writes them, no index column."""
    display(styled(df, profile=profile, **kwargs) if not df.empty else Markdown("(no rows)"))


def whole_table(df: pd.DataFrame, profile, name: str, caption: str = "", decimals: int = 3) -> None:
    """A long table shown whole and browsable (sortable, searchable, paged in the HTML), read as the
    report shows tables (:func:`lib.report.display.readable`), with the same rows, unrounded, saved as
    a CSV beside the rendered page."""
    import itables  # itables is only needed inside a notebook

    path = profile.report_dir / "tables" / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    spreadsheet_safe(df).to_csv(path, index=False)  # no cell a spreadsheet would run as a formula
    display(Markdown(f"{len(df)} rows; the same rows as CSV: [tables/{name}.csv](tables/{name}.csv)"))
    offline_tables()
    itables.show(readable(df, decimals=decimals, profile=profile), caption=caption or None, pageLength=10,
                 lengthMenu=[10, 25, 100, -1], maxBytes=0, scrollX=True,
                 classes="display")  # (itables' default adds nowrap: long cells then ran over their neighbours)


def reading(text: str) -> None:
    """The page's closing reading, generated from its numbers."""
    display(Markdown(f"**Reading.** {text}"))


def paired_rows(profile, name: str) -> dict:
    """The per-question rows of one design and dense, only these two designs' records read (each
    checked): ``pq_all`` every saved row, ``pq`` those of complete runs on the questions both answered
    in every complete run, ``partial`` the (design, run) pairs stopped part-way, ``questions`` the
    number of scored questions."""
    parts = pipeline.ProfileParts(profile, progress=False)
    qs = pipeline.scored_questions(profile, parts.papers)
    sources = {q.qid: q.source_id for q in qs}
    check = pipeline.record_check(profile, parts)
    res = [r for d in dict.fromkeys([BASELINE, name]) for p in run_files(pipeline.results_dir(profile), d)
           for r in read_checked(p, d, check)]
    pq_all = per_question(res, sources)
    if pq_all.empty:
        return {"pq_all": pq_all, "pq": pq_all, "partial": [], "questions": len(sources)}
    partial = scores.partial_runs(pq_all, len(sources))
    pq = scores.scored_runs(pq_all, len(sources))
    common = set(scores.complete_questions(pq_all, list(sources)))
    return {"pq_all": pq_all, "pq": pq[pq.qid.isin(common)], "partial": partial, "questions": len(sources)}


def against_dense(profile, name: str) -> tuple[pd.DataFrame, int, dict]:
    """One design against dense on the questions both answered in every complete run: the paired
    differences (``scores.deltas``), the number of such questions, and dense's headroom; empty
    differences when either has no complete run."""
    pq = paired_rows(profile, name)["pq"]
    if pq.empty or BASELINE not in set(pq.design):
        return pd.DataFrame(), 0, {}
    head = scores.headroom(pq)
    if name == BASELINE or name not in set(pq.design):
        return pd.DataFrame(), pq.qid.nunique(), head
    return scores.deltas(pq, profile.bootstrap_resamples, profile.bootstrap_seed), pq.qid.nunique(), head


def partial_runs_text(provenance: pd.DataFrame, n_questions: int) -> str:
    """The runs saved part-way, in words ("run 1 is saved for 120 of 297 questions ..."); empty if none."""
    if provenance.empty or "questions" not in provenance:
        return ""
    part = [(f, int(q)) for f, q in zip(provenance["run file"], provenance["questions"]) if q < n_questions]
    if not part:
        return ""
    return "; ".join(f"{shown_name(f)} is saved for {q} of {n_questions} questions" for f, q in part) + \
        " (stopped part-way, or still being recorded): saved, not scored"


def shown_name(run_file: str) -> str:
    return f"run {Path(run_file).stem[3:]}"


def with_index_family(profile, deltas: pd.DataFrame) -> pd.DataFrame:
    """``deltas`` with the Holm correction the index applies (``p_holm``, ``measurable``, ``family``: every
    design, both measures, every condition, ``scores.comparisons`` of ``queries.condition_table``, computed
    here from the saved runs, not read from the scores page's ``comparisons.csv``, which a page rendered
    before the scores page would find stale), where that family holds this condition's same comparison (same
    design, measure and questions); otherwise as computed here (corrected over this page's own comparisons),
    so a page and the index never read one difference two ways."""
    if deltas.empty or "p_holm" not in deltas:
        return deltas
    condition, base = queries.condition_of(profile)
    if condition is None:
        return deltas
    table = queries.condition_table(base)
    family = scores.comparisons(table)
    if family.empty:
        return deltas
    saved = family[family.condition == condition].set_index(["design", "metric", "questions"])
    rows = table[table.condition == condition].set_index("design") if "condition" in table else pd.DataFrame()
    out = deltas.copy()
    for i, r in out.iterrows():
        key = (r.design, r.metric, int(r.questions))
        if key in saved.index:
            s = saved.loc[key]
            s = s.iloc[0] if isinstance(s, pd.DataFrame) else s
            out.loc[i, ["p_holm", "measurable", "family"]] = [s.p_holm, bool(s.measurable), s.family]
        elif r.design in rows.index and pd.isna(rows.loc[r.design].get(f"{r.metric}_p_holm")) \
                and not pd.isna(rows.loc[r.design].get(f"{r.metric}_p_value")):
            # tested, but left out of the index's family (an escalate that never escalated repeats
            # hybrid_rerank, whose comparison the family counts): no second correction here either
            out.loc[i, ["p_holm", "measurable", "family"]] = [float("nan"), False, LEFT_OUT_FAMILY]
    return out


LEFT_OUT_FAMILY = "none: left out of the index's family (its answers repeat another design's, tested there)"


def design_reading(name: str, row: pd.Series | None, deltas: pd.DataFrame, n_common: int, head: dict,
                   partial: str = "", label: str | None = None, source: str = "the source") -> str:
    """The design page's reading, from its numbers. Its first sentence is the finding (the index
    shows it): the scores and, on the same questions, the difference from dense with its 95% range
    (for dense, its headroom); then its effort."""
    label = label or name
    if row is None:
        return f"{label} has no complete saved run yet" + (f": {partial}." if partial else ".")
    runs = f"{int(row['runs'])} complete run" + ("s" if row["runs"] > 1 else "")
    text = f"{label} ({runs}, {int(row['questions'])} questions) reaches recall@5 {fixed(row['recall_at_5'])} and " \
           f"MRR@10 {fixed(row['mrr_at_10'])}"
    if name == "dense":
        if head:
            text += f"; it {headroom_words(head, source)} on these questions"
    elif not deltas.empty:
        words = {"recall_at_5": "recall@5", "mrr_at_10": "MRR@10"}
        bits = []
        left_out = False
        for r in deltas.itertuples():
            p = getattr(r, "p_holm", None)
            if getattr(r, "family", None) == LEFT_OUT_FAMILY:  # no verdict: the comparison is made once, elsewhere
                left_out = True
                bits.append(f"{words[r.metric]} {with_range(r.delta, r.low, r.high)}")
                continue
            # the report's one rule (the corrected randomization test decides, as on the index)
            tested = {f"{r.metric}_{k}": v for k, v in (("delta", r.delta), ("low", r.low), ("high", r.high), ("p_holm", p))}
            bits.append(f"{words[r.metric]} {with_range(r.delta, r.low, r.high, p=p)}, {verdict_words(tested, r.metric)}")
        text += f"; against dense on the same {n_common} questions: " + "; ".join(bits)
        if left_out:
            text += (" (not tested again: " + ("it never escalated, so every answer is hybrid_rerank's, whose "
                     "comparison with dense the index counts" if name == "escalate" else
                     "its answers repeat another design's, whose comparison with dense the index counts") + ")")
    else:
        text += "; dense has no complete run to compare it with yet"
    text += (f". It makes {row['searches']:.2f} searches per question, with a median latency of "
             f"{row['latency_median_s']:.2f} s")
    if row["llm_calls"]:
        text += (f" and {row['llm_calls']:.2f} LLM calls per question"
                 + (f" ({row['cost_usd_per_q']:.5f} USD per question)" if row["cost_usd_per_q"] else
                    " (a local model: no fee)"))
    text += "."
    if partial:
        text += f" Also {partial}."
    return text


def run_or_read(profile, name: str, runs=None) -> dict:
    """The design run (or resumed) for the page, as ``queries.design_page`` does; where it may not run
    now (a run of the shipped study still being recorded: it would add results, or another process
    is writing it), the page says so in words and shows what is saved."""
    try:
        return queries.design_page(profile, name, runs=runs)
    except (ReadOnlyResults, LockedError) as exc:
        why = ("another process is writing its run file now" if isinstance(exc, LockedError) else
               "a saved run is not complete, and this page does not add results to the shipped study")
        unscored(f"{name} was not run for this page: {why} ({exc})",
                 markdown=f"**{name} was not run for this page:** {why}. The page shows the runs saved so far; a run "
                          f"stopped part-way is saved, not scored. ({markdown_text(exc)})")
        saved = {int(p.stem[3:]): read_results(p) for p in run_files(pipeline.results_dir(profile), name)}
        return {"runs": {k: v for k, v in saved.items() if v}, "summary": queries.saved_design_summary(profile, name),
                "provenance": queries.provenance_table(profile, name)}


def design_page(profile, name: str, runs=None) -> dict:
    """Run (or resume) a design, then show its summary, what the LLM wrote for the first questions
    (LLM designs), provenance, and a reading generated from the numbers, with the design against
    dense on the same questions; returns what it showed."""
    open_page(profile, *pipeline.design_class(name).settings)
    label = design_label(name, profile)
    page = run_or_read(profile, name, runs)
    display(Markdown(f"## {label}: the saved runs\nScores over the reviewed questions this design answered in "
                     "its complete runs, and against dense on the same questions below; for LLM calls the latency "
                     "is the model's time when the call was made (a replay reports the recorded time)."))
    summary = page["summary"]
    n_questions = len(pipeline.scored_questions(profile))
    partial = partial_runs_text(page["provenance"], n_questions)
    if summary.empty:
        display(Markdown(f"No complete run yet{': ' + partial if partial else ''}."))
    else:
        show(summary, profile=profile)
    if pipeline.design_class(name).uses_llm and page["runs"]:
        first_run = min(page["runs"])
        shown = page["runs"][first_run][:5]
        display(Markdown(f"## What the model wrote, exactly as written: the first {len(shown)} questions, run {first_run}"))
        display(safe_table(pd.DataFrame([{"question id": r.qid, "question": r.queries[0],
                               "queries written": " | ".join(written_queries(r)) or "(none)",
                               "ended by": r.stop_reason or "-"} for r in shown])))
    display(Markdown("## Which profile, models and backend produced each saved run"))
    show(provenance_view(page["provenance"]), profile=profile)
    try:
        deltas, n_common, head = against_dense(profile, name)
        deltas = with_index_family(profile, deltas)
    except DataError as exc:
        deltas, n_common, head = pd.DataFrame(), 0, {}
        partial = (partial + "; " if partial else "") + f"the comparison with dense could not be read ({exc})"
    if not deltas.empty:
        display(Markdown(f"## {label} against dense, on the same {n_common} questions\n"
                         "Paired bootstrap of the design minus dense (the profile's resamples, 95% range), the paired "
                         "randomization test's p-value and its Holm correction over the family named."))
        show(deltas.drop(columns=["includes_zero"]), profile=profile)
    page["deltas"] = deltas
    row = summary.iloc[0] if not summary.empty else None
    page["reading"] = design_reading(name, row, deltas, n_common, head, partial, label, source_words(profile))
    reading(page["reading"])
    return page


def finding(*pages: dict) -> None:
    """The page's finding, for the cell tagged ``finding`` that the rendered page shows first: each
    design page's generated reading (``design_page(...)["reading"]``), in the order given."""
    for page in pages:
        if page.get("reading"):
            reading(page["reading"])


def provenance_view(prov: pd.DataFrame) -> pd.DataFrame:
    """The provenance table for reading: one row per setting, one column per saved run file (so a
    design with many settings stays narrow), the digests (long hashes) left out, mappings as text."""
    if prov.empty:
        return prov
    keep = [c for c in prov.columns if not c.endswith("_digest") and c != "run file"]
    cols = {}
    for _, r in prov.iterrows():
        cols[str(r["run file"])] = [setting_text(x) if isinstance(x, dict) else x for x in r[keep]]
    return pd.DataFrame({"setting": [k.replace("_", " ") for k in keep], **cols})


def reranker_report(profile) -> dict:
    """Notebook 04's report before the scores: how the offline cross-encoder was trained, and every
    rerank variant tried on the dev set (never on the bundled questions), with the one chosen."""


    out = {}
    study = is_study(profile)  # a study runs the arXiv study's reranker and weights: said so, in its words
    training = ROOT / profile.reranker / "training.json"
    if profile.reranker_backend == "trained-in-project" and training.exists():
        info = json.loads(training.read_text())
        out["training"] = pd.DataFrame([
            ("training queries (titles from the arXiv study's collection, as pseudo-queries)" if study else
             "training queries (paper titles as pseudo-queries)", info["training_data"]["train_queries"]),
            ("negatives per query (dense top 50, hard)", info["settings"]["negatives_per_query"]),
            ("training titles first listed" if study else "training papers first listed",
             " to ".join(info["training_data"]["first_seen_range"])),
            ("training time (s, 2 CPU threads)", f"{info['train_seconds']:.0f}"),
            ("loss, first 20 steps / last 20 steps (chance)",
             f"{info['loss_first_20']:.3f} / {info['loss_last_20']:.3f} ({info['loss_chance']:.3f})"),
            ("held-out title queries: MRR@10 dense / reranked",
             f"{info['heldout']['dense_mrr_at_10']:.3f} / {info['heldout']['rerank_mrr_at_10']:.3f}"),
        ], columns=["cross-encoder training", "value"])
        display(Markdown("### The cross-encoder trained on the arXiv study's collection, not on this study's documents "
                         "(the first model; `docs/reranker.md` records the second)" if study else
                         "### The cross-encoder trained here (the first model; `docs/reranker.md` records the "
                         "second, trained on abstract sentences)"))
        display(safe_table(out["training"]))
    dev = load_profile("dev").results_dir
    sel_path, table_path = dev / "rerank_selection.json", dev / "rerank_selection.csv"
    if not sel_path.exists():
        display(Markdown("No dev selection saved yet (`python scripts/select_reranker.py`)."))
        return out
    sel, table = json.loads(sel_path.read_text()), pd.read_csv(table_path)
    out["selection"], out["variants"] = sel, table
    where = (f"the arXiv study's dev set ({sel['questions']} questions), not on this study's documents" if study else
             f"the dev set ({sel['questions']} questions, pre-window papers)")
    display(Markdown(f"### Variants tried on {where}\n"
                     f"Each reorders the same dense top {profile.rerank_k}. Rule: {sel['rule']}."))
    whole_table(table.round(3), profile, "rerank_dev_variants", "every rerank variant tried on the dev set")
    c, d = sel["chosen"], sel["dense"]
    verdict = "beats" if c["mrr_at_10"] > d["mrr_at_10"] else "does not beat"
    dev_set = "the arXiv study's dev set" if study else "the dev set"
    text = (f"On {dev_set} the chosen rerank step ({c['variant']}) reaches MRR@10 {c['mrr_at_10']:.3f} against "
            f"dense's {d['mrr_at_10']:.3f} and recall@5 {c['recall_at_5']:.3f} against {d['recall_at_5']:.3f}: it "
            f"{verdict} dense on dev.")
    for model, ov in sel.get("cross_encoders", {}).items():
        if not ov["eligible"]:
            text += (f" The cross-encoder {model} was trained on "
                     + ("a set that includes " if study else "papers that include ")
                     + f"{ov['dev_collection_papers_in_training']} of the dev collection"
                     + ("'s documents" if study else "") + ", so variants using it were not eligible.")
    dev_profile = load_profile("dev", rerank_weights=profile.rerank_weights, rerank_k=profile.rerank_k)
    if dev_profile.results_dir == dev and (dev / "rerank").exists():
        try:
            sc = queries.load_scored(dev_profile)
        except DataError as exc:  # the dev runs cannot be scored as they are: said, not hidden
            sc = None
            display(Markdown(f"The rerank design's dev runs cannot be scored now: {exc}"))
            text += " The chosen step's run as a design on the dev questions cannot be scored now (see above)."
        if sc is not None and not sc.pq.empty and {"dense", "rerank"} <= set(sc.pq.design):
            d = scores.deltas(sc.pq[sc.pq.design.isin(["dense", "rerank"])], profile.bootstrap_resamples,
                              profile.bootstrap_seed)
            out["dev_deltas"] = d
            display(Markdown("The chosen step run as the rerank design on the dev questions, against dense "
                             "(paired bootstrap, 95% range):"))
            show(d.drop(columns=["includes_zero"]), profile=profile)
            mrr = d[d.metric == "mrr_at_10"].iloc[0]
            text += (f" As a design on the {len(sc.common)} dev questions: MRR@10 "
                     f"{with_range(mrr.delta, mrr.low, mrr.high)} against dense.")
    display(Markdown(text))
    out["sentence"] = text
    return out
