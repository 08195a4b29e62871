"""`flow validate` checks and reports `start:` and `reset:`; `flow schema bundle` shows them (spec §22)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.doc_blocks import section, write_files
from tests.support.bundles import minimal_flow, write_bundle
from tests.support.cli import REPO, run_flow

pytestmark = pytest.mark.timeout(120)

START = [
    {"text_present": "Invoices", "region": [10, 10, 80, 20]},
    {"text_absent": "Vendor"},
    {"blank": [100, 60, 120, 24]},
]
RESET = {
    "command": ["systemctl", "--user", "restart", "ledger"],
    "wait_for": {"text_present": "Invoices"},
    "timeout_s": 30,
}


def test_validate_reports_start_facts_and_the_reset(tmp_path):
    write_bundle(tmp_path / "bundle", minimal_flow(start=START, reset=RESET, reset_before_each=True))
    r = run_flow(["validate", "bundle", "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert (info["start"], info["reset"], info["reset_before_each"]) == (3, "command", True)
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 0 and "3 start facts, reset by command before each item" in r.stdout, r.stdout


def test_validate_warns_of_a_reset_step_with_nothing_to_verify_it(tmp_path):
    step = {"id": "home", "action": "key", "keys": ["escape"]}
    write_bundle(tmp_path / "bundle", minimal_flow(reset={"steps": [step]}))
    r = run_flow(["validate", "bundle", "--json"], tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["reset"] == "steps"
    assert any(w.startswith("reset step 'home'") for w in json.loads(r.stdout)["warnings"]), r.stdout


@pytest.mark.parametrize(
    "over,needle",
    [
        ({"reset": {"command": ["app"]}}, "reset: a reset command needs wait_for"),
        ({"start": [{"region_changed": [0, 0, 9, 9]}]}, "start.0: region_changed needs a screen before it"),
        ({"reset_before_each": True}, "reset_before_each: needs a reset"),
    ],
)
def test_validate_refuses_a_bad_start_or_reset_in_one_line(tmp_path, over, needle):
    write_bundle(tmp_path / "bundle", minimal_flow(**over))
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_schema_bundle_shows_start_and_reset(tmp_path):
    r = run_flow(["schema", "bundle"], tmp_path)
    assert r.returncode == 0, r.stderr
    schema = json.loads(r.stdout)
    assert {"start", "reset", "reset_before_each"} <= set(schema["properties"])
    defs = schema["$defs"]
    assert {"command", "wait_for", "timeout_s", "steps"} <= set(defs["Reset"]["properties"])
    assert "blank" in defs["StartFact"]["properties"] and "blank" in defs["Postcondition"]["properties"]


def test_the_docs_example_of_start_and_reset_validates(tmp_path):
    text = section(
        (REPO / "docs" / "bundle.md").read_text(), "## The start state and the reset: one live app, item after item"
    )
    (written,) = write_files(text, "yaml", tmp_path)
    r = run_flow(["validate", str(written.parent), "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (json.loads(r.stdout)["start"], json.loads(r.stdout)["reset"]) == (3, "command")
