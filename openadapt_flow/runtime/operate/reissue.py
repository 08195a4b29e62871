"""What a decision does to a run beyond its approval: `escalate` re-issues the task at the next level, `reject` ends
the run BLOCKED with an incident naming the operator (spec §9). Callers hold the run's lease."""

from __future__ import annotations

import time
import uuid
from typing import Protocol

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.pausedoc import AppliedDecision, DecisionOutcome, IncidentBody, PendingBody
from openadapt_flow.records.rundoc import ManifestDoc
from openadapt_flow.records.states import DecisionKind, RecordType, RunState
from openadapt_flow.runtime.act.pause import iso
from openadapt_flow.runtime.operate.truth import consume_decision
from openadapt_flow.runtime.start.lifecycle import record_stop
from openadapt_flow.store.base import JournalWriter, RunHandle
from openadapt_flow.store.escalation import sign
from openadapt_flow.store.keys import load_key


class Escalator(Protocol):
    """Who escalates (approval.OperatorDecision is one)."""

    @property
    def operator(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def note(self) -> str | None: ...
    @property
    def channel(self) -> str: ...


def reissue(run: RunHandle, manifest: ManifestDoc, pending: PendingBody, key: bytes, by: Escalator) -> DecisionOutcome:
    """Re-issue the decision task at the next level (config approvals.levels); the run stays PAUSED. Caller holds the lease."""
    operator, user, note, channel = by.operator, by.user, by.note, by.channel
    config = DeployConfig.model_validate(manifest["config"])
    levels = config.approvals.levels or ["default"]
    level = min(int(pending.get("level", 0)) + 1, len(levels) - 1)
    journal, _ = run.open_journal(load_key(create=False))
    pause_id = "pause-" + uuid.uuid4().hex[:10]
    expires = time.time() + config.runtime.pause_ttl_s
    task = pending["task"].copy()  # re-signed below (its signature, last, keeps its place)
    task["pause_id"], task["expires_at"], task["level"] = pause_id, iso(expires), levels[level]
    task["idempotency_scope"] = f"{task['run_id']}/{pause_id}"
    task["signature"] = sign(key, {k: v for k, v in task.items() if k != "signature"})
    p = pending
    new: PendingBody = {
        "pause_id": pause_id,
        "run_id": p["run_id"],
        "paused_reason": p["paused_reason"],
        "category": p["category"],
        "step": p["step"],
        "message": p["message"],
        "transaction_outcome": p["transaction_outcome"],
        "evidence": p["evidence"],
        "allowed_decisions": p["allowed_decisions"],
        "created_at": p["created_at"],
        "expires_at": iso(expires),
        "due_epoch": p["due_epoch"],
        "level": level,
        "task": task,
        "escalated_from": p["pause_id"],
    }
    journal.append(
        RecordType.ESCALATED,
        pending["step"],
        {
            "from": pending["pause_id"],
            "pause_id": pause_id,
            "level": levels[level],
            "operator": operator,
            "os_user": user,
            "note": note,
            "pending": new,
            "channel": channel,
        },
    )
    run.write_pending(new)
    run.remove_approval()
    journal.close()
    state = run.state()
    run.write_state(
        RunState.PAUSED,
        journal=journal,
        paused_reason=state.get("paused_reason"),
        transaction_outcome=state.get("transaction_outcome"),
        last_checkpoint_seq=state.get("last_checkpoint_seq"),
        halt_category=state.get("halt_category"),
        message=state.get("message"),
    )
    return {
        "recorded": True,
        "decision": DecisionKind.ESCALATE,
        "pause_id": pause_id,
        "level": levels[level],
        "operator": operator,
        "os_user": user,
    }


def block_run(
    run: RunHandle,
    journal: JournalWriter,
    pending: PendingBody,
    decision: AppliedDecision,
    rec: JournalEntry | None = None,
) -> None:
    """End the run BLOCKED on a reject: its `decision` record first (or `rec`, the journal's, when a process was
    killed after it: resume ends the run from it), then incident.json and `run_finished`. Closes `journal`."""
    consume_decision(run, journal, pending, decision, rec)
    incident: IncidentBody = {
        "id": "incident-" + pending["pause_id"].removeprefix("pause-"),
        "run_id": pending["run_id"],
        "rule": "operator_reject",
        "decision": DecisionKind.REJECT,
        "operator": decision["operator"],
        "os_user": decision["os_user"],
        "note": decision["note"],
        "observed": pending.get("category"),
        "limit": None,
        "step": pending["step"],
        "decided_at": decision["decided_at"],
    }
    run.write_incident(incident)
    record_stop(
        journal,
        {
            "state": RunState.BLOCKED,
            "incident": incident["id"],
            "transaction_outcome": pending.get("transaction_outcome"),
        },
    )
    journal.close()
    run.write_state(
        RunState.BLOCKED,
        journal=journal,
        transaction_outcome=pending.get("transaction_outcome"),
        message=f"rejected by {decision['operator']}",
    )
