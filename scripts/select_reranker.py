"""Choose the rerank step's score weights on the dev set (profile `dev`), never on the bundled set.

Every variant reorders the same dense top `rerank_k` of each dev question; the signals (dense
cosine, BM25, the cross-encoder's score) are computed once. Writes results/dev/rerank_selection.csv
and .json (the chosen weights and the rule). Usage: python scripts/select_reranker.py
"""
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tqdm import tqdm  # noqa: E402

from lib import pipeline  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.data.papers import read_papers  # noqa: E402
from lib.evaluation.selection import best, compare, score_variant  # noqa: E402
from lib.io import write_json  # noqa: E402
from lib.search.rerank import fuse_scores  # noqa: E402
from lib.search.reranker_training import training_papers  # noqa: E402

cfg = load_profile("dev")
parts = pipeline.ProfileParts(cfg)
qs = pipeline.scored_questions(cfg, parts.papers)
texts = parts.texts()
ce, bm25 = parts.scorer(), parts.bm25
signals, candidates = {}, {}
for q in tqdm(qs, desc="dev signals", unit="q"):
    hits = parts.searcher.search(q.text, cfg.rerank_k)
    ids = [h.id for h in hits]
    candidates[q.qid] = ids
    signals[q.qid] = {"dense": [h.score for h in hits], "bm25": bm25.scores_for(q.text, ids),
                      "cross_encoder": ce.score(q.text, ids, [texts[i] for i in ids])}

# simpler variants first: on a tie the first listed wins
grid = [{"dense": 1.0}, {"bm25": 1.0}, {"cross_encoder": 1.0}]
grid += [{"dense": 1.0, "bm25": b} for b in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)]
grid += [{"dense": 1.0, "cross_encoder": c} for c in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)]
grid += [{"dense": 1.0, "bm25": b, "cross_encoder": c}
         for b, c in itertools.product((0.25, 0.5, 0.75, 1.0, 1.5), (0.1, 0.25, 0.5, 0.75, 1.0))]


def name(w):
    return " + ".join(f"{v:g}·{k}" for k, v in w.items())


# the cross-encoder is eligible only if its training papers share none with the dev collection
# (decided before any dev score was seen: a model that has seen dev papers cannot be chosen on dev)
info = json.loads((ROOT / cfg.reranker / "training.json").read_text())["settings"]
offline = load_profile("offline")
train_ids = {p.id for p in training_papers(read_papers(offline.path("snapshot_path")),
                                           {r["id"] for r in pipeline.collection(offline)}, offline.window_start,
                                           info["pool"], info["seed"])}
overlap = train_ids & {p["id"] for p in parts.papers}
overlap_sources = overlap & {q.source_id for q in qs}
table = compare((name(w), score_variant(qs, candidates, lambda q, w=w: fuse_scores(signals[q.qid], w))) for w in grid)
table["uses_cross_encoder"] = [bool(w.get("cross_encoder")) for w in grid]
table["eligible"] = ~table["uses_cross_encoder"] | (len(overlap) == 0)
dense_row = table.iloc[0]
chosen = best(table[table.eligible], "mrr_at_10", floor=("recall_at_5", dense_row.recall_at_5 - 0.005))
weights = grid[int(chosen.name)]
out = Path(cfg.results_dir)
table.to_csv(out / "rerank_selection.csv", index=False)
write_json(out / "rerank_selection.json", {
    "profile": cfg.name, "questions": len(qs), "reranker": cfg.reranker, "reranker_max_length": cfg.reranker_max_length,
    "rule": "highest dev MRR@10 among eligible variants whose dev recall@5 is at most 0.005 below dense's; "
            "ties: first listed",
    "cross_encoder_training_overlap": {"dev_collection_papers": len(overlap), "dev_sources": len(overlap_sources),
                                       "eligible": len(overlap) == 0},
    "chosen": {"variant": chosen.variant, "weights": weights, "mrr_at_10": chosen.mrr_at_10,
               "recall_at_5": chosen.recall_at_5},
    "dense": {"mrr_at_10": dense_row.mrr_at_10, "recall_at_5": dense_row.recall_at_5}})
print(f"cross-encoder training papers in the dev collection: {len(overlap)} ({len(overlap_sources)} dev sources)")
print(table[["variant", "recall_at_5", "mrr_at_10", "eligible"]].round(3).to_string())
print("chosen:", chosen.variant, weights)
