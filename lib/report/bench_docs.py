"""The tables of `make bench` runs that docs carry, written from results/bench.json and held there by tests
(tests/test_bench_decoders.py): the decoding paths side by side (docs/speed.md, :func:`decoder_block`, the choice
made by :func:`decoder_choice`) and Milvus beside faiss at scale (docs/engine.md, :func:`engine_scale_block`)."""
from __future__ import annotations

from typing import Sequence

from ..paths import ROOT
from .bench_ann import QUANTILES, best_points, cheapest, cost_ms, ordered
from .bench_study import STEP_WORDS, model_steps, step_order


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
            f"{m['dim']}-d unit vectors (HNSW's worst case: a bound, not what real embeddings get), {m['queries']} "
            f"queries drawn the same way, HNSW with m {m['m']} and "
            f"ef_construction {m['ef_construction']} in both engines; query latency at ef_search {m['ef_search']}.")
    return "\n".join([ENGINE_BLOCK[0], note, "", *lines, ENGINE_BLOCK[1]])


def with_block(doc: str, block: str, marks: tuple[str, str]) -> str:
    """``doc`` with the block between ``marks`` replaced by ``block``."""
    start, end = doc.index(marks[0]), doc.index(marks[1]) + len(marks[1])
    return doc[:start] + block + doc[end:]


ANN_BLOCK = ("<!-- ann:start (written from results/bench.json: lib.report.bench_docs.ann_block) -->", "<!-- ann:end -->")
ANN_CHART = "figures/bench_ann.png"  # drawn by lib.report.bench_ann_chart.chart from the same figures
ANN_WORDS = {"ann_real": "the snapshot's real vectors", "ann_1000000": "real-shaped, grown to 1M"}


def _setting(p: dict) -> str:
    return next((f"{k} {p[k]}" for k in ("ef_search", "nprobe") if k in p), "exact")


def _engine(name: str, part: dict) -> str:
    words = {"numpy": "numpy, exact", "faiss-hnsw": "faiss HNSW", "faiss-ivf-flat": "faiss IVF-flat",
             "faiss-ivf-pq": "faiss IVF-PQ", "milvus-hnsw": "Milvus Lite HNSW"}
    kind, _, rest = name.partition(" ")
    return f"{words.get(kind, kind)} {rest}".strip()


def _point_cells(p: dict) -> list[str]:
    k10, k50 = p["k10"], p["k50"]
    return [f"{k10['recall']:.3f}", f"{k50['recall']:.3f}", f"{k50.get('recall_at_10', float('nan')):.3f}",
            f"{k10['cpu_median_ms']:.2f}" if "cpu_median_ms" in k10 else "not measured",
            f"{k10['median_ms']:.2f} / {k10['p95_ms']:.2f}", f"{k10.get('cpu_qps', k10['qps']):,.0f}"]


def _built(part: dict) -> list[str]:
    mb = part.get("index_mb")
    return [f"{part['build_s']:,.0f} s" if part.get("build_s") == part.get("build_s") else "",
            f"{mb:,.0f} MB" if mb else "not measured"]


POINT_HEAD = ("recall@10 | recall@50 | recall@10 of the top 50 | CPU ms a query, top 10 (median) | wall ms a query "
              "(median / p95) | queries per CPU second")


def ann_choice_table(steps: dict) -> str:
    """Per set and engine, the cheapest setting reaching the goal's recall@10 (else the engine's highest recall)."""
    lines = [f"| set | engine | setting | {POINT_HEAD} | build | memory |", "|---|---|---|" + "---|" * 8]
    for key, words in ANN_WORDS.items():
        row = steps.get(key)
        if not row:
            continue
        for name, part in ordered(row["engines"]):
            p = cheapest(part["points"], row["goal_recall_at_10"])
            setting = _setting(p) if p else f"{_setting(best_points(part))} (its highest; none reaches the goal)"
            lines.append(f"| {words}, {row['rows']:,} | {_engine(name, part)} | {setting} | "
                         + " | ".join(_point_cells(p or best_points(part)) + _built(part)) + " |")
    return "\n".join(lines)


def ann_sweep_table(row: dict) -> str:
    """Every setting measured over one set."""
    lines = [f"| engine | setting | {POINT_HEAD} |", "|---|---|" + "---|" * 6]
    for name, part in ordered(row["engines"]):
        for p in part["points"]:
            lines.append(f"| {_engine(name, part)} | {_setting(p)} | " + " | ".join(_point_cells(p)) + " |")
    return "\n".join(lines)


def distance_markdown(table: dict, queries: Sequence[dict] = ()) -> str:
    """The nearest-neighbour distances of the grown set against the real one (lib.report.bench_ann.distance_table),
    and the queries' distances to their nearest row (``queries``: quantile rows)."""
    qs = [f"q{int(q * 100):02d}" for q in QUANTILES]
    lines = ["| nearest-neighbour distance (chord) | rows | " + " | ".join(f"{int(q * 100)}%" for q in QUANTILES)
             + " | mean |", "|---|---|" + "---|" * (len(qs) + 1)]
    for r in [table[k] for k in ("real", "synthetic", "real_in_grown")] + list(queries):
        lines.append(f"| {r['what']} | {r['n']:,} | " + " | ".join(f"{r[q]:.3f}" for q in qs) + f" | {r['mean']:.3f} |")
    return "\n".join(lines)


def ann_block(steps: dict, defaults: dict, chart: str = "../" + ANN_CHART) -> str:
    """docs/engine.md's recall against speed (``make bench ARGS="--ann real,1000000"``): how it was measured,
    the chart, the cheapest setting per engine, the grown set's distances against the real ones, the defaults
    chosen and every setting swept; empty when no sweep was run. ``defaults``: the profile's HNSW settings."""
    rows = [steps[k] for k in ANN_WORDS if k in steps]
    if not rows:
        return ""
    first, grown = rows[0], steps.get("ann_1000000")
    loads = [x for r in rows for part in r["engines"].values() for p in part["points"] for x in p["loadavg"]]
    parts = [ANN_BLOCK[0],
             f"Measured by `make bench ARGS=\"--ann real,1000000\"` on {first['threads']} threads (faiss "
             f"{first['faiss']}): {first['queries_from']} ({first['queries']} queries, none of them a row of "
             "either set), each searched once at depth 10 and once at depth 50, one query at a time; recall "
             "against numpy's exact search over the same set (HNSW searches at least as many candidates as it "
             "returns, so a top-50 search's top 10 can beat a top-10 search's). Other jobs shared the two cores "
             f"(load average {min(loads):.1f}-{max(loads):.1f}), so wall times are upper bounds; the CPU time a "
             "query took (this process's, every thread; Milvus Lite runs in it) is the steadier figure, and the "
             "settings are compared by it: queries per CPU second are one over the mean CPU time of one top-10 "
             "query. Recall does not depend on either.", "",
             f"![recall@10 against queries per second, per engine and setting]({chart})", "",
             ann_choice_table(steps)]
    if grown:
        d = grown["distances"]
        parts += ["", f"The real-shaped set: {grown['method']}; {grown['real_rows']:,} real rows and "
                      f"{grown['rows'] - grown['real_rows']:,} synthetic ones, seed {grown['seed']}. How close its "
                      "nearest-neighbour distances are to the real set's (exact search; a sample of 2,000 rows of "
                      f"each kind in the grown set; Kolmogorov-Smirnov distance of the synthetic sample to the real "
                      f"distribution {d['ks_synthetic_vs_real']:.3f}); and how far the questions lie from their "
                      "nearest row:", "", distance_markdown(d, [r["query_nn"] for r in rows if "query_nn" in r])]
        c = grown.get("chosen_hnsw")
        parts += ["", (f"**The project's HNSW defaults** (`hnsw_m` {defaults['hnsw_m']}, `hnsw_ef_construction` "
                       f"{defaults['hnsw_ef_construction']}, `hnsw_ef_search` {defaults['hnsw_ef_search']}) are the "
                       f"cheapest faiss HNSW setting measured with recall@10 >= {grown['goal_recall_at_10']} on the "
                       f"real-shaped 1M set ({c['engine']}, ef_search {c['ef_search']}: recall@10 "
                       f"{c['k10']['recall']:.3f}, {cost_ms(c):.2f} ms of CPU a query)." if c else
                       f"No faiss HNSW setting measured reached recall@10 {grown['goal_recall_at_10']} on the "
                       "real-shaped 1M set.")]
    for key, words in ANN_WORDS.items():
        if key in steps:
            parts += ["", f"<details><summary>Every setting swept over {words} ({steps[key]['rows']:,} rows)"
                          "</summary>", "", ann_sweep_table(steps[key]), "", "</details>"]
    return "\n".join(parts + [ANN_BLOCK[1]])


def hnsw_defaults(profile) -> dict:
    """The profile's HNSW settings (lib/config.py)."""
    return {k: getattr(profile, k) for k in ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search")}


def ann_docs(steps: dict, profile) -> dict[str, tuple[str, tuple[str, str]]]:
    """The docs' blocks written from the --ann figures: {file (from the repository's root): (block, marks)}."""
    return {"docs/engine.md": (ann_block(steps, hnsw_defaults(profile)), ANN_BLOCK),
            "docs/your-data.md": (scale_block(steps, hnsw_defaults(profile)), SCALE_BLOCK),
            "README.md": (readme_scale(steps, hnsw_defaults(profile)), README_SCALE)}


def write_ann_docs(steps: dict, profile) -> list[str]:
    """Write :func:`ann_docs`'s blocks into their files; the files written."""
    return write_blocks(ann_docs(steps, profile))


THROUGHPUT_BLOCK = ("<!-- throughput:start (written from results/bench.json: lib.report.bench_docs.throughput_block) -->",
                    "<!-- throughput:end -->")
README_SCALE = ("<!-- scale-readme:start (written from results/bench.json: lib.report.bench_docs.readme_scale) -->",
                "<!-- scale-readme:end -->")


def _step_words(name: str) -> str:
    return STEP_WORDS.get(name) or ("design " + name[len("design_"):] if name.startswith("design_") else name)


def _hours(s: float | None) -> str:
    if s is None:
        return "not measured"
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min" if s >= 60 else f"{s:.0f} s"


def model_words(t: dict) -> str:
    """The model designs a throughput run measured, in words ("" when none: then it says they were not run)."""
    model = model_steps(t["steps"])
    if not model:
        return "; the model designs were not run"
    words = []
    for k in model:
        r = t["steps"][k]
        words.append(f"; {k[len('design_'):]} with the {r.get('backend', 'local')} model ({r.get('model', '')}) over "
                     f"the first {r['questions']} questions, run 1: {r['llm_calls']} calls, {r['searches']} searches, "
                     f"{r['wall_s'] / r['questions']:.1f} s a question")
    return "".join(words)


def throughput_block(steps: dict) -> str:
    """docs/your-data.md's throughput table (scripts/bench_study.py, ``study_throughput``): each step's time as
    measured and projected to 1M documents; empty when not measured."""
    t = steps.get("study_throughput")
    if not t:
        return ""
    lines = [f"| step | wall, {t['documents']:,} documents | CPU (user + system) | at {t['target']:,} documents, "
             "wall / CPU | projected how |", "|---|---|---|---|---|"]
    for name in step_order(t["steps"]):
        row, p = t["steps"][name], t["projected"][name]
        live = f": {row['texts']:,} of them, the others' vectors from the snapshot's" if name == "embed" else ""
        lines.append(f"| {_step_words(name)}{live} | {_hours(row['wall_s'])} | {_hours(row['cpu_s'])} | "
                     f"{_hours(p['s'])} / {_hours(p['cpu_s'])} | {p['how']} |")
    loads = [r["loadavg"] for r in t["steps"].values() if "loadavg" in r]
    first, chunk = t["first_to_move"], t["steps"].get("chunk", {}).get("chunks") and t["steps"]["chunk"]
    words = [THROUGHPUT_BLOCK[0],
             f"Measured by {t['method']} ({t['documents']:,} abstracts of the snapshot, the study's {t['questions']} "
             f"scored questions, the designs that ask no model{model_words(t)}). The machine's two cores were shared with a model job (load average "
             f"{min(loads):.1f}-{max(loads):.1f}), so wall times are upper bounds; CPU time is the steadier figure.",
             "", *lines, "",
             f"In all (chunking measured apart): {_hours(t['total_wall_s'])} wall, {_hours(t['total_cpu_s'])} of "
             f"CPU; peak resident memory {t['peak_rss_mb']:,.0f} MB. At {t['target']:,} documents: about "
             f"{_hours(t['projected_total_cpu_s'])} of CPU ({_hours(t['projected_total_s'])} wall at this machine's "
             f"load), {(t['projected'][first]['cpu_s'] or 0) / t['projected_total_cpu_s']:.0%} of it "
             f"{_step_words(first)}: the step to move to a GPU or a server first. The embedder runs on both cores, "
             "so on two idle cores its wall time is about half its CPU time."
             + (f" Chunked (`chunk_documents=true`), the {chunk['documents']:,} abstracts make {chunk['chunks']:,} "
                f"chunks, {chunk['chunks'] / chunk['documents']:.2f} a document: embedding would take that many times "
                "as long." if chunk else ""), THROUGHPUT_BLOCK[1]]
    return "\n".join(words)


def readme_scale(steps: dict, defaults: dict) -> str:
    """The README's lines on scale: the HNSW defaults and what they find at 1M (``ann_1000000``), and the study's
    throughput (``study_throughput``); each when measured."""
    lines = []
    grown = steps.get("ann_1000000")
    c = grown.get("chosen_hnsw") if grown else None
    if c:
        lines.append(f"Approximate search (from 300,000 chunks, or `dense_backend=faiss-hnsw`) uses faiss HNSW with "
                     f"`hnsw_m` {defaults['hnsw_m']}, `hnsw_ef_construction` {defaults['hnsw_ef_construction']} and "
                     f"`hnsw_ef_search` {defaults['hnsw_ef_search']}: the cheapest setting measured that finds "
                     f"{c['k10']['recall']:.0%} of the exact top 10 for the study's questions over 1,000,000 "
                     f"real-shaped vectors ({cost_ms(c):.1f} ms of CPU a query; docs/engine.md).")
    t = steps.get("study_throughput")
    if t:
        first = t["first_to_move"]
        lines.append(f"Throughput, measured on {t['documents']:,} of the snapshot's abstracts (2 shared CPU cores, the "
                     f"designs without a model{model_words(t)}): {_hours(t['total_cpu_s'])} of CPU end to end, peak memory "
                     f"{t['peak_rss_mb']:,.0f} MB; projected to {t['target']:,} documents about "
                     f"{_hours(t['projected_total_cpu_s'])} of CPU, "
                     f"{(t['projected'][first]['cpu_s'] or 0) / t['projected_total_cpu_s']:.0%} of it "
                     f"{_step_words(first)}, the step to move to a GPU first (docs/your-data.md, \"Throughput\").")
    return "\n".join([README_SCALE[0], *lines, README_SCALE[1]])


def throughput_docs(steps: dict, profile) -> dict[str, tuple[str, tuple[str, str]]]:
    """The blocks written from ``study_throughput``: {file: (block, marks)}."""
    return {"docs/your-data.md": (throughput_block(steps), THROUGHPUT_BLOCK),
            "README.md": (readme_scale(steps, hnsw_defaults(profile)), README_SCALE)}


def write_throughput_docs(steps: dict, profile) -> list[str]:
    """Write :func:`throughput_docs`'s blocks into their files; the files written."""
    return write_blocks(throughput_docs(steps, profile))


def write_blocks(blocks: dict[str, tuple[str, tuple[str, str]]]) -> list[str]:
    out = []
    for rel, (block, marks) in blocks.items():
        path = ROOT / rel
        text = with_block(path.read_text(encoding="utf-8"), block or "\n".join(marks), marks)  # empty: marks kept
        path.write_text(text, encoding="utf-8")
        out.append(rel)
    return out


SCALE_BLOCK = ("<!-- ann-scale:start (written from results/bench.json: lib.report.bench_docs.scale_block) -->",
               "<!-- ann-scale:end -->")


def _at(row: dict, engine: str, ef: int) -> dict | None:
    part = row["engines"].get(engine)
    return next((p for p in part["points"] if p.get("ef_search") == ef), None) if part else None


def scale_block(steps: dict, defaults: dict) -> str:
    """docs/your-data.md's dense search at scale with the profile's HNSW settings (``defaults``): over the
    snapshot's real vectors, the real-shaped 1M set and, as the worst case, 1M uniform random vectors; empty
    until both --ann sets are measured."""
    real, grown = steps.get("ann_real"), steps.get("ann_1000000")
    if not (real and grown):
        return ""
    m, efc, ef = defaults["hnsw_m"], defaults["hnsw_ef_construction"], defaults["hnsw_ef_search"]
    engine = f"faiss-hnsw m{m} efc{efc}"
    uniform, flat = steps.get("dense_scale_1000000_faiss-hnsw"), steps.get("dense_scale_1000000_numpy")
    worst = uniform["sweep"].get(str(ef)) if uniform else None  # at the same ef_search, its own graph's m and ef_construction
    sets = (real, grown)
    pts = [_at(r, engine, ef) for r in sets]
    exact = [r["engines"]["numpy"]["points"][0] for r in sets]

    def row(what: str, mine: list[str], worst_cell: str) -> str:
        return f"| {what} | " + " | ".join(mine) + f" | {worst_cell} |"

    def each(fn) -> list[str]:
        return [fn(p) if p else "not measured" for p in pts]

    lines = [row("", [f"{r['rows']:,} {w}" for r, w in zip(sets, ("real vectors", "real-shaped"))],
                 "1,000,000 uniform random (the worst case" + (f"; its graph m {uniform['m']}, ef_construction "
                                                                f"{uniform['ef_construction']})" if uniform else ")")),
             "|---|---|---|---|",
             row("numpy, exact: wall ms a query, top 10 (median)", [f"{p['k10']['median_ms']:.1f}" for p in exact],
                 f"{flat['median_ms']:.1f} (top 50)" if flat else "not measured"),
             row(f"faiss HNSW at the defaults (m {m}, ef_construction {efc}, ef_search {ef}): recall@10",
                 each(lambda p: f"{p['k10']['recall']:.3f}"), f"{worst['recall_at_10']:.3f}" if worst else "not measured"),
             row("the same, recall@50 (top 50, as the designs search)", each(lambda p: f"{p['k50']['recall']:.3f}"),
                 "not measured"),
             row("the same, CPU ms a query, top 10 (median)", each(lambda p: f"{cost_ms(p):.2f}"), "not measured"),
             row("the same, wall ms a query, top 10 (median / p95)",
                 each(lambda p: f"{p['k10']['median_ms']:.2f} / {p['k10']['p95_ms']:.2f}"),
                 f"{worst['median_ms']:.2f} / {worst['p95_ms']:.2f}" if worst else "not measured"),
             row("the same, build / memory",
                 [f"{r['engines'][engine]['build_s']:,.0f} s / {r['engines'][engine]['index_mb']:,.0f} MB"
                  if engine in r["engines"] else "not measured" for r in sets],
                 f"{uniform['build_s']:,.0f} s / {uniform['index_mb']:,.0f} MB" if uniform else "not measured")]
    return "\n".join([SCALE_BLOCK[0], *lines, SCALE_BLOCK[1]])

