"""Live question generation, run against replies in the Claude Messages API's shape.

The reply bodies are stored under tests/data/anthropic_*.json (id, type, role, model, content,
stop_reason, stop_details, usage) and handed out, in order, by a fake client behind the real
:class:`lib.llm.AnthropicBackend` and :class:`lib.llm.RecordedLLM`. They were written for these tests
in the shape the API returns for Claude Sonnet 5.5, not recorded from a paid run. The four source
papers are real arXiv papers (CC0 metadata, abstracts shortened).
"""
import json
import re
from pathlib import Path

import pytest

import lib.data.question_gen as qg
from lib.config import load_profile
from lib.errors import DataError
from lib.llm import RecordedLLM, RecordStore
from lib.llm.anthropic_backend import AnthropicBackend
from lib.llm.cost import BudgetExceeded
from lib.data.question_gen import (MALFORMED_REVIEW, QUESTION_LENGTH, REFUSED_QUESTION, STYLE_INSTRUCTIONS, Review,
                                   count_events, generate_question_set, neighbours_from_manifest, parse_question_reply,
                                   parse_review_reply, project_question_cost, question_request, review_question)
from tests.fakes import FakeClient, reply_body
from lib.data.questions import QUESTION_FIELDS, read_questions, write_questions

DATA = Path(__file__).parent / "data"
WRITER = REVIEWER = "claude-sonnet-5-5"  # the article profile writes and reviews with Claude Sonnet 5.5


def paper(pid, title, abstract):
    return {"id": pid, "title": title, "abstract": abstract}


SOURCES = [
    paper("2607.19371", "Mitigating Scaffolding Collapse in Socratic Tutors via Representation Alignment",
          "Large language model (LLM)-based Socratic tutors increasingly guide students through multi-turn "
          "questioning, but they can suffer from scaffolding collapse: under sustained student pressure, a tutor "
          "gradually abandons guided inquiry and reveals solutions directly. We propose Scaffold-Preserving "
          "Representation Alignment, a two-stage framework that first warms up a Socratic tutor with supervised "
          "fine-tuning, then combines trajectory-weighted direct preference optimization with a margin-preserving "
          "representation loss anchored to frozen reference states."),
    paper("2607.06223", "Information Gain-based Rollout Policy Optimization: An Adaptive Tree-Structured Rollout "
          "Approach for Multi-Turn LLM Agents",
          "Reinforcement learning has become a promising paradigm for improving large language model (LLM) agents "
          "on long-horizon search tasks. However, the rollout budget is often allocated without explicitly "
          "assessing the utility of intermediate states. We propose Information Gain-based Rollout Policy "
          "Optimization (IGRPO), which treats intermediate-state informativeness as the signal for expansion."),
    paper("2607.22676", "How LLM Task-Adaptation Reshapes Alignment: A Multi-dimensional Study of Behavioral and "
          "Representational Drift",
          "Post-training is a key mechanism for adapting large language models to downstream tasks. We evaluate "
          "supervised fine-tuning (SFT), KL-regularized SFT, and reinforcement learning with verifiable rewards "
          "(RLVR) across 15 alignment aspects spanning six key domains. SFT causes substantially larger alignment "
          "drift than RLVR."),
    paper("2608.14940", "When Is an Agent Evaluation Over? Outcome Finality and Cross-Unit Separation",
          "Current agent evaluations score models on the state visible at the end of a stopped run which they "
          "count as one trial. Interpreting the score as a final result requires outcome finality and cross-unit "
          "separation. We propose an open-effects record."),
]
NEIGHBOURS = {  # the 3 nearest other papers of each source (titles real, abstracts shortened)
    "2607.19371": [
        paper("2602.07639", "Letting Tutor Personas \"Speak Up\" for LLMs", "Steering vectors for tutor personas."),
        paper("2607.03303", "Reflective Dialogue or Prompt Refinement?", "Tutor scaffolding and student LLM use."),
        paper("2507.16252", "Efficient RL for optimizing conversation level outcomes with an LLM-based tutor",
              "Conversation-level RL for tutors."),
        paper("2606.11744", "FOURTH NEIGHBOUR NOT SHOWN", "This one is beyond the 3 nearest.")],
    "2607.06223": [
        paper("2606.11119", "TRACE: A Unified Rollout Budget Allocation Framework", "Budget allocation, agentic RL."),
        paper("2607.15610", "Process Reward Informed Tree Rollout for Effective Multi-Turn RL", "Tree rollouts."),
        paper("2601.06922", "TreePS-RAG", "Tree-based process supervision for agentic RAG.")],
    "2607.22676": [
        paper("2605.01913", "RefusalGuard", "Geometry-preserving fine-tuning for safety."),
        paper("2601.12639", "Objective Matters", "Fine-tuning objectives shape safety and persona drift."),
        paper("2512.20760", "Generalization of RLVR Using Causal Reasoning as a Testbed", "RLVR generalization.")],
    "2608.14940": [
        paper("2605.10448", "Can Agent Benchmarks Support Their Scores?", "Evidence-supported bounds."),
        paper("2607.22682", "A Vocabulary for Multi-Agent Automated Research Systems", "A vocabulary."),
        paper("2606.01365", "Early Diagnosis of Wasted Computation in Multi-Agent LLM Systems", "Observability.")],
}
WRITER_REPLIES = ["question_tutor_json", "question_rollout_plain", "question_drift_copy", "question_drift_fixed",
                  "question_agenteval_fenced"]
REVIEWER_REPLIES = ["review_tutor_pass", "review_rollout_fail", "review_drift_cut", "review_agenteval_pass"]


def reply_text(name):
    return reply_body(name)["content"][0]["text"]


def recorded(model, client, directory):
    return RecordedLLM(AnthropicBackend(model, client=client), RecordStore(directory), backend_name="anthropic",
                       model=model)


def run_set(tmp_path, writer_replies=WRITER_REPLIES, reviewer_replies=REVIEWER_REPLIES, sources=SOURCES, **kw):
    writer_client, reviewer_client = FakeClient(*writer_replies), FakeClient(*reviewer_replies)
    rows, log = generate_question_set(recorded(WRITER, writer_client, tmp_path / "writer"),
                                      recorded(REVIEWER, reviewer_client, tmp_path / "reviewer"),
                                      sources, NEIGHBOURS, "test-generator", progress=kw.pop("progress", False),
                                      **kw)
    return rows, log, writer_client.messages.calls, reviewer_client.messages.calls


def user_text(params):
    assert len(params["messages"]) == 1 and params["messages"][0]["role"] == "user"
    return params["messages"][0]["content"]


# ------------------------------------------------------------------------------------ the set
def test_rows_have_exactly_the_question_fields(tmp_path):
    rows, _, _, _ = run_set(tmp_path)
    assert [list(r) for r in rows] == [QUESTION_FIELDS] * 4
    assert [r["qid"] for r in rows] == ["q001", "q002", "q003", "q004"]
    assert [r["source_id"] for r in rows] == [s["id"] for s in SOURCES]
    assert {r["generator"] for r in rows} == {"test-generator"}
    write_questions(rows, tmp_path / "questions.csv")  # the file the pipeline reads
    back = read_questions(tmp_path / "questions.csv", known_ids=[s["id"] for s in SOURCES])
    assert [(r["qid"], r["ok"], r["question"]) for r in back] == [(r["qid"], r["ok"], r["question"]) for r in rows]


def test_styles_rotate_in_source_order(tmp_path):
    rows, _, writer_calls, _ = run_set(tmp_path)
    assert [r["style"] for r in rows] == ["specific", "problem", "vague", "specific"]
    prompts = [user_text(c) for c in writer_calls]
    for prompt, style in zip(prompts, ["specific", "problem", "vague", "vague", "specific"]):
        assert STYLE_INSTRUCTIONS[style] in prompt
        assert sum(instruction in prompt for instruction in STYLE_INSTRUCTIONS.values()) == 1


def test_one_length_rule_for_every_style_as_the_article_s_questions():
    # the article's questions ran 14-54 words (median 32), its "vague" example 28: no style has its own cap
    prompts = {style: user_text_of(question_request("T", "A", style)) for style in STYLE_INSTRUCTIONS}
    for style, prompt in prompts.items():
        assert prompt.count(QUESTION_LENGTH) == 1 and "about 15 to 55 words" in QUESTION_LENGTH
        assert not re.search(r"\b(fewer|less) than \d+ words|20-45|under \d+ words", prompt, re.I), style
        assert not re.search(r"\d+ words", STYLE_INSTRUCTIONS[style]), style  # the style says how, not how long
    assert "short" not in STYLE_INSTRUCTIONS["vague"]


def user_text_of(request):
    (role, text), = request.messages
    assert role == "user"
    return text


def test_writer_prompt_title_and_abstract_only(tmp_path):
    _, _, writer_calls, _ = run_set(tmp_path)
    first = writer_calls[0]
    assert first["model"] == WRITER and not {"temperature", "top_p", "top_k"} & set(first)
    assert first["thinking"] == {"type": "between_tools"} and first["output_config"] == {"effort": "low"}
    assert first["messages"][-1]["role"] == "user"  # no assistant prefill
    prompt = user_text(first)
    assert SOURCES[0]["title"] in prompt and SOURCES[0]["abstract"] in prompt
    assert not any(n["title"] in prompt for n in NEIGHBOURS[SOURCES[0]["id"]])
    assert "4 or more consecutive words from the title" in prompt
    assert '{"question": "...", "short": "<2-5 search keywords>"}' in prompt


def test_json_reply_parsed(tmp_path):
    rows, _, _, _ = run_set(tmp_path)
    expected = json.loads(reply_text("question_tutor_json"))
    assert (rows[0]["question"], rows[0]["short"]) == (expected["question"], expected["short"])
    fenced = json.loads(reply_text("question_agenteval_fenced").removeprefix("```json").removesuffix("```"))
    assert (rows[3]["question"], rows[3]["short"]) == (fenced["question"], fenced["short"])


def test_plain_text_reply_accepted_and_counted(tmp_path):
    rows, log, _, _ = run_set(tmp_path)
    assert rows[1]["question"] == reply_text("question_rollout_plain")
    assert rows[1]["short"] == ""
    plain = [e for e in log if e["event"] == "plain_text_reply"]
    assert [(e["qid"], e["attempt"]) for e in plain] == [("q002", 1)]
    assert count_events(log)["plain_text_reply"] == 1


def test_copying_reply_regenerated_and_logged(tmp_path):
    rows, log, writer_calls, _ = run_set(tmp_path)
    copy = json.loads(reply_text("question_drift_copy"))
    fixed = json.loads(reply_text("question_drift_fixed"))
    assert rows[2]["question"] == fixed["question"]
    assert [e for e in log if e["event"] == "regenerated"] == [
        {"event": "regenerated", "qid": "q003", "attempt": 2, "copied": ["task adaptation reshapes alignment"],
         "previous_question": copy["question"]}]
    first, second = user_text(writer_calls[2]), user_text(writer_calls[3])
    assert "earlier question repeated" not in first
    assert second.startswith(first) and '"task adaptation reshapes alignment"' in second[len(first):]
    assert len(writer_calls) == 5


def test_review_verdicts_in_rows(tmp_path):
    rows, log, _, reviewer_calls = run_set(tmp_path)
    assert [r["ok"] for r in rows] == [1, 0, 0, 1]
    assert rows[0]["review_note"] == json.loads(reply_text("review_tutor_pass"))["reason"]
    assert rows[1]["review_note"].startswith("Paper 1 (TRACE) also allocates")
    assert rows[2]["review_note"] == "the reviewer's reply was cut at max_tokens (stop_reason max_tokens)"
    assert [(e["qid"], e["step"]) for e in log if e["event"] == "max_tokens"] == [("q003", "review")]
    assert count_events(log) == {"plain_text_reply": 1, "regenerated": 1, "max_tokens": 1}
    review_prompt = user_text(reviewer_calls[0])
    assert reviewer_calls[0]["model"] == REVIEWER and "temperature" not in reviewer_calls[0]
    assert rows[0]["question"] in review_prompt and SOURCES[0]["abstract"] in review_prompt
    assert all(n["abstract"] in review_prompt for n in NEIGHBOURS[SOURCES[0]["id"]][:3])
    assert "FOURTH NEIGHBOUR NOT SHOWN" not in review_prompt


def test_calls_are_recorded_by_kind_and_a_rerun_replays(tmp_path, capsys):
    rows, log, _, _ = run_set(tmp_path, progress=True)
    assert "questions: 100%" in capsys.readouterr().err  # the tqdm bar
    assert len((tmp_path / "writer" / "question.jsonl").read_text().splitlines()) == 5
    assert len((tmp_path / "reviewer" / "review.jsonl").read_text().splitlines()) == 4
    again_rows, again_log, writer_calls, reviewer_calls = run_set(tmp_path, writer_replies=(), reviewer_replies=())
    assert (writer_calls, reviewer_calls) == ([], [])
    assert (again_rows, again_log) == (rows, log)


def test_still_copying_after_max_tries_is_kept_not_ok(tmp_path):
    rows, log, writer_calls, reviewer_calls = run_set(
        tmp_path, writer_replies=["question_drift_copy"] * 3, reviewer_replies=(), sources=[SOURCES[2]], max_tries=2)
    assert len(writer_calls) == 3 and reviewer_calls == []
    assert len({user_text(c) for c in writer_calls}) == 3  # each regeneration is a new request
    assert rows[0]["question"] == json.loads(reply_text("question_drift_copy"))["question"]
    assert rows[0]["ok"] == 0
    assert rows[0]["review_note"].startswith("still copies title words after 2 regenerations")
    assert "task adaptation reshapes alignment" in rows[0]["review_note"]
    assert [e["attempt"] for e in log if e["event"] == "regenerated"] == [2, 3]
    assert count_events(log) == {"regenerated": 2, "still_copying": 1}


def test_an_empty_reply_is_kept_not_ok_and_not_reviewed(tmp_path):
    empty = reply_body("question_rollout_plain")
    empty["content"][0]["text"] = "  "
    rows, log, _, reviewer_calls = run_set(tmp_path, writer_replies=[empty], reviewer_replies=(),
                                           sources=[SOURCES[1]])
    assert reviewer_calls == [] and rows[0]["ok"] == 0
    assert rows[0]["question"]  # never empty: read_questions would refuse the file
    assert "empty" in rows[0]["review_note"]
    assert count_events(log) == {"plain_text_reply": 1, "empty_reply": 1}


def test_a_source_without_neighbours_is_an_error(tmp_path):
    orphan = paper("2609.00001", "An Orphan Paper", "No neighbours were computed for it.")
    with pytest.raises(DataError, match="2609.00001"):
        run_set(tmp_path, sources=[orphan])


# ------------------------------------------------------------------------------------ review
@pytest.mark.parametrize("name, ok, malformed, stop", [("review_tutor_pass", True, False, ""),
                                                       ("review_rollout_fail", False, False, ""),
                                                       ("review_drift_malformed", False, True, ""),
                                                       ("review_drift_cut", False, False, "max_tokens"),
                                                       ("question_refusal", False, False, "refusal")])
def test_review_question(tmp_path, name, ok, malformed, stop):
    client = FakeClient(name)
    review = review_question(recorded(REVIEWER, client, tmp_path), "a question?", SOURCES[0],
                             NEIGHBOURS[SOURCES[0]["id"]])
    assert (review.ok, review.malformed, review.stop_reason) == (ok, malformed, stop)
    if stop == "refusal":
        assert review.reason == "the reviewer refused (stop_reason refusal, category frontier_llm)"
    elif stop:
        assert review.reason.startswith("the reviewer's reply was cut at max_tokens")
    else:
        assert review.reason == (MALFORMED_REVIEW if malformed else json.loads(reply_text(name))["reason"])
    assert len(client.messages.calls) == 1
    assert len((tmp_path / "review.jsonl").read_text().splitlines()) == 1  # the malformed reply is recorded too


@pytest.mark.parametrize("text", ['{"ok": "yes", "reason": "fine"}', "Looks good to me.", '{"reason": "no ok"}', ""])
def test_review_replies_that_are_not_the_expected_json_fail(text):
    assert parse_review_reply(text) == Review(ok=False, reason=MALFORMED_REVIEW, malformed=True, reply=text)


# ------------------------------------------------------------------------------------ parsing
@pytest.mark.parametrize("text, question, short, plain", [
    ('{"question": "What is X?", "short": "x y"}', "What is X?", "x y", False),
    ('```json\n{"question": "What is X?",\n "short": "x y"}\n```', "What is X?", "x y", False),
    ('Here is the question:\n{"question": "What is X?", "short": ["x", "y"]}', "What is X?", "x y", False),
    ('{"question": "What\n is X?"}', "What is X?", "", False),
    ('"Which paper studies X\nunder Y?"', "Which paper studies X under Y?", "", True),
])
def test_parse_question_reply(text, question, short, plain):
    parsed = parse_question_reply(text)
    assert (parsed.question, parsed.short, parsed.plain_text_reply) == (question, short, plain)


def test_unknown_style_is_refused():
    with pytest.raises(ValueError, match="style"):
        question_request("T", "A", "rhetorical")


def test_neighbours_from_manifest_takes_the_three_nearest():
    papers = [paper(f"p{i}", f"T{i}", f"A{i}") for i in range(6)]
    manifest = {"lookalikes": {"p0": [["p3", 0.5], ["p1", 0.4], ["p5", 0.3], ["p2", 0.2]]}}
    assert [p["id"] for p in neighbours_from_manifest(manifest, papers)["p0"]] == ["p3", "p1", "p5"]
    with pytest.raises(DataError, match="p9"):
        neighbours_from_manifest({"lookalikes": {"p0": [["p9", 0.5]]}}, papers)


# ------------------------------------------------------------------------------------ stop reasons
def test_a_malformed_review_in_the_set_is_counted(tmp_path):
    replies = ["review_tutor_pass", "review_rollout_fail", "review_drift_malformed", "review_agenteval_pass"]
    rows, log, _, _ = run_set(tmp_path, reviewer_replies=replies)
    assert rows[2]["review_note"] == MALFORMED_REVIEW and rows[2]["ok"] == 0
    assert count_events(log) == {"plain_text_reply": 1, "regenerated": 1, "malformed_review": 1}


def test_a_refused_question_marks_the_row_and_the_run_goes_on(tmp_path):
    rows, log, writer_calls, reviewer_calls = run_set(
        tmp_path, writer_replies=["question_refusal", "question_rollout_plain"],
        reviewer_replies=["review_rollout_fail"], sources=SOURCES[:2])
    assert len(writer_calls) == 2 and len(reviewer_calls) == 1  # no regeneration, no review of the refusal
    assert (rows[0]["question"], rows[0]["ok"]) == (REFUSED_QUESTION, 0)
    assert rows[0]["review_note"] == "the writer refused (stop_reason refusal, category frontier_llm); not reviewed"
    assert rows[1]["question"] == reply_text("question_rollout_plain")  # the next source is written as usual
    assert [e for e in log if e["event"] == "refusal"] == [
        {"event": "refusal", "qid": "q001", "step": "question", "attempt": 1, "category": "frontier_llm"}]
    write_questions(rows, tmp_path / "questions.csv")  # the marked row still makes a readable file
    assert [r["ok"] for r in read_questions(tmp_path / "questions.csv", known_ids=[s["id"] for s in SOURCES])] == [0, 0]
    # a rerun replays the refusal from the record: same rows, no call
    again, again_log, calls, _ = run_set(tmp_path, writer_replies=(), reviewer_replies=(), sources=SOURCES[:2])
    assert (again, again_log, calls) == (rows, log, [])


def test_a_question_cut_at_max_tokens_marks_the_row(tmp_path):
    cut = reply_body("question_tutor_json")
    cut["content"][0]["text"] = '{"question": "How can an LLM Socratic tutor be kept from handing out answers'
    cut["stop_reason"] = "max_tokens"
    rows, log, writer_calls, reviewer_calls = run_set(tmp_path, writer_replies=[cut], reviewer_replies=(),
                                                      sources=SOURCES[:1])
    assert len(writer_calls) == 1 and reviewer_calls == [] and rows[0]["ok"] == 0
    assert rows[0]["review_note"] == "the writer's reply was cut at max_tokens (stop_reason max_tokens); not reviewed"
    assert count_events(log) == {"max_tokens": 1}


# ------------------------------------------------------------------------------------ cost before calling
def test_the_projected_cost_of_a_set(tmp_path):
    llm = recorded(WRITER, FakeClient(), tmp_path)
    proj = project_question_cost(llm, SOURCES, NEIGHBOURS)
    assert proj["calls"] == 8 and proj["already_recorded"] == 0 and proj["usd"] > 0
    assert proj["batch_usd"] == pytest.approx(proj["usd"] / 2)
    run_set(tmp_path)  # records every call in tmp_path/writer and tmp_path/reviewer
    done = recorded(WRITER, FakeClient(), tmp_path / "writer")
    assert project_question_cost(done, SOURCES, NEIGHBOURS)["calls"] == 0  # recorded writes replay for free


def article_with_collection(tmp_path, **overrides):
    papers = SOURCES + [n for ns in NEIGHBOURS.values() for n in ns]
    manifest = {"source_order": [s["id"] for s in SOURCES],
                "lookalikes": {sid: [[n["id"], 0.9 - i / 10] for i, n in enumerate(ns)] for sid, ns in NEIGHBOURS.items()}}
    (tmp_path / "collection_manifest.json").write_text(json.dumps(manifest))
    profile = load_profile("article", data_dir=str(tmp_path), questions_path=str(tmp_path / "questions.csv"),
                           results_dir=str(tmp_path / "results"), **overrides)  # all it writes in the scratch folder
    return profile, papers


def test_generation_stops_before_any_call_when_over_max_cost_usd(tmp_path, monkeypatch, capsys):
    client = FakeClient(*WRITER_REPLIES)
    monkeypatch.setattr(qg, "question_llm", lambda profile: recorded(WRITER, client, tmp_path / "rec"))
    profile, papers = article_with_collection(tmp_path, max_cost_usd=0.0001)
    with pytest.raises(BudgetExceeded, match=r"above max_cost_usd = \$0.00.*Nothing was sent.*max_cost_usd"):
        qg.generate_for_profile(profile, papers, progress=False)
    assert client.messages.calls == [] and "8 calls" in capsys.readouterr().out


def test_generation_within_budget_writes_the_set(tmp_path, monkeypatch):
    client = FakeClient(*[x for pair in zip(WRITER_REPLIES[:2], REVIEWER_REPLIES[:2]) for x in pair],
                        WRITER_REPLIES[2], WRITER_REPLIES[3], REVIEWER_REPLIES[2], WRITER_REPLIES[4], REVIEWER_REPLIES[3])
    monkeypatch.setattr(qg, "question_llm", lambda profile: recorded(WRITER, client, tmp_path / "rec"))
    profile, papers = article_with_collection(tmp_path)
    path = qg.generate_for_profile(profile, papers, progress=False)
    assert [r["qid"] for r in read_questions(path, known_ids=[p["id"] for p in papers])] == ["q001", "q002", "q003", "q004"]


def test_the_question_llm_uses_the_profile_question_settings(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    llm = qg.question_llm(load_profile("article"))
    assert (llm.model, llm.backend.thinking, llm.backend.effort) == (WRITER, "between_tools", "low")
    llm = qg.question_llm(load_profile("article", question_effort="medium"))
    assert llm.backend.build_params(question_request("T", "A", "vague"))["output_config"] == {"effort": "medium"}
