"""A first live run cannot crash on any design: the whole registry, built as the article profile
builds it, over the real Anthropic backend and the SDK's own client.

Every design in ``lib.designs.REGISTRY`` (a new one is covered by being registered) is made by
``pipeline.make_design`` from the article profile's ``ProfileParts``, with only the leaf parts
stood in for: a few papers, a list-based dense searcher and BM25 index, a cross-encoder scoring by
word overlap (behind the profile's real ``FusedReranker``), and the profile's LLM as a
``RecordedLLM`` over :class:`~lib.llm.anthropic_backend.AnthropicBackend` whose
``anthropic.Anthropic`` client talks to a scripted HTTP transport. That transport answers the
Messages and Message Batches endpoints with the recorded replies in tests/data (the API's current
shape) and logs every request, so a test can say nothing reached it.

Checked for the registry's LLM designs together, as ``run_many`` calls them:

(a) the cost projection runs for every design and projects a positive cost for each LLM design;
(b) the run-wide ``max_cost_usd`` check covers every design x run x question before any request:
    a cap below the projected total by less than any one design-question-run's share stops
    ``paid_preflight`` with nothing sent; a cap above it lets it through;
(c) with ``llm_batch`` the first turns of every LLM design go as one Message Batch (create,
    retrieve, results) and every design then answers every question from its prefetched first turn,
    with no live call.
"""
import copy
import json
from pathlib import Path

import httpx2
import pytest

from lib import pipeline
from lib.config import load_profile
from lib.designs import REGISTRY, Question, llm_design_names
from lib.llm import RecordedLLM, RecordStore
from lib.llm.anthropic_backend import AnthropicBackend, profile_backend_kwargs
from lib.llm.batches import first_turn_requests, prefetch_first_turns
from lib.llm.cost import BudgetExceeded, combine, project_cost, project_designs
from tests.fakes import ListSearcher, error_fixture, mock_sdk_client, reply_body

DATA = Path(__file__).parent / "data"
API = "https://api.anthropic.com"

PAPERS = [
    {"id": "2607.06223", "title": "Information-gain rollout budgets for search agents",
     "abstract": "We allocate a limited rollout budget across search-agent trajectories by expected information "
                 "gain, expanding informative intermediate states."},
    {"id": "2607.01001", "title": "Socratic tutors that do not reveal answers",
     "abstract": "Scaffolding collapse in LLM tutors and how representation alignment keeps tutoring dialogue on track."},
    {"id": "2607.01002", "title": "Tree search rollouts in agentic reinforcement learning",
     "abstract": "Adaptive tree-structured rollouts for multi-turn LLM agents trained with reinforcement learning."},
    {"id": "2607.01003", "title": "Agent evaluation under distribution drift",
     "abstract": "Benchmarks for language-model agents drift; we measure how much and propose a fix."},
    {"id": "2607.01004", "title": "Dense retrieval of arXiv abstracts",
     "abstract": "Embedding models for scientific abstracts compared on question answering over arXiv."},
    {"id": "2607.01005", "title": "Reranking with cross-encoders",
     "abstract": "A cross-encoder reads the question and the abstract together and reorders dense candidates."},
    {"id": "2607.01006", "title": "Query rewriting for retrieval",
     "abstract": "Language models rewrite a question into several search queries whose lists are fused."},
    {"id": "2607.01007", "title": "Bounded agentic escalation",
     "abstract": "Escalate to an agent only when the first pass is unsure, under hard per-question bounds."},
]
for _i, _p in enumerate(PAPERS):
    _p.update(categories=["cs.CL"], first_seen=f"2026-07-{_i + 1:02d}")
IDS = [p["id"] for p in PAPERS]
QUESTIONS = [Question("q001", "How can a search agent spend a limited rollout budget?", "2607.06223"),
             Question("q002", "How do LLM tutors avoid revealing the answer?", "2607.01001"),
             Question("q003", "Which paper reranks dense candidates with a cross-encoder?", "2607.01005")]
RUNS = [1, 2, 3]  # the article profile's n_runs

# the recorded reply each LLM request kind gets (tests/data/anthropic_<name>.json); each ends its
# question, so a design that replays its prefetched first turn makes no live call
REPLIES = {"rewrite": "rewrite_three", "agent": "agent_stop", "escalate": "agent_stop", "loop": "loop_answer",
           "loop_question_first": "loop_answer", "decompose": "decompose_two", "hyde": "hyde_abstract"}


class Searcher(ListSearcher):
    """The dense searcher: fixed lists (a rotation of the papers per query), and their scores."""

    def search(self, query, k):
        self.lists.setdefault(query, IDS[len(query) % len(IDS):] + IDS[:len(query) % len(IDS)])
        return super().search(query, k)

    def scores_for(self, query, ids):
        ranked = [h.id for h in self.search(query, len(IDS))]
        return [1.0 - ranked.index(i) / 100 if i in ranked else 0.0 for i in ids]

    def forget_queries(self):
        pass


class WordOverlap:
    """Stands in for the cross-encoder: question words found in the paper's text."""

    def __init__(self):
        self.calls = 0

    def score(self, question, ids, texts):
        self.calls += 1
        words = {w.strip("?.,").lower() for w in question.split()}
        return [len(words & {w.strip("?.,").lower() for w in t.split()}) + r / 1000 for r, t in enumerate(texts)]


class ScriptedAPI:
    """The Messages and Message Batches endpoints, answering with recorded replies.

    ``kinds`` maps a request key (a batch request's ``custom_id``) to its kind, whose reply is
    :data:`REPLIES`'. Every request that reaches the transport is kept in ``seen``; a live
    ``POST /v1/messages`` is answered with the recorded 400 (nothing here is meant to call live).
    """

    def __init__(self):
        self.seen, self.created, self.live, self.kinds = [], [], [], {}

    def handler(self, request):
        path = request.url.path
        self.seen.append(f"{request.method} {path}")
        if request.method == "POST" and path == "/v1/messages/batches":
            sent = json.loads(request.content)["requests"]
            self.created.append(sent)
            body = json.loads((DATA / "anthropic_batch_create.json").read_text())
            body["request_counts"]["processing"] = len(sent)
            return httpx2.Response(200, json=body)
        if request.method == "GET" and path.startswith("/v1/messages/batches/") and path.endswith("/results"):
            lines = [{"custom_id": r["custom_id"], "result": {"type": "succeeded", "message": self.message(r)}}
                     for r in self.created[-1]]
            return httpx2.Response(200, content="".join(json.dumps(x) + "\n" for x in lines).encode(),
                                   headers={"content-type": "application/binary"})
        if request.method == "GET" and path.startswith("/v1/messages/batches/"):
            body = json.loads((DATA / "anthropic_batch_retrieve_ended.json").read_text())
            n = len(self.created[-1]) if self.created else 0
            body["request_counts"] = {"processing": 0, "succeeded": n, "errored": 0, "canceled": 0, "expired": 0}
            return httpx2.Response(200, json=body)
        if request.method == "POST" and path == "/v1/messages":
            self.live.append(json.loads(request.content))
            status, headers, body = error_fixture("invalid_request")
            return httpx2.Response(status, json=body, headers=headers)
        raise AssertionError(f"unexpected {request.method} {request.url}")

    def message(self, sent):
        msg = copy.deepcopy(reply_body(REPLIES[self.kinds[sent["custom_id"]]]))
        msg["model"] = sent["params"]["model"]
        msg["usage"]["service_tier"] = "batch"
        return msg


def article(**overrides):
    """The article profile; escalate set to escalate every question (the profile's -inf threshold
    never does, so it would make no call to check), anything else as the profile has it."""
    return load_profile("article", escalate_threshold=1e9, **overrides)


def build(tmp_path, profile):
    """Every registered design, made by ``pipeline.make_design`` from the profile's parts with the
    leaf parts stood in for; the LLM is the real Anthropic backend over the scripted transport."""
    api = ScriptedAPI()
    model = profile.llm_model
    backend = AnthropicBackend(model, client=mock_sdk_client(api.handler, max_retries=0),
                               **profile_backend_kwargs(profile, "llm"))
    llm = RecordedLLM(backend, RecordStore(tmp_path / "llm_records"), backend_name="anthropic", model=model)
    parts = pipeline.ProfileParts(profile, papers=[dict(p) for p in PAPERS], progress=False)
    # the leaf parts ProfileParts would build from the profile (index, BM25, cross-encoder, LLM)
    parts.__dict__.update(searcher=Searcher({}), bm25=ListSearcher({}, default=list(reversed(IDS))),
                          _scorer=WordOverlap(), _llm=llm, allowed=None, questions_digest="test-questions")
    designs = [pipeline.make_design(name, profile, parts) for name in REGISTRY]
    assert [d.name for d in designs] == list(REGISTRY)
    return designs, llm, api


def llm_designs(designs):
    return [d for d in designs if type(d).uses_llm]


# ------------------------------------------------------------------------------ what a live run needs
def test_every_llm_design_has_what_cost_and_batches_need(tmp_path):
    designs, llm, api = build(tmp_path, article())
    assert [d.name for d in llm_designs(designs)] == llm_design_names() and llm_design_names()
    for d in llm_designs(designs):
        assert d.llm is llm, f"{d.name}: .llm is not the profile's LLM (the budget and batches read it)"
        assert isinstance(getattr(d, "record_kind", None), str), f"{d.name}: no record_kind"
        assert callable(getattr(d, "first_requests", None)), f"{d.name}: no first_requests(questions, runs)"
        assert hasattr(d, "cost_bound") or isinstance(getattr(d, "follow_up_calls", None), int), \
            f"{d.name}: neither follow_up_calls (calls after the first) nor cost_bound for the cost projection"
        first = first_turn_requests(d, QUESTIONS, RUNS)
        assert len(first) >= len(QUESTIONS) * len(RUNS), f"{d.name}: not every question and run has a first turn"
        assert {r.run for r in first} == set(RUNS) and {r.label for r in first} == {q.qid for q in QUESTIONS}
        for r in first:
            llm.backend.build_params(r)  # a request the API would refuse is refused here, before any fee
        assert {r.kind for r in first} <= REPLIES.keys(), f"{d.name}: add a recorded reply for its requests to REPLIES"
    assert api.seen == []


# ------------------------------------------------------------------------------ (a) the cost projection
def test_the_projection_covers_every_llm_design(tmp_path):
    designs, _, api = build(tmp_path, article())
    out = project_designs(designs, QUESTIONS, RUNS)
    assert set(out) == set(llm_design_names())  # designs without an LLM are left out
    n = len(QUESTIONS) * len(RUNS)
    for d in llm_designs(designs):
        p = out[d.name]
        assert p["usd"] > 0 and p["batch_usd"] > 0, f"{d.name}: no projected cost"
        assert p["calls"] >= n and p["input_tokens"] > 0 and p["output_tokens"] > 0, d.name
        # llm_batch sends only the first turns as a batch: it saves at most half of what they cost
        first = project_cost(first_turn_requests(d, QUESTIONS, RUNS), d.llm.model, recorded=d.llm.store)
        assert first["calls"] >= n and first["usd"] > 0, d.name
        assert p["usd"] - first["usd"] / 2 <= p["batch_usd"] + 1e-12 and p["batch_usd"] <= p["usd"], \
            f"{d.name}: the batch price is counted for calls that are not batched"
    # the same with the runs given as a number, or once-only iterables
    assert project_designs(designs, iter(QUESTIONS), iter(RUNS)) == out
    one = project_designs(designs, QUESTIONS, 1)
    assert set(one) == set(out) and all(one[k]["calls"] * len(RUNS) == out[k]["calls"] for k in out)
    assert api.seen == []


# ------------------------------------------------------------------------------ (b) the run-wide budget
def unit_costs(designs, batch):
    """The projected cost of each design x question x run alone."""
    key = "batch_usd" if batch else "usd"
    return {(name, q.qid, run): p[key] for q in QUESTIONS for run in RUNS
            for name, p in project_designs(designs, [q], [run]).items()}


@pytest.mark.parametrize("batch", [False, True])
def test_max_cost_usd_covers_every_design_run_and_question_before_any_request(tmp_path, capsys, batch):
    designs, _, api = build(tmp_path, article())
    key = "batch_usd" if batch else "usd"
    total = combine(project_designs(designs, QUESTIONS, RUNS).values())[key]
    units = unit_costs(designs, batch)
    assert {name for name, _, _ in units} == set(llm_design_names())
    assert total == pytest.approx(sum(units.values()), rel=1e-9)  # the total is every unit's share
    # a cap that any one design x question x run left out would let through
    below = total - min(units.values()) / 2
    with pytest.raises(BudgetExceeded, match="max_cost_usd"):
        pipeline.paid_preflight(article(max_cost_usd=below, llm_batch=batch), designs, QUESTIONS, RUNS)
    assert api.seen == [], "a request reached the API before the budget check"
    printed = capsys.readouterr().out
    assert all(f"{name}: about" in printed for name in llm_design_names())
    if not batch:  # above the cap: it passes (with llm_batch it goes on to the batch, test below)
        pipeline.paid_preflight(article(max_cost_usd=total * 1.01), designs, QUESTIONS, RUNS)
        assert api.seen == []


# ------------------------------------------------------------------------------ (c) the batch prefetch
def test_the_batch_prefetch_covers_every_llm_design_and_each_replays_its_first_turn(tmp_path, capsys):
    profile = article(llm_batch=True)
    designs, llm, api = build(tmp_path, profile)
    first = {d.name: first_turn_requests(d, QUESTIONS, RUNS) for d in llm_designs(designs)}
    api.kinds = {r.key(): r.kind for reqs in first.values() for r in reqs}
    total = combine(project_designs(designs, QUESTIONS, RUNS).values())["batch_usd"]
    assert total < profile.max_cost_usd  # the article's cap lets this small run through
    pipeline.paid_preflight(profile, designs, QUESTIONS, RUNS, sleep=lambda s: None)
    # one batch for the one model, every design's first turns in it (a request two designs share, once)
    assert len(api.created) == 1 and api.live == []
    assert sorted(r["custom_id"] for r in api.created[0]) == sorted(api.kinds)
    assert api.seen[0] == "POST /v1/messages/batches" and api.seen[-1].endswith("/results")
    assert "requests sent to" in capsys.readouterr().out
    for name, reqs in first.items():
        for r in reqs:
            rec = llm.store.get(r)
            assert rec is not None and rec["response"]["batch"] is True, f"{name}: first turn not prefetched"
    # every design answers every question from the record: no live call
    seen = len(api.seen)
    for d in designs:
        for q in QUESTIONS:
            for run in RUNS:
                res = d.retrieve(q, run)
                assert res.design == d.name and res.ranked_ids and set(res.ranked_ids) <= set(IDS), d.name
                if type(d).uses_llm:
                    assert res.llm_calls >= 1 and res.cost_usd > 0, f"{d.name}: answered without its first turn"
    assert api.live == [], f"live calls after the prefetch: {[m.get('system', '')[:60] for m in api.live]}"
    assert len(api.seen) == seen
    # a second prefetch finds every first turn recorded and sends nothing
    again = prefetch_first_turns(designs, QUESTIONS, RUNS, sleep=lambda s: None)
    assert set(again["designs"]) == set(llm_design_names()) and again["skipped"] == []
    assert all(s["sent"] == 0 for s in again["batches"].values()) and len(api.seen) == seen
