"""The store's shape holds: one journal writer (a dialect only persists a line), every name of the store's face and
of each dialect's face resolves, and no part of the PostgreSQL store reaches back to the store that lists runs."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import openadapt_flow.store as store
from openadapt_flow.store.fs import Journal
from openadapt_flow.store.journal import JournalWriterBase
from openadapt_flow.store.memory import MemoryJournal

STORE = Path(store.__file__).parent


def _is_stub(node: ast.FunctionDef) -> bool:
    """A protocol's method: a docstring and/or `...`, no code."""
    return all(isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant) for b in node.body)


def _functions_named(name: str) -> list[str]:
    """The store's modules that implement a function `name` (protocol stubs left out)."""
    found = []
    for path in sorted(STORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == name and not _is_stub(node):
                found.append(path.relative_to(STORE).as_posix())
    return found


def test_a_journal_line_is_chained_in_one_place() -> None:
    """`append` (chain, seq, observers, last_of, crash point) is written once; every dialect's writer inherits it."""
    from openadapt_flow.store.postgres.journal import PostgresJournal

    assert _functions_named("append") == ["journal.py"]
    assert _functions_named("make_record") == ["journal.py"]
    for writer in (Journal, MemoryJournal, PostgresJournal):
        assert issubclass(writer, JournalWriterBase) and "append" not in vars(writer)


@pytest.mark.parametrize(
    "face",
    ["openadapt_flow.store", "openadapt_flow.store.fs", "openadapt_flow.store.memory", "openadapt_flow.store.postgres"],
)
def test_every_name_of_a_face_resolves(face: str) -> None:
    module = importlib.import_module(face)
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert not missing, f"{face}: __all__ names {missing}, which do not resolve"


def test_no_postgres_part_reaches_back_to_the_store() -> None:
    """Every part is handed the connector (postgres/connector.py); only the package's lazy face names the store."""
    reaching = []
    for path in sorted((STORE / "postgres").glob("*.py")):
        if path.name in ("__init__.py", "store.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "openadapt_flow.store.postgres.store":
                reaching.append(path.name)
    assert not reaching
