"""Before `make setup` installs anything: the Python that makes (or made) .venv must be 3.11, the version
the pinned requirements are built for (pyproject.toml: requires-python >=3.11,<3.12). Exits 2 with what
to do otherwise. Written so that any Python 3 can run it (no f-strings)."""
import sys

WANT = (3, 11)


def problem(version, executable):
    """None when ``version`` (sys.version_info's first three) is the one wanted; else the message."""
    if tuple(version[:2]) == WANT:
        return None
    return ("error: this project needs Python %d.%d (its requirements are pinned for it), but %s is Python %s. "
            "Install Python %d.%d and run make with it, e.g. `make PY=python%d.%d setup`%s."
            % (WANT + (executable, ".".join(map(str, version[:3]))) + WANT + WANT
               + (" (remove .venv first: it was made with that Python)" if "/.venv/" in executable else "",)))


if __name__ == "__main__":
    why = problem(sys.version_info, sys.executable)
    if why:
        sys.stderr.write(why + "\n")
        sys.exit(2)
