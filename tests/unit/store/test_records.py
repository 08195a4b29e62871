"""The run-record models: every record type the runtime writes has one, they reject what the runtime never
writes, RunState carries SPEC §6's exit codes, and `flow schema` prints a schema for every model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from openadapt_flow.cli.schema import SCHEMAS, schema_json
from openadapt_flow.runtime.act import durable
from openadapt_flow.runtime.operate import upgrade
from openadapt_flow.store.journal import FSYNC_TYPES
from openadapt_flow.store.records import RECORD_TYPES, validate_record
from openadapt_flow.store.runfiles import FILE_MODELS, Approval, Checkpoint, PendingEscalation, State, file_model
from openadapt_flow.store.states import FINAL_STATES, LIVE_STATES, STOPPED_STATES, TERMINAL_STATES, PausedReason, RunState
from tests.support.cli import REPO, run_flow

pytestmark = pytest.mark.timeout(60)
PACKAGE = REPO / "openadapt_flow"
RUNS_V1 = REPO / "tests" / "data" / "runs-v1"


def _written_types() -> set[str]:
    """Every record type a `journal.append("<type>", …)` in the package names (bench excluded: its own scratch
    journals); the types passed by name are `upgrade.RECORD` and the one durable step's `kind` (typed by
    `durable.VerifiedKind`), and no other call passes a computed type."""
    found: set[str] = set()
    named: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if "bench" in path.parts:
            continue
        text = path.read_text()
        found |= set(re.findall(r"journal\.append\(\s*\"(\w+)\"", text))
        named |= set(re.findall(r"journal\.append\(\s*([A-Za-z_][\w.]*)\s*,", text))
    assert named == {"RECORD", "kind"}, named
    return found | {upgrade.RECORD} | set(get_args(durable.VerifiedKind))


def test_every_record_type_the_runtime_writes_has_a_model():
    written = _written_types()
    assert {"step_started", "action_dispatched", "step_verified", "decision", "paused", "run_finished"} <= written
    assert written - set(RECORD_TYPES) == set()
    assert FSYNC_TYPES - set(RECORD_TYPES) == set()


def _rec(type_: str, data: dict, step: str | None = "s") -> dict:
    return {"seq": 4, "ts": "2026-01-01T00:00:00.000Z", "type": type_, "step": step, "data": data,
            "prev_hash": "0" * 64, "hash": "a" * 64}


def test_a_record_is_parsed_into_its_types_model():
    rec = validate_record(_rec("action_dispatched", {"action": "click", "point": [3, 4], "lease_generation": 2}))
    assert type(rec).__name__ == "ActionDispatchedRecord"
    assert rec.data.lease_generation == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(("rec", "error"), [
    (_rec("action_dispatched", {"action": "click", "point": [3, 4]}), "lease_generation"),  # fencing needs it
    (_rec("action_dispatched", {"action": "click", "lease_generation": 1, "typed": "x"}), "typed"),  # unknown key
    (_rec("step_clicked", {}), "step_clicked"),  # unknown type
    (_rec("paused", {"state": "SLEEPING"}), "state"),
    (_rec("paused", {"state": "PAUSED", "paused_reason": "awaiting_godot"}), "paused_reason"),
    ({**_rec("action_sent", {"dispatch_seq": 3}), "extra": 1}, "extra"),  # the envelope is closed
    ({**_rec("action_sent", {"dispatch_seq": 3}), "seq": 0}, "seq"),
    ({**_rec("action_sent", {"dispatch_seq": 3}), "hash": "not-a-hash"}, "hash"),
])
def test_what_the_runtime_never_writes_is_rejected(rec, error):
    with pytest.raises(ValidationError, match=error):
        validate_record(rec)


def test_the_previous_releases_runs_validate():
    for run in (RUNS_V1 / "paused", RUNS_V1 / "interrupted"):
        types = set()
        for line in (run / "journal.jsonl").read_text().splitlines():
            types.add(validate_record(json.loads(line)).type)  # type: ignore[attr-defined]
        assert {"run_started", "step_verified"} <= types
        for path in run.glob("*.json"):
            model = file_model(path.name)
            assert model is not None, path
            model.model_validate_json(path.read_text())


def test_run_files_are_closed_and_typed():
    state = json.loads((RUNS_V1 / "paused" / "state.json").read_text())
    assert State.model_validate(state).state is RunState.PAUSED
    with pytest.raises(ValidationError, match="colour"):
        State.model_validate({**state, "colour": "red"})
    with pytest.raises(ValidationError, match="schema"):
        State.model_validate({**state, "schema": "openadapt-flow/state@2"})
    pending = json.loads((RUNS_V1 / "paused" / "pending_escalation.json").read_text())
    with pytest.raises(ValidationError, match="allowed_decisions"):
        PendingEscalation.model_validate({**pending, "allowed_decisions": ["retry"]})
    cp = json.loads((RUNS_V1 / "paused" / "checkpoint.json").read_text())
    with pytest.raises(ValidationError, match="verified_by"):
        Checkpoint.model_validate({**cp, "verified_by": "hope"})


def test_file_models_by_path():
    assert file_model("decisions/pause-1.json") is Approval
    assert file_model("approval.json") is Approval
    assert file_model("patches/pause-1/patch.json") is FILE_MODELS["patch"]
    assert file_model("frames/x.json") is None and file_model("notes.json") is None


def test_run_state_carries_exit_code_and_kind():
    assert RunState.PAUSED == "PAUSED" and "PAUSED" in STOPPED_STATES and json.dumps(RunState.PAUSED) == '"PAUSED"'
    assert {s.value: s.exit_code for s in RunState} == {"COMPLETED": 0, "FAILED": 1, "FAILED_AFTER_EFFECT": 7, "PAUSED": 3,
                                                        "BLOCKED": 4, "INTERRUPTED": 5, "PENDING": 0, "RUNNING": 0, "RESUMING": 0}
    assert LIVE_STATES == {"PENDING", "RUNNING", "RESUMING"}
    # SPEC §6's four terminal states, and FAILED_AFTER_EFFECT (docs/decisions.md: a landed write is never a plain FAILED)
    assert TERMINAL_STATES == {"COMPLETED", "FAILED", "FAILED_AFTER_EFFECT", "BLOCKED", "INTERRUPTED"}
    assert FINAL_STATES == {"COMPLETED", "FAILED", "FAILED_AFTER_EFFECT", "BLOCKED"}  # INTERRUPTED is terminal, and resumable
    assert STOPPED_STATES == TERMINAL_STATES | {"PAUSED"}
    assert {r.value for r in PausedReason} == {"awaiting_approval", "awaiting_user", "awaiting_signal", "awaiting_timer",
                                               "awaiting_child", "suspended_orphan"}


def test_a_schema_for_every_name():
    for name in SCHEMAS:
        doc = schema_json(name)
        assert doc["$id"] == f"openadapt-flow/{name}"
    journal = schema_json("journal")
    assert set(journal["discriminator"]["mapping"]) == set(RECORD_TYPES)
    assert schema_json("state")["properties"]["schema"]["pattern"] == "^openadapt-flow/state@1$"


def test_flow_schema_prints_one_and_refuses_unknown_names(tmp_path: Path):
    r = run_flow(["schema", "checkpoint"], tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["$id"] == "openadapt-flow/checkpoint"
    r = run_flow(["schema", "nope"], tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "record-step_verified" in r.stderr
