"""A run's first-turn requests through the Message Batches API (half price; results within 24 h).

:func:`run_batch` sends the requests that are not yet recorded as one Message Batch (or several,
past :data:`MAX_BATCH_REQUESTS`) with ``client.messages.batches.create``, polls
``batches.retrieve`` until it has ended, reads ``batches.results`` and records every succeeded
result in the :class:`~lib.llm.records.RecordStore` exactly like a live call (at batch price), so
the designs then replay them. It is resumable: requests already recorded are skipped, and the id
of every batch sent is kept beside the records (``_batches.jsonl``), so a rerun after an
interruption picks up a batch still open instead of sending (and paying for) it again. Errored,
canceled and expired requests are not recorded: the run asks for them live.

:func:`prefetch_first_turns` builds those requests from the designs (multiquery's rewrite
request; the agent's first decision, after its first dense search) and batches them per model.

Source: https://platform.claude.com/docs/en/build-with-claude/batch-processing (limits: 100,000
requests or 256 MB a batch; 50% of the standard prices), and the SDK's ``MessageBatch`` /
``MessageBatchIndividualResponse`` types.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Sequence

from ..io import Appender, read_jsonl
from .base import LLMError, LLMRequest
from .cost import check_budget, project_cost

MAX_BATCH_REQUESTS = 10_000  # well under the API's 100,000 requests / 256 MB a batch
STATE_FILE = "_batches.jsonl"


def _state_path(llm: Any):
    return llm.store.directory / STATE_FILE


def _open_batches(llm: Any) -> list[dict]:
    """Batches sent before whose results were not read to the end (newest last)."""
    lines = read_jsonl(_state_path(llm), torn_tail_ok=True)
    done = {ln["batch_id"] for ln in lines if ln.get("done")}
    return [ln for ln in lines if not ln.get("done") and ln["batch_id"] not in done]


def _note(llm: Any, entry: dict) -> None:
    with Appender(_state_path(llm)) as out:
        out.write({**entry, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})


def _backend(llm: Any) -> Any:
    backend = getattr(llm, "backend", None)
    if backend is None or not hasattr(backend, "client") or not hasattr(backend, "response_from_message"):
        raise LLMError(f"Message Batches need the anthropic backend; {getattr(llm, 'name', llm)!r} has none "
                       "(llm_backend 'anthropic' with ANTHROPIC_API_KEY)")
    return backend


def _wait(client: Any, batch: Any, poll_s: float, max_wait_s: float, sleep: Callable[[float], None],
          clock: Callable[[], float], log: Callable[[str], None]) -> Any:
    start = clock()
    while batch.processing_status != "ended":
        if clock() - start > max_wait_s:
            raise LLMError(f"Message Batch {batch.id} has not ended after {max_wait_s:.0f} s "
                           f"({batch.request_counts.processing} requests processing); rerun to resume it")
        sleep(poll_s)
        batch = client.messages.batches.retrieve(batch.id)
        log(f"batch {batch.id}: {batch.processing_status}, {batch.request_counts.processing} processing, "
            f"{batch.request_counts.succeeded} succeeded")
    return batch


def _read_results(llm: Any, backend: Any, batch_id: str, by_key: dict[str, LLMRequest],
                  summary: dict[str, Any]) -> None:
    for item in backend.client.messages.batches.results(batch_id):
        request = by_key.pop(item.custom_id, None)
        if request is None:  # already recorded, or not asked for in this call
            continue
        result = item.result
        if result.type == "succeeded":
            llm.store.put(request, backend.response_from_message(result.message, latency_s=0.0, batch=True))
            summary["recorded"] += 1
        elif result.type == "errored":
            err = getattr(result.error, "error", None)
            summary["errored"][item.custom_id] = f"{getattr(err, 'type', 'error')}: {getattr(err, 'message', '')}"
        else:  # "canceled" or "expired"
            summary[result.type] += 1


def run_batch(requests: Sequence[LLMRequest], llm: Any, *, poll_s: float = 60.0, max_wait_s: float = 25 * 3600,
              sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
              log: Callable[[str], None] = lambda msg: None, max_cost_usd: float | None = None) -> dict[str, Any]:
    """Send the requests not yet recorded as Message Batches, wait, and record each result.

    ``llm`` is a :class:`~lib.llm.records.RecordedLLM` with an
    :class:`~lib.llm.anthropic_backend.AnthropicBackend`. With ``max_cost_usd``, the projected
    batch cost of what is to be sent is checked first (:func:`lib.llm.cost.check_budget`).
    Returns counts: ``requested``, ``recorded_before``, ``sent``, ``recorded``, ``errored``
    (custom_id -> error), ``canceled``, ``expired``, ``batch_ids``, ``projection``.
    """
    unique: dict[str, LLMRequest] = {}
    for r in requests:
        unique.setdefault(r.key(), r)
    pending = {k: r for k, r in unique.items() if llm.store.get(r) is None}
    summary: dict[str, Any] = {"requested": len(unique), "recorded_before": len(unique) - len(pending), "sent": 0,
                               "resumed": 0, "recorded": 0, "errored": {}, "canceled": 0, "expired": 0,
                               "batch_ids": [], "projection": None}
    if not pending:
        return summary
    backend = _backend(llm)
    client = backend.client

    # batches sent before and not read to the end: resume them rather than paying again
    for entry in _open_batches(llm):
        if not pending.keys() & set(entry["keys"]):
            continue
        batch = _wait(client, client.messages.batches.retrieve(entry["batch_id"]), poll_s, max_wait_s, sleep, clock, log)
        wanted = {k: pending[k] for k in entry["keys"] if k in pending}
        _read_results(llm, backend, batch.id, wanted, summary)
        pending = {k: r for k, r in pending.items() if llm.store.get(r) is None}  # failures go in a new batch
        summary["resumed"] += 1
        summary["batch_ids"].append(batch.id)
        _note(llm, {"batch_id": batch.id, "done": True})
    if not pending:
        return summary

    todo = list(pending.values())
    params = [(r.key(), backend.build_params(r)) for r in todo]  # refuses a bad request before anything is sent
    summary["projection"] = project_cost(todo, backend.model, backend.prices, recorded=llm.store)
    if max_cost_usd is not None:
        check_budget(summary["projection"], max_cost_usd, batch=True)
    for i in range(0, len(params), MAX_BATCH_REQUESTS):
        chunk = params[i:i + MAX_BATCH_REQUESTS]
        batch = client.messages.batches.create(requests=[{"custom_id": key, "params": p} for key, p in chunk])
        keys = [key for key, _ in chunk]
        _note(llm, {"batch_id": batch.id, "model": backend.model, "kinds": sorted({pending[k].kind for k in keys}),
                    "keys": keys})
        log(f"batch {batch.id}: {len(chunk)} requests sent to {backend.model}")
        summary["sent"] += len(chunk)
        summary["batch_ids"].append(batch.id)
        batch = _wait(client, batch, poll_s, max_wait_s, sleep, clock, log)
        _read_results(llm, backend, batch.id, {k: pending[k] for k in keys}, summary)
        _note(llm, {"batch_id": batch.id, "done": True})
    return summary


def first_turn_requests(design: Any, questions: Sequence[Any], runs: int | Iterable[int]) -> list[LLMRequest]:
    """The first LLM request a design makes for each question and run (its ``first_requests``:
    multiquery's rewrite, the agent's and agent_rerank's first decision, escalate's for the
    questions it escalates, the loop's first turn). Designs without one make none."""
    runs = [runs] if isinstance(runs, int) else list(runs)
    first = getattr(design, "first_requests", None)
    return list(first(list(questions), runs)) if first is not None else []


def prefetch_first_turns(designs: Sequence[Any], questions: Sequence[Any], run: int | Iterable[int],
                         **kwargs: Any) -> dict[str, Any]:
    """Record the first-turn answers of every LLM design through Message Batches, one batch per
    model (all designs sharing a model go together), before the designs run: they then replay
    those answers and call the API live only for later turns. Designs whose LLM has no anthropic
    backend (replay, local) are skipped. ``kwargs`` go to :func:`run_batch` (``max_cost_usd``,
    ``poll_s``, ``log``, ...). Returns ``{"designs": {name: requests}, "batches": {model: summary}}``
    (``"skipped"`` lists the designs left out)."""
    groups: dict[int, tuple[Any, list[LLMRequest]]] = {}
    out: dict[str, Any] = {"designs": {}, "batches": {}, "skipped": []}
    for d in designs:
        if not getattr(d, "uses_llm", False):
            continue
        llm = d.llm
        backend = getattr(llm, "backend", None)
        if backend is None or not hasattr(backend, "response_from_message"):
            out["skipped"].append(d.name)
            continue
        reqs = first_turn_requests(d, questions, run)
        out["designs"][d.name] = len(reqs)
        groups.setdefault(id(llm), (llm, []))[1].extend(reqs)
    for llm, reqs in groups.values():
        out["batches"][llm.model] = run_batch(reqs, llm, **kwargs)
    return out
