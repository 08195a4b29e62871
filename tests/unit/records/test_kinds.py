"""Each journal record kind's data is defined once (records/kinds.py, stepdoc.py, pausedoc.py): `append` is typed by
it, kind by kind (records/appender.py's overloads, checked by mypy --strict at every call), and the kind's validating
model is derived from it (records/models.py), so the three cannot drift apart."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from typing import get_type_hints

import pytest

from openadapt_flow.records.kinds import DATA_TYPES, CheckDoc
from openadapt_flow.records.models import DATA_MODELS, Check, EffectVerdict, Reading
from openadapt_flow.records.states import RecordType
from openadapt_flow.records.stepdoc import EffectDoc, ReadingDoc
from tests.support.cli import REPO

APPENDER = REPO / "openadapt_flow" / "records" / "appender.py"


def _aliases(model: type) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]  # type: ignore[attr-defined]


def test_every_kind_has_one_data_type_and_one_model():
    assert set(DATA_TYPES) == set(RecordType)
    assert set(DATA_MODELS) == {k.value for k in RecordType}


def test_append_has_one_overload_per_kind_taking_that_kinds_data():
    tree = ast.parse(APPENDER.read_text())
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "append" and node.decorator_list:
            kind = ast.unparse(node.args.args[1].annotation)  # Literal[RecordType.X]
            found[kind.removeprefix("Literal[RecordType.").removesuffix("]")] = ast.unparse(
                node.args.args[3].annotation
            )
    assert found == {k.name: DATA_TYPES[k].__name__ for k in RecordType}


@pytest.mark.parametrize("kind", list(RecordType), ids=lambda k: k.value)
def test_each_model_has_its_data_types_keys_in_its_order(kind: RecordType):
    model, doc = DATA_MODELS[kind.value], DATA_TYPES[kind]
    if model is Check:  # open: its evidence keys ride beside these
        assert _aliases(model) == list(get_type_hints(CheckDoc))
        return
    assert _aliases(model) == list(get_type_hints(doc)), kind


def test_the_verdict_classes_give_their_data_type_from_to_json():
    assert list(Reading(True, 3).to_json()) == [k for k in get_type_hints(ReadingDoc) if k != "error"]
    assert _aliases(Reading) == list(get_type_hints(ReadingDoc))
    verdict = EffectVerdict(verdict="CONFIRMED", baseline=None, observed=None, reads=1, waited_s=0.0)
    assert list(verdict.to_json()) == [k for k in get_type_hints(EffectDoc) if k != "changes"]
    assert list(Check("text_present", "Total", True).to_json()) == list(get_type_hints(CheckDoc))


@pytest.mark.timeout(300)
def test_mypy_checks_the_data_of_each_append_against_its_kind(tmp_path):
    """The point of the typing: a record whose data does not fit its kind is a type error where it is appended."""
    src = tmp_path / "calls.py"
    src.write_text(
        textwrap.dedent('''
        from openadapt_flow.records.states import RecordType, RunState
        from openadapt_flow.store.base import JournalWriter

        def good(j: JournalWriter) -> None:
            j.append(RecordType.ASKED, "s", {"index": 1, "question": "Which?", "choices": None, "type": None})
            j.append(RecordType.RUN_FINISHED, None, {"state": RunState.COMPLETED, "landed": ["save"]})

        def bad(j: JournalWriter) -> None:
            j.append(RecordType.ASKED, "s", {"index": "one", "question": "Which?", "choices": None, "type": None})
            j.append(RecordType.TIMER_SET, "s", {"index": 1})
            j.append(RecordType.ACTION_SENT, "s", {"dispatch_seq": 3, "extra": 1})
            j.append(RecordType.SUSPENDED, None, {"state": RunState.COMPLETED})
    ''')
    )
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), str(src)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    errors = [line for line in r.stdout.splitlines() if ": error:" in line]
    assert sorted({int(line.split(":")[1]) for line in errors}) == [10, 11, 12, 13], r.stdout
