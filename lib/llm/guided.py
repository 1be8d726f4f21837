"""Grammar-constrained replies through maintained libraries and llama-cpp-python's public API only.

The project's fast path (:mod:`lib.llm.speculative`) checks guesses in its own batches and reads its own
grammar automaton; these are the maintained alternatives ``make bench`` measures beside it
(docs/speed.md, "Decoding paths"), each built from public parts alone:

* ``llguidance``: llguidance (Moskal et al., 2025; the grammar engine llama.cpp itself can be built with)
  computes each step's token mask from the request's GBNF grammar (converted to its Lark form by
  ``llguidance.gbnf_to_lark``) and the tokens the grammar forces next (``compute_ff_tokens``). The mask is
  applied by a ``logits_processor``; the forced tokens are proposed as a ``draft_model``, which
  llama-cpp-python checks by evaluating them in one batch. A draft model makes llama-cpp-python keep the
  logits of every token of every batch (``logits_all``), the prompt's included.
* ``llguidance_masks``: the same masks, no forced tokens, so no ``logits_all``: a token at a time.
* ``lookup``: llama.cpp's own grammar sampler (``LlamaGrammar``) with llama-cpp-python's
  ``LlamaPromptLookupDecoding`` (Saxena, 2023) as the draft model.

Each is a plain ``llama_cpp.Llama``; :func:`guided_llama` builds one, :func:`start_guided` readies it for
a call. The sampler chain is llama-cpp-python's own: only where a mask or grammar removes tokens do the
replies differ from one another's, and a guessed token's logits come from a larger batch.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from .speculative import LOOKUP_NGRAM, LOOKUP_TOKENS

try:  # optional, installed with the local model (make local-llm): only these variants need it
    from llguidance import LLMatcher
    from llguidance.gbnf_to_lark import gbnf_to_lark
    from llguidance.numpy import allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmask
except ImportError:  # the variants then say what to install
    LLMatcher = None

# the maintained decoding variants (``LocalBackend(decoder=...)``), beside "fast" (lib.llm.speculative)
# and "token" (llama-cpp-python's own loop and grammar, a token at a time)
GUIDED = ("llguidance", "llguidance_masks", "lookup")


_TOKENIZERS: dict[str, Any] = {}


def _tokenizer(llm: Any) -> Any:
    """llguidance's tokenizer over a model's llama.cpp vocabulary (about a second to build; kept per model file)."""
    from llama_cpp import llama_model_get_vocab  # optional: only the local model needs llama-cpp-python
    from llguidance.llamacpp import lltokenizer_from_vocab  # imports llama_cpp: optional, only the local model needs it

    if llm.model_path not in _TOKENIZERS:
        _TOKENIZERS[llm.model_path] = lltokenizer_from_vocab(llama_model_get_vocab(llm.model))
    return _TOKENIZERS[llm.model_path]


@lru_cache(maxsize=64)
def lark_grammar(gbnf: str) -> str:
    """A request's GBNF grammar in llguidance's form (its own converter)."""

    return LLMatcher.grammar_from_lark(gbnf_to_lark(gbnf))


class GuidedReply:
    """One reply under llguidance: the token mask at each draw (a ``logits_processor``) and the tokens the
    grammar forces after the last one drawn (a ``draft_model``). llama-cpp-python draws each reply token in
    turn, one draw per position, so the ``i``-th draw after a prompt of ``n`` tokens is for position ``n + i``
    and every token before it is settled (drawn, or a guess the draw confirmed)."""

    def __init__(self, tokenizer: Any, grammar: str, n_vocab: int, forced: bool):

        self.matcher = LLMatcher(tokenizer, lark_grammar(grammar))
        if self.matcher.is_error():
            raise ValueError(f"llguidance could not read the request's grammar: {self.matcher.get_error()}")
        self.mask = allocate_token_bitmask(1, n_vocab)
        self.forced = forced
        self.prompt_len: int | None = None
        self.draws = 0
        self.consumed = 0  # reply tokens given to the matcher
        self.stats = {"draws": 0, "drafts": 0, "drafted": 0}

    def _settle(self, input_ids: np.ndarray, upto: int) -> None:
        for token in input_ids[self.prompt_len + self.consumed:upto]:
            if not self.matcher.consume_token(int(token)):
                raise RuntimeError(f"llguidance refused token {int(token)}: {self.matcher.get_error()}")
            self.consumed += 1

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        """The logits processor: the grammar's mask at this draw (tokens it forbids set to -inf)."""

        if self.prompt_len is None:
            self.prompt_len = len(input_ids)
        self._settle(input_ids, self.prompt_len + self.draws)
        self.draws += 1
        self.stats["draws"] += 1
        fill_next_token_bitmask(self.matcher, self.mask)
        apply_token_bitmask_inplace(logits, self.mask)
        return logits

    def draft(self, input_ids: np.ndarray) -> np.ndarray:
        """The draft model: the tokens the grammar forces after every token so far (none without ``forced``)."""
        if not self.forced or self.prompt_len is None:
            return np.array([], dtype=np.intc)
        self._settle(input_ids, len(input_ids))
        tokens = np.asarray(self.matcher.compute_ff_tokens(), dtype=np.intc)
        self.stats["drafts"] += int(len(tokens) > 0)
        self.stats["drafted"] += int(len(tokens))
        return tokens


class ReplyDraftModel:
    """The draft model a guided ``Llama`` is built with: the current call's guess (none outside a call)."""

    def __init__(self) -> None:
        self.source = None

    def __call__(self, input_ids: np.ndarray, /, **kwargs: Any) -> np.ndarray:
        if self.source is None:
            return np.array([], dtype=np.intc)
        return self.source(input_ids)


def guided_llama(decoder: str, **llama_kwargs: Any) -> Any:
    """A ``llama_cpp.Llama`` for one of the :data:`GUIDED` variants (its draft model set for those that guess)."""
    from llama_cpp import Llama  # optional: only the local model needs llama-cpp-python
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding  # optional: only the local model needs it

    if decoder not in GUIDED:
        raise ValueError(f"decoder {decoder!r} is not one of {', '.join(GUIDED)}")
    if decoder.startswith("llguidance") and LLMatcher is None:
        raise ImportError(f"decoder {decoder!r} needs llguidance: run `make local-llm`")
    draft = {"llguidance": ReplyDraftModel(),
             "lookup": LlamaPromptLookupDecoding(max_ngram_size=LOOKUP_NGRAM, num_pred_tokens=LOOKUP_TOKENS)}.get(decoder)
    # a draft model needs every token's logits: llama-cpp-python 0.3.36 turns that on but sizes its logits
    # buffer by ``logits_all`` as given (n_batch rows), which overflows past the first batch; so it is given
    llm = Llama(**llama_kwargs, draft_model=draft, logits_all=draft is not None)
    llm.decoder = decoder
    return llm


def start_guided(llm: Any, grammar: str | None, kwargs: dict) -> GuidedReply | None:
    """Before a call on a guided ``Llama``: for the llguidance variants, the reply's matcher as the call's
    logits processor (and draft, where it guesses) in place of llama.cpp's grammar (``kwargs`` changed in
    place); None for ``lookup`` or a call without a grammar, which keep llama.cpp's grammar sampler."""
    from llama_cpp import LogitsProcessorList  # optional: only the local model needs llama-cpp-python

    if llm.decoder == "lookup" or not grammar:
        if isinstance(llm.draft_model, ReplyDraftModel):
            llm.draft_model.source = None
        return None
    reply = GuidedReply(_tokenizer(llm), grammar, llm.n_vocab(),
                        forced=llm.decoder == "llguidance")
    kwargs.pop("grammar", None)
    kwargs["logits_processor"] = LogitsProcessorList([reply])
    if isinstance(llm.draft_model, ReplyDraftModel):
        llm.draft_model.source = reply.draft
    return reply
