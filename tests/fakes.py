"""Small scripted stand-ins used by the tests (a searcher over fixed lists, a scripted LLM), and ranx asked
in a process of its own."""
import json
import os
import subprocess
import sys

from lib.search.dense import Hit
from lib.llm import LLMResponse


class ListSearcher:
    """Returns a fixed ranked list per query (unknown queries get ``default``)."""

    def __init__(self, lists, default=("x1", "x2", "x3", "x4", "x5", "x6")):
        self.lists, self.default, self.calls = lists, list(default), []

    def search(self, query, k):
        self.calls.append(query)
        ids = self.lists.get(query, self.default)[:k]
        return [Hit(i, 1.0 - r / 100) for r, i in enumerate(ids)]

    def search_many(self, queries, k):
        return [self.search(q, k) for q in queries]

    def search_mean(self, texts, k):
        """HyDE's one search with several texts (DenseSearcher.search_mean): here, their joined text's list."""
        return self.search(" ".join(texts), k)


class ScriptedLLM:
    """Answers requests with scripted texts, in order; records the requests it saw."""

    name, model = "scripted", "scripted-model"

    def __init__(self, replies):
        self.replies, self.requests = list(replies), []

    def complete(self, request):
        self.requests.append(request)
        text = self.replies.pop(0)
        return LLMResponse(text=text, tokens_in=100, tokens_out=10, latency_s=0.5, cost_usd=0.001,
                           model=self.model, backend=self.name)


DATA = __import__("pathlib").Path(__file__).parent / "data"


def reply_body(name: str) -> dict:
    """A recorded Messages API reply body (tests/data/anthropic_<name>.json)."""
    import json

    return json.loads((DATA / f"anthropic_{name}.json").read_text(encoding="utf-8"))


class FakeClient:
    """Stands in for ``anthropic.Anthropic``: its ``messages.create(**params)`` hands out the outcomes
    in order: an exception is raised, a reply body (or the name of a recorded one) comes back as the
    SDK's own ``anthropic.types.Message``."""

    def __init__(self, *outcomes):
        self.messages = self
        self.outcomes, self.calls = list(outcomes), []

    def create(self, **params):
        import anthropic

        self.calls.append(params)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return anthropic.types.Message.model_validate(outcome if isinstance(outcome, dict) else reply_body(outcome))


def error_fixture(name: str) -> tuple[int, dict, dict]:
    """A recorded API error (tests/data/anthropic_error_<name>.json): status, headers, body."""
    import json

    d = json.loads((DATA / f"anthropic_error_{name}.json").read_text(encoding="utf-8"))
    return d["status"], d["headers"], d["body"]


def mock_sdk_client(handler, max_retries=6):
    """The SDK's own ``anthropic.Anthropic`` over a scripted HTTP transport (``handler(request) ->
    httpx2.Response``): its request building, retries and response parsing run for real."""
    import anthropic
    import httpx2

    return anthropic.Anthropic(api_key="sk-test", max_retries=max_retries,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


class NoSleep:
    """Stands in for ``time.sleep`` in the SDK's retry loop: records the waits, waits for none."""

    def __init__(self):
        self.waits = []

    def __call__(self, seconds):
        self.waits.append(seconds)


class Spy:
    """Passes requests to a model and keeps them."""

    def __init__(self, inner):
        self.inner, self.requests, self.name, self.model = inner, [], inner.name, inner.model

    def complete(self, request):
        self.requests.append(request)
        return self.inner.complete(request)


def ranx_says(code: str) -> object:
    """What ``code`` (which imports ranx and prints one JSON value) prints, run in its own process with
    numba's compiler off (NUMBA_DISABLE_JIT): ranx's own functions, interpreted, without the minute a
    fresh venv spends compiling them on first use."""
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
