"""docs/escalation.md's Result is the saved dev choice, written from results/dev/escalation_selection.json
and escalation_sweep.csv (lib/report/escalation_doc.py)."""
import json
import re

import pandas as pd

from lib.report.escalation_doc import DEV_DIR, DOC, MARKERS, doc_block, result_markdown, saved_result, update_doc


def selection(rate=0.0, signal="margin", threshold=float("-inf"), helped=3, hurt=7):
    return {"choice": {"escalated": rate, "helped": 0, "hurt": 0, "mrr@10": 0.8, "rate": rate, "signal": signal,
                       "threshold": threshold},
            "probe": {"escalated_mrr@10": 0.75, "first_mrr@10": 0.8, "helped": helped, "hurt": hurt},
            "questions": {"full": 10, "short": 10}, "tie": 0.002}


def sweep(rows):
    return pd.DataFrame(rows, columns=["signal", "rate", "mrr@10", "helped", "hurt"])


def test_the_document_states_the_saved_choice():
    block = doc_block(DOC.read_text(encoding="utf-8"))
    assert block is not None, f"{DOC.name}: the RESULT markers are missing"
    assert block == saved_result(), "docs/escalation.md's Result differs from the saved dev choice: run update_doc()"
    sel = json.loads((DEV_DIR / "escalation_selection.json").read_text())
    probe = sel["probe"]
    assert f"MRR@10 {probe['escalated_mrr@10']:.3f} against the first pass's {probe['first_mrr@10']:.3f}" in block
    assert f"hurt {probe['hurt']}." in block


def test_a_tie_with_never_escalating_names_every_tied_rate_and_the_choice_of_rate_0():
    text = result_markdown(selection(), sweep([("margin", 0.0, 0.8, 0, 0), ("margin", 0.05, 0.79, 1, 2),
                                               ("top_score", 0.05, 0.8, 0, 0), ("top_score", 0.1, 0.8, 0, 0)]))
    assert text.startswith("The probe escalated all 20 dev questions: the escalated answer scored MRR@10 0.750 "
                           "against the first pass's 0.800; escalation helped 3 questions and hurt 7.")
    assert "No nonzero rate beat never escalating: the best, top_score at 5% and 10% (0 helped, 0 hurt)" in text
    assert "**rate 0** (`escalate_threshold: -.inf`)" in text


def test_a_gain_inside_the_tie_and_a_chosen_rate_are_told_apart():
    inside = result_markdown(selection(), sweep([("margin", 0.0, 0.8, 0, 0), ("margin", 0.05, 0.801, 1, 0)]))
    assert re.search(r"margin at 5% \(1 helped, 0 hurt\), was 0\.0010 above never escalating \(0\.800\), "
                     r"inside the 0\.002 tie", inside)
    chosen = result_markdown(selection(rate=0.1, signal="dense_top", threshold=0.46),
                             sweep([("dense_top", 0.0, 0.8, 0, 0), ("dense_top", 0.1, 0.81, 2, 0)]))
    assert "0.0100 above never escalating (0.800); the rule chose" in chosen and "inside" not in chosen
    assert "**dense_top at 10%** (`escalate_signal: dense_top`, `escalate_threshold: 0.46`)" in chosen
    below = result_markdown(selection(), sweep([("margin", 0.0, 0.8, 0, 0), ("margin", 0.05, 0.79, 0, 1)]))
    assert "Every nonzero rate scored below never escalating (0.800); the best, margin at 5% (0 helped, 1 hurt), " \
           "by 0.0100" in below


def test_update_doc_rewrites_only_the_block(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "escalation_selection.json").write_text(json.dumps(selection(helped=1, hurt=4)))
    sweep([("margin", 0.0, 0.8, 0, 0), ("margin", 0.05, 0.79, 0, 1)]).to_csv(dev / "escalation_sweep.csv", index=False)
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Title\nbefore\n{MARKERS[0]}\nold words\n{MARKERS[1]}\nafter\n")
    assert update_doc(doc, dev)
    text = doc.read_text()
    assert text.startswith("# Title\nbefore\n") and text.endswith(f"{MARKERS[1]}\nafter\n")
    assert "old words" not in text and "helped 1 question and hurt 4." in text
    assert not update_doc(doc, dev)  # nothing new to write
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert not update_doc(plain, dev) and plain.read_text() == "no markers\n"


def test_profile_comments_quote_the_saved_probe():
    """A profile's escalate_threshold comment that quotes the probe's counts quotes the saved ones."""
    probe = json.loads((DEV_DIR / "escalation_selection.json").read_text())["probe"]
    quoted = 0
    for path in sorted((DOC.parent.parent / "profiles").glob("*.yaml")):
        for line in path.read_text(encoding="utf-8").splitlines():
            found = re.search(r"^escalate_threshold:.*#.*helped (\d+) and hurt (\d+)", line)
            if found:
                quoted += 1
                assert (int(found[1]), int(found[2])) == (probe["helped"], probe["hurt"]), f"profiles/{path.name}: {line}"
    assert quoted  # the offline, dev and pilot profiles quote them
