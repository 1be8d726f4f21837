"""Notebook parameters are read the same way before work (scripts/check_settings.py) and inside the
notebook (papermill's injected cell, then notebook_profile)."""
import json
import math
import subprocess
import sys

import pytest
from papermill.cli import _resolve_type
from papermill.iorw import read_yaml_file
from papermill.translators import translate_parameters

import lib.config as config
import lib.preflight as pf
from lib.config import ROOT, load_profile, parameter_value, profile_from_args
from lib.errors import ProfileError
from lib.preflight import local_model_missing, notebook_profile, preflight

NOTEBOOK = ROOT / "notebooks" / "01_collection.ipynb"


def notebook_namespace(profile: str, params: list[tuple[str, str]]) -> dict:
    """The namespace papermill gives the notebook for ``-f profiles/PROFILE.yaml -p NAME VALUE ...``:
    its parameters cell, then the cell papermill injects (the file, then ``_resolve_type`` of each value)."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    parameters = read_yaml_file(str(ROOT / "profiles" / f"{profile}.yaml"))
    parameters.update({name: _resolve_type(value) for name, value in params})
    namespace: dict = {}
    exec("".join(cell["source"]), namespace)
    exec(translate_parameters("python3", "python", parameters, "Parameters"), namespace)
    namespace.pop("__builtins__", None)
    return namespace


def args(profile: str, params: list[tuple[str, str]]) -> list[str]:
    return [profile] + [word for name, value in params for word in ("-p", name, value)]


CASES = [
    ("offline", [("rerank_weights", "{dense: 1.0, bm25: 2.0}")], {"rerank_weights": {"dense": 1.0, "bm25": 2.0}}),
    ("offline", [("filter_first_seen", '["2026-07-15", "2026-08-22"]')], {"filter_first_seen": ["2026-07-15", "2026-08-22"]}),
    ("offline", [("filter_first_seen", "[2026-07-15, 2026-08-22]")], {"filter_first_seen": ["2026-07-15", "2026-08-22"]}),
    ("offline", [("source_ids", "[2607.00001, 2607.10]")], {"source_ids": ["2607.00001", "2607.10"]}),
    ("offline", [("window_start", "2026-07-02"), ("window_end", "2026-08-20")],
     {"window_start": "2026-07-02", "window_end": "2026-08-20"}),
    ("offline", [("reranker_int8", "true"), ("escalate_threshold", "0.5"), ("dense_k", "20"), ("question_limit", "20")],
     {"reranker_int8": True, "escalate_threshold": 0.5, "dense_k": 20, "question_limit": 20}),
    ("offline", [("filter_categories", "[cs.IR]"), ("loop_backend", "scripted"), ("n_papers", "None")],
     {"filter_categories": ["cs.IR"], "loop_backend": "scripted", "n_papers": 2000}),
    ("pilot", [("escalate_threshold", "-.inf"), ("question_limit", "null"), ("llm_batch", "False")],
     {"escalate_threshold": -math.inf, "question_limit": None, "llm_batch": False}),
]


@pytest.mark.parametrize("profile,params,expected", CASES)
def test_the_pre_check_and_the_notebook_read_parameters_alike(profile, params, expected):
    checked = profile_from_args(args(profile, params))
    in_notebook = notebook_profile(notebook_namespace(profile, params))
    assert in_notebook.name == checked.name == profile
    assert in_notebook.settings == checked.settings
    assert in_notebook.overrides == checked.overrides and in_notebook.results_dir == checked.results_dir
    assert {k: checked.settings[k] for k in expected} == expected
    assert all(isinstance(d, str) for d in checked.settings["filter_first_seen"] or [])


def test_parameter_value_keeps_text_for_string_settings_and_reads_yaml_for_the_others():
    assert parameter_value("window_start", "2026-07-01") == "2026-07-01"
    assert parameter_value("llm_model", "null") == "null" and parameter_value("loop_backend", "echo") == "echo"
    assert parameter_value("source_ids", "[2607.10, '2607.00001']") == ["2607.10", "2607.00001"]
    assert parameter_value("filter_first_seen", "[2026-07-15, 2026-08-22]") == ["2026-07-15", "2026-08-22"]
    assert parameter_value("rerank_weights", "{dense: 1, bm25: 1.5}") == {"dense": 1, "bm25": 1.5}
    assert parameter_value("escalate_threshold", "-.inf") == -math.inf and parameter_value("question_limit", "~") is None
    weights = {"dense": 1.0}
    assert parameter_value("rerank_weights", weights) is weights  # no text: as injected
    assert parameter_value("not_a_setting", "[1]") == "[1]"  # load_profile names it


MALFORMED = [
    ("rerank_weights", "{dense: 1.0", "a mapping like {cross_encoder: 1.0, dense: 1.0, bm25: 1.0}"),
    ("rerank_weights", "{dense:", "a mapping like {cross_encoder: 1.0, dense: 1.0, bm25: 1.0}"),  # unquoted in the shell
    ("rerank_weights", "dense", "a mapping like {cross_encoder: 1.0, dense: 1.0, bm25: 1.0}"),
    ("rerank_weights", "{dense:1.0}", "a mapping like {cross_encoder: 1.0, dense: 1.0, bm25: 1.0}"),
    ("rerank_weights", "{dense: 1, dense: 2}", "a mapping like {cross_encoder: 1.0, dense: 1.0, bm25: 1.0}"),
    ("filter_first_seen", "[2026-07-15", "a list like [2026-07-01, 2026-08-22] or null"),
    ("filter_first_seen", "2026-07-15", "a list like [2026-07-01, 2026-08-22] or null"),
    ("source_ids", "{a: 1}", "a list like [text, text]"),
    ("n_papers", "[300]", "an integer like 1"),
    ("reranker_int8", "[true]", "true or false"),
]


@pytest.mark.parametrize("name,value,form", MALFORMED)
def test_a_malformed_value_names_the_parameter_and_its_form_in_both_places(name, value, form):
    with pytest.raises(ProfileError) as checked:
        profile_from_args(["offline", "-p", name, value])
    assert str(checked.value).startswith(f"parameter {name!r}: expected {form}, got {value!r}")
    with pytest.raises(ProfileError) as in_notebook:
        notebook_profile(notebook_namespace("offline", [(name, value)]))
    assert str(in_notebook.value) == str(checked.value)


@pytest.mark.parametrize("name,value", [("window_start", "2026-13-45"), ("window_end", "2026-7-1"),
                                        ("filter_first_seen", "[2026-07-15, 2026-02-30]"),
                                        ("filter_first_seen", "[2026-08-22, 2026-07-15]")])
def test_a_bad_date_is_the_projects_own_error_naming_the_setting(name, value):
    with pytest.raises(ProfileError, match=f"setting '{name}'") as checked:
        profile_from_args(["offline", "-p", name, value])
    with pytest.raises(ProfileError) as in_notebook:
        notebook_profile(notebook_namespace("offline", [(name, value)]))
    assert str(in_notebook.value) == str(checked.value)


def profile_copy(tmp_path, monkeypatch, text: str) -> None:
    monkeypatch.setattr(config, "PROFILE_DIR", tmp_path)
    (tmp_path / "offline.yaml").write_text(text, encoding="utf-8")


def test_a_profile_with_a_duplicate_key_is_refused_naming_the_key_and_line(tmp_path, monkeypatch):
    text = (ROOT / "profiles" / "offline.yaml").read_text(encoding="utf-8")
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines, 1) if line.startswith("n_papers:"))
    profile_copy(tmp_path, monkeypatch, text + "n_papers: 300\n")
    with pytest.raises(ProfileError, match=rf"profiles/offline\.yaml: duplicate key 'n_papers' on line "
                                           rf"{len(lines) + 1} \(first on line {first}\)"):
        load_profile("offline")
    weights = next(i for i, line in enumerate(lines, 1) if line.startswith("rerank_weights:"))
    profile_copy(tmp_path, monkeypatch, text.replace("{dense: 1.0, bm25: 1.5}", "{dense: 1.0, dense: 1.5}"))
    with pytest.raises(ProfileError, match=f"duplicate key 'dense' on line {weights}"):
        load_profile("offline")
    profile_copy(tmp_path, monkeypatch, text.replace('window_start: "2026-07-01"', "window_start: 2026-07-01"))
    assert load_profile("offline").window_start == "2026-07-01"  # an unquoted date, as papermill's -f reads it


def test_dash_p_profile_is_refused_pointing_to_PROFILE():
    with pytest.raises(ProfileError, match=r"PROFILE=name, not -p profile \(make notebook NB=\.\. PROFILE=pilot\)"):
        profile_from_args(["offline", "-p", "profile", "pilot"])
    assert profile_from_args(["pilot"]).name == "pilot"


def test_check_settings_exits_2_with_the_projects_message_never_a_traceback():
    for params, message in ([("profile", "pilot"), "PROFILE=pilot"],
                            [("rerank_weights", "{dense: 1.0"), "parameter 'rerank_weights': expected a mapping"]):
        out = subprocess.run([sys.executable, "scripts/check_settings.py", "offline", "-p", *params], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_a_local_backend_that_is_not_installed_is_refused_before_work(monkeypatch):
    local = load_profile("offline", llm_backend="local")
    with pytest.raises(ProfileError, match=r"llm_backend 'local' needs the local model, but llama-cpp-python .* "
                                           r"not installed: run `make local-llm` first"):
        preflight(local, local=lambda: "llama-cpp-python (module llama_cpp) is not installed")
    assert preflight(local, local=lambda: None) == []

    def unasked():
        raise AssertionError("the local model is checked only for llm_backend 'local'")
    assert preflight(load_profile("offline"), local=unasked) == []
    # a page's notebook_profile checks the rest, not the LLM backend: a page that asks no model runs without
    # one, and the runner leaves out the pages that ask it (lib/preflight.py pages_to_run)
    monkeypatch.setattr(pf, "local_model_missing", lambda **_: "the model file is not there")
    assert notebook_profile({"profile": "offline", "llm_backend": "local"}).llm_backend == "local"
    with pytest.raises(ProfileError, match="run `make local-llm` first"):
        preflight(load_profile("offline", llm_backend="local"))


def test_local_model_missing_looks_up_llama_cpp_and_the_model_file(tmp_path):
    from lib.llm.local_backend import LOCAL_MODEL_FILE

    asked = []
    gguf = tmp_path / "model.gguf"
    why = local_model_missing(find_spec=lambda name: asked.append(name), model_file=gguf)
    assert asked == ["llama_cpp"] and "llama-cpp-python" in why and str(gguf) in why
    gguf.write_bytes(b"GGUF")
    assert local_model_missing(find_spec=lambda name: object(), model_file=gguf) is None
    assert "llama-cpp-python" in local_model_missing(find_spec=lambda name: None, model_file=gguf)
    # by default: the file make local-llm joins
    assert (local_model_missing(find_spec=lambda name: object()) is None) == LOCAL_MODEL_FILE.exists()


@pytest.mark.parametrize("name,value", [("n_runs", "true"), ("n_runs", "True"), ("n_runs", "false"), ("n_runs", "yes"),
                                        ("n_runs", "off"), ("dense_k", "true"), ("escalate_threshold", "no"),
                                        ("question_limit", "true")])
def test_a_true_false_value_for_a_number_setting_is_refused_by_name_in_both_places(name, value):
    """pydantic reads true as 1: `-p n_runs true` ran one run and said nothing. Refused, the setting named."""
    with pytest.raises(ProfileError) as checked:
        profile_from_args(["offline", "-p", name, value])
    assert str(checked.value).startswith(f"parameter {name!r}: expected ") and "a true/false value" in str(checked.value)
    with pytest.raises(ProfileError) as in_notebook:
        notebook_profile(notebook_namespace("offline", [(name, value)]))
    assert f"parameter {name!r}: expected " in str(in_notebook.value) and "true/false" in str(in_notebook.value)


def test_n_runs_takes_a_positive_integer_only():
    assert profile_from_args(["offline", "-p", "n_runs", "2"]).settings["n_runs"] == 2
    for bad in ("0", "-1", "1.5", "1.0", "[2]", "two"):
        with pytest.raises(ProfileError, match="'n_runs'"):
            profile_from_args(["offline", "-p", "n_runs", bad])


def test_a_profile_file_with_true_for_a_number_is_refused_naming_the_file_and_setting(tmp_path, monkeypatch):
    text = (ROOT / "profiles" / "offline.yaml").read_text(encoding="utf-8")
    profile_copy(tmp_path, monkeypatch, text.replace("n_runs: 3", "n_runs: true"))
    with pytest.raises(ProfileError, match=r"profiles/offline\.yaml: setting 'n_runs': .*true/false value"):
        load_profile("offline")
    assert "reranker_int8: true" in text or "reranker_int8: false" in text  # a true/false setting keeps them
