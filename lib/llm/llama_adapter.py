"""The one place the project uses members llama-cpp-python does not make public.

The fast path (:mod:`lib.llm.speculative`, :mod:`lib.llm.grammar_sampler`) works through llama.cpp's own C
functions as llama-cpp-python publishes them (``llama_cpp.llama_decode``, ``llama_batch_init``,
``llama_memory_seq_rm``, ``llama_sampler_*``) and ``Llama``'s public properties (``model``, ``ctx``,
``n_vocab()``, ``n_ctx()``, ``input_ids``, ``n_tokens``). Three things have no public form in
llama-cpp-python 0.3, and are reached here alone:

* the request's sampler chain built without its grammar: ``Llama._init_sampler`` (a subclass's hook,
  :func:`sampler_hook`);
* the llama.cpp chain under the wrapper it returns: ``LlamaSampler.sampler`` (:func:`raw_sampler`);
* the note that the logits of the last evaluated token are live: ``Llama._requires_eval``
  (:func:`mark_evaluated`), which ``Llama.generate`` reads to reuse a fully cached prompt.

:func:`check` names any of them that is gone, with the installed version and the one the project pins
(``requirements-local-llm.txt``, the one place it is pinned); tests/test_llama_adapter.py runs it, and
every drafting ``Llama`` runs it when made. Moving to a new llama-cpp-python: change the pin, run that test.
"""
from __future__ import annotations

import re
import sys
from typing import Any, Callable

from ..paths import ROOT

PIN_FILE = ROOT / "requirements-local-llm.txt"
# (what, member): the members of llama-cpp-python this module reaches; "instance" members are checked on a Llama
CLASS_MEMBERS = (("Llama", "_init_sampler"),)
SAMPLER_MEMBERS = ("sampler",)
INSTANCE_MEMBERS = ("_requires_eval",)


class LlamaCppChanged(RuntimeError):
    """llama-cpp-python no longer has a member the fast path needs."""


def pinned_version() -> str:
    """The llama-cpp-python version the project pins (requirements-local-llm.txt)."""
    found = re.search(r"^llama-cpp-python==([^\s#]+)", PIN_FILE.read_text(encoding="utf-8"), re.M)
    if not found:
        raise LlamaCppChanged(f"{PIN_FILE.name} pins no llama-cpp-python version")
    return found.group(1)


def _missing(what: str, member: str) -> LlamaCppChanged:
    import llama_cpp  # optional: only the local model needs llama-cpp-python

    return LlamaCppChanged(
        f"llama-cpp-python {llama_cpp.__version__} has no {what}.{member}, which the local model's fast path uses "
        f"(lib/llm/llama_adapter.py; the project pins llama-cpp-python {pinned_version()} in {PIN_FILE.name}). "
        f"Install the pinned version (`make local-llm`), or run without the fast path: LOCAL_LLM_DRAFT=0")


def check(llm: Any | None = None) -> str:
    """Every member this module reaches is there (on ``llm`` too, when it is a ``Llama``, for the instance ones);
    returns the installed version. Raises :class:`LlamaCppChanged` naming the first one missing. A stand-in
    ``llm`` while llama-cpp-python is not loaded (tests without it) has nothing to check: "" is returned."""
    if llm is not None and sys.modules.get("llama_cpp") is None:
        return ""  # llama-cpp-python never loaded: ``llm`` cannot be its Llama
    import llama_cpp  # optional: only the local model needs llama-cpp-python
    from llama_cpp import llama as llama_module  # optional: only the local model needs llama-cpp-python

    for cls_name, member in CLASS_MEMBERS:
        if not callable(getattr(getattr(llama_module, cls_name, None), member, None)):
            raise _missing(cls_name, member)
    sampler_cls = getattr(getattr(llama_cpp, "_internals", None), "LlamaSampler", None)
    if sampler_cls is None:
        raise _missing("_internals", "LlamaSampler")
    made = sampler_cls()
    for member in SAMPLER_MEMBERS:
        if not hasattr(made, member):
            raise _missing("LlamaSampler", member)
    if isinstance(llm, llama_module.Llama):  # llama-cpp-python's own (a test's stand-in has its own members)
        for member in INSTANCE_MEMBERS:
            if not hasattr(llm, member):
                raise _missing("Llama", member)
    return llama_cpp.__version__


def sampler_hook(llama_class: type) -> type:
    """A subclass of ``llama_class`` whose sampler chain is built by its ``make_sampler(base, **settings)``,
    ``base`` building llama-cpp-python's own chain for given settings (``Llama._init_sampler``)."""

    class HookedLlama(llama_class):
        def make_sampler(self, base: Callable[..., Any], **settings: Any) -> Any:
            return base(**settings)

        def _init_sampler(self, **settings: Any) -> Any:
            return self.make_sampler(lambda **s: llama_class._init_sampler(self, **s), **settings)

    HookedLlama.__name__ = HookedLlama.__qualname__ = f"Hooked{llama_class.__name__}"
    return HookedLlama


def raw_sampler(chain: Any) -> Any:
    """The llama.cpp sampler under llama-cpp-python's chain wrapper (what ``llama_sampler_apply`` takes)."""
    return chain.sampler


def mark_evaluated(llm: Any) -> None:
    """Tell ``llm`` the logits of its last evaluated token are live (as its own ``eval`` does)."""
    llm._requires_eval = False
