"""Journal lines written before the record types had their own package and `append` was typed per kind still load:
each validates through today's model of its kind, and its data's keys are ones its kind's TypedDict names."""

from __future__ import annotations

import json
from typing import get_type_hints

import pytest

from openadapt_flow.records.kinds import DATA_TYPES
from openadapt_flow.records.models import validate_record
from openadapt_flow.records.states import RecordType
from tests.support.cli import REPO

pytestmark = pytest.mark.timeout(60)
LINES = [
    json.loads(line)
    for line in (REPO / "tests" / "data" / "journal-lines" / "before-records-package.jsonl").read_text().splitlines()
]


def test_the_committed_lines_cover_most_kinds():
    assert len({rec["type"] for rec in LINES}) >= 28


@pytest.mark.parametrize("rec", LINES, ids=lambda r: f"{r['type']}-{r['seq']}")
def test_a_line_written_before_loads_through_its_kinds_model(rec):
    model = validate_record(rec)
    assert model.type == rec["type"]  # type: ignore[attr-defined]
    kind = RecordType(rec["type"])
    if kind is not RecordType.IDENTITY_CHECKED:  # a check's own evidence keys ride beside CheckDoc's
        assert set(rec["data"]) <= set(get_type_hints(DATA_TYPES[kind])), kind
