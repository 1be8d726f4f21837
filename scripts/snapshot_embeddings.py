"""Embed every paper of the snapshot once (resumable, chunk by chunk) and write the shipped
float16 matrix with its provenance, then check it against the model on a sample of papers.

Usage: python scripts/snapshot_embeddings.py [PROFILE]     (default: offline)
       python scripts/snapshot_embeddings.py PROFILE --check  (only the check)
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.config import load_profile, shown_path  # noqa: E402
from lib.search.snapshot import build_matrix, check_matrix  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
cfg = load_profile(args[0] if args else os.environ.get("RUN_PROFILE") or "offline",  # make: RUN_PROFILE
                   collection_scope="snapshot")
papers = pipeline.search_papers(cfg)
emb = pipeline.embedder(cfg)
if "--check" not in sys.argv:
    path = build_matrix(papers, emb)
    print(f"{shown_path(path)}: {len(papers):,} papers")
result = check_matrix(papers, emb)
print(f"check against {cfg.embedder}: {result['sample']} papers re-embedded, lowest cosine {result['min_cosine']:.5f}")
if not result["ok"]:
    sys.exit("the shipped snapshot embeddings do not match the model")
