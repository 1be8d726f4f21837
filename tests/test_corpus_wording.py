"""What the prompts call the documents (``corpus_description``, lib/llm/prompts.py Corpus): the shipped
profiles keep the article's words byte for byte, so every saved model call still replays by its request
key; a study of other documents gets its own description and no word of arXiv, abstracts or papers; and
the loop reads a long document's matched passages, not its first characters."""
import json
import re

import pytest

from lib import pipeline
from lib.config import ROOT, load_profile
from lib.designs import Question
from lib.designs.agent import AgentDesign
from lib.designs.loop import READ_MAX_CHARS, LoopDesign, LoopQuestionFirstDesign, passages_of, read_positions
from lib.designs.multiquery import MultiQueryDesign
from lib.llm import prompts
from lib.llm.stubs import stub_llm
from lib.runs import read_results
from lib.search.chunking import make_chunk
from lib.search.dense import Hit

from tests.fakes import ListSearcher

ARXIV_WORDS = re.compile(r"arxiv|abstract|paper", re.I)


def test_every_shipped_profile_speaks_the_article_s_words():
    for name in ("offline", "article", "pilot", "dev"):
        assert prompts.corpus_for(load_profile(name)) == prompts.ARXIV, name
    # the constants every saved request was made with, rebuilt from the wording
    assert prompts.rewrite_system(prompts.ARXIV) == prompts.REWRITE_SYSTEM
    assert prompts.AGENT_SYSTEM.startswith("You are a research assistant finding the single arXiv paper that answers")
    assert prompts.loop_tools(5, True, prompts.ARXIV)[1]["input_schema"]["required"] == ["paper_id"]
    assert prompts.corpus_of("arXiv") == prompts.ARXIV and prompts.corpus_of(None).description == "documents"


# (profile, overrides, design): a sample of the saved runs of each LLM design and prompt variant
SAVED = [("offline", {}, "multiquery"), ("offline", {}, "agent"), ("offline", {}, "loop_question_first"),
         ("offline", {"loop_prompt": "one_example"}, "loop"), ("pilot", {}, "loop"),
         ("offline", {"question_form": "short"}, "loop_question_first")]


@pytest.fixture(scope="module")
def parts_of():
    made = {}

    def get(name, overrides):
        key = (name, tuple(sorted(overrides.items())))
        if key not in made:
            p = load_profile(name, **overrides)
            made[key] = (p, pipeline.ProfileParts(p, progress=False))
        return made[key]
    return get


@pytest.mark.parametrize("name,overrides,design", SAVED)
def test_saved_runs_replay_by_their_request_keys(parts_of, name, overrides, design):
    """Each design rebuilt from its profile asks exactly what it asked when its run was saved: the first
    questions of the saved run replay from the record (a changed prompt, tool or read text would miss)
    and rank as saved."""
    profile, parts = parts_of(name, overrides)
    saved = read_results(pipeline.results_dir(profile) / design / "run1.jsonl")[:3]
    assert saved, f"no saved {design} run for {name} {overrides}"
    by_qid = {q.qid: q for q in pipeline.question_set(profile, parts.papers)}
    made = pipeline.make_design(design, profile, parts)
    for res in saved:
        again = made.retrieve(by_qid[res.qid], 1)  # replay only: a request not recorded raises ReplayMiss
        assert again.ranked_ids == res.ranked_ids and again.llm_calls == res.llm_calls, (design, res.qid)
        if design.startswith("loop"):
            assert again.details["read"] == res.details["read"] and "read_passages" not in again.details


def test_an_arxiv_read_is_the_whole_abstract():
    """The drawn collections' abstracts fit the read window whole, so a read shows what it showed."""
    for path in ("data/collection.jsonl", "data/dev/collection.jsonl"):
        longest = max(len(json.loads(line)["abstract"]) for line in open(ROOT / path, encoding="utf-8"))
        assert longest <= READ_MAX_CHARS, path


# ------------------------------------------------------------------ a study of other documents
DOCS = {"m1": ("Gearbox oil service", "Drain the gearbox oil when warm. " * 60 + "The filter is replaced at the same time."),
        "m2": ("Blade inspection", "Look for erosion on the leading edge after every storm season."),
        "m3": ("Yaw brake wear", "Brake pads wear faster when the yaw motor hunts in gusty wind. " * 40)}


def study_profile(**extra):
    return load_profile("pilot", collection_source="documents", loop_backend="scripted",
                        **extra)


class StudyParts:
    """A study's parts with a scripted search (no embedder): the documents above, one question."""

    def __init__(self, profile, chunks=None):
        self.profile, self.chunks = profile, chunks
        self.papers = [{"id": i, "title": t, "abstract": a} for i, (t, a) in DOCS.items()]
        self.searcher = ListSearcher({}, default=("m1", "m2", "m3"))

    def corpus(self):
        return prompts.corpus_for(self.profile)

    def prompt_style(self):
        return "local"

    def titles(self):
        return {i: t for i, (t, _) in DOCS.items()}

    def llm(self):
        return stub_llm("scripted")


def request_text(req) -> str:
    return json.dumps([req.system, req.messages, req.tools, req.grammar], ensure_ascii=False)


Q = Question("u1", "how often is the gearbox oil changed", "m1")


@pytest.mark.parametrize("description", [None, "maintenance reports of wind turbines"])
def test_a_study_s_prompts_speak_of_its_documents(description):
    profile = study_profile(**({"corpus_description": description} if description else {}))
    corpus = prompts.corpus_for(profile)
    assert corpus.description == (description or "documents")
    parts = StudyParts(profile)
    texts = []
    for style in ("local", "anthropic"):
        parts.prompt_style = lambda style=style: style
        texts.append(request_text(MultiQueryDesign.from_parts(parts, {}).request(Q, 1)))
        texts.append(request_text(AgentDesign.from_parts(parts, {}).request(Q, [Q.text], [["m1", "m2"]], 1)))
        for cls in (LoopDesign, LoopQuestionFirstDesign):
            for variant in prompts.LOOP_PROMPTS:
                profile.settings["loop_prompt"] = variant
                texts += [request_text(r) for r in cls.from_parts(parts, {}).first_requests([Q], [1])]
    from lib.data.question_gen import question_request, review_request

    texts.append(request_text(question_request("T", "x", "problem", ["a b c d"], 2, corpus)))
    texts.append(request_text(review_request("q", {"title": "T", "abstract": "x"}, [{"title": "n", "abstract": "y"}],
                                             corpus)))
    for text in texts:
        assert not ARXIV_WORDS.search(text), ARXIV_WORDS.search(text).group(0) + ": " + text[:300]
    assert f"a collection of {corpus.description}" in texts[0] and "the single document" in texts[1]
    # the design's results carry the description (a changed description is another result)
    assert pipeline.optional_settings(MultiQueryDesign)["corpus_description"] is None


def test_a_study_s_prompts_say_arxiv_when_its_description_does():
    req = MultiQueryDesign.from_parts(StudyParts(study_profile(corpus_description="arXiv preprints")), {}).request(Q, 1)
    assert "a collection of arXiv preprints" in req.system


def long_chunks():
    """Chunks of the documents above, as lib/search/chunking.py makes them: the title in front of each."""
    out = []
    for pid, (title, text) in DOCS.items():
        words = text.split()
        pieces = [" ".join(words[i:i + 60]) for i in range(0, len(words), 60)]
        out += [make_chunk(pid, j, f"{title}. {p}", 0, 0) for j, p in enumerate(pieces)]
    return out


def test_the_loop_reads_a_long_document_s_matched_passages():
    """A document longer than the read window: the read shows the passage the search matched (here its
    last, which holds the answer), and one beside it, headed by their places; not the first characters."""
    chunks = long_chunks()
    parts = StudyParts(study_profile(), chunks)
    n = sum(c.doc_id == "m1" for c in chunks)
    assert len(DOCS["m1"][1]) > READ_MAX_CHARS and n > 3

    class Matched(ListSearcher):
        def search(self, query, k):
            return [Hit("m1", 0.9, best_chunk=n - 1), Hit("m2", 0.5), Hit("m3", 0.4, best_chunk=2)]

    parts.searcher = Matched({})
    loop = LoopDesign.from_parts(parts, {})
    assert set(loop.passages) == {"m1", "m3"}  # m2 is one chunk: read whole
    res = loop.retrieve(Q, 1)  # the scripted model searches, reads the top hit, cites it
    assert res.details["read"] == ["m1"] and res.details["read_passages"] == {"m1": [[n - 2, n - 1]]}
    read_turn = [s for s in res.trace if s["title"] == "read"][0]
    assert f"(passages {n - 1}, {n} of {n})" in read_turn["detail"]
    shown = loop.run_tool({"name": "read", "input": {"doc_id": "m1"}}, loop_state(loop, {"m1": [n - 1]}))[0]
    assert "The filter is replaced at the same time." in shown and f"(passage {n} of {n})" in shown
    assert shown.count("Gearbox oil service") == 1 and not shown.startswith("[m1] Gearbox oil service\nDrain")
    assert len(shown) <= loop.read_bound
    # the token budget's bound on one tool result covers the read
    assert loop.result_bound * 3 >= len(shown)
    # a document searched whole (one chunk) is read whole, as an arXiv abstract is
    whole = loop.run_tool({"name": "read", "input": {"doc_id": "m2"}}, loop_state(loop, {}))[0]
    assert whole == prompts.loop_read_result("m2", *DOCS["m2"])


def loop_state(loop, matched):
    from lib.designs.loop import _State

    st = _State()
    st.matched = {k: list(v) for k, v in matched.items()}
    return st


def test_read_positions():
    assert read_positions(10, [7]) == [7, 8] and read_positions(10, [9]) == [8, 9]
    assert read_positions(10, [4, 2, 4]) == [2, 4] and read_positions(10, []) == [0, 1]
    assert read_positions(1, [0]) == [0] and read_positions(10, [3], k=3) == [2, 3, 4]
    assert passages_of(None, {}) == {}
