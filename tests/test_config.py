import pytest

from lib.config import condition_env, env_overrides, load_profile
from lib.preflight import notebook_profile
from lib.errors import ModelUnavailable, ProfileError
from lib.search.embedder import load_sentence_transformer
from lib.llm import LLMError, make_llm


def test_profiles_load_and_override():
    off = load_profile("offline")
    assert off.embedder == "all-MiniLM-L6-v2" and off.llm_backend == "replay" and off.n_papers == 2000
    assert load_profile("pilot").n_sources == 20
    assert load_profile("offline", n_papers=300, question_limit=None).n_papers == 300
    with pytest.raises(ProfileError, match="unknown setting 'n_paper'"):
        load_profile("offline", n_paper=3)
    with pytest.raises(ProfileError, match="no such profile 'nope'"):
        load_profile("nope")
    assert load_profile("offline", n_papers=300).overrides == {"n_papers": 300}
    assert load_profile("offline", n_papers=2000).overrides == {}  # the file's own value is no override


def test_condition_env_round_trips_through_the_scripts_overrides():
    """The command a page prints for a condition, read back the way scripts/run_designs.py reads it,
    names the same condition and results folder."""
    for kw in [{}, {"question_form": "short"}, {"collection_scope": "snapshot"},
               {"collection_scope": "snapshot", "question_form": "short"}, {"question_set": "twopart"}]:
        cfg = load_profile("offline", **kw)
        env = dict(part.split("=") for part in condition_env(cfg).split())
        back = load_profile("offline", **env_overrides(env))
        assert back.results_dir == cfg.results_dir and back.overrides == cfg.overrides
    assert condition_env(load_profile("offline")) == ""
    with pytest.raises(ProfileError, match="collection_scope"):
        load_profile("offline", **env_overrides({"COLLECTION_SCOPE": "everything"}))


def test_notebook_profile_takes_injected_settings():
    import pandas as pd

    ns = {"profile": "pilot", "dense_k": 20, "n_papers": None, "runs": [2], "pd": pd, "display": print}
    cfg = notebook_profile(ns)
    assert cfg.name == "pilot" and cfg.dense_k == 20 and cfg.n_papers == 300
    with pytest.raises(ProfileError, match=r"unknown parameter\(s\) \['unrelated'\]"):
        notebook_profile({**ns, "unrelated": 1})


def test_article_profile_fails_fast_without_network_or_key(monkeypatch):
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    art = load_profile("article")
    with pytest.raises(ModelUnavailable, match="needs network access"):
        load_sentence_transformer(art.embedder, art.embedder_backend)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError, match="needs ANTHROPIC_API_KEY"):
        make_llm(art.llm_backend, art.llm_model)
