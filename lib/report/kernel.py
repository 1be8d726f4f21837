"""The Jupyter kernel the report's notebooks run in, registered for the virtual environment that runs
them, and repaired when its registration is stale or another one shadows it.

`make setup` registers the kernel ``agentic-rag-evidence`` inside the venv (``ipykernel install
--sys-prefix``): its ``kernel.json`` names the venv's interpreter by its absolute path. A venv moved or
copied with its clone, or a registration of the same name written by another clone, leaves a kernel that
starts another interpreter, or none (the run then failed with a bare "No such file or directory").
Before the notebooks run, :func:`ensure_kernel` checks the registration that Jupyter would start by that
name: the venv's own is written again for the running interpreter when it names another; one of the same
name elsewhere that comes first in Jupyter's search path is left in place (it is not this project's file
to delete), this run is pointed at the venv's own (``JUPYTER_PATH``), and a note names the command that
removes it."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

KERNEL = "agentic-rag-evidence"


def own_dir(prefix: str | Path = sys.prefix, name: str = KERNEL) -> Path:
    """Where the venv's own registration lives (``--sys-prefix``)."""
    return Path(prefix) / "share" / "jupyter" / "kernels" / name


def interpreter(spec_dir: Path) -> str | None:
    """The interpreter a registration starts (its argv[0]), or None when it cannot be read."""
    try:
        argv = json.loads((spec_dir / "kernel.json").read_text(encoding="utf-8")).get("argv") or []
    except (OSError, ValueError, AttributeError):
        return None
    return str(argv[0]) if argv else None


def runs(spec_dir: Path, python: str) -> bool:
    """Whether a registration starts this interpreter of this venv: the same file name in the same venv
    folder, the folder's links followed (a clone whose .venv links to this venv's folder is the same venv),
    the interpreter's not (a venv's python is a link to the base interpreter, so another venv's resolves to
    the same file)."""
    found = interpreter(spec_dir)
    if found is None:
        return False
    a, b = Path(os.path.abspath(found)), Path(os.path.abspath(python))
    return a.name == b.name and a.parent.resolve() == b.parent.resolve()


def register(spec_dir: Path, python: str, name: str = KERNEL) -> None:
    """Write the registration as ``ipykernel install`` writes it, for ``python``."""
    from ipykernel.kernelspec import make_ipkernel_cmd, write_kernel_spec  # the Jupyter machinery is only needed to run a notebook

    shutil.rmtree(spec_dir, ignore_errors=True)
    spec_dir.parent.mkdir(parents=True, exist_ok=True)
    write_kernel_spec(spec_dir, overrides={
        "argv": make_ipkernel_cmd(executable=python, python_arguments=["-Xfrozen_modules=off"]),
        "display_name": name})


def search_order() -> list[Path]:
    """The folders Jupyter looks for kernels in, first first (``jupyter_core.paths.jupyter_path``)."""
    from jupyter_core.paths import jupyter_path  # the Jupyter machinery is only needed to run a notebook

    return [Path(p) for p in jupyter_path("kernels")]


def ensure_kernel(python: str = sys.executable, prefix: str | Path = sys.prefix, name: str = KERNEL,
                  environ=os.environ) -> list[str]:
    """Make the kernel ``name`` start ``python``: returns the notes of what was repaired or found (empty when
    all was in order). Outside a virtual environment nothing is written (the kernel is the venv's)."""
    notes: list[str] = []
    own = own_dir(prefix, name)
    if not runs(own, python):
        if Path(prefix).resolve() == Path(sys.base_prefix).resolve():
            return [f"the kernel {name!r} is registered for the project's venv (`make setup`); this interpreter "
                    f"({python}) is not in one, so its registration was not checked"]
        before = interpreter(own)
        register(own, python, name)
        if before is not None:
            why = "no longer exists" if not Path(before).exists() else "is another environment's"
            notes.append(f"the kernel {name!r} registered in {own} started {before}, which {why}: registered again "
                         f"for {python}")
    first = next((d / name for d in search_order() if (d / name / "kernel.json").exists()), None)
    if first is not None and first.resolve() != own.resolve():
        other = interpreter(first)
        paths = [str(own.parent.parent)] + [p for p in environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
        environ["JUPYTER_PATH"] = os.pathsep.join(dict.fromkeys(paths))
        notes.append(f"another registration of the kernel {name!r}, {first} (it starts {other}), comes before this "
                     f"venv's in Jupyter's search path: this run uses the venv's own ({own}); to remove the other: "
                     f"rm -r '{first}'")
    return notes
