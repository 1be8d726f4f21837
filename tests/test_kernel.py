"""The report's kernel is registered for the venv that runs the notebooks: a stale registration (another
clone's interpreter, or one that no longer exists) is written again, and another of the same name that
Jupyter would find first is left in place, passed over for this run, and named with the command that
removes it. Tested in folders of the test's own; nothing of the real venv is written."""
import json
import os
from pathlib import Path

from lib.report import kernel


def spec(folder: Path, python: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps({"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                                    "display_name": kernel.KERNEL, "language": "python"}))
    return folder


def test_a_stale_registration_in_the_venv_is_written_again(tmp_path, monkeypatch):
    prefix, python = tmp_path / "venv", str(tmp_path / "venv" / "bin" / "python")
    own = spec(kernel.own_dir(prefix), "/gone/other-clone/.venv/bin/python")
    monkeypatch.setattr(kernel, "search_order", lambda: [own.parent])
    notes = kernel.ensure_kernel(python, prefix, environ={})
    assert kernel.runs(own, python) and len(notes) == 1
    assert "started /gone/other-clone/.venv/bin/python, which no longer exists: registered again for" in notes[0]
    assert kernel.ensure_kernel(python, prefix, environ={}) == []  # in order now: nothing to say
    # none at all (a venv made without `make setup`'s last step): registered, nothing to repair
    (own / "kernel.json").unlink()
    assert kernel.ensure_kernel(python, prefix, environ={}) == [] and kernel.runs(own, python)


def test_the_registration_is_the_one_make_setup_writes():
    real = Path(__file__).resolve().parent.parent / ".venv" / "share" / "jupyter" / "kernels" / kernel.KERNEL
    if not (real / "kernel.json").exists():
        return  # no venv here: nothing to compare with
    written = json.loads((real / "kernel.json").read_text())
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        kernel.register(Path(tmp) / "k", written["argv"][0])
        assert json.loads((Path(tmp) / "k" / "kernel.json").read_text())["argv"] == written["argv"]


def test_another_registration_first_in_the_search_path_is_passed_over_and_named(tmp_path, monkeypatch):
    prefix, python = tmp_path / "venv", str(tmp_path / "venv" / "bin" / "python")
    own = spec(kernel.own_dir(prefix), python)
    other = spec(tmp_path / "user" / "kernels" / kernel.KERNEL, "/home/someone/old-clone/.venv/bin/python")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "user"))  # the other comes first, as a user's would
    from jupyter_core.paths import jupyter_path

    assert Path(jupyter_path("kernels")[0]) == other.parent
    notes = kernel.ensure_kernel(python, prefix)
    assert len(notes) == 1 and f"rm -r '{other}'" in notes[0] and "old-clone" in notes[0]
    assert other.exists()  # not this project's file to delete
    # this run now finds the venv's own first
    assert os.environ["JUPYTER_PATH"].split(os.pathsep)[0] == str(own.parent.parent)
    from jupyter_client.kernelspec import KernelSpecManager

    assert KernelSpecManager().get_kernel_spec(kernel.KERNEL).argv[0] == python


def test_a_clone_whose_venv_links_to_this_venv_runs_the_same_registration(tmp_path):
    """A clone's .venv that is a link to this venv's folder is this venv: its registration is not written
    again (the shared venv's kernel would otherwise start the clone's path, gone with the clone), while
    another venv's python, a link to the same base interpreter, is not."""
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").symlink_to(os.path.realpath(os.sys.executable))
    (tmp_path / "clone").mkdir()
    (tmp_path / "clone" / ".venv").symlink_to(tmp_path / "venv")
    own = spec(tmp_path / "spec", str(tmp_path / "venv" / "bin" / "python"))
    assert kernel.runs(own, str(tmp_path / "clone" / ".venv" / "bin" / "python"))
    (tmp_path / "other" / "bin").mkdir(parents=True)
    (tmp_path / "other" / "bin" / "python").symlink_to(os.path.realpath(os.sys.executable))
    assert not kernel.runs(own, str(tmp_path / "other" / "bin" / "python"))
