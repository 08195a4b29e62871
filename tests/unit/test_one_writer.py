"""One writer per journal record type: each type is written from exactly one function of openadapt_flow.

A record type spelled in two places drifts (a field carried by one writer only): the durable calls, resume and the
child runs of bundles and Python workflows each wrote theirs once. The walk finds every form a record is written in:
`<…>.journal.append(RecordType.<TYPE>, …)` (ctx.journal, rc.journal, self.rc.journal, a `journal` variable…) and the
durable record helper `record_verified(…, kind=RecordType.<TYPE>)`, whose own default is the one `step_verified`
writer. (A string kind, which tests/unit/test_no_bare_states.py forbids, is read too.)
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import openadapt_flow
from openadapt_flow.records.states import RecordType

PACKAGE = Path(openadapt_flow.__file__).parent
HELPERS = {"record_verified"}  # the durable record helper: (ctx, step, data, *, kind=…)


def _journal_receiver(node: ast.expr) -> bool:
    """Is this the receiver of a journal write (`journal`, `x.journal`, `x.y.journal`)?"""
    if isinstance(node, ast.Name):
        return node.id == "journal"
    return isinstance(node, ast.Attribute) and node.attr == "journal"


def _kind(node: ast.expr | None) -> str | None:
    """The record type a kind expression names: `RecordType.X` (or a string literal), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "RecordType":
        return RecordType[node.attr].value
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _written_type(call: ast.Call) -> str | None:
    """The record type this call writes, if it names one."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "append" and _journal_receiver(func.value):
        return _kind(call.args[0] if call.args else None)
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if name in HELPERS:
        return _kind(next((k.value for k in call.keywords if k.arg == "kind"), None))
    return None


def _helper_defaults(fn: ast.FunctionDef) -> list[str]:
    """A helper's own default record type (`kind: … = "step_verified"`) is written by the helper."""
    if fn.name not in HELPERS:
        return []
    return [
        t for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if a.arg == "kind" and (t := _kind(d)) is not None
    ]


def writers() -> dict[str, set[str]]:
    """record type -> the functions (`module:qualname`) that write it."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE.parent).with_suffix("").as_posix().replace("/", ".")
        tree = ast.parse(path.read_text(), str(path))
        _walk(tree, module, "", found)
    return found


def _walk(node: ast.AST, module: str, owner: str, found: dict[str, set[str]]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner = f"{owner}.{child.name}" if owner else child.name
            # a nested function writes on behalf of the function it is defined in
            where = owner if owner and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else inner
            if isinstance(child, ast.FunctionDef):
                for t in _helper_defaults(child):
                    found[t].add(f"{module}:{inner}")
            _walk(child, module, where if not isinstance(child, ast.ClassDef) else inner, found)
            continue
        if isinstance(child, ast.Call):
            t = _written_type(child)
            if t is not None:
                found[t].add(f"{module}:{owner or '<module>'}")
        _walk(child, module, owner, found)


def test_the_walk_sees_the_known_forms() -> None:
    found = writers()
    # one of each form: ctx.journal.append, journal.append, rc.journal.append, the helper's kind= and its default
    assert {"paused", "run_started", "decision", "step_skipped", "step_verified"} <= set(found), sorted(found)


def test_every_journal_record_type_has_one_writer() -> None:
    twice = {t: sorted(fns) for t, fns in writers().items() if len(fns) > 1}
    assert not twice, "record types written from more than one function:\n" + "\n".join(
        f"  {t}: {', '.join(fns)}" for t, fns in sorted(twice.items())
    )
