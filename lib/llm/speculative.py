"""Fewer sequential model steps per reply for the local model (llama-cpp-python), same sampler.

On this CPU one generated token costs a whole pass over the weights (about 90 ms for the 1.5B model),
while a batch of a few tokens costs little more than two or three such passes. A grammar-constrained
reply is mostly text the grammar fixes: ``{"match": `` before the model's choice of a number, then
``, "decision": "stop"}``; a tool call's keys; the rest of a paper id once its first digits single
it out. Two things are done with that text (:class:`lib.llm.grammar_text.GrammarText` says what it is):

* **Checked guesses** (speculative decoding, Leviathan et al., 2023): the forced text, tokenized, is
  proposed as the next tokens, appended to the prompt's own batch for the reply's opening, and
  evaluated in one batch; llama-cpp-python's ``Llama.generate`` then samples every position of it in
  turn with the request's sampler and keeps a guessed token only where it is the token drawn, so the
  sampler draws once per reply token, as one token at a time. Free text is guessed too (``lookup``
  tokens), by prompt lookup (Saxena, 2023; llama-cpp-python's ``LlamaPromptLookupDecoding``): the tokens
  that followed the first earlier occurrence of the last few tokens (a query's words copied from the
  question).
* **A fixed ending is not evaluated.** Once the grammar fixes the whole rest of a reply, no later
  token can change its text, so the reply is completed with that text and ended there.

``Llama(draft_model=...)`` would ask llama.cpp for the logits of every token of every batch, the
prompt's included (the output layer over the whole prompt); here only the batches that check a guess
return every token's logits. llama.cpp's quantised matrix kernels differ with the batch size, so a
token's logits in a batch differ from a one-token step's: by up to about 0.2 (on logits of 20-30)
on the agent's prompts, as much as between two batchings of the same prompt without any guess. A
sampled reply can therefore differ, as it can with prefix reuse; ``make bench`` counts the replies
that come out the same, and runs the agent over every question to compare its scores. Leaving out a
fixed ending changes no reply (tested).
"""
from __future__ import annotations

import codecs
import time
from functools import lru_cache
from typing import Any

import numpy as np

from .grammar_text import GrammarError, GrammarText
from .grammar_sampler import CheckedGrammarSampler, covered
from .llama_adapter import check, mark_evaluated, sampler_hook

# prompt lookup for free text: up to 4 tokens after a run of 3 or 2 tokens seen before (measured on the
# agent's recorded requests: 4 tokens gave the shortest calls, 8 wasted more on wrong guesses; docs/speed.md)
LOOKUP_TOKENS = 4
LOOKUP_NGRAM = 3
LOOKUP_MIN_NGRAM = 2


@lru_cache(maxsize=64)
def grammar_text(grammar: str) -> GrammarText | None:
    """The automaton of a request's grammar (kept for the 64 last used); None for a grammar outside
    the subset it reads, whose replies are then written a token at a time as before."""
    try:
        return GrammarText(grammar)
    except (GrammarError, RecursionError):
        return None


def prompt_lookup(tokens: np.ndarray, n_draft: int, max_ngram: int = LOOKUP_NGRAM,
                  min_ngram: int = LOOKUP_MIN_NGRAM) -> np.ndarray:
    """Prompt lookup (llama-cpp-python's ``LlamaPromptLookupDecoding`` rule, with a shortest run): the
    tokens that followed the first earlier occurrence of the context's last ``n`` tokens, ``n`` from
    ``max_ngram`` down to ``min_ngram`` (at most ``n_draft``; none where no such run recurs)."""
    tokens = np.asarray(tokens, dtype=np.intc)
    for n in range(min(max_ngram, len(tokens) - 1), min_ngram - 1, -1):
        windows = np.lib.stride_tricks.sliding_window_view(tokens[:-1], n)
        hits = np.nonzero(np.all(windows == tokens[-n:], axis=1))[0]
        for i in hits:
            if i + n < len(tokens):
                return tokens[i + n:i + n + n_draft]
    return np.array([], dtype=np.intc)


class ReplyDraft:
    """The draft model given to ``Llama.generate``: the grammar's forced text first, else (``lookup``
    > 0) a prompt-lookup guess. It marks the next batch as one that checks a guess."""

    def __init__(self, llm: Any, lookup: int = LOOKUP_TOKENS):
        self.llm, self.lookup = llm, lookup

    def __call__(self, input_ids: np.ndarray, /, **kwargs: Any) -> np.ndarray:
        llm = self.llm
        draft = llm.forced_tokens()
        if not len(draft) and self.lookup and llm.guess:
            draft = prompt_lookup(input_ids, self.lookup)
        draft = np.asarray(draft, dtype=np.intc)[:max(0, llm.n_batch - 1)]
        llm.checking = len(draft) > 0
        llm.spec["drafts"] += int(len(draft) > 0)
        llm.spec["drafted"] += int(len(draft))
        return draft


def drafting_llama(llama_class: type) -> type:
    """A subclass of ``llama_class`` (``llama_cpp.Llama``) that writes grammar-constrained replies with
    the two shortcuts above; :func:`start_call` gives it each call's grammar and token limit. It counts,
    per call (``spec``): the prompt's batch (tokens, seconds, guessed tokens added to it), the batches
    after it (``steps``: tokens, seconds), the guesses and guessed tokens, and the tokens of a fixed
    ending not evaluated (``skipped``). Its batches are llama.cpp's own (``llama_batch_init``,
    ``llama_decode``); what it needs beyond llama-cpp-python's public API goes through
    :mod:`lib.llm.llama_adapter`."""

    class DraftingLlama(sampler_hook(llama_class)):
        checking = False
        reply = None
        max_reply = 0
        guess = True  # False: no guessed tokens at all, only fixed endings left out (exact: tests compare)

        check_drawable = True  # False: the grammar checked on the whole vocabulary (tests compare)

        check_batch = None  # the batches that check a guess (llama_batch_init, made at the first)

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            check(self)  # a member the fast path needs gone: say so now, with the versions
            start_call(self, None, 0)  # outside a call: no grammar, no shortcut, counts kept all the same

        def close(self):
            import llama_cpp  # llama-cpp-python is optional (only the local model needs it)

            if self.check_batch is not None:
                llama_cpp.llama_batch_free(self.check_batch)
                self.check_batch = None
            getattr(super(), "close", lambda: None)()

        def make_sampler(self, base, **kwargs):
            """The request's chain; with a grammar, checked only on the tokens the chain can draw
            (:mod:`lib.llm.grammar_sampler`: the same draws)."""
            grammar = kwargs.get("grammar")
            if grammar is None or self.grammar_text is None or not self.check_drawable or not covered(**kwargs):
                return base(**kwargs)
            chain = base(**{**kwargs, "grammar": None})
            self.checked_sampler = CheckedGrammarSampler(self, chain, self.grammar_text, temp=kwargs["temp"],
                                                         top_k=kwargs["top_k"], top_p=kwargs["top_p"])
            return self.checked_sampler

        def decode_batch(self, tokens: list[int], drawn: int) -> None:
            """Evaluate ``tokens`` after the ones held in one llama.cpp batch, logits kept from position
            ``drawn`` on (llama.cpp's C API: ``llama_memory_seq_rm``, ``llama_batch``, ``llama_decode``)."""
            import llama_cpp  # llama-cpp-python is optional (only the local model needs it)

            n_past = self.n_tokens
            llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(self.ctx), 0, n_past, -1)
            if self.check_batch is None:
                self.check_batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
            batch = self.check_batch
            batch.n_tokens = len(tokens)
            for i, token in enumerate(tokens):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, n_past + i, 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = i >= drawn
            code = llama_cpp.llama_decode(self.ctx, batch)
            if code != 0:
                raise RuntimeError(f"llama_decode returned {code}")
            self.input_ids[n_past:n_past + len(tokens)] = tokens
            self.n_tokens += len(tokens)
            mark_evaluated(self)

        # ---- the text the grammar fixes, as tokens
        def forced_tokens(self) -> list[int]:
            if self.reply is None or not self.guess:
                return []
            text, _ = self.reply.forced()
            return self.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []

        def eval(self, tokens):
            start = time.perf_counter()
            tokens = list(tokens)
            first = self.spec["prompt_evals"] == 0
            guess: list[int] = []
            if first and tokens and self.draft_model is not None:
                room = min(self.n_batch - 1, self.n_ctx() - self.n_tokens - len(tokens) - 1)  # batch and window
                guess = list(self.forced_tokens())[:max(0, room)]
                self.spec["prompt_guess"] = len(guess)
            if self.checking or guess:
                # one batch: the tokens to evaluate and the guess after them, logits kept (in llama.cpp's
                # output buffer, where the sampler reads them) only where a token is drawn: after the
                # prompt's last token and after every guessed one (every position of a checking batch)
                seq = tokens + guess
                drawn = 0 if self.checking else len(tokens) - 1
                self.checking = False
                lead = min(max(0, len(seq) - self.n_batch), drawn)  # whole batches before the last one
                if lead:
                    super().eval(seq[:lead])
                self.decode_batch(seq[lead:], drawn - lead)
            else:
                super().eval(tokens)
            took = time.perf_counter() - start
            if first:
                self.spec["prompt_evals"] = 1
                self.spec["prompt_eval_tokens"] = len(tokens)
                self.spec["prompt_s"] += took
            else:
                self.spec["steps"] += 1
                self.spec["step_tokens"] += len(tokens)
                self.spec["steps_s"] += took

        def generate(self, tokens, *args, **kwargs):
            """``Llama.generate``; where the grammar fixes the rest of the reply, its tokens are given
            without evaluating them, then the end of the reply."""
            inner = super().generate(tokens, *args, **kwargs)
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            written = 0
            for token in inner:
                written += 1
                if self.reply is not None and not is_end(self, token):
                    if not self.reply.feed(decoder.decode(self.detokenize([token]))):
                        self.reply = None  # outside the grammar as read here: no more shortcuts
                yield token
                if self.reply is not None:
                    text, ends = self.reply.forced()
                    if ends:
                        tail = self.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []
                        if written + len(tail) < self.max_reply:  # as far as the reply may run
                            inner.close()
                            self.spec["skipped"] += len(tail)
                            yield from tail
                            yield self.token_eos()
                            return

    DraftingLlama.__name__ = DraftingLlama.__qualname__ = f"Drafting{llama_class.__name__}"
    return DraftingLlama


def is_end(llm: Any, token: int) -> bool:
    """Whether a token ends a reply (llama.cpp's end-of-generation tokens)."""
    import llama_cpp  # llama-cpp-python is optional (only the local model needs it)

    return bool(llama_cpp.llama_vocab_is_eog(llama_cpp.llama_model_get_vocab(llm.model), token))


def start_call(llm: Any, grammar: str | None, max_tokens: int) -> None:
    """Before a call: its grammar's automaton (none without a grammar), its token limit, and cleared counts."""
    automaton = grammar_text(grammar) if grammar else None
    llm.grammar_text = grammar or None  # the grammar's text, for the checked sampler
    llm.reply = automaton.start() if automaton is not None else None
    llm.max_reply = max_tokens
    llm.checking = False
    llm.checked_sampler = None
    llm.spec = {"prompt_evals": 0, "prompt_eval_tokens": 0, "prompt_s": 0.0, "prompt_guess": 0, "steps": 0,
                "step_tokens": 0, "steps_s": 0.0, "drafts": 0, "drafted": 0, "skipped": 0,
                "draws": 0, "grammar_checked": 0, "whole_vocabulary": 0}
