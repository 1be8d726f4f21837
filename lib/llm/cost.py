"""What LLM work will cost before it runs: projected calls, tokens and USD (standard and batch
price), from the prompts' sizes and, when the record holds calls of the same kind, from what those
calls actually used; and the budget check against the profile's ``max_cost_usd``.

Input tokens are estimated as characters / 4 when nothing is recorded, or from the recorded
calls' tokens per prompt character; output tokens as ``max_tokens`` (an upper bound) when nothing
is recorded, or as the recorded calls' mean. Requests already in the record replay for free and
are left out of the projection.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

from .base import LLMError, LLMRequest, cost_usd, load_prices, price_of
from .tools import chat_text

CHARS_PER_TOKEN = 4.0


class BudgetExceeded(LLMError):
    """A run's projected cost is above the profile's ``max_cost_usd``."""


def request_chars(request: LLMRequest | Mapping[str, Any]) -> int:
    """Characters of a request's prompt: the system prompt and every message."""
    if isinstance(request, LLMRequest):
        system, messages = request.system, request.messages
    else:  # a recorded request: {"system": ..., "messages": [[role, content], ...]}
        system, messages = request.get("system") or "", request.get("messages") or ()
    return len(system or "") + sum(len(chat_text(content)) for _, content in messages)  # tool turns: their text


def _records(recorded: Any, kinds: Iterable[str]) -> dict[str, list[dict]]:
    """Recorded calls by kind, from a RecordStore (read for the kinds asked) or an iterable of records."""
    if recorded is None:
        return {}
    if hasattr(recorded, "records"):
        return {k: list(recorded.records(k).values()) for k in kinds}
    out: dict[str, list[dict]] = defaultdict(list)
    for rec in recorded:
        out[rec.get("kind", "")].append(rec)
    return out


def _averages(records: list[dict]) -> tuple[float | None, float | None]:
    """(input tokens per prompt character, mean output tokens) of recorded calls; None where none."""
    chars = tokens = 0
    outs = []
    for rec in records:
        r, q = rec.get("response") or {}, rec.get("request") or {}
        n = request_chars(q)
        if n and "tokens_in" in r:
            chars += n
            tokens += r["tokens_in"] + r.get("cache_write_tokens", 0) + r.get("cache_read_tokens", 0)
        if "tokens_out" in r:
            outs.append(r["tokens_out"])
    return (tokens / chars if chars else None), (sum(outs) / len(outs) if outs else None)


def project_cost(requests_or_counts: Sequence[LLMRequest] | Mapping[str, Any], model: str,
                 prices: dict | None = None, *, recorded: Any = None) -> dict[str, Any]:
    """Projected calls, tokens and cost of what is about to run on ``model``.

    ``requests_or_counts`` is either the requests themselves, or counts: ``{"calls": n,
    "input_tokens": ..., "output_tokens": ...}`` (totals; ``input_chars`` may stand for
    ``input_tokens`` and ``max_tokens`` (per call) for ``output_tokens``). ``recorded`` is the
    model's :class:`~lib.llm.records.RecordStore` (its requests are skipped, its calls give the
    averages) or an iterable of its records. Returns ``calls``, ``already_recorded``,
    ``input_tokens``, ``output_tokens``, ``usd`` (standard price), ``batch_usd`` (Message Batches
    price), and how the tokens were estimated (``input_basis``, ``output_basis``).
    """
    prices = prices if prices is not None else load_prices()
    p = price_of(model, prices)
    out: dict[str, Any] = {"model": model, "prices_date": p.get("date"), "already_recorded": 0}
    if isinstance(requests_or_counts, Mapping):
        c = requests_or_counts
        calls = int(c["calls"])
        tin = c.get("input_tokens")
        if tin is None:
            tin = math.ceil(c.get("input_chars", 0) / CHARS_PER_TOKEN)
        tout = c.get("output_tokens")
        if tout is None:
            tout = calls * int(c.get("max_tokens", 0))
        tin, tout = int(tin), int(tout)
        # every call taken as the average call (its price tier set by the average prompt)
        usd = calls * cost_usd(model, tin / calls, tout / calls, prices) if calls else 0.0
        busd = calls * cost_usd(model, tin / calls, tout / calls, prices, batch=True) if calls else 0.0
        return {**out, "calls": calls, "input_tokens": tin, "output_tokens": tout, "usd": usd, "batch_usd": busd,
                "input_basis": "given", "output_basis": "given"}

    requests = list(requests_or_counts)
    if recorded is not None and hasattr(recorded, "get"):
        fresh = [r for r in requests if recorded.get(r) is None]
        out["already_recorded"] = len(requests) - len(fresh)
        requests = fresh
    by_kind = _records(recorded, {r.kind for r in requests})
    avg = {k: _averages(v) for k, v in by_kind.items()}
    tin_total = tout_total = 0
    usd = busd = 0.0
    in_basis, out_basis = set(), set()
    for r in requests:
        per_char, mean_out = avg.get(r.kind, (None, None))
        chars = request_chars(r)
        if per_char is not None:
            tin, in_basis_r = math.ceil(chars * per_char), "recorded tokens per character"
        else:
            tin, in_basis_r = math.ceil(chars / CHARS_PER_TOKEN), "characters / 4"
        if mean_out is not None:
            tout, out_basis_r = min(r.max_tokens, math.ceil(mean_out)), "recorded mean"
        else:
            tout, out_basis_r = r.max_tokens, "max_tokens"
        in_basis.add(in_basis_r)
        out_basis.add(out_basis_r)
        tin_total += tin
        tout_total += tout
        usd += cost_usd(model, tin, tout, prices)
        busd += cost_usd(model, tin, tout, prices, batch=True)
    return {**out, "calls": len(requests), "input_tokens": tin_total, "output_tokens": tout_total, "usd": usd,
            "batch_usd": busd, "input_basis": " + ".join(sorted(in_basis)) or "none",
            "output_basis": " + ".join(sorted(out_basis)) or "none"}


def combine(projections: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Several projections added up (models listed)."""
    projections = list(projections)
    total: dict[str, Any] = {"model": ", ".join(sorted({str(p["model"]) for p in projections}))}
    for key in ("calls", "already_recorded", "input_tokens", "output_tokens", "usd", "batch_usd"):
        total[key] = sum(p.get(key, 0) for p in projections)
    return total


def check_budget(projection: Mapping[str, Any] | Iterable[Mapping[str, Any]], max_cost_usd: float | None, *,
                 batch: bool = False) -> float:
    """Raise :class:`BudgetExceeded` when the projected cost (``batch_usd`` for a batch run) is
    above ``max_cost_usd`` (the profile setting; None: no limit). Returns the projected cost."""
    if not isinstance(projection, Mapping):
        projection = combine(projection)
    usd = float(projection["batch_usd" if batch else "usd"])
    if max_cost_usd is not None and usd > max_cost_usd:
        raise BudgetExceeded(
            f"the projected cost of this run is ${usd:.4f} ({projection['calls']} calls to {projection['model']}, "
            f"~{projection['input_tokens']} input and ~{projection['output_tokens']} output tokens"
            f"{', at batch price' if batch else ''}), above max_cost_usd = ${max_cost_usd:.2f}. Nothing was sent. "
            "Raise the profile setting max_cost_usd (profiles/<name>.yaml, or -p max_cost_usd <USD>), "
            "or run fewer questions (question_limit).")
    return usd


def project_designs(designs: Sequence[Any], questions: Iterable[Any], runs: int | Iterable[int],
                    prices: dict | None = None) -> dict[str, dict[str, Any]]:
    """Projected cost of running LLM designs on questions, per design: the first-turn requests
    (each design's ``first_requests``) not yet recorded, and the design's ``follow_up_calls``
    further calls per question (the agent: ``max_searches - 2``; escalate: ``escalate_max_llm_calls
    - 1``), each projected like its first (an upper bound on calls: the agent may stop sooner).
    A design with ``cost_bound`` (the tool-calling loop) is projected from that bound instead.
    Designs without an LLM are left out.

    ``usd`` is every call at the standard price; ``batch_usd`` what the run costs with
    ``llm_batch``, which sends only the first turns as a Message Batch: those at the batch price,
    every follow-up call (and every call of a ``cost_bound`` design, whose bound does not tell its
    first turns apart) at the standard price. ``questions`` and ``runs`` (a run number or run
    numbers) may be any iterables; every design is projected for all of them."""
    questions = list(questions)
    runs_list = [runs] if isinstance(runs, int) else list(runs)
    out: dict[str, dict[str, Any]] = {}
    for d in designs:
        if not getattr(d, "uses_llm", False):
            continue
        llm = d.llm
        if hasattr(d, "cost_bound"):  # the tool-calling loop: its caps bound every question's calls and tokens
            bound = d.cost_bound(list(questions), list(runs_list))
            if bound is not None:  # None: a stub model, no fee
                proj = project_cost(bound, llm.model, prices)
                proj["batch_usd"] = proj["usd"]  # an upper bound: no batch discount counted
                out[d.name] = {**proj, "note": "upper bound: every question at its step cap and token budget"}
            continue
        store = getattr(llm, "store", None)
        proj = project_cost(d.first_requests(list(questions), list(runs_list)), llm.model, prices, recorded=store)
        follow = int(getattr(d, "follow_up_calls", 0))
        if follow:
            first_usd = proj["usd"]
            for key in ("calls", "input_tokens", "output_tokens", "usd"):
                proj[key] = proj[key] * (1 + follow)
            proj["batch_usd"] = proj["batch_usd"] + follow * first_usd  # follow-ups are live calls
            proj["note"] = f"first decision x {1 + follow} (at most {1 + follow} decisions a question)"
        out[d.name] = proj
    return out
