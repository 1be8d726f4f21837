"""Check a draft questions CSV against its packet: 4-gram title copies, lengths by style, ids.

Usage: python scripts/check_drafts.py data/question_drafts/packetN.json data/question_drafts/partN.csv
"""
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.questions import copied_ngrams, words  # noqa: E402

packet = {p["qid"]: p for p in json.load(open(sys.argv[1]))}
rows = list(csv.DictReader(open(sys.argv[2], newline="", encoding="utf-8")))
problems = 0
seen = set()
for r in rows:
    p = packet.get(r["qid"])
    if p is None:
        print(f"{r['qid']}: not in packet"); problems += 1; continue
    seen.add(r["qid"])
    if r["source_id"] != p["source_id"] or r["style"] != p["style"]:
        print(f"{r['qid']}: source_id/style differ from packet"); problems += 1
    for field in ("question", "short"):
        c = copied_ngrams(p["title"], r.get(field, "") or "")
        if c:
            print(f"{r['qid']}: {field} copies title 4-grams {c}"); problems += 1
    n = len(words(r["question"]))
    k = len(words(r.get("short", "") or ""))
    if r["style"] in ("specific", "problem") and not 20 <= n <= 45:
        print(f"{r['qid']}: {r['style']} question has {n} words (want 20-45)"); problems += 1
    if r["style"] == "vague" and not 5 <= n <= 18:
        print(f"{r['qid']}: vague question has {n} words (want 5-18)"); problems += 1
    if not 2 <= k <= 5:
        print(f"{r['qid']}: short form has {k} words (want 2-5)"); problems += 1
missing = sorted(set(packet) - seen)
if missing:
    print(f"missing qids: {missing}"); problems += 1
print(f"{len(rows)} rows, {problems} problem(s)")
sys.exit(1 if problems else 0)
