"""The probes of a careful and a hostile user that must keep passing (issue list 1-4, the fast ones):
the scorer on any subset of designs, integer settings that refuse boolean-looking values, runs with
parameters that never rewrite the shipped pages, and `make study` that never hands a value to the
shell. (Escaped pages: tests/test_render_safety.py.)"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from lib.config import ROOT, STUDIES_DIR
from lib.evaluation.power import power_sentence, power_table


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"_probe_{name}", ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def scored(designs: list[str], n: int = 12) -> pd.DataFrame:
    """Per-question scores of ``designs`` over ``n`` questions, one run each (dense finds the even ones)."""
    rows = []
    for i in range(n):
        for j, d in enumerate(designs):
            hit = float((i + j) % 2 == 0)
            rows.append({"qid": f"q{i}", "design": d, "run": 1, "recall_at_5": hit, "mrr_at_10": hit / 2})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------- 4. the scorer on any subset of designs


@pytest.mark.parametrize("designs, why", [
    (["dense"], "only dense is saved"),
    (["bm25"], "needs dense's runs, and only bm25 is saved"),
    (["bm25", "agent"], "needs dense's runs, and only agent, bm25 are saved"),
    ([], "no saved run is scored"),
])
def test_power_on_a_subset_of_designs_says_what_it_needs(designs, why):
    pq = scored(designs) if designs else pd.DataFrame(columns=["qid", "design", "run", "recall_at_5", "mrr_at_10"])
    pw = power_table(pq)
    assert pw.empty and "sd_of_differences" in pw.columns and "min_detectable_difference" in pw.columns
    assert why in power_sentence(pw)


def test_a_results_folder_with_dense_alone_is_scored_and_one_without_dense_is_refused_by_name(tmp_path):
    """The probe: the saved dense run alone in a results folder scores (summary, per-condition table,
    breakdowns, power with its reason); a folder without dense stops with the baseline named."""
    from lib.report import queries
    from lib.config import load_profile
    from lib.errors import DataError

    shutil.copytree(ROOT / "results" / "dense", tmp_path / "only-dense" / "dense")
    cfg = load_profile("offline", results_dir=str(tmp_path / "only-dense"))
    assert list(queries.summary_for_profile(cfg).design) == ["dense"]
    power = queries.condition_breakdowns(cfg)["power"]
    assert power.empty and "sd_of_differences" in power.columns
    assert "only dense is saved" in power_sentence(power_table(queries.load_scored(cfg).pq))
    shutil.copytree(ROOT / "results" / "bm25", tmp_path / "no-dense" / "bm25")
    with pytest.raises(DataError, match=r"no-dense/dense: the baseline \(dense\) has no complete run"):
        queries.summary_for_profile(load_profile("offline", results_dir=str(tmp_path / "no-dense")))


def test_power_with_dense_and_one_other_design_sizes_that_one():
    pw = power_table(scored(["dense", "bm25"]))
    assert sorted(set(pw.design)) == ["bm25"] and len(pw) == 2
    assert power_sentence(pw).startswith("with 12 questions the smallest difference from dense")


# ------------------------------------------------------------------- 2. `make study` and `make notebook` run no value

# what a user might paste: a quote that ends the recipe's quoting, a command substitution, a backtick, a `;`
def shell_payloads(marker) -> list[str]:
    return [f'x"; touch {marker}; echo "', f"x'; touch {marker}; echo '", f"$$(touch {marker})", f"`touch {marker}`",
            f"x; touch {marker}", f'x" `touch {marker}` "$$(touch {marker})']


def make(*words: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-o", "setup", "-o", "sync", *words], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def tiny_docs(folder: Path, name: str = "docs.jsonl") -> Path:
    path = folder / name
    path.write_text("".join(json.dumps({"id": f"d{i}", "title": f"t{i}", "text": f"text {i}"}) + "\n" for i in range(3)),
                    encoding="utf-8")
    return path


def test_make_study_hands_no_value_to_the_shell(tmp_path):
    """Every payload in NAME; in each other variable the one that broke its old quoting (double quotes,
    or none for FORMAT and SET): nothing runs, and the command stops with the project's message."""
    marker = tmp_path / "PWNED"
    docs = tiny_docs(tmp_path)
    quoted, bare = shell_payloads(marker)[0], f"x; touch {marker}"
    cases = [("NAME", p) for p in shell_payloads(marker)] + [
        ("DOCS", quoted), ("QUESTIONS", quoted), ("QRELS", quoted), ("FIELDS", quoted), ("QUESTION_FIELDS", quoted),
        ("METADATA", quoted), ("FORMAT", bare), ("SET", bare)]
    for variable, payload in cases:
        words = {"DOCS": str(docs), variable: payload}
        r = make("study", *(f"{k}={v}" for k, v in words.items()), "NOTEBOOKS=")
        assert not marker.exists(), f"{variable}={payload!r} ran a command"
        assert r.returncode == 2, r.stdout + r.stderr
        assert "error:" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not [p for p in STUDIES_DIR.glob("*") if "touch" in p.name]


def test_make_study_refuses_an_unsafe_name_by_name(tmp_path):
    r = make("study", f"DOCS={tiny_docs(tmp_path)}", f"NAME=x\"; touch {tmp_path / 'PWNED'}; echo \"")
    assert r.returncode == 2 and "--name: a study name is letters, digits, '-' and '_', got 'x\"; touch" in r.stderr
    assert not (tmp_path / "PWNED").exists()


def test_make_study_takes_a_path_with_quotes_dollars_backticks_and_semicolons_as_it_is(tmp_path):
    """A documents file whose name holds every such character is the study's file, byte for byte."""
    marker = tmp_path / "PWNED"
    odd = tiny_docs(tmp_path, f"a \"b\" 'c' $(touch {marker.name}) `touch {marker.name}`; d.jsonl")
    name = "probe-odd-path"
    shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)
    try:
        r = make("study", f"DOCS={odd}", f"NAME={name}", "NOTEBOOKS=", env={"PWD_MARK": str(marker)})
        assert not marker.exists() and not (ROOT / marker.name).exists()
        assert r.returncode == 2 and "NOTEBOOKS: no notebook named" in r.stderr  # written, then nothing to run
        profile = yaml.safe_load((STUDIES_DIR / name / "profile.yaml").read_text(encoding="utf-8"))
        assert profile["documents_path"] == str(odd)
    finally:
        shutil.rmtree(STUDIES_DIR / name, ignore_errors=True)


def test_make_notebook_hands_no_value_to_the_shell(tmp_path):
    marker = tmp_path / "PWNED"
    payloads = shell_payloads(marker)
    cases = [("NB", payloads[0], "NB: a notebook number or name"), ("NB", payloads[4], "NB: a notebook number or name"),
             ("PROFILE", payloads[1], "PROFILE: a profile or study name"),
             ("PARAMS", f"-p seed '1; touch {marker}'", "'seed'"), ("PARAMS", payloads[0], "PARAMS")]
    for variable, payload, why in cases:
        words = {"NB": "01", "PROFILE": "offline", variable: payload}
        r = make("notebook", *(f"{k}={v}" for k, v in words.items()))
        assert not marker.exists(), f"{variable}={payload!r} ran a command"
        assert r.returncode == 2, r.stdout + r.stderr
        assert why in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_the_environment_is_read_as_the_command_line_would_have_been():
    run_notebooks = _script("run_notebooks")
    new_study = _script("new_study")
    options, names, words = run_notebooks.from_environment(
        {"RUN_PROFILE": "offline", "RUN_PARAMS": "-p n_runs 2 -p rerank_weights '{dense: 1.0}'", "RUN_EXTEND": "1",
         "RUN_NB": "03"}, ROOT / "notebooks")
    assert names == ["03_dense"] and options[:2] == ["--profile-file", str(ROOT / "profiles" / "offline.yaml")]
    assert words == ["offline", "-p", "n_runs", "2", "-p", "rerank_weights", "{dense: 1.0}", "-p", "extend_shipped", "true"]
    with pytest.raises(ValueError, match="NB=0: several notebooks"):
        run_notebooks.from_environment({"RUN_NB": "0"}, ROOT / "notebooks")
    assert new_study.options_from_env({"STUDY_DOCS": "a b.jsonl", "STUDY_NAME": "-x", "STUDY_SET": "n_runs=2 seed=3",
                                       "STUDY_QRELS": ""}) == ["--docs=a b.jsonl", "--name=-x", "--set=n_runs=2",
                                                               "--set=seed=3"]


# ------------------------------------------------------------------- 3. a user's command never rewrites the shipped pages

def _ignored(path: Path) -> bool:
    return subprocess.run(["git", "check-ignore", "-q", str(path.relative_to(ROOT))], cwd=ROOT).returncode == 0


@pytest.mark.parametrize("params", [
    ["-p", "n_runs", "1"],                                   # fewer runs of the shipped results
    ["-p", "extend_shipped", "true"],                        # EXTEND=1 alone: nothing to add
    ["-p", "extend_shipped", "true", "-p", "runs", "2"],     # EXTEND=1 with a run already saved
    ["-p", "runs", "2"], ["-p", "llm_backend", "local"], ["-p", "design", "loop"],
    ["-p", "n_runs", "2", "-p", "llm_batch", "true"],
])
def test_a_run_with_parameters_renders_into_its_own_folder(params):
    from lib.config import profile_from_args

    p = profile_from_args(["offline", *params])
    assert not p.shipped
    for where in (p.report_dir, p.figures_dir):
        assert not where.is_relative_to(ROOT / "report") and not where.is_relative_to(ROOT / "figures"), where
        assert _ignored(where / "03_dense.html"), where
    # the kernel reads the same parameters the same way (papermill's injected values), so the page goes there too
    from papermill.cli import _resolve_type

    from lib.preflight import notebook_profile

    namespace = {**yaml.safe_load((ROOT / "profiles" / "offline.yaml").read_text()), "profile": "offline", "runs": None,
                 "design": None, **{params[i + 1]: _resolve_type(params[i + 2]) for i in range(0, len(params), 3)}}
    if p.llm_backend == "local":
        return  # the kernel checks that the local model is installed; the folder is the same property
    assert notebook_profile(namespace).report_dir == p.report_dir


@pytest.mark.parametrize("params", [[], ["-p", "n_runs", "3"],
                                    ["-p", "extend_shipped", "true", "-p", "runs", "4"],
                                    ["-p", "extend_shipped", "true", "-p", "n_runs", "4"]])
def test_only_the_plain_run_or_one_that_adds_runs_on_purpose_renders_the_shipped_pages(params):
    from lib.config import profile_from_args

    p = profile_from_args(["offline", *params])
    assert p.shipped and p.report_dir == ROOT / "report" and p.figures_dir == ROOT / "figures"


def test_n_runs_true_is_refused_before_any_page_is_rendered(tmp_path):
    r = make("notebook", "NB=03", "PARAMS=-p n_runs true")
    assert r.returncode == 2 and "parameter 'n_runs': expected an integer" in r.stderr and "true/false" in r.stderr


def makefile_user_variables() -> set[str]:
    """The variables a user sets on make's command line: those read with ``$(value X)``, given a default
    with ``?=``, or referenced without ever being set in the Makefile."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    assigned = set(re.findall(r"^(?:export\s+)?([A-Z_][A-Z0-9_]*)\s*[:?+]?=", text, flags=re.M))
    referenced = set(re.findall(r"\$\(([A-Z_][A-Z0-9_]*)\)", text))
    return (set(re.findall(r"\$\(value ([A-Z_][A-Z0-9_]*)\)", text))
            | set(re.findall(r"^([A-Z_][A-Z0-9_]*)\s*\?=", text, flags=re.M)) | (referenced - assigned))


def test_no_make_target_pastes_a_users_value_into_a_shell_line(tmp_path):
    """Every phony target, dry-run (``make -n``: the recipe lines as the shell would get them, none run)
    with every user variable set to a payload: no recipe line holds the payload. Values reach the
    scripts through the environment instead."""
    marker = tmp_path / "PWNED"
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = re.search(r"^\.PHONY:(.*)$", text, flags=re.M).group(1).split()
    variables = makefile_user_variables()
    assert {"PROFILE", "PARAMS", "NAME", "LOCAL_MODEL", "ARGS", "ARMS", "SAVE"} <= variables
    payload = shell_payloads(marker)[0]
    for target in targets:
        r = make("-n", target, *(f"{v}={payload}" for v in sorted(variables)))
        assert str(marker) not in r.stdout, f"make {target} puts a user's value into a shell line:\n{r.stdout}"
    assert not marker.exists()
