"""The reply contracts (lib/llm/contract.py): each grammar and its JSON schema allow the same replies, a schema
reply reads back into the grammar's form, llama-cpp-python turns each schema into a grammar of its own (no
fallback to plain JSON), and a run says what it was measured under."""
import importlib.util
import json

import pytest

from lib.config import ProfileError, load_profile
from lib.llm import contract, prompts

CONTRACTS = {"agent": contract.AGENT, "search only": contract.SEARCH_ONLY, "rewrite": contract.REWRITE,
             "decompose": contract.DECOMPOSE, "hyde": contract.HYDE}


def agent(match, decision, query=None):
    obj = {"match": match, "decision": decision, **({} if query is None else {"query": query})}
    return json.dumps(obj)


# replies in the grammar's form, each with whether the contract allows it
CASES = {
    "agent": [(agent(k, "stop"), True) for k in range(1, 6)] + [
        (agent(0, "stop"), False), (agent(6, "stop"), False), (agent(1, "search", "a query"), False),
        (agent(0, "search", "ab"), False), (agent(0, "search", "abc"), True), (agent(0, "search", "q" * 120), True),
        (agent(0, "search", "q" * 121), False), (agent(0, "search"), False)],
    "search only": [(agent(0, "search", "monitoring shift"), True), (agent(2, "stop"), False)],
    "rewrite": [("a" * 8 + "\n" + "b" * 120 + "\n" + "c" * 30, True), ("a" * 8 + "\n" + "b" * 30, False),
                ("\n".join(["line number x"] * 4), False), ("a" * 7 + "\n" + "b" * 30 + "\n" + "c" * 30, False),
                ("a" * 8 + "\n" + "b" * 121 + "\n" + "c" * 30, False)],
    "decompose": [("a" * 8, True), ("a" * 160 + "\n" + "b" * 9, True), ("\n".join(["part of it"] * 3), True),
                  ("\n".join(["part of it"] * 4), False), ("a" * 161, False), ("a" * 7, False)],
    "hyde": [("w" * 40, True), ("w" * 900, True), ("w" * 39, False), ("w" * 901, False)],
}


@pytest.mark.parametrize("name", CASES)
def test_the_grammar_and_the_schema_allow_the_same_replies(name):
    c = CONTRACTS[name]
    for text, allowed in CASES[name]:
        assert c.valid(text) == allowed, (name, text)
        assert c.fits(c.as_json(text)) == allowed, (name, text)
        if allowed:  # and a schema reply reads back into the same text
            assert c.read(c.json_text(text)) == text


@pytest.mark.parametrize("name", CASES)
def test_the_worked_examples_keep_their_contract(name):
    c = CONTRACTS[name]
    examples = {"agent": [a for _, a in prompts.AGENT_EXAMPLES], "search only": [prompts.AGENT_EXAMPLES[1][1]],
                "rewrite": [prompts.REWRITE_EXAMPLE_A], "decompose": [a for _, a in prompts.DECOMPOSE_EXAMPLES],
                "hyde": [prompts.HYDE_EXAMPLE_A]}[name]
    for text in examples:
        assert c.valid(text) and c.fits(c.as_json(text)) and c.read(c.json_text(text)) == text
    if name in ("agent", "search only"):  # the agent's replies are already the schema's JSON
        assert all(c.json_text(t) == t for t in examples)


def test_a_schema_reply_is_read_into_the_grammars_form_or_kept_as_sent():
    # the spacing a schema allows, a quote and a raw line break inside a string: one form comes back
    assert contract.AGENT.read('{"match":3,"decision":"stop"}') == agent(3, "stop")
    assert contract.AGENT.read('{"match": 0, "decision": "search", "query": " drift\nmonitoring "}') == \
        agent(0, "search", "drift monitoring")
    assert contract.REWRITE.read(json.dumps({"queries": ["first  query here", "second\nquery", "third query"]})) == \
        "first query here\nsecond query\nthird query"
    for bad in ('{"match": 0, "decision": "stop"}', '{"queries": ["only one query"]}', "not json", ""):
        assert contract.AGENT.read(bad) is None and contract.REWRITE.read(bad) is None


def test_every_grammar_of_the_designs_has_a_contract_but_the_loops():
    for grammar in (prompts.AGENT_GRAMMAR, contract.SEARCH_ONLY_GRAMMAR, prompts.REWRITE_GRAMMAR,
                    prompts.DECOMPOSE_GRAMMAR, prompts.HYDE_GRAMMAR):
        assert contract.contract_for(grammar).grammar == grammar
    assert contract.contract_for(prompts.loop_grammar(["2601.00001"])) is None  # the loop's tools stay tool calls
    assert contract.contract_for(None) is None
    assert "root ::= search" in contract.SEARCH_ONLY_GRAMMAR and "stop |" not in contract.SEARCH_ONLY_GRAMMAR


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed")
@pytest.mark.parametrize("name", CASES)
def test_llama_cpp_python_turns_each_schema_into_its_own_grammar(name):
    """Its server falls back to any JSON, silently, when it cannot convert a schema: each converts, and the
    grammar it writes names the contract's own fields and bounds."""
    from llama_cpp import llama_grammar

    gbnf = llama_grammar.json_schema_to_gbnf(json.dumps(CONTRACTS[name].schema))
    assert gbnf.strip() != llama_grammar.JSON_GBNF.strip()
    for word in {"agent": ['"\\"stop\\""', '"\\"search\\""', '"5"'], "search only": ['"\\"search\\""'],
                 "rewrite": ['"\\"queries\\""'], "decompose": ['"\\"queries\\""'], "hyde": ['"\\"passage\\""']}[name]:
        assert word in gbnf, (name, word)


def test_what_a_run_was_measured_under():
    assert contract.route_of_provenance({"llm_source": "local", "prompt_style": "local"}) == ("local", "grammar")
    assert contract.route_of_provenance({"llm_source": "anthropic", "prompt_style": "anthropic"}) == ("anthropic", "none")
    assert contract.route_of_provenance({"llm_source": "openai", "prompt_style": "local"}) == ("local", "grammar")
    assert contract.route_of_provenance({"llm_source": "openai", "prompt_style": "anthropic"}) == ("anthropic", "none")
    assert contract.route_of_provenance({"llm_source": "openai", "prompt_style": "local",
                                         "openai_constraint": "json_schema"}) == ("local", "json_schema")
    assert contract.route_of_response({"backend": "openai", "api_settings": {"grammar": "sent"}}) == ("local", "grammar")
    assert contract.route_of_response({"backend": "openai", "api_settings": {"prompt": "local",
                                                                              "constraint": "json_object"}}) == \
        ("local", "json_object")
    assert contract.route_of_response({"backend": "local", "decoding": "fast"}) == ("local", "grammar")
    assert [contract.comparable(*r) for r in [("local", "json_object"), ("local", "json_schema"), ("local", "grammar"),
                                              ("anthropic", "none"), ("local", "none")]] == [True, True, True, False, False]
    assert contract.route_words("local", "json_schema") == \
        "the local prompt (worked examples), a JSON schema (response_format json_schema)"


def test_the_setting_and_its_older_spelling():
    assert load_profile("offline").openai_constraint == "none"
    assert load_profile("offline", openai_send_grammar="true").openai_constraint == "grammar"
    assert load_profile("offline", openai_constraint="json_object").openai_constraint == "json_object"
    with pytest.raises(ProfileError, match="set openai_constraint alone"):
        load_profile("offline", openai_send_grammar="true", openai_constraint="json_schema")
    assert [contract.prompt_for(c) for c in contract.CONSTRAINTS] == ["local", "local", "local", "anthropic"]


def test_a_served_studys_settings_table_says_what_its_replies_were_measured_under():
    from lib.report.pages import served_rows

    assert served_rows(load_profile("offline").settings) == []  # the shipped study asks no served model
    rows = dict(served_rows(load_profile("offline", llm_backend="openai", openai_constraint="json_schema").settings))
    assert rows["model prompt and constraint"] == contract.route_words("local", "json_schema")
    assert rows["beside the shipped points"].startswith("comparable")
    rows = dict(served_rows(load_profile("offline", llm_backend="replay", llm_record_backend="openai").settings))
    assert rows["model prompt and constraint"] == "the article's prompt, no constraint"
    assert rows["beside the shipped points"].startswith("not comparable")


def test_a_saved_runs_route_is_read_from_its_results():
    from lib.designs import Result

    def run(**prov):
        return [Result("q1", "agent_tree", 1, [], 1, [], 0.0, provenance=prov)]

    assert contract.route_of_results(run(llm_source="openai", prompt_style="local", openai_constraint="json_object")) \
        == ("local", "json_object")
    assert contract.route_of_results(run(llm_source="openai", prompt_style="anthropic")) == ("anthropic", "none")
    assert contract.route_of_results(run(profile="offline")) is None and contract.route_of_results([]) is None


def test_page_12_draws_a_point_under_another_route_apart_and_says_so(tmp_path, monkeypatch):
    """judges.csv's measured_under and comparable (lib.llm.contract.route_fields): a point measured under the
    article's prompt with no constraint is drawn in grey, its panel titled not comparable; a comparable one, and
    one read from a table saved before the columns, as before."""
    import pandas as pd

    from lib.evaluation import judges
    from lib.report import why_plots

    monkeypatch.setattr(why_plots, "_save", lambda fig, path, rect=None: fig)
    grid = pd.DataFrame([{"condition": "full questions", "model": m, "metric": "mrr_at_10", "p_stop": p,
                          "p_search": q, "difference": 0.0} for m in ("a", "b", "c") for p in (0, 1)
                         for q in why_plots.SEARCH_LEVELS])
    base = {"condition": "full questions", "point": "model", "metric": "mrr_at_10", "p_stop_1": 0.6, "p_stop_2": 0.7,
            "predicted": -0.02, "predicted_low": -0.03, "predicted_high": -0.01, "actual": -0.03, "hindsight": 0.01}
    rows = [{**base, "model": "a", **contract.route_fields(("anthropic", "none"))},
            {**base, "model": "b", **contract.route_fields(("local", "json_schema"))},
            {**base, "model": "c"}]
    table = judges.frame(rows)
    assert list(table.columns[-2:]) == ["measured_under", "comparable"]
    table.to_csv(tmp_path / "judges.csv", index=False)
    fig = why_plots.judges_chart(grid, pd.read_csv(tmp_path / "judges.csv"), tmp_path / "chart.png")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].endswith("not comparable: the article's prompt, no constraint")
    assert "comparable" not in titles[1] and "comparable" not in titles[2]
    colours = [{line.get_color() for line in ax.get_lines() if line.get_marker() == "o"} for ax in fig.axes]
    assert colours[0] == {why_plots.APART} and colours[1] == colours[2] == {"#d95f02"}
