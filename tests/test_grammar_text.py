"""What a GBNF grammar forces a reply to say next (lib.llm.grammar_text), and the local model's
shortcuts built on it (lib.llm.speculative), with a stand-in for llama-cpp-python's Llama."""
from __future__ import annotations

import pytest

from lib.llm import prompts, speculative
from lib.llm.grammar_text import GrammarError, GrammarText


def forced_after(grammar: str, text: str) -> tuple[str, bool]:
    reply = GrammarText(grammar).start()
    assert reply.feed(text), f"{text!r} is outside the grammar"
    return reply.forced()


def test_the_agents_reply_is_fixed_but_for_the_number_and_the_query():
    g = prompts.AGENT_GRAMMAR
    assert forced_after(g, "") == ('{"match": ', False)
    for d in "12345":
        assert forced_after(g, '{"match": ' + d) == (', "decision": "stop"}', True)
    assert forced_after(g, '{"match": 0') == (', "decision": "search", "query": "', False)
    assert forced_after(g, '{"match": 0, "decision": "search", "query": "ab') == ("", False)  # a third character or more
    assert forced_after(g, '{"match": 0, "decision": "search", "query": "abc') == ("", False)  # more, or the end quote
    assert forced_after(g, '{"match": 0, "decision": "search", "query": "abc"') == ("}", True)
    assert forced_after(g, '{"match": 1, "decision": "stop"}') == ("", True)
    assert not GrammarText(g).start().feed('{"match": 6')
    assert not GrammarText(g).start().feed('{"match": 0, "decision": "stop"}')


def test_a_loop_turn_is_fixed_once_an_id_is_singled_out():
    ids = ["2606.00012", "2606.00013", "2607.11111"]
    g = prompts.loop_grammar(ids)
    assert forced_after(g, "") == ('{"tool": "', False)
    assert forced_after(g, '{"tool": "r') == ('ead", "paper_id": "260', False)  # every id so far starts so
    assert forced_after(g, '{"tool": "read", "paper_id": "2607') == ('.11111"}', True)
    assert forced_after(g, '{"tool": "read", "paper_id": "2606.0001') == ("", False)  # 2 or 3
    assert forced_after(g, '{"tool": "answer", "ids": ["2606.00013"') == ("", False)  # another id, or the end
    assert forced_after(g, '{"tool": "answer", "ids": ["2606.00013"]') == ("}", True)
    final = prompts.loop_grammar(ids, final=True)
    assert forced_after(final, "") == ('{"tool": "answer", "ids": [', False)
    assert forced_after(prompts.loop_grammar([]), '{"tool": "a') == ('nswer", "ids": []}', True)


def test_the_rewrites_lines_are_free_text_of_bounded_length():
    g = prompts.REWRITE_GRAMMAR
    assert forced_after(g, "") == ("", False)
    assert forced_after(g, "x" * 120) == ("\n", False)  # a line of 120 characters must end
    assert not GrammarText(g).start().feed("x" * 121)
    assert not GrammarText(g).start().feed("short\n")  # under 8 characters


def test_the_subset_of_gbnf_llama_cpp_documents():
    g = r'''# a comment
root ::= greet ("," ws name)+ tail? "."   # names, at least one
greet ::= "hi" | "hello"
ws ::= [ \t]*
name ::= [A-Z] [a-z]{1,3}
tail ::= "\x21" "\u00e9" .
'''
    assert forced_after(g, "he") == ("llo,", False)
    assert forced_after(g, "hi,") == ("", False)  # spaces or a capital
    assert forced_after(g, "hi, Bo,Al!") == ("é", False)  # then any one character
    assert forced_after(g, "hi, Bo,Al!éz") == (".", True)
    assert not GrammarText(g).start().feed("hi.")  # one name at least
    assert not GrammarText(g).start().feed("hi, Boooo")  # at most four letters


@pytest.mark.parametrize("grammar, why", [
    ("root ::= a\na ::= \"x\" a", "refers to itself"), ("item ::= \"x\"", "no root rule"),
    ("root ::= b", "'b' is used but not defined"), ('root ::= "x', "not closed"), ("root ::= [a-", "not closed"),
])
def test_a_grammar_outside_the_subset_is_refused_by_name(grammar, why):
    with pytest.raises(GrammarError, match=why):
        GrammarText(grammar)
    assert speculative.grammar_text(grammar) is None  # such a reply is written a token at a time


def test_prompt_lookup_copies_what_followed_an_earlier_run_of_tokens():
    ctx = [1, 2, 3, 4, 5, 6, 9, 2, 3]
    assert list(speculative.prompt_lookup(ctx, 2)) == [4, 5]
    assert list(speculative.prompt_lookup(ctx, 10)) == [4, 5, 6, 9, 2, 3]
    assert list(speculative.prompt_lookup([1, 2, 3, 7, 3], 4)) == []  # one token is too short a run
    assert list(speculative.prompt_lookup([5, 5], 3)) == []


# ------------------------------------------------------------------ the shortcuts, on a stand-in Llama
class ScriptedLlama:
    """Stands in for llama_cpp.Llama: characters as tokens (0 ends a reply); ``generate`` yields a
    scripted reply one token at a time and counts the tokens it was asked for."""

    def __init__(self, reply: str):
        self.script, self.asked, self.n_batch, self.draft_model = [ord(c) for c in reply] + [0], 0, 512, None

    def tokenize(self, text: bytes, add_bos=False, special=False):
        return [ord(c) for c in text.decode("utf-8")]

    def detokenize(self, tokens):
        return "".join(chr(t) for t in tokens if t).encode("utf-8")

    def token_eos(self):
        return 0

    def generate(self, tokens, **kwargs):
        for t in self.script:
            self.asked += 1
            yield t


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setattr(speculative, "is_end", lambda llm, token: token == 0)

    def make(reply: str, max_tokens: int = 64):
        llm = speculative.drafting_llama(ScriptedLlama)(reply)
        speculative.start_call(llm, prompts.AGENT_GRAMMAR, max_tokens)
        return llm
    return make


def written(llm) -> tuple[str, list[int]]:
    tokens = list(llm.generate([1, 2, 3]))
    return llm.detokenize(tokens).decode("utf-8"), tokens


def test_a_stop_is_complete_once_its_number_is_drawn(scripted):
    llm = scripted('{"match": 2, "decision": "stop"}')
    text, tokens = written(llm)
    assert text == '{"match": 2, "decision": "stop"}' and tokens[-1] == 0
    assert llm.asked == len('{"match": 2')  # the model was asked for no token after the number
    assert llm.spec["skipped"] == len(', "decision": "stop"}')


def test_a_search_is_asked_for_up_to_its_closing_quote(scripted):
    reply = '{"match": 0, "decision": "search", "query": "kv cache"}'
    llm = scripted(reply)
    text, _ = written(llm)
    assert text == reply and llm.asked == len(reply) - 1 and llm.spec["skipped"] == 1


def test_no_shortcut_past_the_token_limit(scripted):
    """Where the fixed ending would run past max_tokens, the reply is written as llama.cpp would
    (and cut there by the caller)."""
    llm = scripted('{"match": 2, "decision": "stop"}', max_tokens=20)
    text, _ = written(llm)
    assert text == '{"match": 2, "decision": "stop"}' and llm.asked == len(llm.script) and llm.spec["skipped"] == 0


def test_a_reply_outside_the_grammar_as_read_gets_no_shortcut(scripted):
    llm = scripted('{"match":  2, "decision": "stop"}')  # two spaces: llama.cpp's grammar would not allow it
    text, _ = written(llm)
    assert text == '{"match":  2, "decision": "stop"}' and llm.asked == len(llm.script) and llm.reply is None


def test_the_guess_is_the_text_the_grammar_fixes_then_a_lookup(scripted):
    llm = scripted("")
    draft = speculative.ReplyDraft(llm, lookup=4)
    assert [chr(t) for t in draft([1])] == list('{"match": ')
    assert llm.checking and llm.spec["drafted"] == len('{"match": ')
    llm.reply.feed('{"match": 0, "decision": "search", "query": "kv')
    context = [ord(c) for c in 'question: kv cache eviction\n{"match": 0, "decision": "search", "query": "kv']
    assert "".join(chr(t) for t in draft(context)) == " cac"  # copied from the question, 4 tokens
    llm.guess = False
    assert len(draft(context)) == 0 and not llm.checking
