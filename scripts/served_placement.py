"""The shipped 1.5B model served as a user serves it (llama-cpp-python's OpenAI-compatible server, the model's
own chat template) and placed on page 12's chart on the first N questions by each constraint route given, beside
the local backend's point on the same questions (replayed from its records): do the two points agree within their
ranges, and how many of the served replies differ from the local ones, and where?

Usage: python scripts/served_placement.py [N] [ROUTE ...] [--results DIR]    (N: 40; ROUTE: json_object,
       grammar, json_schema or none; default json_object grammar; DIR: keep every run in DIR/<local|route>
       instead of the profile's own folders)
The served runs go through scripts/place_model.py's place() into folders of their own (the profile's
results/variants/..., keyed by the route and N), record every reply there and resume when interrupted: run
again, they replay. Writes the comparison to <that folder>/served_placement.json (and, without --results, to
results/served_placement.json, with docs/speed.md's block written from it) and prints it (``run_s``: the
run's seconds as recorded when it was made; ``wall_s``: this invocation's, a few seconds when it replayed). The server's
threads: LOCAL_LLM_THREADS (default 2); its log: build/served-placement-server.log.
"""
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import place_model  # noqa: E402

from lib.config import DEFAULT_PROFILE, load_profile, shown_path  # noqa: E402
from lib.io import write_json  # noqa: E402
from lib.report.served_docs import SERVED_PLACEMENT, per_decision, write_served_docs  # noqa: E402
from lib.llm import contract, served  # noqa: E402
from lib.llm.local_backend import DEFAULT_LOCAL_MODEL, local_model  # noqa: E402
from lib.llm.records import RecordStore, records_dir  # noqa: E402
from lib.runs import read_results  # noqa: E402

KINDS = ("agent", "agent_tree", "agent_tree_search")  # the tree's three kinds of reply
ROUTES = ("json_object", "grammar")


def point(rows) -> dict:
    """The model's point (MRR@10) of place()'s rows: its accuracies at each decision with the decisions they are
    measured on, the judge's prediction there and the agent's runs, each with its 95% range."""
    r = rows[(rows.point == "model") & (rows.metric == "mrr_at_10")].iloc[0]
    keys = [k for k in rows.columns if k.split("_")[-1].isdigit() and k.rsplit("_", 1)[0] in
            ("p_stop", "shown", "p_search", "not_shown")]
    keys += ["predicted", "predicted_low", "predicted_high", "actual", "actual_low", "actual_high", "questions"]
    return {k: (None if r[k] != r[k] else float(r[k])) for k in keys}


def accuracies(p: dict) -> str:
    """"stop 70% (n 40) then 55% (n 11), search ..." of a point."""
    return (f"stop {per_decision(p, 'p_stop', 'shown', ' then ')}, "
            f"search {per_decision(p, 'p_search', 'not_shown', ' then ')}")


def within(a: dict, b: dict, key: str) -> bool:
    """Whether each point's ``key`` lies in the other's 95% range."""
    lo, hi = f"{key}_low", f"{key}_high"
    if None in (a[key], b[key], a[lo], a[hi], b[lo], b[hi]):
        return False
    return b[lo] <= a[key] <= b[hi] and a[lo] <= b[key] <= a[hi]


def how_they_differ(served_text: str, local_text: str) -> str:
    """``other_query`` where two replies make the same choice (decision and match) and differ only in the query
    they write, else ``other_decision``."""
    def choice(text):
        try:
            reply = json.loads(text)
        except ValueError:
            return None
        return (reply.get("decision"), reply.get("match")) if isinstance(reply, dict) else None

    a, b = choice(served_text), choice(local_text)
    return "other_query" if a is not None and a == b else "other_decision"


def compare_replies(served_dir: Path, local: RecordStore) -> dict:
    """Each served reply against the local record of the same request (the same key: the same prompt, grammar,
    temperature and run): the same text, another text (another decision, or the same decision with another query:
    :func:`how_they_differ`), or no local reply (the chain went elsewhere earlier)."""
    out = {"same": 0, "differ": 0, "other_decision": 0, "other_query": 0, "not_asked_locally": 0, "examples": [],
           "served_s": [], "local_s": []}
    store = RecordStore(served_dir)
    for kind in KINDS:
        for key, rec in store.records(kind).items():
            mine = local.records(kind).get(key)
            if mine is None:
                out["not_asked_locally"] += 1
                continue
            out["served_s"].append(rec["response"]["latency_s"])
            out["local_s"].append(mine["response"]["latency_s"])
            if rec["response"]["text"] == mine["response"]["text"]:
                out["same"] += 1
            else:
                out["differ"] += 1
                out[how_they_differ(rec["response"]["text"], mine["response"]["text"])] += 1
                if len(out["examples"]) < 5:
                    out["examples"].append({"kind": kind, "question": rec["request"]["messages"][-1][1][:80],
                                            "served": rec["response"]["text"], "local": mine["response"]["text"],
                                            "local_decoding": mine["response"].get("decoding", "")})
    for k in ("served_s", "local_s"):
        values = out.pop(k)
        out[f"{k[:-2]}_median_s"] = round(statistics.median(values), 2) if values else None
    return out


def run_seconds(results: Path) -> float:
    """The tree run's seconds as recorded when its questions were run (the sum of their latencies, the model's
    calls included): kept when the run is replayed, unlike this invocation's ``wall_s``."""
    path = results / "agent_tree" / "run1.jsonl"
    return round(sum(r.latency_s for r in read_results(path)), 1) if path.exists() else 0.0


def main(argv: list[str]) -> int:
    argv = list(argv)
    folder = None
    if "--results" in argv:
        i = argv.index("--results")
        folder, argv = Path(argv[i + 1]), argv[:i] + argv[i + 2:]
    n = int(argv[0]) if argv and argv[0].isdigit() else 40
    routes = [a for a in argv if not a.isdigit()] or list(ROUTES)

    def where(name: str) -> dict:
        return {"results_dir": str(folder / name)} if folder is not None else {}

    for r in routes:
        if r not in contract.CONSTRAINTS:
            print(f"error: route {r!r} is not one of {', '.join(contract.CONSTRAINTS)}", file=sys.stderr)
            return 2
    model = local_model(DEFAULT_LOCAL_MODEL)
    print(f"the local backend's point on the first {n} questions (replayed from its records):")
    local_profile = load_profile(DEFAULT_PROFILE, question_limit=n, llm_backend="replay", **where("local"))
    local = point(place_model.place(local_profile))
    local_store = RecordStore(records_dir("local", model.name))
    summary = {"questions": n, "model": model.name, "local": local, "routes": {}}
    log = ROOT / "build" / "served-placement-server.log"
    with served.serve(model.file, model.name, log) as base:
        os.environ["OPENAI_BASE_URL"] = base  # not a setting: the results' folder does not depend on the port
        for route in routes:
            print(f"\nserved by llama-cpp-python's server, route {route} "
                  f"({contract.route_words(contract.prompt_for(route), route)}):")
            profile = load_profile(DEFAULT_PROFILE, question_limit=n, llm_backend="openai", llm_model=model.name,
                                   openai_constraint=route, openai_concurrency=1,  # one at a time: it serialises them
                                   **where(route))
            load, start = os.getloadavg(), time.perf_counter()
            p = point(place_model.place(profile))
            records = records_dir("openai", model.name, profile.own_dir / "llm_records",
                                  route if route in contract.SCHEMA_CONSTRAINTS else "")
            row = {"point": p, "replies": compare_replies(records, local_store), "run_s": run_seconds(profile.results_dir),
                   "wall_s": round(time.perf_counter() - start),
                   "load_before": [round(x, 2) for x in load], "load_after": [round(x, 2) for x in os.getloadavg()],
                   "results": shown_path(profile.results_dir),
                   "predicted_within_ranges": within(p, local, "predicted"),
                   "actual_within_ranges": within(p, local, "actual"),
                   "comparable": contract.comparable(contract.prompt_for(route), route)}
            summary["routes"][route] = row
            c = row["replies"]
            print(f"  accuracies: {accuracies(p)} (local: {accuracies(local)}); predicted {p['predicted']:+.3f} "
                  f"(local {local['predicted']:+.3f}), within each other's ranges: {row['predicted_within_ranges']}; "
                  f"its run {p['actual']:+.3f} (local {local['actual']:+.3f}), within: {row['actual_within_ranges']}")
            print(f"  replies: {c['same']} the same as the local backend's, {c['differ']} differ ({c['other_query']} "
                  f"only in the query written, {c['other_decision']} in the decision), "
                  f"{c['not_asked_locally']} asked only here; median {c['served_median_s']} s a call served, "
                  f"{c['local_median_s']} s recorded locally")
            write_json(profile.results_dir / "served_placement.json", summary)
            print(f"  written: {profile.results_dir / 'served_placement.json'}")
    print(json.dumps({r: {k: v for k, v in row.items() if k != "replies"} for r, row in summary["routes"].items()},
                     indent=1))
    if folder is None:  # the profile's own folders: the recorded run, which docs/speed.md quotes
        write_json(SERVED_PLACEMENT, summary)
        bench = json.loads((ROOT / "results" / "bench.json").read_text(encoding="utf-8"))["steps"]
        print(f"written: {shown_path(SERVED_PLACEMENT)}, " + ", ".join(write_served_docs(bench)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
