"""STYLE.md: dependencies point one way. errors → bundle → {vision, backends, store} → ladder → verify → runtime → report → cli."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(30)

PKG = Path(__file__).resolve().parents[2] / "openadapt_flow"
# fixture sits between bundle and backends: backends/fixture.py plays fixtures, and fixture/ needs no backend.
RANK = {"errors": 0, "procs": 0, "bundle": 1, "fixture": 1.5, "vision": 2, "backends": 2, "store": 2, "ladder": 3, "verify": 4,
        "record": 4.5, "runtime": 5, "report": 6, "cli": 7}
# record (the compiler) sits above verify: it tries each fact it chooses with the code the replay judges it with.
# Siblings at the same rank must not import each other (vision never imports backends, store knows no runtime objects).
SAME_RANK_OK = {("bundle", "bundle")}  # errors and procs (rank 0) import nothing of ours


def imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("openadapt_flow."):
            yield node.module.split(".")[1]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("openadapt_flow."):
                    yield a.name.split(".")[1]


def layer_of(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.stem in RANK else rel.stem


def test_imports_point_one_way():
    bad = []
    for path in PKG.rglob("*.py"):
        me = layer_of(path)
        for dep in imports(path):
            if me == "demo" and dep not in ("demo", "procs"):
                bad.append(f"{path.relative_to(PKG)} (the demo app imports nothing of ours) -> {dep}")
            elif me in RANK and dep in RANK and dep != me:
                if RANK[dep] > RANK[me] or (RANK[dep] == RANK[me] and (me, dep) not in SAME_RANK_OK):
                    bad.append(f"{path.relative_to(PKG)} ({me}) imports {dep}")
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_no_module_past_800_lines():
    big = [f"{p.relative_to(PKG)}: {n}" for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > 800]
    assert not big
