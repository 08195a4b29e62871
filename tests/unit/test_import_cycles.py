"""No import circle anywhere in openadapt_flow: every import statement counts, those under `if TYPE_CHECKING:` and
those inside functions included (a circle a type checker or a late import hides is still a circle: neither module
can be understood, tested or moved without the other).

The graph is built from the source (an AST walk), not from what Python happens to import: `from P import name`
is an edge to the module `P.name` when there is one, else to `P` itself; a package's `__init__` is imported only
where a statement names it (as import-linter counts)."""

from __future__ import annotations

import ast
from pathlib import Path

import openadapt_flow

ROOT = Path(openadapt_flow.__file__).parent
PACKAGE = "openadapt_flow"


def module_names() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """`name` if it is a module of ours, else the nearest enclosing one (`import a.b.c as x` of a function c)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name if name.startswith(PACKAGE) else None


def _base(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ours that `module` names in any import statement, wherever it stands."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(t for a in node.names if (t := _known(a.name, modules)))
        elif isinstance(node, ast.ImportFrom):
            base = _base(node, module, path.name == "__init__.py")
            for alias in node.names:
                target = (
                    _known(f"{base}.{alias.name}", modules)
                    if f"{base}.{alias.name}" in modules
                    else _known(base, modules)
                )
                if target:
                    targets.add(target)
    targets.discard(module)
    return targets


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {m: imports_of(m, p, modules) for m, p in modules.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module (each holds at least one circle), iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def one_circle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest circle through the component's first module, as the path of imports that closes it."""
    members, start = set(component), component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    return paths[node] + [start]
                if child not in paths:
                    paths[child] = paths[node] + [child]
                    nxt.append(child)
        frontier = nxt
    return component


def test_the_walk_sees_every_kind_of_import() -> None:
    """The check cannot pass by missing imports: a type-checking import and one inside a function are edges."""
    graph = import_graph()
    assert "openadapt_flow.runtime.workflow.api" in graph["openadapt_flow"]  # under `if TYPE_CHECKING:`
    assert "openadapt_flow.store.select" in graph and graph["openadapt_flow.store.select"]
    fake = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(fake) == [["a", "b", "c"]]
    assert one_circle(fake, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_no_import_circles() -> None:
    graph = import_graph()
    circles = [
        " -> ".join(one_circle(graph, comp)) + (f"  (all tied: {', '.join(comp)})" if len(comp) > 3 else "")
        for comp in strongly_connected(graph)
    ]
    assert not circles, "import circles in openadapt_flow:\n" + "\n".join(circles)
