"""The grammar checked only on the tokens the sampler chain can keep: the same tokens kept as with the
whole vocabulary checked (a reference chain in numpy: top-k, top-p, min-p over the masked logits, as
llama.cpp orders them), on logits shaped like a model's and on masks from one allowed token to most."""
import numpy as np
import pytest

from lib.llm.grammar_sampler import from_the_top, settled

TOP_K, TOP_P, MIN_P = 40, 0.95, 0.05


def kept(logits: np.ndarray, allowed: np.ndarray, ids: np.ndarray, greedy: bool = False) -> set[int]:
    """The tokens of ``ids`` that top-k, top-p and min-p keep when only ``allowed`` ones may come next."""
    masked = np.where(allowed[ids], logits[ids], -np.inf)
    order = np.argsort(-masked, kind="stable")
    if greedy:
        return {int(ids[order[0]])}
    order = order[:TOP_K]
    best = masked[order]
    weights = np.exp(best - best[0])
    run = int(np.nonzero(np.cumsum(weights) / weights.sum() >= TOP_P)[0][0]) + 1
    return {int(ids[i]) for i, x in zip(order[:run], best[:run]) if x >= best[0] + np.log(MIN_P)}


def model_like(rng: np.random.Generator, n: int, peak: float) -> np.ndarray:
    """Most tokens in a broad band, a few far above it (a model that is sure of its next few tokens)."""
    logits = rng.normal(0.0, 3.0, n)
    top = rng.choice(n, 8, replace=False)
    logits[top] += peak * rng.random(8)
    return logits.astype(np.float32)


@pytest.mark.parametrize("share", [1e-4, 0.002, 0.05, 0.5, 0.95])
@pytest.mark.parametrize("peak", [0.0, 8.0, 25.0])
@pytest.mark.parametrize("greedy", [False, True])
def test_the_tokens_found_from_the_top_are_the_ones_the_whole_vocabulary_keeps(share, peak, greedy):
    rng = np.random.default_rng(int(share * 1e4) + int(peak) + greedy)
    n = 20_000
    whole = np.arange(n)
    for _ in range(25):
        logits = model_like(rng, n, peak)
        allowed = rng.random(n) < share
        allowed[rng.integers(n)] = True  # at least one allowed token
        calls = []

        def check(ids):
            calls.append(len(ids))
            return allowed[ids]

        ids, checked = from_the_top(logits, check, lambda f, bar: settled(f, bar, greedy=greedy, top_k=TOP_K,
                                                                         top_p=TOP_P))
        assert checked == sum(calls) and len(set(ids)) == len(ids) and allowed[ids].all()
        assert kept(logits, allowed, ids, greedy) == kept(logits, allowed, whole, greedy)


def test_a_confident_model_needs_few_tokens_checked():
    rng = np.random.default_rng(7)
    logits = rng.normal(0.0, 3.0, 150_000).astype(np.float32)
    logits[123] = 40.0  # the token the grammar wants, far above the rest
    allowed = np.zeros(len(logits), dtype=bool)
    allowed[[123, 5, 99]] = True
    ids, checked = from_the_top(logits, lambda ids: allowed[ids],
                                lambda f, bar: settled(f, bar, greedy=False, top_k=TOP_K, top_p=TOP_P))
    assert 123 in ids and checked < 100


def test_with_nothing_allowed_the_whole_vocabulary_is_checked():
    logits = np.random.default_rng(1).normal(size=5000).astype(np.float32)
    ids, checked = from_the_top(logits, lambda ids: np.zeros(len(ids), dtype=bool),
                                lambda f, bar: settled(f, bar, greedy=False, top_k=TOP_K, top_p=TOP_P))
    assert ids is None and checked == 5000


def test_unchecked_weight_that_could_reach_top_p_keeps_the_search_going():
    # two allowed tokens found close together; the unchecked tokens just below the bar could still
    # join top-p's run, so the run is not settled until the bar is far below them
    found = np.array([10.0, 9.5])
    assert not settled(found, 9.0, greedy=False, top_k=TOP_K, top_p=TOP_P)
    assert settled(found, -10.0, greedy=False, top_k=TOP_K, top_p=TOP_P)
    assert settled(found, 9.0, greedy=True, top_k=TOP_K, top_p=TOP_P)
    assert settled(np.linspace(10, 0, TOP_K), 0.0, greedy=False, top_k=TOP_K, top_p=TOP_P)
    # a share within rounding of top_p is not settled however little is left unchecked
    edge = np.array([0.0, np.log(1 / TOP_P - 1)])  # the first token's share is exactly top_p
    assert not settled(edge, -100.0, greedy=False, top_k=TOP_K, top_p=TOP_P)
