"""Embed a profile's collection into the on-disk cache (resumable)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.collection import read_collection  # noqa: E402
from lib.config import load_profile  # noqa: E402
from lib.index import DenseIndex, Embedder  # noqa: E402

profile = load_profile(sys.argv[1] if len(sys.argv) > 1 else "offline")
papers = read_collection(profile.data_dir / "collection.jsonl")
emb = Embedder(profile.embedder, profile.embedder_backend)
DenseIndex.build(papers, emb)
print("computed", emb.computed)
