"""``make bench``'s served-model part (``--llm-server``; scripts/bench.py calls it): the shipped 1.5B model served
by llama-cpp-python's OpenAI-compatible server on this machine (lib/llm/served.py, the model's own chat template,
loopback only), measured two ways.

* ``llm_served_routes``: the time a call of each constraint route that keeps the agent's contract (grammar,
  json_object), and the same prompt unconstrained (none: what the constraint costs), beside the local
  backend's fast path, over the last ``n_calls`` recorded agent decisions (the one before them sent first,
  untimed, on each path: the shared prompt prefix is then held, as in a run), each at its recorded
  temperature and seed; and how many replies of each route are the local backend's.
* ``llm_server_calls_per_s``: calls per second at 1, 4 and 8 requests in flight (``openai_concurrency``,
  :meth:`OpenAIBackend.complete_many`) over the last 8 recorded multi-query rewrites by the json_object route.
  llama-cpp-python's server answers one request at a time (one lock, no parallel slots; llama.cpp's own
  llama-server has slots), so requests in flight can only overlap the HTTP round trips.
"""
from __future__ import annotations

import os
import statistics
import time

from lib.config import ROOT
from lib.llm import RecordStore, served
from lib.llm.base import LLMRequest
from lib.llm.local_backend import DEFAULT_LOCAL_MODEL, LocalBackend, local_model
from lib.llm.openai_backend import OpenAIBackend
from lib.llm.records import records_dir

ROUTES = ("grammar", "json_object", "none")
LEVELS = (1, 4, 8)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def recorded(kind: str, n: int) -> tuple[list[LLMRequest], list[dict]]:
    """The last ``n`` recorded requests of a kind in the shipped local record, and their records."""
    model = local_model(DEFAULT_LOCAL_MODEL)
    recs = list(RecordStore(records_dir("local", model.name)).records(kind).values())[-n:]
    return [LLMRequest.from_record(r) for r in recs], recs


def timed_calls(complete, requests: list[LLMRequest]) -> dict:
    """The first request untimed, then each of the others: seconds a call (median, mean) and the replies."""
    complete(requests[0])
    load = _load()
    replies, seconds = [], []
    for r in requests[1:]:
        t0 = time.perf_counter()
        replies.append(complete(r).text)
        seconds.append(time.perf_counter() - t0)
    return {"calls": len(seconds), "median_s": statistics.median(seconds), "mean_s": statistics.mean(seconds),
            "seconds": [round(s, 2) for s in seconds], "loadavg": load, "replies": replies}


def served_bench(n_calls: int, levels: tuple[int, ...] = LEVELS, log=print) -> dict:
    model = local_model(DEFAULT_LOCAL_MODEL)
    requests, recs = recorded("agent", n_calls + 1)
    rows: dict = {"calls": n_calls, "model": model.name, "routes": {}}
    local = LocalBackend(model.name)
    rows["local fast path"] = timed_calls(local.complete, requests)
    base_replies = rows["local fast path"]["replies"]
    log(f"local fast path: {rows['local fast path']['median_s']:.2f} s a call (load {rows['local fast path']['loadavg']})")
    del local  # its model's memory, before the server loads its own
    rewrites, _ = recorded("rewrite", max(levels))
    with served.serve(model.file, model.name, ROOT / "build" / "bench-served.log") as base:
        for route in ROUTES:
            backend = OpenAIBackend(model.name, base_url=base, constraint=route, max_retries=0, timeout_s=900)
            row = timed_calls(backend.complete, requests)
            row["same_as_local"] = sum(a == b for a, b in zip(row["replies"], base_replies))
            rows["routes"][route] = row
            log(f"served, {route}: {row['median_s']:.2f} s a call, {row['same_as_local']} of {row['calls']} replies "
                f"the local backend's (load {row['loadavg']})")
        throughput: dict = {"calls": len(rewrites), "route": "json_object", "levels": {}}
        for n in levels:
            backend = OpenAIBackend(model.name, base_url=base, constraint="json_object", concurrency=n, max_retries=0,
                                    timeout_s=900)
            backend.complete(rewrites[0])  # untimed: the shared prefix held, as in a run
            load, t0 = _load(), time.perf_counter()
            backend.complete_many(rewrites)
            wall = time.perf_counter() - t0
            throughput["levels"][str(n)] = {"wall_s": wall, "calls_per_s": len(rewrites) / wall, "loadavg": load}
            log(f"served, {n} in flight: {len(rewrites) / wall:.3f} calls/s (load {load})")
    for row in [rows["local fast path"], *rows["routes"].values()]:
        row.pop("replies")
    local_s = rows["local fast path"]["median_s"]
    rows["summary"] = (f"agent decisions, median s a call over {n_calls}: local fast path {local_s:.1f}; served "
                       + ", ".join(f"{r} {v['median_s']:.1f} ({v['median_s'] / local_s:.1f}x, {v['same_as_local']} "
                                   f"same)" for r, v in rows["routes"].items())
                       + f"; load {rows['local fast path']['loadavg'][0]:.1f}")
    throughput["summary"] = ("calls per second, multi-query rewrites by the json_object route: "
                             + ", ".join(f"{n} in flight {v['calls_per_s']:.2f}" for n, v in throughput["levels"].items())
                             + " (llama-cpp-python's server answers one request at a time)")
    return {"llm_served_routes": rows, "llm_server_calls_per_s": throughput}
