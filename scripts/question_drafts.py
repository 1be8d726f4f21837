"""Question sets written outside the API (no call record): packets for the writers, checks of their
drafts, and the assembled CSV with the independent reviews.

  python scripts/question_drafts.py packets PROFILE DRAFTS_DIR PREFIX [PER_PACKET]
      one packetN.json per PER_PACKET sources (draw order): qid, source, style, title, abstract and
      the source's 3 nearest collection papers (what the reviewer sees)
  python scripts/question_drafts.py twopart-packets PROFILE DRAFTS_DIR N [PER_PACKET]
      two-part pairs by a fixed rule, never by a retriever: each source in draw order with its most
      similar TF-IDF lookalike not yet used (skipping lookalikes that are sources), the first N
      pairs; with each paper's 3 nearest other collection papers (TF-IDF) for the reviewer
  python scripts/question_drafts.py check DRAFTS_DIR/packetN.json DRAFTS_DIR/partN.csv
      4-gram title copies, lengths by style, ids and styles against the packet
  python scripts/question_drafts.py assemble DRAFTS_DIR OUT_CSV GENERATOR
      partN.csv + reviewN.csv -> OUT_CSV (fails if a question copies 4+ title words)
  python scripts/question_drafts.py assemble-twopart DRAFTS_DIR OUT_CSV GENERATOR
      the same for two-part questions (source_ids: two ids joined by ";"; either title is checked)

The bundled set was made this way (data/question_drafts -> data/questions.csv, GENERATOR below).
"""
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.data.papers import read_collection  # noqa: E402
from lib.errors import DataError  # noqa: E402
from lib.config import load_profile  # noqa: E402
from lib.data.question_gen import neighbours_from_manifest  # noqa: E402
from lib.data.questions import copied_ngrams, style_for, words, write_questions, write_twopart_questions  # noqa: E402

BUNDLED_GENERATOR = "claude-authoring-session (LLM, title+abstract only; reviewed by a separate LLM pass)"


def packets(profile_name: str, drafts: Path, prefix: str, per_packet: int = 55) -> None:
    cfg = load_profile(profile_name)
    papers = read_collection(cfg.data_dir / "collection.jsonl")
    manifest = json.loads((cfg.data_dir / "collection_manifest.json").read_text())
    by_id = {p["id"]: p for p in papers}
    near = neighbours_from_manifest(manifest, papers)
    items = []
    for i, sid in enumerate(manifest["source_order"]):
        p = by_id[sid]
        items.append({"qid": f"{prefix}{i + 1:03d}", "source_id": sid, "style": style_for(i), "title": p["title"],
                      "abstract": p["abstract"],
                      "neighbours": [{"id": n["id"], "title": n["title"], "abstract": n["abstract"]} for n in near[sid]]})
    drafts.mkdir(parents=True, exist_ok=True)
    for k in range(0, len(items), per_packet):
        path = drafts / f"packet{k // per_packet + 1}.json"
        path.write_text(json.dumps(items[k:k + per_packet], indent=1, ensure_ascii=False) + "\n")
        print(path, len(items[k:k + per_packet]))


def twopart_packets(profile_name: str, drafts: Path, n: int, per_packet: int = 40) -> None:
    from lib.data.collection import tfidf_neighbours
    from lib.data.papers import Paper

    cfg = load_profile(profile_name)
    papers = read_collection(cfg.data_dir / "collection.jsonl")
    manifest = json.loads((cfg.data_dir / "collection_manifest.json").read_text())
    by_id = {p["id"]: p for p in papers}
    sources = set(manifest["source_order"])
    used: set[str] = set()
    pairs = []
    for sid in manifest["source_order"]:
        if sid in used:
            continue
        partner = next((nid for nid, _ in manifest["lookalikes"][sid] if nid not in used and nid not in sources), None)
        if partner is None:
            continue
        used |= {sid, partner}
        pairs.append((sid, partner))
        if len(pairs) == n:
            break
    pool = [Paper.from_row(p) for p in papers]
    near = tfidf_neighbours(pool, [i for pair in pairs for i in pair], 5)
    items = []
    for j, (a, b) in enumerate(pairs):
        others = [i for i, _ in near[a] + near[b] if i not in (a, b)]
        others = list(dict.fromkeys(others))
        items.append({"qid": f"t{j + 1:03d}", "source_ids": [a, b],
                      "papers": [{k: by_id[i][k] for k in ("id", "title", "abstract")} for i in (a, b)],
                      "neighbours": {i: [{k: by_id[o][k] for k in ("id", "title", "abstract")}
                                         for o in [x for x, _ in near[i] if x not in (a, b)][:3]] for i in (a, b)}})
    drafts.mkdir(parents=True, exist_ok=True)
    for k in range(0, len(items), per_packet):
        path = drafts / f"packet{k // per_packet + 1}.json"
        path.write_text(json.dumps(items[k:k + per_packet], indent=1, ensure_ascii=False) + "\n")
        print(path, len(items[k:k + per_packet]))


def check(packet_path: Path, part_path: Path) -> int:
    packet = {p["qid"]: p for p in json.loads(Path(packet_path).read_text())}
    rows = list(csv.DictReader(open(part_path, newline="", encoding="utf-8")))
    problems, seen = 0, set()
    for r in rows:
        p = packet.get(r["qid"])
        if p is None:
            print(f"{r['qid']}: not in packet")
            problems += 1
            continue
        seen.add(r["qid"])
        if r["source_id"] != p["source_id"] or r["style"] != p["style"]:
            print(f"{r['qid']}: source_id/style differ from packet")
            problems += 1
        for field in ("question", "short"):
            c = copied_ngrams(p["title"], r.get(field, "") or "")
            if c:
                print(f"{r['qid']}: {field} copies title 4-grams {c}")
                problems += 1
        n, k = len(words(r["question"])), len(words(r.get("short", "") or ""))
        if r["style"] in ("specific", "problem") and not 20 <= n <= 45:
            print(f"{r['qid']}: {r['style']} question has {n} words (want 20-45)")
            problems += 1
        if r["style"] == "vague" and not 5 <= n <= 18:
            print(f"{r['qid']}: vague question has {n} words (want 5-18)")
            problems += 1
        if not 2 <= k <= 5:
            print(f"{r['qid']}: short form has {k} words (want 2-5)")
            problems += 1
    missing = sorted(set(packet) - seen)
    if missing:
        print(f"missing qids: {missing}")
        problems += 1
    print(f"{len(rows)} rows, {problems} problem(s)")
    return problems


def drafted(drafts: Path):
    """Every drafted question with its packet item and review: (item, row, review, part file, row number)."""
    for packet_path in sorted(drafts.glob("packet*.json"), key=lambda p: int(p.stem[6:])):
        k = packet_path.stem[6:]
        packet = {p["qid"]: p for p in json.loads(packet_path.read_text())}
        reviews = {r["qid"]: r for r in csv.DictReader(open(drafts / f"review{k}.csv", newline="", encoding="utf-8"))}
        part = drafts / f"part{k}.csv"
        for row_no, q in enumerate(csv.DictReader(open(part, newline="", encoding="utf-8")), start=2):
            if q["qid"] not in reviews:
                raise DataError(f"{drafts / f'review{k}.csv'}: no review for {q['qid']}")
            yield packet[q["qid"]], q, reviews[q["qid"]], part, row_no


def assemble(drafts: Path, out: Path, generator: str, twopart: bool = False) -> list[dict]:
    rows = []
    for item, q, rv, part, row_no in drafted(drafts):
        titles = [p["title"] for p in item["papers"]] if twopart else [item["title"]]
        if twopart and q["source_ids"] != ";".join(item["source_ids"]):
            raise DataError(f"{part}: row {row_no}: field 'source_ids' differs from the packet")
        for field in ("question", "short"):
            copied = [c for t in titles for c in copied_ngrams(t, q[field])]
            if copied:
                raise DataError(f"{part}: row {row_no}: field {field!r} copies title words {copied}")
        rows.append({**q, "ok": int(rv["ok"]), "review_note": rv["review_note"], "generator": generator})
    if twopart:
        write_twopart_questions(rows, out)
    else:
        write_questions(rows, out)
    print(f"{out}: {len(rows)} questions, {sum(r['ok'] for r in rows)} ok")
    return rows


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "packets":
        packets(args[0], Path(args[1]), args[2], *(int(a) for a in args[3:]))
    elif cmd == "twopart-packets":
        twopart_packets(args[0], Path(args[1]), *(int(a) for a in args[2:]))
    elif cmd == "assemble-twopart":
        assemble(Path(args[0]), Path(args[1]), args[2], twopart=True)
    elif cmd == "check":
        sys.exit(1 if check(Path(args[0]), Path(args[1])) else 0)
    elif cmd == "assemble":
        assemble(Path(args[0]), Path(args[1]), args[2])
    else:
        sys.exit(__doc__)
