"""The request's sampler with its grammar checked on the tokens it can draw, not on the whole vocabulary.

llama-cpp-python's sampler chain for a grammar-constrained call is: penalties, grammar, top-k, typical,
top-p, min-p, temperature, a seeded draw. The grammar step checks every one of the model's 151,936
tokens against the grammar at every reply token (about 12-40 ms on this CPU, a tenth of a step of the
1.5B model). llama.cpp's own programs avoid most of it by drawing first and checking the drawn token
(``common_sampler_sample``, ``grammar_first = false``), which changes the distribution where the
grammar rules out tokens the chain would have kept. Here the chain stays as it is, and the grammar is
checked only until the tokens the chain keeps are known:

The tokens are checked from the highest logit down, in bands. Once every token at or above a bar ``b``
has been checked, the allowed ones found are the best allowed tokens, and each token not checked
weighs less than ``exp(b)``; top-k (k) caps how many of them reach top-p, so their total weight is at
most ``(k - found) * exp(b)``. Top-p (Holtzman et al., 2020) keeps the shortest run of best tokens
whose share of that weight reaches ``top_p``: if the run is the same with the unchecked weight counted
as zero and as its bound, it is the run the whole vocabulary gives; min-p (Nguyen et al., 2024) then
only drops tokens from it. So the rest of the chain (top-k, typical, top-p, min-p, temperature, the
seeded draw) runs on the allowed tokens found, the same tokens reach the draw in the same order, and
the draw takes the same random number: the same token comes out (tested against the whole-vocabulary
chain). A run whose share lies within ``ROUNDING`` of ``top_p``, where llama.cpp's float32 sums over
the two arrays could fall on either side, is not taken as settled: more tokens are checked. With
``temp = 0`` the best allowed token is the one drawn. Where a chain is one this reading does not
cover (penalties, typical-p, mirostat, a logits processor) the whole vocabulary is checked, as before;
so is it when no allowed token is found above the vocabulary's floor.
"""
from __future__ import annotations

import ctypes
import math
from typing import Any, Callable

import numpy as np

from .llama_adapter import raw_sampler

BAND = 3.0  # logits checked per band, from the highest down
ROUNDING = 1e-4  # a top-p share nearer than this to top_p is not taken as settled (float32 sums of 40 terms)
TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


def covered(*, temp: float, top_k: int, top_p: float, typical_p: float, repeat_penalty: float,
            frequency_penalty: float, presence_penalty: float, mirostat_mode: int, logits_processor: Any,
            **_ignored: Any) -> bool:
    """Whether a chain's settings are ones the checked sampler reproduces (else the whole vocabulary is checked)."""
    neutral = repeat_penalty == 1.0 and frequency_penalty == 0.0 and presence_penalty == 0.0
    sampled = top_k > 0 and 0 < top_p < 1 and typical_p >= 1.0 and mirostat_mode == 0
    return neutral and logits_processor is None and (temp == 0 or (temp > 0 and sampled))


def settled(found: np.ndarray, bar: float, *, greedy: bool, top_k: int, top_p: float) -> bool:
    """Whether the allowed logits ``found``, with every token at or above ``bar`` checked, settle the
    tokens a chain of top-k, top-p and min-p keeps over the whole masked vocabulary (see above)."""
    if not len(found):
        return False
    if greedy or len(found) >= top_k:
        return True  # the best allowed token; or top-k's candidates all found: nothing unchecked reaches top-p
    best = np.sort(np.asarray(found, dtype=np.float64))[::-1]
    weights = np.cumsum(np.exp(best - best[0]))
    unchecked = (top_k - len(best)) * math.exp(bar - best[0])
    low, high = weights / weights[-1], weights / (weights[-1] + unchecked)
    if np.any(np.abs(np.concatenate([low, high]) - top_p) < ROUNDING):
        return False  # a share this close to top_p: llama.cpp's float32 sums could fall either side
    low, high = np.nonzero(low >= top_p)[0], np.nonzero(high >= top_p)[0]
    return len(high) > 0 and high[0] == low[0]


def from_the_top(logits: np.ndarray, allowed: Callable[[np.ndarray], np.ndarray],
                 known: Callable[[np.ndarray, float], bool]) -> tuple[np.ndarray | None, int]:
    """Check tokens from the highest logit down, ``BAND`` logits at a time, until ``known(found logits,
    bar)``: the ids of the allowed tokens found (None where the whole vocabulary holds none) and how
    many tokens were checked. ``allowed(ids)`` says which of ``ids`` may come next."""
    floor = float(logits.min())
    bar = float(logits.max())
    checked = np.zeros(len(logits), dtype=bool)
    found: list[np.ndarray] = []
    while True:
        ids = np.nonzero((logits >= bar) & ~checked)[0].astype(np.int32)
        if len(ids):
            checked[ids] = True
            found.append(ids[allowed(ids)])
        ok = np.concatenate(found) if found else np.array([], dtype=np.int32)
        if bar <= floor or known(logits[ok], bar):
            return (ok if len(ok) else None), int(checked.sum())
        bar -= BAND


class CheckedGrammarSampler:
    """Stands in for llama-cpp-python's ``LlamaSampler`` in ``Llama.sample`` (``sample(ctx, idx)``).

    ``chain`` is the request's chain without its grammar (llama-cpp-python's, built through
    :func:`lib.llm.llama_adapter.sampler_hook`), ``grammar`` the request's GBNF text (its rule ``root``
    first). Counts, in ``stats`` (the ``Llama``'s per-call ``spec`` where it keeps one): tokens drawn,
    tokens checked against the grammar, and draws that checked the whole vocabulary."""

    def __init__(self, llm: Any, chain: Any, grammar: str, *, temp: float, top_k: int, top_p: float):
        import llama_cpp  # llama-cpp-python is optional (only the local model needs it)

        self._lib = llama_cpp
        self.llm, self.chain = llm, chain  # chain: a LlamaSampler, kept alive here
        self.raw_chain = raw_sampler(chain)
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            llama_cpp.llama_model_get_vocab(llm.model), grammar.encode("utf-8"), b"root")
        if not self.grammar:
            raise ValueError("llama.cpp could not read the request's grammar")
        self.n_vocab = llm.n_vocab()
        self.greedy, self.top_k, self.top_p = temp == 0, top_k, top_p
        self.stats = getattr(llm, "spec", {})
        for key in ("draws", "grammar_checked", "whole_vocabulary"):
            self.stats.setdefault(key, 0)

    def close(self) -> None:
        if self.grammar:
            self._lib.llama_sampler_free(self.grammar)
            self.grammar = None

    def __del__(self) -> None:
        self.close()

    def _apply(self, sampler: Any, data: np.ndarray) -> Any:
        """Run a llama.cpp sampler on a token array (in place); returns llama.cpp's view of the array
        (``selected``, ``size``, ``data``: a sampler may point it elsewhere)."""
        lib = self._lib
        arr = lib.llama_token_data_array(data=data.ctypes.data_as(ctypes.POINTER(lib.llama_token_data)),
                                         size=len(data), selected=-1, sorted=False)
        lib.llama_sampler_apply(sampler, ctypes.byref(arr))
        return arr

    def known(self, found: np.ndarray, bar: float) -> bool:
        """Whether the logits ``found`` of the allowed tokens found (every token at or above ``bar``
        checked) settle what the chain keeps: the best allowed token for greedy, else the same top-p run
        with the unchecked tokens' weight at zero and at its bound."""
        return settled(found, bar, greedy=self.greedy, top_k=min(self.top_k, self.n_vocab), top_p=self.top_p)

    def allowed(self, ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        """Which of the tokens ``ids`` the grammar allows next (llama.cpp's grammar sampler on just them)."""
        data = np.empty(len(ids), dtype=TOKEN_DATA)
        data["id"], data["logit"], data["p"] = ids, logits[ids], 0.0
        self._apply(self.grammar, data)
        return np.isfinite(data["logit"])

    def sample(self, ctx: Any, idx: int) -> int:
        lib = self._lib
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx.ctx, idx), shape=(self.n_vocab,))
        ids, checked = from_the_top(logits, lambda some: self.allowed(some, logits), self.known)
        self.stats["draws"] += 1
        self.stats["grammar_checked"] += checked
        data = np.empty(self.n_vocab if ids is None else len(ids), dtype=TOKEN_DATA)
        if ids is None:  # nothing allowed: the grammar and the chain decide on the whole array, as before
            self.stats["whole_vocabulary"] += 1
            data["id"], data["logit"], data["p"] = np.arange(self.n_vocab, dtype=np.int32), logits, 0.0
            self._apply(self.grammar, data)
        else:
            data["id"], data["logit"], data["p"] = ids, logits[ids], 0.0
        arr = self._apply(self.raw_chain, data)
        if not 0 <= arr.selected < arr.size:
            raise RuntimeError("llama.cpp's sampler chain selected no token")
        token = int(arr.data[arr.selected].id)
        lib.llama_sampler_accept(self.grammar, token)
        lib.llama_sampler_accept(self.raw_chain, token)
        return token
