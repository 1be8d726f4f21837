"""The pilot notebooks end to end, as `make report PROFILE=pilot` runs them (papermill, the
project's kernel), into a scratch folder: every notebook executes without error and the run
writes nothing into the shipped report or figures."""
import json
import os

import pytest

from lib.config import ROOT
from lib.report.index_page import notebook_titles


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    import papermill as pm
    from jupyter_client.kernelspec import NoSuchKernel, KernelSpecManager

    try:
        KernelSpecManager().get_kernel_spec("agentic-rag-evidence")
    except NoSuchKernel:
        pytest.skip("the project's kernel is not registered (make setup registers it)")
    os.environ["PYTHONPATH"] = str(ROOT)  # as the Makefile exports it, for the kernel
    tmp = tmp_path_factory.mktemp("pilot-nb")
    shipped = {p: p.stat().st_mtime for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}
    params = {"profile": "pilot", "data_dir": str(tmp / "data"), "results_dir": str(tmp / "results")}
    out = {}
    for name in notebook_titles():
        out[name] = tmp / f"{name}.ipynb"
        pm.execute_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"), str(out[name]), parameters=params,
                            kernel_name="agentic-rag-evidence", cwd=str(ROOT / "notebooks"), progress_bar=False)
    after = {p: p.stat().st_mtime for d in ("report", "figures") for p in (ROOT / d).rglob("*") if p.is_file()}
    return tmp, out, shipped, after


def test_every_pilot_notebook_runs_and_leaves_the_shipped_report_alone(executed):
    tmp, out, shipped, after = executed
    for name, path in out.items():
        nb = json.loads(path.read_text())
        errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert after == shipped, "a pilot run wrote into report/ or figures/"
    assert (tmp / "results" / "summary.json").exists() and (tmp / "results" / "figures").is_dir()
