"""The run-record models: every record type the runtime writes has one, they reject what the runtime never
writes, RunState carries SPEC §6's exit codes, and `flow schema` prints a schema for every model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from openadapt_flow.cli.schema import SCHEMAS, schema_json
from openadapt_flow.records.models import RECORD_TYPES, validate_record
from openadapt_flow.records.runfiles import FILE_MODELS, Approval, Checkpoint, PendingEscalation, State, file_model
from openadapt_flow.records.states import (
    FINAL_STATES,
    LIVE_STATES,
    STOPPED_STATES,
    TERMINAL_STATES,
    PausedReason,
    RecordType,
    RunState,
)
from openadapt_flow.runtime.operate import upgrade
from openadapt_flow.store.journal import FSYNC_TYPES
from tests.support.cli import REPO, run_flow

pytestmark = pytest.mark.timeout(60)
PACKAGE = REPO / "openadapt_flow"
RUNS_V1 = REPO / "tests" / "data" / "runs-v1"


def _written_types() -> set[str]:
    """Every record type a `journal.append(RecordType.<TYPE>, …)` in the package names (bench excluded: its own
    scratch journals); the one type passed by name is `upgrade.RECORD`, and no other call passes a computed type."""
    found: set[str] = set()
    named: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        if "bench" in path.parts:
            continue
        text = path.read_text()
        found |= {RecordType[m].value for m in re.findall(r"journal\.append\(\s*RecordType\.(\w+)", text)}
        named |= set(re.findall(r"journal\.append\(\s*(?!RecordType\.)([A-Za-z_][\w.]*)\s*,", text))
    assert named == {"RECORD"}, named
    return found | {upgrade.RECORD}


def test_every_record_type_the_runtime_writes_has_a_model():
    written = _written_types()
    assert {"step_started", "action_dispatched", "step_verified", "decision", "paused", "run_finished"} <= written
    assert written - set(RECORD_TYPES) == set()
    assert FSYNC_TYPES - set(RECORD_TYPES) == set()


def _rec(type_: str, data: dict, step: str | None = "s") -> dict:
    return {
        "seq": 4,
        "ts": "2026-01-01T00:00:00.000Z",
        "type": type_,
        "step": step,
        "data": data,
        "prev_hash": "0" * 64,
        "hash": "a" * 64,
    }


def test_a_record_is_parsed_into_its_types_model():
    rec = validate_record(_rec("action_dispatched", {"action": "click", "point": [3, 4], "lease_generation": 2}))
    assert type(rec).__name__ == "ActionDispatchedRecord"
    assert rec.data.lease_generation == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("rec", "error"),
    [
        (_rec("action_dispatched", {"action": "click", "point": [3, 4]}), "lease_generation"),  # fencing needs it
        (_rec("action_dispatched", {"action": "click", "lease_generation": 1, "typed": "x"}), "typed"),  # unknown key
        (_rec("step_clicked", {}), "step_clicked"),  # unknown type
        (_rec("paused", {"state": "SLEEPING"}), "state"),
        (_rec("paused", {"state": "PAUSED", "paused_reason": "awaiting_godot"}), "paused_reason"),
        ({**_rec("action_sent", {"dispatch_seq": 3}), "extra": 1}, "extra"),  # the envelope is closed
        ({**_rec("action_sent", {"dispatch_seq": 3}), "seq": 0}, "seq"),
        ({**_rec("action_sent", {"dispatch_seq": 3}), "hash": "not-a-hash"}, "hash"),
    ],
)
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
    assert {s.value: s.exit_code for s in RunState} == {
        "COMPLETED": 0,
        "FAILED": 1,
        "FAILED_AFTER_EFFECT": 7,
        "PAUSED": 3,
        "BLOCKED": 4,
        "INTERRUPTED": 5,
        "PENDING": 0,
        "RUNNING": 0,
        "RESUMING": 0,
    }
    assert LIVE_STATES == {"PENDING", "RUNNING", "RESUMING"}
    # SPEC §6's four terminal states, and FAILED_AFTER_EFFECT (docs/decisions.md: a landed write is never a plain FAILED)
    assert TERMINAL_STATES == {"COMPLETED", "FAILED", "FAILED_AFTER_EFFECT", "BLOCKED", "INTERRUPTED"}
    assert FINAL_STATES == {
        "COMPLETED",
        "FAILED",
        "FAILED_AFTER_EFFECT",
        "BLOCKED",
    }  # INTERRUPTED is terminal, and resumable
    assert STOPPED_STATES == TERMINAL_STATES | {"PAUSED"}
    assert {r.value for r in PausedReason} == {
        "awaiting_approval",
        "awaiting_user",
        "awaiting_signal",
        "awaiting_timer",
        "awaiting_child",
        "suspended_orphan",
    }


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


# checkpoint.json as the code before the typed documents wrote it for these two records (fixed clock, key b"k"*32).
CHECKPOINT_BEFORE = (
    b'{\n  "schema": "openadapt-flow/checkpoint@1",\n  "seq": 2,\n  "journal_hash": '
    b'"dc9ebde61ec6b7bff289d532686f1dffe3df9b10a38df2a9e8933217ae25deed",\n  "step": "s2",\n  "step_index": 1,\n'
    b'  "next_index": 2,\n  "verified_by": "runtime",\n  "results": {\n    "s1": {\n      "ok": "\xc3\x9c"\n    }\n  },\n'
    b'  "effects": {\n    "s1": {\n      "row": 3\n    }\n  },\n  "screen_facts": []\n}\n'
)


def test_a_checkpoint_written_before_reads_and_reserialises_byte_identically(tmp_path, monkeypatch):
    """CheckpointDoc is the typed document the run handles read and write: the bytes (and the digest a decision task
    signs) are what they were, and a stored one judged against its journal is kept as it is."""
    import openadapt_flow.store.journal as journal_mod
    from openadapt_flow.records.checkpoint import checkpoint_digest, checkpoint_from_records
    from openadapt_flow.records.entry import CheckpointDoc
    from openadapt_flow.store import FilesystemStore
    from openadapt_flow.store.atomic import dumps

    monkeypatch.setattr(journal_mod, "now_iso", lambda: "2026-01-02T03:04:05.678Z")
    key = b"k" * 32
    run = FilesystemStore(tmp_path / "runs").create_run()
    journal = run.new_journal(key)
    journal.append(
        "step_verified",
        "s1",
        {
            "index": 0,
            "verified_by": "runtime",
            "result": {"ok": "Ü"},
            "effect": {"row": 3},
            "screen_facts": [{"text": "Saved"}],
        },
    )
    journal.append("step_skipped", "s2", {"index": 1})
    journal.close()
    records = run.load_journal(key).records
    cp = checkpoint_from_records(records)
    assert cp is not None and dumps(cp).encode() == CHECKPOINT_BEFORE
    run.write_checkpoint(cp)
    stored = run.read_checkpoint()
    assert stored is not None and list(stored) == list(CheckpointDoc.__annotations__)
    assert dumps(stored).encode() == CHECKPOINT_BEFORE and checkpoint_digest(stored) == checkpoint_digest(cp)
    assert run.reconcile_checkpoint(records) == (stored, "ok")
    Checkpoint.model_validate(stored)


def test_the_document_models_are_derived_from_their_typed_definitions():
    from openadapt_flow.records.entry import CheckpointDoc, StateDoc

    assert [f.alias or n for n, f in Checkpoint.model_fields.items()] == list(CheckpointDoc.__annotations__)
    assert [f.alias or n for n, f in State.model_fields.items()] == list(StateDoc.__annotations__)
