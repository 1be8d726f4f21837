"""Choose how the agent's lists are merged on the dev set (docs/merge.md), never on the bundled questions;
then, with --conditions, apply every merge rule in every condition to the saved queries of the agent and
multi-query (no model call).

The dev records are the escalation probe's (every dev question escalated once, both forms: the agent's
loop with the local model); their saved queries are searched again with the dev profile's dense search,
every rule merges the same lists, and the rule of ``lib.evaluation.merge_selection`` chooses. Writes
results/dev/merge_selection.json; with --conditions also results/merges.csv.

Usage: python scripts/select_merge.py [--conditions] [--profile offline]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import pandas as pd  # noqa: E402

from lib import pipeline  # noqa: E402
from lib.config import load_profile, shown_path  # noqa: E402
from lib.evaluation import merge_selection as sel  # noqa: E402
from lib.evaluation import merges  # noqa: E402
from lib.evaluation.metrics import scores_of  # noqa: E402
from lib.io import write_json  # noqa: E402
from lib.report import queries  # noqa: E402
from lib.runs import read_checked, run_path  # noqa: E402

# the escalation probe's settings (scripts/select_escalation.py): every dev question escalated, run 1
PROBE = {"escalate_threshold": 1e9, "escalate_signal": "margin"}
FORMS = ("full", "short")
RUN = 1


def dev_rows(form: str) -> tuple[pd.DataFrame, list[str], dict, str]:
    """One dev form's probe records merged by every arm (qids prefixed by the form), the questions, and
    the dense scores (the question's list alone), with where the records are."""
    probe = load_profile("dev", question_form=form, **PROBE)
    bundled = pipeline.questions_path(load_profile("offline")).resolve()
    if pipeline.questions_path(probe).resolve() == bundled:
        raise SystemExit("select_merge: the choice is made on the dev questions only, never the bundled ones")
    parts = pipeline.ProfileParts(probe, progress=False)
    qs = pipeline.scored_questions(probe, parts.papers)
    sources = {q.qid: q.source_id for q in qs}
    path = run_path(pipeline.results_dir(probe), "escalate", RUN)
    if not path.exists():
        raise SystemExit(f"select_merge: no probe saved at {shown_path(path)}; run scripts/select_escalation.py first")
    results = [r for r in read_checked(path, "escalate", pipeline.record_check(probe, parts)) if r.qid in sources]
    search = merges.scored_search(parts.searcher, list(dict.fromkeys(t for r in results for t in r.queries)))
    rows = merges.merge_scores(results, sources, search, merges.ARM_NAMES, merges.DEPTH, probe.rrf_k)
    rows["qid"] = f"{form}:" + rows.qid
    dense = {f"{form}:{q.qid}": scores_of([d for d, _ in search(q.text)], q.source_id) for q in qs}
    return rows, [f"{form}:{q}" for q in sources], dense, shown_path(path)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conditions", action="store_true", help="then every rule in every condition (results/merges.csv)")
    ap.add_argument("--profile", default="offline", help="the profile whose conditions --conditions reads")
    args = ap.parse_args(argv)
    frames, qids, dense, where = [], [], {}, {}
    for form in FORMS:
        rows, q, d, path = dev_rows(form)
        frames.append(rows)
        qids += q
        dense.update(d)
        where[form] = path
        print(f"dev {form}: {len(q)} questions, {int((rows[rows.arm == 'rrf'].lists > 1).sum())} with a new query "
              f"({path})")
    rows = pd.concat(frames, ignore_index=True)
    groups = {q: q.split(":", 1)[0] for q in qids}
    table = sel.arm_measures(rows, qids, merges.ARM_NAMES, groups)
    choice = sel.choose(table)
    for a, m in table.items():
        print(f"{a:18} MRR@10 {m['mrr_at_10']:.4f}  recall@5 {m['recall_at_5']:.4f}  "
              + "  ".join(f"{g} {v:.4f}" for g, v in m["mrr_at_10_by_group"].items()))
    d = pd.DataFrame.from_dict(dense, orient="index")
    record = {"rule": sel.__doc__.split("Choice,")[1].strip(), "tie": sel.TIE, "questions": len(qids),
              "with_new_query": int((rows[rows.arm == "rrf"].lists > 1).sum()), "run": RUN, "forms": list(FORMS),
              "records": where, "search": f"dev profile's dense search ({load_profile('dev').embedder}), depth "
                                          f"{merges.DEPTH}, rrf_k {load_profile('dev').rrf_k}",
              "arms": table, "dense": {"mrr_at_10": float(d.mrr_at_10.mean()), "recall_at_5": float(d.recall_at_5.mean())},
              "choice": choice}
    target = load_profile("dev").results_dir / "merge_selection.json"
    write_json(target, record)
    print(f"wrote {shown_path(target)}; chosen: {choice['arm']} ({choice['why']}); dense MRR@10 {d.mrr_at_10.mean():.4f}")
    if args.conditions:
        out = queries.conditions_merges(load_profile(args.profile), chosen=choice["arm"])
        path = load_profile(args.profile).results_dir / "merges.csv"
        out.to_csv(path, index=False)
        print(f"wrote {shown_path(path)}: {len(out)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
