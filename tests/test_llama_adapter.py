"""The one place the local model's fast path reaches past llama-cpp-python's public API (lib/llm/llama_adapter.py):
every member it needs is there in the pinned version, a missing one is named with both versions, the version is
pinned in one place, and no other module reaches a private llama-cpp-python member."""
import importlib.util
import re

import pytest

from lib.config import ROOT
from lib.llm import llama_adapter

HAS_LLAMA = importlib.util.find_spec("llama_cpp") is not None
needs_llama = pytest.mark.skipif(not HAS_LLAMA, reason="needs llama-cpp-python (make local-llm)")
# the private members of llama-cpp-python's Llama, its context, batch, model and grammar wrappers and its sampler
# (a LocalBackend's own ``_grammar(text)`` method apart)
PRIVATE = re.compile(r"\._(?:ctx|batch|model|n_vocab|n_ctx|grammar(?!\()|root|requires_eval|init_sampler)\b|\.chain\.sampler\b")


def test_the_version_is_pinned_in_one_place():
    pins = [p.relative_to(ROOT).as_posix() for p in [*ROOT.glob("requirements*.txt"), ROOT / "pyproject.toml",
                                                     ROOT / "environment.yml", ROOT / "Makefile"]
            if p.exists() and re.search(r"llama[-_]cpp[-_]python\s*==", p.read_text(encoding="utf-8"), re.I)]
    assert pins == ["requirements-local-llm.txt"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", llama_adapter.pinned_version())


def test_no_module_but_the_adapter_reaches_a_private_member():
    found = {}
    for path in [*(ROOT / "lib").rglob("*.py"), *(ROOT / "scripts").glob("*.py")]:
        if path.name == "llama_adapter.py" or "llama" not in path.read_text(encoding="utf-8").lower():
            continue  # only modules that work with llama-cpp-python's objects
        hits = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if PRIVATE.search(line)]
        if hits:
            found[path.relative_to(ROOT).as_posix()] = hits
    assert not found, found


@needs_llama
def test_every_member_is_there_in_the_installed_version():
    import llama_cpp

    assert llama_adapter.check() == llama_cpp.__version__
    assert llama_cpp.__version__ == llama_adapter.pinned_version()


@needs_llama
def test_a_missing_member_is_named_with_both_versions(monkeypatch):
    import llama_cpp

    monkeypatch.setattr(llama_adapter, "CLASS_MEMBERS", (("Llama", "_a_member_no_release_has"),))
    with pytest.raises(llama_adapter.LlamaCppChanged) as err:
        llama_adapter.check()
    message = str(err.value)
    assert f"llama-cpp-python {llama_cpp.__version__} has no Llama._a_member_no_release_has" in message
    assert f"pins llama-cpp-python {llama_adapter.pinned_version()} in requirements-local-llm.txt" in message
    monkeypatch.setattr(llama_adapter, "CLASS_MEMBERS", ())
    monkeypatch.setattr(llama_adapter, "INSTANCE_MEMBERS", ("_gone_from_this_llama",))
    class Bare(llama_cpp.Llama):  # a Llama without its model: only its members are read
        def __init__(self):
            pass

        def __del__(self):
            pass

    llama = Bare()
    with pytest.raises(llama_adapter.LlamaCppChanged, match="has no Llama._gone_from_this_llama"):
        llama_adapter.check(llama)
    assert llama_adapter.check(object()) == llama_cpp.__version__  # a stand-in is not llama-cpp-python's


@needs_llama
def test_the_hook_builds_the_chain_through_make_sampler():
    from llama_cpp import Llama

    hooked = llama_adapter.sampler_hook(Llama)
    assert issubclass(hooked, Llama) and hooked._init_sampler is not Llama._init_sampler
    seen = {}

    class Probe(hooked):
        def __init__(self):  # no model: only the hook's dispatch is exercised
            pass

        def __del__(self):
            pass

        def make_sampler(self, base, **settings):
            seen.update(settings)
            return "chain"

    assert Probe()._init_sampler(temp=0.0, top_k=1) == "chain" and seen == {"temp": 0.0, "top_k": 1}


def test_a_stand_in_without_llama_cpp_python_has_nothing_to_check(monkeypatch):
    """The fast path's tests over a scripted stand-in run where llama-cpp-python is not installed (CI): the
    check then passes a stand-in by, and asked about the library itself it fails as a missing import does."""
    import sys

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if not installed
    assert llama_adapter.check(object()) == ""
    with pytest.raises(ImportError):
        llama_adapter.check()
