"""What the design notebooks display: the run's outcome, the summary of the saved runs and which
profile, models and backend produced each run (one place for notebooks 03-06)."""
from __future__ import annotations

from IPython.display import Markdown, display

from .. import pipeline


def design_page(profile, name: str, runs=None) -> dict:
    """Run (or resume) a design, then show its summary and provenance; returns what it showed."""
    page = pipeline.design_page(profile, name, runs=runs)
    display(Markdown("## Summary of the saved runs\nScores over the reviewed questions this design answered in "
                     "its complete runs; the comparison with ranges is in the scores notebook. For LLM calls the "
                     "latency is the model's time when the call was made (a replay reports the recorded time)."))
    display(page["summary"])
    display(Markdown("Which profile, models and backend produced each saved run:"))
    display(page["provenance"])
    return page
