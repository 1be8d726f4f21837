"""Place your own model on page 12's chart: the agent's decision tree (lib/designs/agent_tree.py) for your
model on the first N scored questions, then its stop and search accuracy at each decision with their counts,
the difference from dense that a judge at those accuracies predicts (95% range over the questions), the
agent's own difference, the break-even (the accuracies at which a judge would beat dense with its queries, or
that none does), its better-rate with the query side's bound, the prompt and constraint its replies were
measured under (a served model: openai_constraint, lib/llm/contract.py; a point under another prompt or no
constraint is not comparable with the shipped ones), and where the shipped models sit (results/judges.csv,
results/query_bound.csv).

Usage: make place-model N=40 SET="llm_backend=openai llm_model=<model> openai_base_url=<server>
       openai_constraint=<json_schema | grammar | json_object>" [PROFILE=offline] [QUESTION_FORM=short] [QUESTION_SET=twopart]
(from the environment: PLACE_N, PLACE_SET, PLACE_PROFILE and the condition variables; or as arguments:
python scripts/place_model.py N [KEY=VALUE ...]). Its runs are kept in a folder of their own (the
profile's results/variants/...), resumed when interrupted, and replayed when run again.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import pandas as pd  # noqa: E402

from lib import pipeline  # noqa: E402
from lib.report import queries  # noqa: E402
from lib.config import DEFAULT_PROFILE, env_overrides, load_profile  # noqa: E402
from lib.errors import DataError, ProfileError  # noqa: E402
from lib.evaluation import judges, query_bound  # noqa: E402
from lib.report.why_tables import TREE  # noqa: E402
from lib.llm import contract  # noqa: E402
from lib.llm.base import LLMError  # noqa: E402
from lib.report import why  # noqa: E402
from lib.runs import read_results, run_path  # noqa: E402


def settings_of(words: list[str]) -> dict[str, str]:
    """KEY=VALUE words as settings; a word without '=' is an error naming it."""
    out = {}
    for w in words:
        key, sep, value = w.partition("=")
        if not sep or not key:
            raise ProfileError(f"SET: {w!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


def condition_name(profile) -> str:
    """The grid's condition whose settings the profile has (full questions when none differs)."""
    return next((c for c, over in reversed(queries.CONDITIONS.items())
                 if over and all(profile.settings.get(k) == v for k, v in over.items())), "full questions")


def place(profile, out=print) -> pd.DataFrame:
    """Run (or replay) dense and the tree on the profile's questions, print where the model sits, and return
    its judges rows."""
    pipeline.run_many(profile, ["dense", TREE], [1])
    parts = pipeline.ProfileParts(profile, progress=False)
    qs = pipeline.scored_questions(profile, parts.papers)
    rdir = pipeline.results_dir(profile)
    dense = {r.qid: list(r.ranked_ids) for r in read_results(run_path(rdir, "dense", 1))}
    tree = read_results(run_path(rdir, TREE, 1))
    chains = judges.condition_chains(tree, qs, dense, profile.rrf_k, profile.agent_max_searches)
    condition = condition_name(profile)
    rows = judges.frame(judges.judge_rows(chains, condition, profile.llm_model, profile.bootstrap_resamples,
                                          profile.bootstrap_seed))
    bound, _ = query_bound.frames(*query_bound.bound_tables(chains, condition, profile.llm_model, profile.rrf_k))
    out(f"{profile.llm_model} ({profile.llm_backend}), {condition}, {len(chains)} questions: its runs are in {rdir}")
    out(why.judges_sentence(rows, condition, profile.llm_model))
    out(why.placement(rows, bound, condition, profile.llm_model))
    route = contract.route_of_results(tree)
    if route is not None:  # what the point measures: the model under this prompt and constraint
        out(f"Measured under {contract.route_words(*route)}: {contract.comparison_words(*route)}.")
    shipped_dir = load_profile(DEFAULT_PROFILE).results_dir
    shipped, shipped_bound = why.table(shipped_dir, "judges"), why.table(shipped_dir, "bound")
    models = dict.fromkeys(shipped[shipped.condition == condition].model) if not shipped.empty else {}
    for model in models:
        line = why.placement(shipped, shipped_bound, condition, model)
        if line:
            out(f"On page 12, beside it: {line}")
    return rows


def main(argv: list[str]) -> int:
    if argv:
        n, words = argv[0], argv[1:]
    else:
        n, words = os.environ.get("PLACE_N", "40"), (os.environ.get("PLACE_SET") or "").split()
    name = os.environ.get("PLACE_PROFILE") or DEFAULT_PROFILE
    try:
        limit = int(n)
        if limit < 1:
            raise ValueError
    except ValueError:
        print(f"error: N must be a whole number of questions (1 or more), got {n!r}", file=sys.stderr)
        return 2
    try:
        over = {k: v for k, v in env_overrides(os.environ).items() if v is not None}
        profile = load_profile(name, question_limit=limit, **{**over, **settings_of(words)})
        if profile.llm_backend == "replay" and not os.environ.get("PLACE_REPLAY"):
            print("error: SET needs llm_backend=openai, anthropic or local (replay only replays what was recorded)",
                  file=sys.stderr)
            return 2
        place(profile)
    except (ProfileError, DataError, LLMError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: what was answered is saved; the same command resumes", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    from lib.progress import interruptible

    sys.exit(interruptible(main, sys.argv[1:]))  # what it prints passes through the one redaction
