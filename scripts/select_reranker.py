"""Choose the rerank step on the dev set (profile `dev`), never on the bundled questions.

Every variant reorders the same dense top `rerank_k` of each dev question by a weighted sum of
standardised signals: the dense cosine, BM25, and a cross-encoder's score (each candidate model in
CROSS_ENCODERS that exists). A cross-encoder whose training papers include any paper of the dev
collection is not eligible (it has seen dev papers). Writes results/dev/rerank_selection.csv and
.json (the chosen variant, its weights and model, and the rule).
Usage: python scripts/select_reranker.py
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
from lib.search.rerank import CrossEncoderScorer, fuse_scores  # noqa: E402
from lib.search.reranker_training import training_papers  # noqa: E402

# the cross-encoders tried (models/ is what ships; build/ holds candidates trained by train_reranker.py)
CROSS_ENCODERS = ["models/reranker-minilm-offline", "build/reranker-sentence", "models/reranker-minilm-sentence"]

cfg = load_profile("dev")
parts = pipeline.ProfileParts(cfg)
qs = pipeline.scored_questions(cfg, parts.papers)
texts, bm25 = parts.texts(), parts.bm25
offline = load_profile("offline")
snapshot = read_papers(offline.path("snapshot_path"))
dev_ids = {p["id"] for p in parts.papers}


def training_overlap(model: str) -> int:
    """Papers of the dev collection among a cross-encoder's training papers (re-drawn from its settings)."""
    s = json.loads((ROOT / model / "training.json").read_text())["settings"]
    excluded = {p["id"] for name in s.get("excluded", ["offline"]) for p in pipeline.collection(load_profile(name))}
    return len({p.id for p in training_papers(snapshot, excluded, offline.window_start, s["pool"], s["seed"])} & dev_ids)


models = [m for m in dict.fromkeys(CROSS_ENCODERS) if (ROOT / m / "training.json").exists()]
overlap = {m: training_overlap(m) for m in models}
signals, candidates = {}, {}
scorers = {m: CrossEncoderScorer(m, "trained-in-project", max_length=cfg.reranker_max_length) for m in models}
for q in tqdm(qs, desc="dev signals", unit="q"):
    hits = parts.searcher.search(q.text, cfg.rerank_k)
    ids = [h.id for h in hits]
    candidates[q.qid] = ids
    signals[q.qid] = {"dense": [h.score for h in hits], "bm25": bm25.scores_for(q.text, ids),
                      **{m: sc.score(q.text, ids, [texts[i] for i in ids]) for m, sc in scorers.items()}}

# simpler variants first: on a tie the first listed wins
grid = [({"dense": 1.0}, None), ({"bm25": 1.0}, None)]
grid += [({"dense": 1.0, "bm25": b}, None) for b in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)]
for m in models:
    grid += [({"cross_encoder": 1.0}, m)]
    grid += [({"dense": 1.0, "cross_encoder": c}, m) for c in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)]
    grid += [({"dense": 1.0, "bm25": b, "cross_encoder": c}, m)
             for b, c in itertools.product((0.25, 0.5, 0.75, 1.0, 1.5), (0.1, 0.25, 0.5, 0.75, 1.0))]


def name(w, m):
    return " + ".join(f"{v:g}·{k}" for k, v in w.items()) + (f" [{m}]" if m else "")


def rescorer(w, m):
    def rescore(q):
        sig = signals[q.qid]
        return fuse_scores({"dense": sig["dense"], "bm25": sig["bm25"], "cross_encoder": sig.get(m, sig["dense"])}, w)
    return rescore


table = compare((name(w, m), score_variant(qs, candidates, rescorer(w, m))) for w, m in grid)
table["cross_encoder"] = [m or "" for _, m in grid]
table["eligible"] = [m is None or overlap[m] == 0 for _, m in grid]
dense_row = table.iloc[0]
chosen = best(table[table.eligible], "mrr_at_10", floor=("recall_at_5", dense_row.recall_at_5 - 0.005))
weights, model = grid[int(chosen.name)]
out = Path(cfg.results_dir)
table.to_csv(out / "rerank_selection.csv", index=False)
write_json(out / "rerank_selection.json", {
    "profile": cfg.name, "questions": len(qs), "rerank_k": cfg.rerank_k, "reranker_max_length": cfg.reranker_max_length,
    "rule": "highest dev MRR@10 among eligible variants whose dev recall@5 is at most 0.005 below dense's; "
            "ties: the first listed (simpler variants are listed first)",
    "cross_encoders": {m: {"dev_collection_papers_in_training": overlap[m], "eligible": overlap[m] == 0} for m in models},
    "chosen": {"variant": chosen.variant, "weights": weights, "cross_encoder": model,
               "mrr_at_10": chosen.mrr_at_10, "recall_at_5": chosen.recall_at_5},
    "dense": {"mrr_at_10": dense_row.mrr_at_10, "recall_at_5": dense_row.recall_at_5}})
print({m: f"{n} dev papers in its training data" for m, n in overlap.items()})
print(table[["variant", "recall_at_5", "mrr_at_10", "eligible"]].round(3).to_string())
print("chosen:", chosen.variant, weights, model)
