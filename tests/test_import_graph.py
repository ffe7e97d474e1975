"""tique's modules import each other without circles (issue 15): a module can be read, and moved, knowing only
what is below it. Built from the source with ast: the imports a module runs when it is imported (its top level,
class bodies, ``try`` and ``if`` blocks - but not ``if TYPE_CHECKING:``, which only the type checker runs);
imports inside functions are listed separately and allowed only where they are not a circle in disguise."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tique"

# Imports inside a function that would close a circle at module level. Empty: each one found was a piece of code
# in the wrong module, and moved.
ALLOWED_LAZY_CYCLES: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(body: list[ast.stmt], *, in_functions: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``body``: those run at import time, or (``in_functions``) those inside functions."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if not in_functions:
                yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if in_functions:
                yield from (n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _import_nodes(node.orelse, in_functions=in_functions)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    stmts = [s for s in inner if isinstance(s, ast.stmt)]
                    stmts += [s for h in inner if isinstance(h, ast.ExceptHandler) for s in h.body]
                    yield from _import_nodes(stmts, in_functions=in_functions)


def _targets(node: ast.Import | ast.ImportFrom, importer: str, known: set[str], is_package: bool) -> set[str]:
    """The tique modules an import statement loads (``from pkg import mod`` loads pkg.mod)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            anchor = importer.split(".") if is_package else importer.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        names = [base] + [f"{base}.{alias.name}" for alias in node.names]
    found = set()
    for name in names:
        while name and name not in known:  # an imported attribute is not a module: its module is
            name = name.rpartition(".")[0]
        if name and name != importer:
            found.add(name)
    return found


def import_graph(*, in_functions: bool = False) -> dict[str, set[str]]:
    known = set(modules())
    graph: dict[str, set[str]] = {}
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges: set[str] = set()
        for node in _import_nodes(tree.body, in_functions=in_functions):
            edges |= _targets(node, name, known, path.name == "__init__.py")
        graph[name] = edges - {"tique"}  # the package root only re-exports: every module "imports" it
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_graph_sees_imports() -> None:
    """The graph is not vacuously acyclic: known edges are in it, and the detector finds a planted circle."""
    graph = import_graph()
    assert "tique.catalog" in graph["tique.checkpoint.algorithm"]
    assert "tique.engine.base" in graph["tique.engine.embedded"]
    planted = {**graph, "tique.names": graph["tique.names"] | {"tique.checkpoint.algorithm"}}
    assert find_cycle(planted) is not None


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_lazy_imports_do_not_hide_cycles() -> None:
    """An import inside a function that would close a circle if it moved to the top is a circle dodged, not
    broken: the code it fetches belongs in a module below both."""
    graph = import_graph()
    lazy = import_graph(in_functions=True)
    hidden = []
    for importer, targets in sorted(lazy.items()):
        for target in sorted(targets - graph[importer]):
            if (importer, target) in ALLOWED_LAZY_CYCLES:
                continue
            cycle = find_cycle({**graph, importer: graph[importer] | {target}})
            if cycle is not None:
                hidden.append(f"{importer} imports {target} in a function: " + " -> ".join(cycle))
    assert not hidden, "\n".join(hidden)
