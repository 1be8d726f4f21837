"""Bring saved runs up to the current inputs key, without new model calls (run once after a change
of what the key holds; see docs/ties.md).

Usage: python scripts/rekey_results.py [--designs a,b] [--write-effect docs/ties_effect.csv]

For every profile and condition with saved runs (offline in every condition, dev, pilot), and every
design whose runs are saved:
- each saved record must match the questions as they are now under its old key (else: an error
  naming the file, line and question; nothing is written);
- a design that neither fuses nor reorders (dense, bm25) keeps its ranked list: only its provenance
  gains the collection and question-set digests, and its key is recomputed;
- a design that fuses or reorders (the tie rule is part of its key) is answered again by its own
  code, replaying its recorded model calls (no new call: a record miss is an error), and must
  produce the same queries and replies; its ranked list is the re-fused one, its latency the one
  measured when it was first run (the sort rule does not change the work).
Each rewritten file is written atomically with its TREC file. The scores before and after are
printed per design and run (``--write-effect`` saves them as CSV).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import pandas as pd  # noqa: E402

from lib import pipeline  # noqa: E402
from lib.report import queries  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.designs import REGISTRY, design_class  # noqa: E402
from lib.errors import DataError  # noqa: E402
from lib.evaluation.metrics import per_question  # noqa: E402
from lib.io import write_jsonl  # noqa: E402
from lib.runs import inputs_key, read_results, run_files, write_trec  # noqa: E402

SUPERSEDED = ("agent", "agent_rerank")  # the old agent's runs are not migrated: it is run anew


def profiles() -> list:
    out = list(queries.condition_profiles(load_profile("offline")).values())
    out += [load_profile("dev"), load_profile("pilot")]
    return out


def scores_of(results, sources) -> dict:
    pq = per_question(results, sources)
    return {"recall_at_5": pq.recall_at_5.mean(), "mrr_at_10": pq.mrr_at_10.mean()}


def rekey(profile, designs: list[str] | None, effect: list[dict]) -> None:
    rdir = pipeline.results_dir(profile)
    names = [n for n in REGISTRY if n not in SUPERSEDED and (designs is None or n in designs) and run_files(rdir, n)]
    if not names:
        return
    parts = pipeline.ProfileParts(profile, progress=False)
    by_q = {q.qid: q for q in pipeline.question_set(profile, parts.papers)}
    sources = {q: x.source_id for q, x in by_q.items()}
    for name in names:
        design = pipeline.make_design(name, profile, parts)
        refuse = pipeline.fuses(design_class(name))
        for path in run_files(rdir, name):
            run = int(path.stem[3:])
            saved = read_results(path)
            out = []
            for no, r in enumerate(saved, start=1):
                q = by_q.get(r.qid)
                if q is None or r.inputs != inputs_key(name, run, q, r.provenance):
                    raise DataError(f"{path}: line {no}: qid {r.qid}: field 'inputs' does not match the question "
                                    "as it is now under the old key; nothing was rewritten")
                if refuse:
                    parts.forget_queries()
                    new = design.retrieve(q, run)
                    if new.queries != r.queries or new.replies != r.replies:
                        raise DataError(f"{path}: line {no}: qid {r.qid}: replaying gives other queries or replies "
                                        "than saved; nothing was rewritten")
                    new.latency_s = r.latency_s
                else:
                    new = r
                    new.provenance = dict(design.provenance)
                new.inputs = inputs_key(name, run, q, design.provenance)
                out.append(new)
            before, after = scores_of(saved, sources), scores_of(out, sources)
            effect.append({"results": str(rdir.relative_to(ROOT)), "design": name, "run": run,
                           "questions": len(out), "refused": refuse,
                           **{f"{m}_before": before[m] for m in before}, **{f"{m}_after": after[m] for m in after}})
            write_jsonl(path, [asdict(r) for r in out])
            write_trec(out, path.with_suffix(".trec"), f"{name}-run{run}")
            print(f"{path.relative_to(ROOT)}: {len(out)} rekeyed"
                  f"{' and re-fused' if refuse else ''}; MRR@10 {before['mrr_at_10']:.4f} -> {after['mrr_at_10']:.4f}, "
                  f"recall@5 {before['recall_at_5']:.4f} -> {after['recall_at_5']:.4f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--designs", default=None)
    ap.add_argument("--write-effect", default=None)
    args = ap.parse_args()
    designs = args.designs.split(",") if args.designs else None
    effect: list[dict] = []
    for p in profiles():
        rekey(p, designs, effect)
    if args.write_effect:
        pd.DataFrame(effect).to_csv(args.write_effect, index=False, float_format="%.4f")


if __name__ == "__main__":
    main()
