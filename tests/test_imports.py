"""No import cycle in lib/: the import graph is built from the source (every ``import`` and ``from ...
import`` of a lib module, relative ones resolved, imports inside functions included) and searched for
cycles (Tarjan's strongly connected components; a component of more than one module, or a module that
imports itself, is a cycle)."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

LIB = Path(__file__).resolve().parent.parent / "lib"


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
    out = set()
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
                out.add(target)
    return out


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


def test_lib_has_no_import_cycle():
    graph = import_graph()
    found = [" -> ".join(a_cycle(graph, comp)) + f"  (modules on a circle together: {', '.join(comp)})"
             for comp in cycles(graph)]
    assert not found, "import cycles in lib/:\n" + "\n".join(found)


def test_the_graph_sees_relative_function_level_and_absolute_imports(tmp_path):
    pkg = tmp_path / "lib"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text(textwrap.dedent("""
        def f():
            from ..c import thing
            return thing
    """))
    (pkg / "c.py").write_text("import lib.a\n")
    (pkg / "d.py").write_text("from . import c\nfrom .sub.b import f\n")
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
