"""Choose the tool-calling loop's prompt on the dev set (docs/loop.md), never on the bundled questions.

Runs (or resumes) each arm, a loop design (``loop``: the model makes the first search;
``loop_question_first``: the code searches the question first) with a prompt variant (``loop_prompt``
one_example, no_example, two_examples), on the first QUESTIONS dev questions, run 1; each arm's runs
go to the dev profile's variants folder for its settings (and its model calls to the records there),
so an interrupted run resumes with nothing lost. Then applies the rule of
``lib.evaluation.loop_selection`` (stated in docs/loop.md) and writes results/dev/loop_selection.json.
It refuses to choose while any arm's run is incomplete, naming the arm and how many questions it misses
(exit status 1 when an arm asked for is incomplete, 0 when only arms not asked for are missing).

Usage: LLM_BACKEND=local python scripts/select_loop.py [--arms ARM,ARM|all] [--no-run]
  --arms loop:one_example,loop_question_first:one_example   run these arms now (default: all six);
         the choice needs all six complete, so a subset runs and reports, and chooses once all are there
  --no-run   run nothing: read what is saved (replay, the default backend, reads the recorded calls)
  --loop-backend scripted|echo   try the script with a stub model (no model needed; its own variant
         folders); it writes the selection only with --out
  --out PATH   where the selection goes (default results/dev/loop_selection.json)
"""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.config import load_profile, shown_path  # noqa: E402
from lib.evaluation import loop_selection as sel  # noqa: E402
from lib.evaluation.metrics import scores_of  # noqa: E402
from lib.io import write_json  # noqa: E402
from lib.llm import ReplayMiss  # noqa: E402
from lib.runs import read_checked, run_files, run_path  # noqa: E402

QUESTIONS = 60  # the first 60 reviewed dev questions, in the dev question file's order
RUN = 1
PROFILE = "dev"


def arm_profile(arm: str, loop_backend: str | None = None):
    """The dev profile for one arm: its prompt variant, the first QUESTIONS questions, the backend
    named by LLM_BACKEND (default: the profile's replay), and a stub model when asked."""
    _, prompt = sel.parse_arm(arm)
    cfg = load_profile(PROFILE, loop_prompt=prompt, question_limit=QUESTIONS,
                       llm_backend=os.environ.get("LLM_BACKEND"), loop_backend=loop_backend)
    bundled = pipeline.questions_path(load_profile("offline")).resolve()
    if cfg.name != "dev" or pipeline.questions_path(cfg).resolve() == bundled:
        raise SystemExit("select_loop: the choice is made on the dev questions only, never the bundled ones")
    return cfg


def run_arm(arm: str, cfg) -> None:
    design, _ = sel.parse_arm(arm)
    try:
        pipeline.run_many(cfg, [design], [RUN])
    except ReplayMiss as exc:  # replaying, and nothing recorded for this arm yet
        print(f"{arm}: nothing recorded to replay ({str(exc)[:160]}); run it with LLM_BACKEND=local")


def saved(arm: str, cfg, qids: set[str]) -> list:
    """The arm's saved run-1 results on the choice's questions, every record checked."""
    design, _ = sel.parse_arm(arm)
    path = run_path(pipeline.results_dir(cfg), design, RUN)
    if not path.exists():
        return []
    return [r for r in read_checked(path, design, pipeline.record_check(cfg)) if r.qid in qids]


def dense_recall(sources: dict[str, str]) -> float | None:
    """Dense's recall@5 on the same questions, from the dev profile's saved dense run (for reading:
    the rule has no floor)."""
    cfg = load_profile(PROFILE)
    files = run_files(pipeline.results_dir(cfg), "dense")
    if not files:
        return None
    res = [r for r in read_checked(files[0], "dense", pipeline.record_check(cfg)) if r.qid in sources]
    if len(res) < len(sources):
        return None
    return sum(scores_of(r.ranked_ids, sources[r.qid])["recall_at_5"] for r in res) / len(res)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arms", default=os.environ.get("SELECT_ARMS") or "all",  # make: SELECT_ARMS
                    help=f"comma-separated, of {', '.join(sel.ARMS)}; or all")
    ap.add_argument("--no-run", action="store_true", help="read what is saved; run nothing")
    ap.add_argument("--loop-backend", choices=["scripted", "echo"], default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    try:
        todo = sel.parse_arms(args.arms)
    except ValueError as exc:
        ap.error(str(exc))
    profiles = {a: arm_profile(a, args.loop_backend) for a in sel.ARMS}
    qs = pipeline.scored_questions(profiles[sel.ARMS[0]])
    sources = {q.qid: q.source_id for q in qs}
    if not args.no_run:
        for a in todo:
            print(f"{a}: {shown_path(pipeline.results_dir(profiles[a]))}")
            run_arm(a, profiles[a])
    arms = {a: saved(a, cfg, set(sources)) for a, cfg in profiles.items()}
    for a in sel.ARMS:
        m = sel.arm_measures(arms[a], sources)
        if m["questions"]:
            print(f"{a:34} {m['questions']:3} questions  citation hit rate {m['citation_hit_rate']:.3f}  "
                  f"recall@5 {m['recall_at_5']:.3f}  MRR@10 {m['mrr_at_10']:.3f}  turns {m['turns_mean']:.2f}  "
                  f"searches {m['searches_mean']:.2f}  reads {m['reads_mean']:.2f}")
        else:
            print(f"{a:34} no saved result")
    try:
        out = sel.select(arms, sources)
    except sel.IncompleteArms as exc:
        print(f"select_loop: {exc}", file=sys.stderr)
        # exit 1 when an arm asked for is itself incomplete; 0 when only arms not asked for are missing
        return 1 if sel.missing(arms, list(sources), todo) else 0
    choice = out["choice"]
    dense = dense_recall(sources)
    record = {"rule": sel.__doc__.split("Choice,")[1].strip(), "tie": sel.TIE, "questions": len(sources),
              "qids": list(sources), "run": RUN, "profile": PROFILE, "arms": out["arms"], "choice": choice,
              "dense_recall_at_5": dense,
              "folders": {a: shown_path(pipeline.results_dir(cfg)) for a, cfg in profiles.items()},
              "llm": {a: {k: (arms[a][0].provenance.get(k) if arms[a] else None)
                          for k in ("llm_backend", "llm_source", "llm_model", "prompt_style", "loop_backend")}
                      for a in sel.ARMS}}
    target = Path(args.out) if args.out else None
    if target is None and not args.loop_backend:
        target = load_profile(PROFILE).results_dir / "loop_selection.json"
    if target is not None:
        write_json(target, record)
        print(f"wrote {shown_path(target)}")
    print(f"chosen: {choice['arm']} ({choice['why']})"
          + (f"; dense recall@5 on these questions {dense:.3f}" if dense is not None else ""))
    return 0


if __name__ == "__main__":
    from lib.progress import interruptible

    sys.exit(interruptible(main, sys.argv[1:]))  # what it prints passes through the one redaction
