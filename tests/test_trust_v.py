"""The probes of issue 57 ("Trust V") kept as tests: each failed once on a clean clone."""
from __future__ import annotations

import subprocess

import pytest

from lib.config import ROOT


@pytest.mark.parametrize("variable", ["NB", "NAME", "PROFILE", "NOT_A_VARIABLE"])
def test_a_make_variable_holding_shell_is_never_run(tmp_path, variable):
    """Probe 5: `make notebook NAME='$(shell touch ...)'` ran the command (make expanded the command-line
    variable it exported to the recipe), before the project refused the value."""
    marker = tmp_path / "ran"
    value = f"$(shell touch {marker})"
    words = {"NB": "zz", variable: value}
    done = subprocess.run(["make", "--no-print-directory", "-o", "setup", "-o", "sync", "-o", "build/.notebooks-synced",
                           "notebook", *(f"{k}={v}" for k, v in words.items())], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and not marker.exists(), done.stderr
    if variable in ("NB", "PROFILE"):  # refused by name, shown as typed
        assert f"{variable}" in done.stderr and value in done.stderr
