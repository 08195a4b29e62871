"""The run vocabulary is spelled once, in `records/states.py`: no bare state, paused reason or decision kind elsewhere,
and no journal record's `type` compared as a string.

Rule for a bare literal: a string constant equal to a value of `RunState`, `PausedReason` or `DecisionKind` fails
where it is a value the code acts on: an operand of a comparison (or an item of a tuple/list/set operand), the value
of an assignment or a `return` (or an item of a tuple/list/set there), a call's argument, or a dict's value. Text is
exempt: docstrings and other bare expression statements, pieces of f-strings, keys (a dict's keys and the key of
`.get`/`.pop`/`.setdefault`: a field named like a decision is not one), and annotations (a `Literal[...]` names a
type, it compares nothing). A word that only looks like one (a job named "reconcile") is exempt on a line that says
`# not-vocabulary`.

Rule for record types: no comparison has `X["type"]` or `X.get("type")` as an operand, and no comparison of a
variable (a record's type read earlier) has a string constant equal to a `RecordType` value as an operand:
`states.is_a(rec, RecordType.X, ...)` tests a record, `typ == RecordType.X` a type read from one.

Rule for writing a record: a journal append's kind is a `RecordType` member, never a string. A call `X.append(kind,
...)` with more than one argument (or a `sync=`) is a journal append (a list's `append` takes one), and its kind may
not be a string constant, nor have one as a branch (`"a" if c else "b"`); neither may the `kind=` of
`record_verified` nor the kind of `make_record`.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

from openadapt_flow.records.models import DATA_MODELS, Check, Decision, EffectVerdict, Reading
from openadapt_flow.records.states import DecisionKind, PausedReason, RecordType, RunState

PACKAGE = Path(__file__).resolve().parents[2] / "openadapt_flow"
STATES_MODULE = PACKAGE / "records" / "states.py"
VOCABULARY = {m.value for enum in (RunState, PausedReason, DecisionKind) for m in enum}
RECORD_TYPE_VALUES = {m.value for m in RecordType}
PENDING: set[str] = set()  # every module is held to the rule

# Where `["type"]` is not a journal record's: an ASGI scope or message, a pydantic error, a recorded parameter.
NOT_JOURNAL = {"auth/edge.py", "bundle/yamlsrc.py", "record/params.py"}


def _modules() -> Iterator[tuple[str, ast.Module, list[str]]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if path == STATES_MODULE or any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in PENDING):
            continue
        text = path.read_text()
        yield rel, ast.parse(text, filename=rel), text.splitlines()


def _items(node: ast.expr) -> list[ast.expr]:
    """A node and what its value may be: a tuple/list/set display's items (and theirs: `return ("PAUSED" if d else
    "FAILED"), msg`), either branch of `a if c else b`, each operand of `a or b`."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [node, *(item for elt in node.elts for item in _items(elt))]
    if isinstance(node, ast.IfExp):
        return [node, *_items(node.body), *_items(node.orelse)]
    if isinstance(node, ast.BinOp):  # `[...] + ["escalate"]`
        return [node, *_items(node.left), *_items(node.right)]
    if isinstance(node, ast.BoolOp):
        return [node, *(item for value in node.values for item in _items(value))]
    return [node]


def _acted_on(tree: ast.Module) -> Iterator[ast.expr]:
    """Every expression whose value the code acts on, per the module docstring's rule."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                yield from _items(operand)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Return)) and node.value is not None:
            yield from _items(node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield from _items(node.value)
        elif isinstance(node, ast.Call):
            keyed = isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop", "setdefault")
            for arg in [*(node.args[1:] if keyed else node.args), *(k.value for k in node.keywords)]:
                yield from _items(arg)
        elif isinstance(node, ast.Dict):
            for value in node.values:
                if value is not None:
                    yield from _items(value)


def _str(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def test_no_bare_state_decision_or_paused_reason_outside_the_states_module() -> None:
    bare = [
        f"{rel}:{node.lineno}: {_str(node)!r}"
        for rel, tree, lines in _modules()
        for node in _acted_on(tree)
        if _str(node) in VOCABULARY and "# not-vocabulary" not in lines[node.lineno - 1]
    ]
    assert bare == [], "spell these with RunState / PausedReason / DecisionKind:\n" + "\n".join(bare)


def _is_type_of(node: ast.expr) -> bool:
    """`X["type"]` or `X.get("type")`."""
    if isinstance(node, ast.Subscript):
        return _str(node.slice) == "type"
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and bool(node.args)
        and _str(node.args[0]) == "type"
    )


def test_no_record_type_compared_as_a_string() -> None:
    found = []
    for rel, tree, _lines in _modules():
        if rel in NOT_JOURNAL:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            operands = [item for operand in (node.left, *node.comparators) for item in _items(operand)]
            typed = any(_is_type_of(o) for o in operands)
            variable = any(isinstance(o, ast.Name) for o in operands)
            if typed or (variable and any(_str(o) in RECORD_TYPE_VALUES for o in operands)):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    assert found == [], "test a record's type with states.is_a(rec, RecordType.X):\n" + "\n".join(found)


def test_the_vocabularies_match_the_record_models() -> None:
    assert {m.value for m in RecordType} == set(DATA_MODELS)
    assert {m.value for m in DecisionKind} == set(get_args(Decision))


def test_a_record_model_is_the_one_class_of_its_name() -> None:
    """The runtime's verdicts (Check, EffectVerdict, Reading) are the journal's models, and the policy's run signal
    is not a second `Blocked`: no class elsewhere takes the name of a model of `records/models.py`."""
    records = PACKAGE / "records" / "models.py"
    models = {n.name for n in ast.parse(records.read_text()).body if isinstance(n, ast.ClassDef)}
    twins = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != records
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name in models
    ]
    assert twins == []


def test_the_verdicts_write_what_journals_on_disk_hold() -> None:
    """A verdict's JSON is byte-for-byte what the dataclasses it replaced wrote, and a journal's record reads back
    into the same class."""

    check = Check("text_present", "Total", True, "read 'Total'", {"score": 0.91, "at": [1, 2, 3, 4]})
    assert json.dumps(check.to_json()) == (
        '{"kind": "text_present", "expected": "Total", "ok": true, "detail": '
        '"read \'Total\'", "score": 0.91, "at": [1, 2, 3, 4]}'
    )
    assert Check("readback", "x", False).to_json() == {"kind": "readback", "expected": "x", "ok": False, "detail": ""}
    assert Check.model_validate(check.to_json()).evidence == {"score": 0.91, "at": [1, 2, 3, 4]}
    assert Reading(False, error="boom").to_json() == {"ok": False, "value": None, "error": "boom"}
    assert Reading(True, 3).to_json() == {"ok": True, "value": 3}
    verdict = EffectVerdict(
        verdict="CONFIRMED", baseline=Reading(True, 0), observed=Reading(True, 1), reads=2, waited_s=0.12345
    )
    assert json.dumps(verdict.to_json()) == (
        '{"verdict": "CONFIRMED", "baseline": {"ok": true, "value": 0}, "observed": '
        '{"ok": true, "value": 1}, "reads": 2, "waited_s": 0.123, "detail": ""}'
    )
    assert EffectVerdict.model_validate(verdict.to_json()).to_json() == verdict.to_json()


def _string_kinds(tree: ast.Module) -> Iterator[ast.expr]:
    """The kind argument of every journal append (`X.append(kind, step, ...)`), `make_record` and `record_verified`
    call, where it is (or may be) a string constant."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        kinds: list[ast.expr] = []
        if name == "append" and node.args and (len(node.args) > 1 or any(k.arg == "sync" for k in node.keywords)):
            kinds.append(node.args[0])
        elif name == "make_record" and len(node.args) > 3:
            kinds.append(node.args[3])
        kinds += [
            k.value
            for k in node.keywords
            if k.arg in ("type_", "kind") and name in ("append", "make_record", "record_verified")
        ]
        yield from (item for kind in kinds for item in _items(kind) if _str(item) is not None)


def test_no_record_kind_written_as_a_string() -> None:
    found = [
        f"{rel}:{node.lineno}: {ast.unparse(node)}" for rel, tree, _lines in _modules() for node in _string_kinds(tree)
    ]
    assert found == [], "write a journal record with its RecordType member:\n" + "\n".join(found)


def test_the_string_kind_rule_sees_what_it_forbids() -> None:
    """The rule above catches each way a string kind could be written, and passes a list's own append."""
    bad = ast.parse(
        'j.append("asked", None, {})\nctx.journal.append(\n    "halted",\n    s)\n'
        'j.append("paused" if p else RecordType.RUN_FINISHED, None, {})\nj.append("x", sync=True)\n'
        'make_record(k, 1, h, "decision", None, {})\nrecord_verified(c, s, d, kind="step_skipped")\n'
    )
    good = ast.parse(
        'lines.append("asked")\nj.append(RecordType.ASKED, None, {})\nj.append(kind, s, d)\n'
        'record_verified(c, s, d, kind=RecordType.STEP_SKIPPED)\n'
    )
    assert [n.lineno for n in _string_kinds(bad)] == [1, 3, 5, 6, 7, 8]
    assert list(_string_kinds(good)) == []
