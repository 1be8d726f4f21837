"""How the engine's BM25 ranks beside the in-process BM25 (docs/engine.md, "Keyword search in the engine").

The bm25 and hybrid designs are run over a profile's scored questions twice, with ``retriever: milvus`` and BM25
in process (bm25s) or in the engine (``milvus_bm25: engine``: the study's own collection in Milvus Lite, built
in a folder under build/), each question form; printed and written to build/keyword_agreement.json: each side's
recall@5 and MRR@10, the engine minus in process with its paired bootstrap 95% range (2,000 resamples, seed 7),
the questions whose source moved in or out of the top 5, and how many top-10 lists are the same. To say where
the difference comes from, the engine's bm25 lists are also set beside bm25s's with Milvus Lite's analyzer
(every run of word characters, lowercased, the same stop words, no stemming): ``same_top10_as_lite_analyzer``.

    .venv/bin/python scripts/keyword_agreement.py [--profile dev] [--forms full short]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lib import pipeline  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.data.papers import paper_text  # noqa: E402
from lib.designs.hybrid import hybrid_ids  # noqa: E402
from lib.evaluation.metrics import mrr_at_k, paired_bootstrap, recall_at_k  # noqa: E402


def lite_analyzer_lists(papers: list[dict], questions) -> list[list[str]]:
    """bm25s (Lucene variant, k1 1.5, b 0.75) with Milvus Lite's analyzer: every run of word characters (one
    character too), lowercased, the same stop words, no stemming; ties by id."""
    import bm25s  # bm25s is heavy (loads scipy) and only this comparison needs it

    papers = sorted(papers, key=lambda x: x["id"])
    ids, pattern = [x["id"] for x in papers], r"(?u)\b\w+\b"
    index = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    index.index(bm25s.tokenize([paper_text(x) for x in papers], stopwords="en", stemmer=None, token_pattern=pattern,
                               show_progress=False), show_progress=False)
    out = []
    for q in questions:
        tokens = bm25s.tokenize([q.text], stopwords="en", stemmer=None, token_pattern=pattern, show_progress=False)
        words = {v: k for k, v in tokens.vocab.items()}
        s = np.asarray(index.get_scores([words[i] for i in tokens.ids[0]]))
        out.append([ids[i] for i in np.lexsort((np.arange(len(s)), -s))[:50]])
    return out


def ranked(parts, design: str, question: str) -> list[str]:
    p = parts.profile
    if design == "bm25":
        return [h.id for h in parts.bm25.search(question, p.dense_k)]
    return hybrid_ids(parts.searcher, parts.bm25, question, p.hybrid_depth, p.rrf_k)[:50]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="dev")
    ap.add_argument("--forms", nargs="+", default=["full", "short"])
    ap.add_argument("--designs", nargs="+", default=["bm25", "hybrid"])
    ap.add_argument("--out", default=str(ROOT / "build" / "keyword_agreement.json"))
    args = ap.parse_args()
    uri = str(ROOT / "build" / "keyword_agreement" / "milvus.db")
    out = {"profile": args.profile, "uri": "Milvus Lite, embedded", "rows": []}
    for form in args.forms:
        sides = {b: pipeline.ProfileParts(load_profile(args.profile, question_form=form, retriever="milvus",
                                                       milvus_uri=uri, milvus_bm25=b), progress=False)
                 for b in ("in-process", "engine")}
        questions = pipeline.scored_questions(sides["engine"].profile, sides["engine"].papers)
        for design in args.designs:
            lists, seconds = {}, {}
            for side, parts in sides.items():
                started = time.perf_counter()
                lists[side] = [ranked(parts, design, q.text) for q in questions]
                seconds[side] = (time.perf_counter() - started) / len(questions)
            row = {"form": form, "design": design, "questions": len(questions),
                   "same_top10": sum(a[:10] == b[:10] for a, b in zip(lists["in-process"], lists["engine"])),
                   "top10_overlap": float(np.mean([len(set(a[:10]) & set(b[:10])) / 10
                                                   for a, b in zip(lists["in-process"], lists["engine"])])),
                   "query_s_mean": seconds}
            if design == "bm25":
                lite = lite_analyzer_lists(sides["engine"].papers, questions)
                row["same_top10_as_lite_analyzer"] = sum(a[:10] == b[:10] for a, b in zip(lite, lists["engine"]))
            for metric, fn, k in (("recall@5", recall_at_k, 5), ("MRR@10", mrr_at_k, 10)):
                a = np.array([fn(r, q.source_id, k) for r, q in zip(lists["engine"], questions)])
                b = np.array([fn(r, q.source_id, k) for r, q in zip(lists["in-process"], questions)])
                delta, low, high = paired_bootstrap(a, b)
                row[metric] = {"in-process": float(b.mean()), "engine": float(a.mean()),
                               "engine - in-process": [delta, low, high]}
                if metric == "recall@5":
                    row["top5_gained"], row["top5_lost"] = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
            out["rows"].append(row)
            print(f"{args.profile} {form:5s} {design:6s} n={row['questions']}  "
                  + "  ".join(f"{m} {row[m]['in-process']:.3f} -> {row[m]['engine']:.3f} "
                              f"({row[m]['engine - in-process'][0]:+.3f} [{row[m]['engine - in-process'][1]:+.3f}, "
                              f"{row[m]['engine - in-process'][2]:+.3f}])" for m in ("recall@5", "MRR@10"))
                  + f"  top5 +{row['top5_gained']}/-{row['top5_lost']}  same top-10 {row['same_top10']}"
                  + f"  overlap@10 {row['top10_overlap']:.3f}"
                  + (f"  same top-10 as bm25s with Lite's analyzer {row['same_top10_as_lite_analyzer']}"
                     if "same_top10_as_lite_analyzer" in row else "")
                  + "  query s " + " / ".join(f"{k} {v * 1000:.1f} ms" for k, v in seconds.items()), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
