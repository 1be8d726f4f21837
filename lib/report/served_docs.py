"""docs/speed.md's served-model figures, written from results/bench.json (``llm_served_routes``,
``llm_server_calls_per_s``) and the recorded placement of a served copy (results/served_placement.json,
scripts/served_placement.py), and held there by tests/test_place_model.py."""
from __future__ import annotations

import json

from ..paths import ROOT
from .bench_docs import write_blocks

SERVED_BLOCK = ("<!-- served:start (written from results/bench.json and results/served_placement.json: "
                "lib.report.served_docs.served_block) -->", "<!-- served:end -->")
SERVED_PLACEMENT = ROOT / "results" / "served_placement.json"  # scripts/served_placement.py's recorded run


def per_decision(p: dict, rate: str = "p_stop", count: str = "shown", joiner: str = " / ") -> str:
    """"38% (n 39) / 100% (n 38)": a placed point's accuracy (``rate``: p_stop or p_search) at each decision with
    the decisions it rests on (``count``: shown or not_shown); scripts/served_placement.py prints them too."""
    ks = sorted(int(k.rsplit("_", 1)[1]) for k in p if k.startswith(f"{rate}_") and k.rsplit("_", 1)[1].isdigit())
    return joiner.join("n/a" if p[f"{rate}_{k}"] is None else f"{p[f'{rate}_{k}']:.0%} (n {p[f'{count}_{k}'] or 0:.0f})"
                       for k in ks)


def _ranged(p: dict, key: str) -> str:
    return f"{p[key]:+.3f} [{p[f'{key}_low']:+.3f}, {p[f'{key}_high']:+.3f}]"


def served_block(steps: dict, placement: dict | None) -> str:
    """docs/speed.md's served-model figures: each constraint route's time a call beside the local fast path and
    the calls per second in flight (``llm_served_routes``, ``llm_server_calls_per_s``), and the served copy placed
    on the first questions beside the local backend's point (scripts/served_placement.py); each when measured."""
    lines = [SERVED_BLOCK[0]]
    routes, flight = steps.get("llm_served_routes"), steps.get("llm_server_calls_per_s")
    if routes:
        local = routes["local fast path"]
        lines.append(f"Time an agent decision (`make bench ARGS=--llm-server-only`, median of {routes['calls']} recorded "
                     f"decisions, load {local['loadavg'][0]:.1f}): the local fast path {local['median_s']:.1f} s; served, "
                     + ", ".join(f"{r} {v['median_s']:.1f} s ({v['median_s'] / local['median_s']:.1f}x; "
                                 f"{v['same_as_local']} of {v['calls']} replies the local backend's)"
                                 for r, v in routes["routes"].items()) + ".")
    if flight:
        lines.append("Calls per second with requests in flight (`openai_concurrency`, multi-query rewrites by the "
                     f"{flight['route']} route): " + ", ".join(f"{n} at once {v['calls_per_s']:.2f}"
                                                               for n, v in flight["levels"].items())
                     + ": llama-cpp-python's server answers one request at a time.")
    if placement:
        lines += ["", f"The served copy placed on the first {placement['questions']} questions "
                  "(`python scripts/served_placement.py 40 json_object grammar`; results/served_placement.json), "
                  "beside the local backend's point on the same questions (replayed from its records); MRR@10 "
                  "against dense, with 95% ranges:", "",
                  "| point | stop accuracy, first / second decision | predicted by a judge | the agent's run | "
                  "within the local point's ranges | run took |", "|---|---|---|---|---|---|",
                  f"| local backend | {per_decision(placement['local'])} | {_ranged(placement['local'], 'predicted')} | "
                  f"{_ranged(placement['local'], 'actual')} | | |"]
        for route, row in placement["routes"].items():
            p = row["point"]
            agree = " and ".join(f"{w} {'yes' if row[f'{k}_within_ranges'] else 'no'}"
                                 for k, w in (("predicted", "predicted"), ("actual", "run")))
            lines.append(f"| served, {route} | {per_decision(p)} | {_ranged(p, 'predicted')} | {_ranged(p, 'actual')} | "
                         f"{agree} | {row['run_s'] / 60:.1f} min |")
        c = next(iter(placement["routes"].values()))["replies"]
        counted = ("same", "differ", "other_query", "other_decision", "not_asked_locally")
        same = {tuple(r["replies"][k] for k in counted) for r in placement["routes"].values()}
        lines += ["", f"Of the served replies to a request the local backend also made, {c['same']} are its text and "
                  f"{c['differ']} differ: {c['other_query']} only in the query written, {c['other_decision']} in the "
                  f"decision; {c['not_asked_locally']} requests were made only on the served chains (a chain goes "
                  "elsewhere after a reply that differs)"
                  + (", the same counts by every route." if len(same) == 1 else ".")]
    lines.append(SERVED_BLOCK[1])
    return "\n".join(lines)


def write_served_docs(steps: dict) -> list[str]:
    """Write :func:`served_block` into docs/speed.md; the files written."""
    placement = json.loads(SERVED_PLACEMENT.read_text(encoding="utf-8")) if SERVED_PLACEMENT.exists() else None
    return write_blocks({"docs/speed.md": (served_block(steps, placement), SERVED_BLOCK)})
