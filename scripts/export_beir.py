"""Export a profile's collection and reviewed questions as a BEIR folder (Thakur et al. 2021, "BEIR:
A Heterogeneous Benchmark for Zero-shot Evaluation of Information Retrieval Models"): corpus.jsonl
({_id, title, text, metadata}), queries.jsonl ({_id, text, metadata}) and qrels/test.tsv
(query-id, corpus-id, score, with a header) — the worked example of docs/your-data.md.

Usage: python scripts/export_beir.py PROFILE FOLDER   (e.g. dev examples/beir-dev)
"""
import csv
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib import pipeline  # noqa: E402
from lib.config import load_profile  # noqa: E402
from lib.data.relevance import judgements  # noqa: E402
from lib.io import write_text  # noqa: E402

profile_name, folder = sys.argv[1], Path(sys.argv[2])
profile = load_profile(profile_name)
papers = pipeline.collection(profile)
questions = pipeline.question_set(profile, papers)
write_text(folder / "corpus.jsonl", "".join(json.dumps(
    {"_id": p["id"], "title": p["title"], "text": p["abstract"],
     "metadata": {"categories": p["categories"], "first_seen": p["first_seen"]}}, ensure_ascii=False) + "\n"
    for p in papers))
write_text(folder / "queries.jsonl", "".join(json.dumps(
    {"_id": q.qid, "text": q.text, "metadata": {"style": q.style}}, ensure_ascii=False) + "\n" for q in questions))
buf = io.StringIO()
w = csv.writer(buf, delimiter="\t", lineterminator="\n")
w.writerow(["query-id", "corpus-id", "score"])
for q in questions:
    for doc, grade in judgements(q.source_id).items():
        w.writerow([q.qid, doc, grade])
write_text(folder / "qrels" / "test.tsv", buf.getvalue())
print(f"{folder}: {len(papers)} documents, {len(questions)} questions")
