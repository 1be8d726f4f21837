"""The tool-calling loop's prompt variants (``loop_prompt``) and the question-first loop
(``loop_question_first``): the opening of each variant in both prompt styles, the question-first
loop with the scripted stub over a small collection (fixed lists), as Claude's API receives it
(the SDK over a scripted transport), its caps and its record; provenance and record checks unchanged
for ``one_example``; the loss and report code reading it; and the dev-set choice rule
(``lib.evaluation.loop_selection``) on hand-made tables. No model, no embedder."""
import json
from types import SimpleNamespace

import httpx2
import pytest

from lib import pipeline
from lib.report import queries
from lib.config import ROOT, load_profile
from lib.designs import REGISTRY, Question, Result, design_names
from lib.designs.loop import (CODE_CALL_ID, LoopDesign, LoopQuestionFirstDesign, code_searches, model_queries,
                              ranked_list)
from lib.errors import DataError, ProfileError
from lib.evaluation import loop_selection as sel
from lib.evaluation import loss
from lib.llm import RecordedLLM, RecordStore, prompts
from lib.llm.anthropic_backend import AnthropicBackend
from lib.llm.stubs import ScriptedLoopModel, StubLLM
from lib.llm.tools import chat_messages, json_call_text
from lib.runs import RecordCheck, inputs_key, read_results
from lib.report import why
from tests.fakes import ListSearcher, Spy, mock_sdk_client, reply_body

PAPERS = {f"2607.{i:05d}": (f"Title {i}", f"Abstract of paper {i}.") for i in range(1, 13)}
IDS = list(PAPERS)
Q = Question("q001", "Which paper allocates a rollout budget by information gain?", IDS[2])
LISTS = {Q.text: [IDS[2], IDS[0], IDS[5], IDS[1], IDS[7], IDS[3], IDS[9]],
         "budgeted rollouts": [IDS[4], IDS[2], IDS[6], IDS[8], IDS[10], IDS[11]]}


def make(cls=LoopDesign, style="local", prompt="one_example", **caps):
    from lib.designs.loop import Caps

    llm = Spy(StubLLM(ScriptedLoopModel()))
    return cls(ListSearcher(LISTS), llm, PAPERS, style, Caps(**caps), k=50, prompt=prompt), llm


# ------------------------------------------------------------------------------ the prompt variants
def test_each_prompt_variant_opens_with_its_worked_examples_and_claude_gets_none():
    ask = ("user", f"Question: {Q.text}")
    local = {p: make(prompt=p)[0].opening(Q) for p in prompts.LOOP_PROMPTS}
    assert local["one_example"] == list(prompts.LOOP_EXAMPLE) + [ask]
    assert local["no_example"] == [ask]
    assert local["two_examples"] == list(prompts.LOOP_EXAMPLE) + list(prompts.LOOP_EXAMPLE_SEARCH_AGAIN) + [ask]
    for p in prompts.LOOP_PROMPTS:  # Claude's prompt has no worked example: the three are one prompt
        d, _ = make(style="anthropic", prompt=p)
        assert d.opening(Q) == [ask] and d.system == make(style="anthropic")[0].system
    assert len({make(prompt=p)[0].system for p in prompts.LOOP_PROMPTS}) == 1  # the system prompt is shared
    with pytest.raises(ValueError, match="loop_prompt must be one of"):
        make(prompt="three_examples")


def test_the_second_example_searches_twice_reads_and_cites_two_ids_best_first():
    ex = prompts.LOOP_EXAMPLE_SEARCH_AGAIN
    assert [role for role, _ in ex] == ["user", "assistant"] * 4
    calls = [json.loads(text) for role, text in ex if role == "assistant"]
    assert [c["tool"] for c in calls] == ["search", "search", "read", "answer"]
    assert calls[0]["query"] != calls[1]["query"]
    results = [text for role, text in ex[1:] if role == "user"]
    first, second = results[0], results[1]
    cited = calls[3]["ids"]
    assert len(cited) == 2 and cited[0] == calls[2]["paper_id"]
    assert not any(f"[{i}]" in first for i in cited)          # the first search missed the paper
    assert all(f"[{i}]" in second for i in cited)             # the second showed both, best first
    assert second.index(f"[{cited[0]}]") < second.index(f"[{cited[1]}]")
    assert results[2].startswith(f"[{cited[0]}] ")            # the read result, as the read tool writes it
    # in the format of the first example: the tool results as the tools write them, calls as JSON calls
    assert first == prompts.loop_search_result(calls[0]["query"], _hits(first))
    assert ex[0][1].startswith("Question: ") and prompts.LOOP_EXAMPLE[0][1].startswith("Question: ")


def _hits(text):
    out = []
    for line in text.splitlines()[1:]:
        pid, title = line.split("] ", 1)
        out.append((pid.split("[", 1)[1], title))
    return out


def test_the_first_request_of_every_variant_is_what_the_loop_asks():
    for cls in (LoopDesign, LoopQuestionFirstDesign):
        for style in ("local", "anthropic"):
            for p in prompts.LOOP_PROMPTS:
                d, llm = make(cls, style, p)
                first = d.first_requests([Q], [1, 2])
                d.retrieve(Q, run=1)
                assert first[0].key() == llm.requests[0].key() and [r.run for r in first] == [1, 2]


# ------------------------------------------------------------------------------ the question-first loop
@pytest.mark.parametrize("style", ["local", "anthropic"])
def test_question_first_opens_with_the_codes_search_as_a_tool_exchange(style):
    d, _ = make(LoopQuestionFirstDesign, style)
    messages, st = d.start(Q)
    top = LISTS[Q.text][:5]
    result = prompts.loop_search_result(Q.text, [(i, PAPERS[i][0]) for i in top])
    opening = d.opening(Q)
    assert messages[:len(opening)] == opening
    assert messages[len(opening):] == [
        ("assistant", ({"type": "tool_use", "id": CODE_CALL_ID, "name": "search", "input": {"query": Q.text}},)),
        ("user", ({"type": "tool_result", "tool_use_id": CODE_CALL_ID, "content": result},))]
    assert (st.lists, st.queries, st.seen) == ([LISTS[Q.text]], [Q.text], top)
    assert [(s["kind"], s["decided_by"], s["title"]) for s in st.trace] == [("code", "code", "search")]
    if style == "local":  # as the local model reads it: its own JSON call, then the tool's text
        rendered = chat_messages(d.system, messages)[-2:]
        assert rendered == [{"role": "assistant", "content": json_call_text("search", {"query": Q.text})},
                            {"role": "user", "content": result}]
        # exactly as the model-first loop writes its own search turn
        plain, llm = make(LoopDesign, style)
        plain.retrieve(Q)
        own = chat_messages(plain.system, llm.requests[1].messages)[-2:]
        assert own == rendered


@pytest.mark.parametrize("style", ["local", "anthropic"])
def test_question_first_with_the_scripted_stub_reads_and_cites_in_two_turns(style):
    d, llm = make(LoopQuestionFirstDesign, style)
    r = d.retrieve(Q, run=2)
    top = LISTS[Q.text]
    assert (r.design, r.stop_reason, r.llm_calls, r.searches, r.run) == ("loop_question_first", "stop", 2, 1, 2)
    assert r.queries == [Q.text, Q.text] and model_queries(r) == [] and code_searches(r) == 1
    assert r.details["citations"] == [top[0]] and r.details["read"] == [top[0]] and r.details["turns"] == 2
    assert r.details["code_searches"] == 1 and r.details["shown"] == top[:5]
    assert r.ranked_ids == ranked_list([top[0]], [top])  # the loop's rule, the question's list among the searches
    assert [(s["kind"], s["decided_by"], s["title"]) for s in r.trace] == [
        ("code", "code", "search"), ("model", "model", "calls read"), ("code", "model", "read"),
        ("model", "model", "answer"), ("code", "code", "ranked list")]
    assert r.trace[0]["detail"] == f'"{Q.text}" -> ' + ", ".join(top[:5])
    assert all(req.kind == "loop_question_first" and req.tool_choice == "auto" for req in llm.requests)
    if style == "local":  # the first turn may already read what the code's search showed
        assert llm.requests[0].grammar.startswith("root ::= search | read | answer") and top[0] in llm.requests[0].grammar


def test_the_codes_search_takes_no_model_turn_but_its_tokens_count():
    qf, _ = make(LoopQuestionFirstDesign, max_steps=2)
    plain, _ = make(LoopDesign, max_steps=2)
    a, b = qf.retrieve(Q), plain.retrieve(Q)
    assert (a.stop_reason, a.llm_calls, a.details["read"]) == ("step_cap", 2, [LISTS[Q.text][0]])  # read, then answer
    assert (b.stop_reason, b.llm_calls, b.details["read"]) == ("step_cap", 2, [])  # its first turn was the search
    # the budget: the code's search is in the first prompt; with no room even for the answer, the loop
    # makes no call, cites nothing, and the question's own list still ranks
    first_qf, first_plain = qf.first_requests([Q], [1])[0], plain.first_requests([Q], [1])[0]
    assert len(json.dumps(first_qf.messages)) > len(json.dumps(first_plain.messages))
    tiny, llm = make(LoopQuestionFirstDesign, max_tokens=1000)
    r = tiny.retrieve(Q)
    assert (r.stop_reason, r.details["final_by"], r.llm_calls, llm.requests) == ("token_budget", "code", 0, [])
    assert r.ranked_ids == LISTS[Q.text] and r.searches == 1
    # at a budget where the plain loop still makes its first turn, the question-first one may not
    seen = {(make(LoopDesign, max_tokens=t)[0].retrieve(Q).llm_calls > 0,
             make(LoopQuestionFirstDesign, max_tokens=t)[0].retrieve(Q).llm_calls > 0) for t in range(1000, 5000, 20)}
    assert (True, False) in seen and (False, True) not in seen


def test_question_first_as_claudes_api_receives_it(tmp_path):
    seen = []

    def handler(request):
        seen.append(json.loads(request.content))
        return httpx2.Response(200, json=reply_body("loop_answer"))

    papers = {"2607.06223": ("Information-Gain Rollout Allocation", "We allocate rollouts ..."),
              **{f"2607.1000{i}": (f"Other paper {i}", "Other abstract.") for i in range(5)}}
    q = Question("q002", "How should LLM search agents spend a limited rollout budget?", "2607.06223")
    lists = {q.text: ["2607.10000", "2607.06223", "2607.10001", "2607.10002", "2607.10003", "2607.10004"]}
    backend = AnthropicBackend("claude-haiku-5-5", client=mock_sdk_client(handler))
    llm = RecordedLLM(backend, RecordStore(tmp_path), backend_name="anthropic", model="claude-haiku-5-5")
    r = LoopQuestionFirstDesign(ListSearcher(lists), llm, papers, "anthropic").retrieve(q)
    (sent,) = seen
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][0] == {"role": "user", "content": f"Question: {q.text}"}
    call = sent["messages"][1]["content"][0]
    assert call == {"type": "tool_use", "id": CODE_CALL_ID, "name": "search", "input": {"query": q.text}}
    result = sent["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == call["id"]
    assert result["content"].splitlines()[2] == "2. [2607.06223] Information-Gain Rollout Allocation"
    assert (r.llm_calls, r.searches, r.details["citations"]) == (1, 1, ["2607.06223"])
    assert (tmp_path / "loop_question_first.jsonl").exists()  # its own record kind


def test_the_question_first_loop_is_registered_after_the_loop():
    assert REGISTRY["loop_question_first"] is LoopQuestionFirstDesign and issubclass(LoopQuestionFirstDesign, LoopDesign)
    assert design_names().index("loop_question_first") == design_names().index("loop") + 1
    assert LoopQuestionFirstDesign.settings == LoopDesign.settings and LoopQuestionFirstDesign.uses_llm
    assert LoopQuestionFirstDesign.record_kind == "loop_question_first" != LoopDesign.record_kind
    from lib.llm.local_backend import N_CTX_BY_KIND

    assert N_CTX_BY_KIND["loop_question_first"] == N_CTX_BY_KIND["loop"]


# ------------------------------------------------------------------------------ the setting and provenance
def test_loop_prompt_is_a_setting_of_every_profile_at_the_prompt_chosen_on_dev():
    """offline, pilot and article hold the prompt the dev rule chose; dev keeps one_example, the value its
    arms' folders are named against; any other value is a variant with its own folder."""
    import yaml

    chosen = json.loads((ROOT / "results" / "dev" / "loop_selection.json").read_text())["choice"]["loop_prompt"]
    for name, prompt in (("offline", chosen), ("pilot", chosen), ("article", chosen), ("dev", "one_example")):
        raw = yaml.safe_load((ROOT / "profiles" / f"{name}.yaml").read_text())
        assert raw["loop_prompt"] == prompt and load_profile(name).loop_prompt == prompt
    with pytest.raises(ProfileError, match="loop_prompt"):
        load_profile("offline", loop_prompt="three_examples")
    other = load_profile("offline", loop_prompt="one_example")
    assert other.results_dir.parent == load_profile("offline").results_dir / "variants"
    assert load_profile("offline", loop_prompt=chosen).overrides == {}  # the profile's own: the shipped folder


def test_from_parts_takes_the_prompt_and_the_profile_chooses_it():
    for prompt in prompts.LOOP_PROMPTS:
        p = load_profile("pilot", loop_prompt=prompt, loop_backend="scripted")
        parts = SimpleNamespace(profile=p, prompt_style=lambda: "local", corpus=lambda: prompts.ARXIV,
                                searcher=ListSearcher(LISTS),
                                papers=[{"id": i, "title": t, "abstract": a} for i, (t, a) in PAPERS.items()])
        for cls in (LoopDesign, LoopQuestionFirstDesign):
            d = cls.from_parts(parts, {})
            assert d.prompt == prompt and d.examples == prompts.LOOP_PROMPTS[prompt]


@pytest.fixture(scope="module")
def offline_parts():
    cfg = load_profile("offline")
    return cfg, pipeline.ProfileParts(cfg, progress=False)


def test_loop_prompt_enters_the_provenance_only_away_from_one_example(offline_parts):
    cfg, parts = offline_parts
    earlier = load_profile("offline", loop_prompt="one_example")
    for name in ("loop", "loop_question_first"):
        assert pipeline.design_provenance(cfg, name, parts)["loop_prompt"] == cfg.loop_prompt != "one_example"
        assert "loop_prompt" not in pipeline.design_provenance(earlier, name, parts)
    assert "loop_prompt" not in pipeline.design_provenance(cfg, "agent", parts)  # the loops' setting only
    # every loop saved before the setting keeps its inputs key, in the earlier prompt's variant folder
    prov = pipeline.design_provenance(earlier, "loop", parts)
    path = pipeline.results_dir(earlier) / "loop" / "run1.jsonl"
    qs = {q.qid: q for q in pipeline.question_set(cfg, parts.papers)}
    saved = read_results(path)[:20]
    assert saved and all(r.inputs == inputs_key("loop", 1, qs[r.qid], prov) for r in saved)
    assert all(r.inputs != inputs_key("loop", 1, qs[r.qid], pipeline.design_provenance(cfg, "loop", parts))
               for r in saved)
    # and the chosen prompt's saved run holds it in its key
    now = read_results(pipeline.results_dir(cfg) / "loop_question_first" / "run1.jsonl")[:5]
    qprov = pipeline.design_provenance(cfg, "loop_question_first", parts)
    assert now and all(r.inputs == inputs_key("loop_question_first", 1, qs[r.qid], qprov) for r in now)


def test_the_record_check_accepts_saved_loops_and_refuses_them_for_another_prompt(offline_parts, tmp_path):
    cfg, parts = offline_parts
    earlier = load_profile("offline", loop_prompt="one_example")
    assert pipeline.expected_settings(earlier, "loop")["loop_prompt"] is None
    assert "loop_prompt" not in pipeline.expected_settings(cfg, "agent")
    assert pipeline.expected_settings(cfg, "loop_question_first")["loop_prompt"] == cfg.loop_prompt
    q = Question("q1", "q?", "p1")
    prov = pipeline.design_provenance(earlier, "loop", parts)
    r = Result("q1", "loop", 1, ["p1"], 1, ["q?", "q?"], 0.0, provenance=prov)
    r.inputs = inputs_key("loop", 1, q, prov)
    digests = {k: prov[k] for k in ("collection_digest", "questions_digest")}
    then = RecordCheck({"q1": q}, frozenset({"p1"}), digests, {"loop": pipeline.expected_settings(earlier, "loop")})
    then.check(tmp_path / "run1.jsonl", 1, r, "loop", 1)  # passes
    now = RecordCheck({"q1": q}, frozenset({"p1"}), digests, {"loop": pipeline.expected_settings(cfg, "loop")})
    with pytest.raises(DataError, match="provenance.loop_prompt"):
        now.check(tmp_path / "run1.jsonl", 1, r, "loop", 1)


# ------------------------------------------------------------------------------ the loss and the report
def qf_result(cites=("c",)):
    return Result("l1", "loop_question_first", 1, ["c", "a", "s"], 2, ["L1", "L1", "model query"], 0.0,
                  details={"citations": list(cites), "code_searches": 1, "read": [], "shown": ["a", "s"]})


def test_the_loss_reads_the_question_first_loop_as_searching_the_question_first():
    r = qf_result()
    assert loss.searched_queries(r) == ["L1", "model query"] and loss.written_queries(r) == ["model query"]
    assert loss.recomputed(r, [["a", "s"], ["s", "b"]]) == ranked_list(["c"], [["a", "s"], ["s", "b"]])
    old = Result("l1", "loop_question_first", 1, ["c"], 2, ["L1", "L1", "x"], 0.0, details={"citations": ["c"]})
    assert model_queries(old) == ["x"]  # from the design name when the record has no count
    assert "loop_question_first" in loss.LOSS_DESIGNS and why.DESIGN_WORDS["loop_question_first"]


def test_the_question_first_loop_is_left_out_of_the_loss_where_it_never_ran(monkeypatch):
    ran = {"b"}

    def fake(rec, cname, designs, article):
        return [loss.DesignLoss(cname, d, status="" if (d != "loop_question_first" or cname in ran) else
                                "no saved run") for d in designs]

    records = {c: loss.ConditionRecords([], {}) for c in ("a", "b")}
    monkeypatch.setattr(loss, "condition_loss", fake)
    monkeypatch.setattr(loss, "article_search_use", lambda: {})
    assert sum(x.design == "loop_question_first" for x in loss.conditions_loss(records)) == 2  # ran in b: both named
    ran.clear()
    assert {x.design for x in loss.conditions_loss(records)} == {"agent", "multiquery", "loop"}


def test_the_report_funnel_counts_only_the_models_own_queries():
    from lib.report.loop import funnel, measures

    q = Question("l1", "L1", "a")
    fq = funnel([qf_result()], [q], {"l1": ["a"]}, design="loop_question_first")
    assert fq.shown.tolist() == [True] and fq.model_searches.tolist() == [1] and fq.query_words.tolist() == [2.0]
    assert funnel([qf_result()], [q], {"l1": ["a"]}).empty  # the model-first loop's page reads only its own
    pq = measures([qf_result(["a"])], {"l1": "a"}, design="loop_question_first")
    assert pq.citation_hit.tolist() == [1.0] and pq.searches.tolist() == [2] and pq.model_searches.tolist() == [1]


# ------------------------------------------------------------------------------ the dev-set choice
def arm(hit, turns, mrr=0.5, n=10):
    return {"citation_hit_rate": hit, "turns_mean": turns, "mrr_at_10": mrr, "questions": n}


def test_the_highest_citation_hit_rate_wins_when_nothing_is_near_it():
    table = {"loop:one_example": arm(0.60, 3.0), "loop:no_example": arm(0.70, 4.0),
             "loop_question_first:one_example": arm(0.50, 2.0)}
    c = sel.choose(table)
    assert (c["arm"], c["design"], c["loop_prompt"], c["best_arm"]) == ("loop:no_example", "loop", "no_example",
                                                                        "loop:no_example")
    assert c["within_tie"] == ["loop:no_example"]


def test_within_the_tie_fewer_model_turns_win_then_hit_rate_mrr_and_the_arms_order():
    c = sel.choose({"loop:one_example": arm(0.80, 3.0), "loop_question_first:one_example": arm(0.78, 2.0),
                    "loop:two_examples": arm(0.779, 1.0)})  # 0.02 below the best is in, below that is out
    assert c["arm"] == "loop_question_first:one_example" and c["best_arm"] == "loop:one_example"
    assert "fewer model turns" in c["why"]
    assert c["within_tie"] == ["loop:one_example", "loop_question_first:one_example"]
    # equal turns: the higher citation hit rate; then the higher MRR@10; then the order of ARMS
    assert sel.choose({"loop:one_example": arm(0.80, 3.0), "loop:no_example": arm(0.79, 3.0)})["arm"] == \
        "loop:one_example"
    assert sel.choose({"loop:one_example": arm(0.80, 3.0, 0.6), "loop:no_example": arm(0.80, 3.0, 0.7)})["arm"] == \
        "loop:no_example"
    assert sel.choose({"loop_question_first:no_example": arm(0.8, 3.0), "loop:two_examples": arm(0.8, 3.0)})["arm"] \
        == "loop:two_examples"


def test_no_choice_while_an_arm_is_incomplete_naming_it_and_what_it_misses():
    sources = {f"d{i:03d}": f"p{i}" for i in range(5)}

    def results(qids, cite=True):
        return [Result(q, "loop", 1, [sources[q]], 1, [q, q], 0.0, llm_calls=3,
                       details={"citations": [sources[q]] if cite else [], "turns": 3, "read": [sources[q]]})
                for q in qids]

    arms = {a: results(sources) for a in sel.ARMS}
    arms["loop:two_examples"] = results(list(sources)[:3])
    del arms["loop_question_first:no_example"]
    with pytest.raises(sel.IncompleteArms, match=r"loop:two_examples misses 2 of 5 questions; "
                                                 r"loop_question_first:no_example misses 5 of 5"):
        sel.select(arms, sources)
    arms["loop:two_examples"] = results(sources)
    arms["loop_question_first:no_example"] = results(sources, cite=False)
    out = sel.select(arms, sources)
    assert out["choice"]["arm"] == "loop:one_example"  # all level but one: the order of ARMS
    m = out["arms"]["loop_question_first:no_example"]
    assert (m["questions"], m["citation_hit_rate"], m["recall_at_5"], m["turns_mean"]) == (5, 0.0, 1.0, 3.0)
    assert m["distributions"] == {"turns": {"3": 5}, "searches": {"1": 5}, "reads": {"1": 5}}


def test_arms_are_named_design_colon_prompt_and_checked():
    assert len(sel.ARMS) == 6 and sel.ARMS[0] == "loop:one_example"
    assert sel.parse_arms("all") == list(sel.ARMS)
    assert sel.parse_arms("loop_question_first:one_example, loop:no_example") == [
        "loop:no_example", "loop_question_first:one_example"]
    with pytest.raises(ValueError, match="unknown arm"):
        sel.parse_arms("loop:three_examples")


def test_the_loop_page_shows_every_dev_arm_and_the_choice_or_that_none_is_made(tmp_path, monkeypatch):
    from lib.report import loop as loop_report

    sources = {f"d{i:03d}": f"p{i}" for i in range(4)}

    def results(cite, turns):
        return [Result(q, "loop", 1, [sources[q]], 1 + (turns > 3), [q], 0.0, llm_calls=turns,
                       details={"citations": [sources[q]] if cite(i) else [], "turns": turns, "read": []})
                for i, q in enumerate(sources)]

    arms = {a: results(lambda i: i < 2, 3) for a in sel.ARMS}
    arms["loop_question_first:two_examples"] = results(lambda i: i < 3, 4)
    out = sel.select(arms, sources)
    record = {"questions": len(sources), "run": 1, "arms": out["arms"], "choice": out["choice"],
              "dense_recall_at_5": 0.75}
    path = tmp_path / "loop_selection.json"
    cfg = load_profile("offline")
    shown_objects = _Shown()
    monkeypatch.setattr(loop_report, "display", shown_objects)
    assert loop_report.selection_page(cfg, path) == {}
    assert "Not chosen yet" in shown_objects.shown[0] and f"`{cfg.loop_prompt}`" in shown_objects.shown[0]
    assert loop_report.lead_design(None, path) == "loop"  # before any choice: the model-first loop
    path.write_text(json.dumps(record))
    shown = loop_report.selection_page(cfg, path)
    table = shown["table"]
    assert len(table) == 6 and table.chosen.tolist().count("yes") == 1
    chosen = table[table.chosen == "yes"].iloc[0]
    assert (chosen["loop"], chosen["prompt"]) == ("the question-first loop", "two_examples")
    assert chosen["citation hit rate"] == 0.75 and chosen["searches (value: questions)"] == "2: 4"
    assert table.iloc[0]["turns (value: questions)"] == "3: 4"
    path.write_text(json.dumps(record, sort_keys=True))  # as write_json saves it: the arms in the order of ARMS still
    again = loop_report.selection_page(cfg, path)["table"]
    designs = again.loop.map({"the model-first loop": "loop", "the question-first loop": "loop_question_first"})
    assert [f"{d}:{p}" for d, p in zip(designs, again.prompt)] == list(sel.ARMS)
    # the page leads with the chosen loop unless told otherwise; anything else is refused by name
    assert loop_report.lead_design(None, path) == "loop_question_first" == loop_report.other_design("loop")
    assert loop_report.lead_design("loop", path) == "loop"
    with pytest.raises(ValueError, match="parameter design"):
        loop_report.lead_design("agent", path)


def test_the_loops_saved_before_the_choice_are_read_from_their_settings_variant_folder():
    """The chosen prompt is the profiles'; the loops saved with the earlier one (one_example) are kept in
    that setting's variant folder of each condition, and read there with the key they were saved with."""
    from lib.report import loop as loop_report

    cfg = load_profile("offline")
    chosen = json.loads(loop_report.LOOP_SELECTION.read_text())["choice"]
    assert cfg.loop_prompt == chosen["loop_prompt"] == load_profile("pilot").loop_prompt
    assert load_profile("dev").loop_prompt == loop_report.EARLIER_PROMPT  # the dev arms are named against it
    for condition in ({}, {"question_set": "twopart"}):
        earlier = loop_report.earlier_profile(load_profile("offline", **condition))
        assert earlier.loop_prompt == "one_example"
        folder = pipeline.results_dir(earlier)
        assert folder.parent.name == "variants" and folder.name.startswith("loop_prompt-")
        runs = loop_report.saved_runs(earlier, design="loop")
        assert runs and all(loop_report.prompt_of(rs) == "one_example" for rs in runs.values())
        assert all("loop_prompt" not in r.provenance for rs in runs.values() for r in rs)  # their key, unchanged
        assert folder.relative_to(ROOT).parts[0] == "results"
    assert loop_report.earlier_profile(load_profile("dev")) is None


class _Shown:
    """Stands in for IPython's display: keeps what was shown and every in-place update of it."""

    def __init__(self):
        self.shown, self.updates = [], []

    def __call__(self, obj, display_id=None):
        self.shown.append(obj.data)
        return self if display_id else None

    def update(self, obj):
        self.updates.append(obj.data)


def test_the_loop_page_opens_with_the_chosen_loop_and_what_it_found(monkeypatch):
    """Notebook 9's first lines, from the pilot's saved runs: the loop chosen on dev (or the one asked
    for), its prompt, its citation hit rate and its ranked list against dense with the paired range."""
    from lib.report import loop as loop_report
    from lib.report.pages import against_dense

    shown = _Shown()
    monkeypatch.setattr(loop_report, "display", shown)
    cfg = load_profile("pilot")
    lead = loop_report.lead_design(None)
    line = loop_report.headline(cfg, lead)
    text = line.text
    assert shown.shown == [f"**In short.** {text}"]
    m = loop_report.means_of(cfg, lead)
    deltas = against_dense(cfg, lead)[0].set_index("metric")
    assert text.startswith(f"This page leads with {loop_report.DESIGN_TITLES[lead]} (`{lead}`, prompt "
                           f"`{cfg.loop_prompt}`; chosen on the dev set, below")
    assert f"cited the source paper in {m.citation_hit_rate:.0%}" in text
    assert f"MRR@10 {deltas.loc['mrr_at_10', 'delta']:+.3f}".replace("-", "−") in text
    line.refresh()  # nothing new was run: the line stays as shown
    assert shown.updates == [] and line.text == text
    asked = loop_report.headline(cfg, loop_report.other_design(lead)).text
    assert "as asked for by the parameter `design`" in asked


def test_the_loop_pages_first_line_follows_a_run_recorded_below_it(monkeypatch, tmp_path):
    """A page that records the loop's first run (here a stub model on three questions) opens with "no
    complete run", and the run cell rewrites that line in place with what the run found."""
    from lib import pipeline
    from lib.report import loop as loop_report

    shown = _Shown()
    monkeypatch.setattr(loop_report, "display", shown)
    cfg = load_profile("pilot", loop_backend="scripted", question_limit=3, results_dir=str(tmp_path))
    lead = loop_report.lead_design(None)
    line = loop_report.headline(cfg, lead)
    assert line.text.endswith("it has no complete run here.") and len(shown.shown) == 1
    pipeline.run(cfg, lead, progress=False)
    line.refresh()
    assert shown.updates == [f"**In short.** {line.text}"]
    assert "Over 3 questions it" in line.text and "cited the source paper in" in line.text


def test_the_dev_choices_reading_follows_a_run_of_the_chosen_arm_recorded_below_it(monkeypatch, tmp_path):
    """A page that records the chosen arm's first run reads, once its run cell is done, as its rerun does:
    the dev choice's reading first says the arm has no run here, and the run cell rewrites it in place
    (the first rerun of a study was not byte-identical to its first run before)."""
    from lib import pipeline
    from lib.report import loop as loop_report

    sources = {f"d{i:03d}": f"p{i}" for i in range(4)}
    arms = {a: [Result(q, "loop", 1, [s], 1, [q], 0.0, llm_calls=3, details={"citations": [s], "turns": 3, "read": []})
                for q, s in sources.items()] for a in sel.ARMS}
    out = sel.select(arms, sources)
    path = tmp_path / "loop_selection.json"
    path.write_text(json.dumps({"questions": 4, "run": 1, "arms": out["arms"], "choice": out["choice"]}))
    design, prompt = out["choice"]["design"], out["choice"]["loop_prompt"]
    cfg = load_profile("pilot", loop_backend="scripted", question_limit=3, loop_prompt=prompt,
                       results_dir=str(tmp_path / "results"))
    shown = _Shown()
    monkeypatch.setattr(loop_report, "display", shown)
    selection = loop_report.selection_page(cfg, path)
    first = shown.shown[-1]
    assert first.startswith("**Reading.**") and "The chosen arm has no complete run on these questions yet" in first
    loop_report.refresh_selection(selection)  # nothing run yet: nothing rewritten
    assert shown.updates == []
    pipeline.run(cfg, design, progress=False)
    loop_report.refresh_selection(selection)
    assert shown.updates == [first.split(" The chosen arm")[0]]
    again = _Shown()  # the rerun's page shows from the start what the first run's shows after its run cell
    monkeypatch.setattr(loop_report, "display", again)
    loop_report.selection_page(cfg, path)
    assert again.shown[-1] == shown.updates[-1]


def test_the_loop_page_shows_the_loop_in_every_condition_from_its_saved_runs(monkeypatch):
    """Notebook 9's conditions table, from the shipped runs: one row per condition of the grid, a
    condition's numbers equal to that condition's own loop summary and paired differences, the
    distributions counting every question of the first run, and "not run" where nothing is saved."""
    from collections import Counter

    import pandas as pd

    from lib.report import loop as loop_report
    from lib.report.pages import against_dense

    monkeypatch.setattr(loop_report, "display", lambda *a, **k: None)
    monkeypatch.setattr("lib.report.pages.display", lambda *a, **k: None)
    cfg = load_profile("offline")
    lead = loop_report.lead_design(None)
    table = loop_report.conditions_page(cfg, lead).set_index("condition")
    grid = queries.condition_profiles(cfg)
    assert list(table.index) == list(grid)
    run_somewhere = False
    for cname, cp in grid.items():
        row, runs = table.loc[cname], loop_report.saved_runs(cp, design=lead)
        if not runs:
            assert row.runs == 0 and row.status == "not run"
            continue
        run_somewhere = True
        m = loop_report.means_of(cp, lead)
        mrr = against_dense(cp, lead)[0].set_index("metric").loc["mrr_at_10"]
        assert row.questions == m.questions and row["citation hit rate"] == pytest.approx(m.citation_hit_rate)
        assert row["MRR@10 delta"] == pytest.approx(mrr.delta) and row["MRR@10 high"] == pytest.approx(mrr.high)
        first = runs[min(runs)]
        counts = Counter(r.searches for r in first)
        assert row["searches (value: questions)"] == ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
        assert sum(counts.values()) == m.questions
        assert pd.isna(row["both cited"]) == (cp.question_set != "twopart")
    assert run_somewhere
