"""The tables of `make bench` runs that docs carry, written from results/bench.json and held there by tests
(tests/test_bench_decoders.py): the decoding paths side by side (docs/speed.md, :func:`decoder_block`, the choice
made by :func:`decoder_choice`) and Milvus beside faiss at scale (docs/engine.md, :func:`engine_scale_block`)."""
from __future__ import annotations

from typing import Sequence


# the decoding paths `make bench` compares (scripts/bench.py CALL_MODES), in the words of docs/speed.md
DECODER_WORDS = {"fast": "the project's fast path (lib.llm.speculative)",
                 "prefix": "llama-cpp-python, a token at a time",
                 "llguidance": "llguidance masks and forced tokens (public API)",
                 "llguidance_masks": "llguidance masks alone (public API)",
                 "lookup": "llama-cpp-python's LlamaPromptLookupDecoding (public API)"}
DECODER_DESIGNS = ("agent", "multiquery", "loop")  # llm_call_<design> steps
CHOSEN_FOR = ("agent", "loop")  # the calls a path must keep within the goal ratio to be chosen


def decoder_choice(steps: dict, modes: Sequence[str], goal: float) -> dict:
    """The decoding paths side by side (each ``llm_call_<design>`` step's ``<mode>`` figures): per design and
    path the median seconds per call, its ratio to the llama.cpp bound and the replies equal to the recorded
    ones; the chosen path is the one with the least median time summed over the agent's and the loop's calls
    among those within ``goal`` times the bound on both (None when none is). Self-contained: the run's load
    averages, llama.cpp's speed and how the replayed records were decoded are kept with it."""
    table: dict = {}
    loads: list[float] = []
    recorded: dict = {}
    for design in DECODER_DESIGNS:
        row = steps.get(f"llm_call_{design}")
        if row is None:
            continue
        table[design] = {m: {"median_s": row[m].get("median_s"), "ratio": row[m].get("ratio_to_bound_evaluated"),
                             "same_as_recorded": row["replies"].get(f"{m}_equals_recorded"), "n": row["replies"]["n"],
                             "error": row[m].get("error")} for m in modes if m in row}
        loads += row.get("loadavg_before", [])[:1] + row.get("loadavg_after", [])[:1]
        recorded[design] = row.get("recorded_decoding", {})
    ok = [m for m in modes if all(d in table and m in table[d] and table[d][m]["ratio"] is not None
                                  and table[d][m]["ratio"] <= goal for d in CHOSEN_FOR)]
    chosen = min(ok, key=lambda m: sum(table[d][m]["median_s"] for d in CHOSEN_FOR)) if ok else None

    def ratios(m: str) -> str:
        return ", ".join(f"{d} {table[d][m]['ratio']:.2f}x" for d in CHOSEN_FOR
                         if m in table.get(d, {}) and table[d][m]["ratio"] is not None) or "failed"
    words = "; ".join(f"{m} {ratios(m)}" for m in modes)
    speed = steps.get("llm_llama_speed", {})
    return {"goal": goal, "modes": list(modes), "table": table, "within_goal": ok, "chosen": chosen,
            "loadavg": [min(loads), max(loads)] if loads else [], "recorded_decoding": recorded,
            "pp_tokens_per_s": speed.get("pp_tokens_per_s"), "tg_tokens_per_s": speed.get("tg_tokens_per_s"),
            "summary": f"decoding paths against the llama.cpp bound ({words}); chosen: " + (
                f"{chosen}, the fastest within {goal}x on agent and loop calls" if chosen else f"none within {goal}x")}


def decoder_table(choice: dict) -> str:
    """The side-by-side table of :func:`decoder_choice` in Markdown (docs/speed.md, "Decoding paths")."""
    designs = [d for d in DECODER_DESIGNS if d in choice["table"]]
    head = "| path | " + " | ".join(f"{d}: s per call | × bound | same reply as recorded" for d in designs) + " |"
    lines = [head, "|---|" + "---|---|---|" * len(designs)]
    for m in choice["modes"]:
        cells = []
        for d in designs:
            c = choice["table"][d].get(m)
            if c is None or c["median_s"] is None:
                cells += ["failed" if c and c.get("error") else "not run", "", ""]
            else:
                cells += [f"{c['median_s']:.2f}", f"{c['ratio']:.2f}", f"{c['same_as_recorded']}/{c['n']}"]
        name = DECODER_WORDS.get(m, m) + (" **(chosen)**" if m == choice["chosen"] else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


DECODER_BLOCK = ("<!-- decoders:start (make bench --llm --save writes this block from results/bench.json) -->",
                 "<!-- decoders:end -->")


def decoder_block(steps: dict) -> str:
    """docs/speed.md's "Decoding paths" figures, from a bench run's ``llm_decoders`` step alone: the side-by-side
    table and what was measured and chosen (empty when the run measured no decoding paths)."""
    choice = steps.get("llm_decoders")
    if not choice:
        return ""
    calls = sorted({c["n"] for row in choice["table"].values() for c in row.values() if c.get("n")})
    failed = [DECODER_WORDS.get(m, m) for m in choice["modes"]
              if any(row.get(m, {}).get("error") for row in choice["table"].values())]
    made = "; ".join(f"{d}: " + ", ".join(f"{n} {how}" for how, n in sorted(c.items()))
                     for d, c in choice.get("recorded_decoding", {}).items() if c)
    load = choice.get("loadavg") or [float("nan")] * 2
    sentence = (f"Medians of {' / '.join(map(str, calls))} calls a design (each design's last recorded requests, "
                f"replayed in order), each path in a process of its own, in one run (load average {load[0]:.1f}-"
                f"{load[1]:.1f} on the two cores); the bound is llama.cpp's own speed measured in the same run "
                f"(prompt {choice.get('pp_tokens_per_s') or float('nan'):.0f} tokens/s, generation "
                f"{choice.get('tg_tokens_per_s') or float('nan'):.1f} tokens/s). "
                + (f"The replayed records were written by these paths: {made}. " if made else "")
                + (f"Chosen: {DECODER_WORDS[choice['chosen']]}, the fastest within {choice['goal']}x the bound on "
                   f"both agent and loop calls." if choice["chosen"] else
                   f"No path stayed within {choice['goal']}x the bound on both agent and loop calls.")
                + (f" Failed: {', '.join(failed)}." if failed else ""))
    return "\n".join([DECODER_BLOCK[0], decoder_table(choice), "", sentence, DECODER_BLOCK[1]])


def with_decoder_block(doc: str, block: str) -> str:
    """``doc`` (docs/speed.md) with its decoders block replaced by ``block``."""
    return with_block(doc, block, DECODER_BLOCK)


ENGINE_BLOCK = ("<!-- engine-scale:start (written from results/bench.json: lib.report.bench_docs.engine_scale_block) -->",
                "<!-- engine-scale:end -->")
SCALE_NAMES = {"numpy": "numpy, exact", "faiss-flat": "faiss flat, exact", "faiss-hnsw": "faiss HNSW",
               "milvus-hnsw": "Milvus Lite HNSW (embedded)"}


def engine_scale_block(steps: dict, label: str = "1000000") -> str:
    """docs/engine.md's "Speed at scale" figures: the ``dense_scale_<label>_*`` rows of one ``--scale ... --engine``
    run side by side (build, query latency at top 50, recall@10 against exact at each ``ef_search`` swept);
    empty when the run has no Milvus row at that size."""
    rows = {b: steps.get(f"dense_scale_{label}_{b}") for b in SCALE_NAMES}
    if not rows["milvus-hnsw"]:
        return ""
    efs = sorted({int(e) for r in rows.values() if r for e in r.get("sweep", {})})
    head = ("| " + f"{rows['milvus-hnsw']['rows']:,} x {rows['milvus-hnsw']['dim']}" + " | build | query, top 50 "
            "(median / p95) | " + " | ".join(f"recall@10 at ef_search {e}" for e in efs) + " |")
    lines = [head, "|---|---|---|" + "---|" * len(efs)]
    for b, r in rows.items():
        if not r:
            continue
        sweep = r.get("sweep", {})
        exact = b in ("numpy", "faiss-flat")
        cells = [("1" if exact else (f"{sweep[str(e)]['recall_at_10']:.3f}" if str(e) in sweep else "not run"))
                 for e in efs]
        lines.append(f"| {SCALE_NAMES[b]} | {r['build_s']:.0f} s | {r['median_ms']:.1f} ms / {r['p95_ms']:.1f} ms | "
                     + " | ".join(cells) + " |")
    m = rows["milvus-hnsw"]
    note = (f"One run of `make bench ARGS=\"--scale {label} --engine --no-bm25\"`: {m['rows']:,} uniform random "
            f"{m['dim']}-d unit vectors, {m['queries']} queries drawn the same way, HNSW with m {m['m']} and "
            f"ef_construction {m['ef_construction']} in both engines; query latency at ef_search {m['ef_search']}.")
    return "\n".join([ENGINE_BLOCK[0], note, "", *lines, ENGINE_BLOCK[1]])


def with_block(doc: str, block: str, marks: tuple[str, str]) -> str:
    """``doc`` with the block between ``marks`` replaced by ``block``."""
    start, end = doc.index(marks[0]), doc.index(marks[1]) + len(marks[1])
    return doc[:start] + block + doc[end:]
