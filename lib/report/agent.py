"""The agent's own behaviour beside the article's published figures (the agent notebook and the
index): how often it stopped after one search and used all three, and, at recall@5 against dense,
how many of dense's misses it found and how many of dense's finds it lost, per run.

Ours are computed from the saved, complete agent runs (``lib.evaluation.scores``: the scored rows,
``wins_losses``); the article's come from ``data/article_figures.json`` ("other", "agent_vs_dense").
Where the agent has no complete run the table says so instead of a number."""
from __future__ import annotations

import pandas as pd

from ..evaluation import scores
from .article import article_figures, shows_article
from .display import percent
from .pages import paired_rows, show

NAME = "agent"
COLUMNS = ["measure", "article (3 runs, Claude Haiku)", "this report"]


def _span(values: list, fmt=str) -> str:
    """Several runs' values: "a–b (x, y, z)"; one run's: its value."""
    if len(values) == 1:
        return fmt(values[0])
    lo, hi = min(values), max(values)
    span = fmt(lo) if lo == hi else f"{fmt(lo)}–{fmt(hi)}"
    return f"{span} ({', '.join(fmt(v) for v in values)})"


def _range(pair: list) -> str:
    lo, hi = pair
    return str(lo) if lo == hi else f"{lo}–{hi}"


def not_scored_text(pq_all: pd.DataFrame | None, partial: list, n_questions: int | None) -> str:
    """What to print in place of our numbers: no complete run yet, with the runs saved part-way."""
    saved = []
    if pq_all is not None and not pq_all.empty:
        counts = pq_all[pq_all.design == NAME].groupby("run").qid.nunique()
        saved = [f"run {int(r)} saved for {int(n)}" + (f" of {n_questions}" if n_questions else "") + " questions"
                 for r, n in counts.items()]
    elif partial:
        saved = [f"run {r} saved part-way" for d, r in partial if d == NAME]
    return "no complete run yet" + (f" ({'; '.join(saved)}: saved, not scored)" if saved else "")


def agent_shares(pq: pd.DataFrame, pq_all: pd.DataFrame | None = None, partial: list | None = None,
                 n_questions: int | None = None) -> pd.DataFrame:
    """The table: one row per published figure, the article's value beside ours (``pq``: the scored
    per-question rows of the condition, dense included)."""
    art = article_figures()
    other, vs = art["other"], art["agent_vs_dense"]
    article = [f"≈{percent(other['agent_stopped_after_one_search'])}", f"≈{percent(other['agent_used_all_three'])}",
               f"{_range(vs['dense_misses_found_per_run'])} of {other['dense_misses_at_5']}",
               f"{_range(vs['dense_hits_lost_per_run'])} ({', '.join(map(str, vs['dense_hits_lost_by_run']))})"]
    measures = ["stopped after one search (share of questions)", "used all three searches (share of questions)",
                "found at 5 among dense's misses at 5 (per run)", "lost at 5 what dense had found at 5 (per run)"]
    agent = pq[pq.design == NAME] if not pq.empty else pq
    note = ""
    if agent.empty:
        note = not_scored_text(pq_all, partial or [], n_questions)
        ours = ["no complete run yet"] * 4
    else:
        by_run = agent.groupby("run")
        one = [float((g.searches == 1).mean()) for _, g in by_run]
        three = [float((g.searches == 3).mean()) for _, g in by_run]
        wl = scores.wins_losses(pq)
        wl = wl[wl.design == NAME].sort_values("run")
        misses = scores.headroom(pq)["dense_misses_at_5"]
        ours = [_span(one, percent), _span(three, percent),
                f"{_span(wl.wins.astype(int).tolist())} of {misses}", _span(wl.losses.astype(int).tolist())]
    table = pd.DataFrame({COLUMNS[0]: measures, COLUMNS[1]: article, COLUMNS[2]: ours})
    table.attrs["note"] = note  # what is saved where there is no complete run
    return table


def agent_runs_text(pq: pd.DataFrame) -> str:
    """The runs the table's numbers come from, in words (e.g. "3 complete runs")."""
    n = int(pq[pq.design == NAME].run.nunique()) if not pq.empty else 0
    return "no complete run" if n == 0 else f"{n} complete run" + ("s" if n > 1 else "")


def agent_shares_sentence(table: pd.DataFrame) -> str:
    """The table in one sentence (ours against the article's)."""
    ours = table[COLUMNS[2]].tolist()
    if ours[0].startswith("no complete run"):
        note = table.attrs.get("note") or ours[0]
        return f"The agent has {note}, so its searches and its wins and losses against dense are not shown yet."
    art = table[COLUMNS[1]].tolist()
    return (f"Ours stopped after one search on {ours[0]} of questions (the article: {art[0]}) and used all three on "
            f"{ours[1]} ({art[1]}); per run it found {ours[2]} of dense's misses (the article: {art[2]}) and lost "
            f"{ours[3]} papers dense had found ({art[3]}).")


def agent_section(profile) -> pd.DataFrame:
    """The agent notebook's table: the article's published agent figures beside ours, from this
    condition's saved agent and dense runs (only those records read), with a sentence."""
    from IPython.display import Markdown, display  # IPython is only needed inside a notebook


    rows = paired_rows(profile, NAME)
    table = agent_shares(rows["pq"], rows["pq_all"], rows["partial"], rows["questions"])
    if not shows_article(profile):  # a study of your own data: the article's agent answered other questions
        table = table.drop(columns=[COLUMNS[1]])
        display(Markdown(f"{agent_runs_text(rows['pq']).capitalize()} on {rows['questions']} questions (the article's "
                         "agent, which searched other questions, is not set beside a study of your own data)."))
        show(table)
        display(Markdown(own_sentence(table)))
        return table
    display(Markdown(f"Ours: {agent_runs_text(rows['pq'])} on {rows['questions']} questions; the article: 3 runs on "
                     f"{article_figures()['questions']['scored']} questions."))
    show(table)
    display(Markdown(agent_shares_sentence(table)))
    return table


def own_sentence(table: pd.DataFrame) -> str:
    """The table in one sentence, without the article's column (a study of your own data)."""
    ours = table[COLUMNS[2]].tolist()
    if ours[0].startswith("no complete run"):
        note = table.attrs.get("note") or ours[0]
        return f"The agent has {note}, so its searches and its wins and losses against dense are not shown yet."
    return (f"The agent stopped after one search on {ours[0]} of questions and used all three on {ours[1]}; per run "
            f"it found {ours[2]} of dense's misses at 5 and lost {ours[3]} of dense's finds at 5.")
