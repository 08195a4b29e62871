"""Every `flow schema` output is the committed dump (tests/data/schemas/, written by scripts/dump_schemas.py before the
record types moved to openadapt_flow/records/): a run file written before a change still loads after it. A schema
changed on purpose is re-dumped in the same commit, and says why."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from openadapt_flow.cli.app import app
from openadapt_flow.cli.schema import SCHEMAS
from tests.support.cli import REPO

pytestmark = pytest.mark.timeout(120)
DUMP = REPO / "tests" / "data" / "schemas"


def test_the_dump_names_every_schema_and_no_other():
    assert {p.stem for p in DUMP.glob("*.json")} == set(SCHEMAS)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_flow_schema_prints_the_committed_dump(name: str):
    res = CliRunner().invoke(app, ["schema", name])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == json.loads((DUMP / f"{name}.json").read_text())
    assert res.stdout == (DUMP / f"{name}.json").read_text()  # byte for byte: key order is part of the contract
