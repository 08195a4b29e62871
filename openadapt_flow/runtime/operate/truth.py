"""The journal is the record of truth (spec §8): state.json, checkpoint.json and pending_escalation.json are views.

Every command that acts on a run (`resume`, `approve`, `answer`, `signal`) reads the views through here:

- state.json must carry a valid seal whose journal end the journal reaches (a cut tail or an edited state is
  refused), and the run ledger outside the run directory must agree (one directory per run; its seal and its
  consumed decisions are reached by this journal);
- the pause, its reason and what it needs come from the journal's `escalation_opened` / `escalated` record;
  pending_escalation.json must equal it (an edit is refused) and is rebuilt from it when missing;
- a decision is consumed by a journaled `decision` record carrying the whole decision (the point of no return:
  a resume killed after it applies it from the journal, never asks again), then in the ledger, then by moving
  approval.json.

A view that lags the journal (a crash between the journal record and the file) is brought up to date — never as a
side effect of reading it: `read_pause` and `lagging_end` only report the repair (a resume's plan lists it), and
`repair_views` / `catch_up_state` make it, called by the resume's executor or by a command that acts on the pause at
once under its lease (`pending_view`). A view that disagrees with the journal is tampering (exit 6).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.pausedoc import (
    AppliedDecision,
    ApprovalDoc,
    CarriedDecision,
    DecisionFields,
    JournaledDecision,
    PendingBody,
)
from openadapt_flow.records.rundoc import StateView
from openadapt_flow.records.states import FINAL_STATES, RecordType, RunState, is_a
from openadapt_flow.store.base import JournalWriter, RunHandle
from openadapt_flow.store.escalation import digest, journal_pause, pending_of, verify


def check_views(run: RunHandle, records: list[JournalEntry], key: bytes) -> StateView:
    """state.json verified against the journal (its seal) and the run ledger; the state to act on. Claims the run in
    the ledger (a write): only under the run's lease — a plan reads `sealed_state` alone."""
    doc = sealed_state(run, records, key)
    run.ledger_claim(records)
    return doc


def sealed_state(run: RunHandle, records: list[JournalEntry], key: bytes) -> StateView:
    """state.json verified against the journal (its seal); nothing written."""
    return run.check_seal(records, key) or {"state": RunState.PENDING}


def lagging_end(records: list[JournalEntry], state: StateView) -> JournalEntry | None:
    """The journal's `run_finished` record a state lags (killed between `run_finished` and the state write), or None:
    the state must be rebuilt from it (`catch_up_state`), so the run is not run again. Reads only."""
    end = next((r for r in reversed(records) if is_a(r, RecordType.RUN_FINISHED, RecordType.RUN_RESUMED)), None)
    if end is None or not is_a(end, RecordType.RUN_FINISHED) or state.get("state") == end["data"].get("state"):
        return None
    return end if end["data"].get("state") in FINAL_STATES else None


def catch_up_state(run: RunHandle, journal: JournalWriter, end: JournalEntry) -> None:
    """Rebuild the state from the journal's `run_finished` record `end` (found by `lagging_end`): an explicit repair,
    made under the run's lease."""
    run.write_state(
        RunState(end["data"]["state"]),
        journal=journal,
        transaction_outcome=end["data"].get("transaction_outcome"),
        message="state rebuilt from the journal's run_finished record",
    )


def verify_task(run: RunHandle, pending: PendingBody, key: bytes) -> PendingBody:
    """The pending body's decision task is signed, and the body agrees with it."""
    task: dict[str, object] = dict(pending.get("task") or {})
    sig = task.pop("signature", None)
    verify(key, task, sig if isinstance(sig, str) else None, f"{run.describe('pending')}: decision task")
    for field in ("pause_id", "step", "allowed_decisions", "run_id"):
        if pending.get(field) != task.get(field):
            raise RefusedError(f"{run.describe('pending')}: {field} differs from the signed task (tampered); refusing")
    return pending


@dataclass(frozen=True)
class ViewRepairs:
    """What a read of the pause found lagging the journal, to be repaired under the run's lease (`repair_views`):
    a used approval.json to move where used decisions live, a stale pending view to remove, a missing one to rebuild."""

    retire_approval: str | None = None  # the pause id of an approval.json whose pause the journal already closed
    remove_pending: bool = False
    rebuild_pending: PendingBody | None = None

    def __bool__(self) -> bool:
        return self.retire_approval is not None or self.remove_pending or self.rebuild_pending is not None

    def describe(self) -> list[str]:
        out = []
        if self.retire_approval is not None:
            out.append(f"move the used approval for {self.retire_approval} to decisions/")
        if self.remove_pending:
            out.append("remove the pending view of a pause the journal closed")
        if self.rebuild_pending is not None:
            out.append(f"rebuild the pending view of pause {self.rebuild_pending['pause_id']} from the journal")
        return out


def read_pause(run: RunHandle, records: list[JournalEntry], key: bytes) -> tuple[PendingBody | None, ViewRepairs]:
    """The open pause as the journal records it (None if none), with pending_escalation.json checked against it, and
    the views that lag the journal (see ViewRepairs). Reads only: a view that disagrees with the journal is refused."""
    head, closed = journal_pause(records)
    path = run.describe("pending")
    on_disk = run.read_pending()
    if (
        head is not None and "legacy" in head
    ):  # journaled before pauses carried their body: the signed file is all there is
        if on_disk is None or on_disk.get("pause_id") != head["pause_id"]:
            raise RefusedError(f"{path}: missing or not the journal's pause {head['pause_id']}; refusing")
        return verify_task(run, on_disk, key), ViewRepairs()
    body = None if head is None or "legacy" in head else head
    retire = _used_approval(run, closed)
    if body is None:
        if on_disk is None:
            return None, ViewRepairs(retire)
        if on_disk.get("pause_id") in closed:  # the decision was journaled; the process died before removing the view
            return None, ViewRepairs(retire, remove_pending=True)
        raise RefusedError(
            f"{path}: names pause {on_disk.get('pause_id')!r}, which the journal has not opened "
            "(tampered, or copied from another run); refusing"
        )
    if on_disk is not None and {k: v for k, v in on_disk.items() if k != "schema"} != body:
        differs = sorted(k for k in set(on_disk) | set(body) if k != "schema" and on_disk.get(k) != body.get(k))
        raise RefusedError(
            f"{path}: disagrees with the journal's pause {body['pause_id']} ({', '.join(differs)} edited); refusing"
        )
    return verify_task(run, body, key), ViewRepairs(retire, rebuild_pending=body if on_disk is None else None)


def repair_views(run: RunHandle, repairs: ViewRepairs) -> None:
    """Bring the pause's views up to the journal (under the run's lease): the one writer of these repairs."""
    if repairs.retire_approval is not None:
        run.consume_approval(repairs.retire_approval)
    if repairs.remove_pending:
        run.remove_pending()
    if repairs.rebuild_pending is not None:
        run.write_pending(repairs.rebuild_pending)  # a deleted view is rebuilt from the journal


def pending_view(run: RunHandle, records: list[JournalEntry], key: bytes) -> PendingBody | None:
    """`read_pause`, then its repairs made (the caller holds the run's lease): for a command that acts on the pause
    at once (approve, answer, signal)."""
    pending, repairs = read_pause(run, records, key)
    repair_views(run, repairs)
    return pending


def _used_approval(run: RunHandle, closed: set[str]) -> str | None:
    """The pause id of an approval.json for a pause the journal already closed (used: to be moved where used
    decisions live), or None."""
    try:
        data = run.read_approval()
    except RefusedError:
        return None  # unreadable: check_approval names it if it is ever needed
    # (one whose used copy is already there is a replay, left in place for check_approval to name)
    if data is not None and data.get("pause_id") in closed and not run.has_decision(data["pause_id"]):
        return data["pause_id"]
    return None


# What the first thing done after a decision is: its application (a re-dispatch, a checkpoint, a skip, an answered
# step), or the next pause, or the run's end. Any of them after the `decision` record spends it.
SPENDS = (
    RecordType.ACTION_DISPATCHED,
    RecordType.STEP_VERIFIED,
    RecordType.STEP_SKIPPED,
    RecordType.ESCALATION_OPENED,
    RecordType.ESCALATED,
    RecordType.RUN_FINISHED,
)


def decision_data(approval: AppliedDecision, pause_id: str) -> JournaledDecision:
    """The whole decision, as the journal keeps it: enough to apply it from the journal alone (spec §9)."""
    body = {k: v for k, v in approval.items() if k not in ("schema", "signature")}
    # a cast: mypy will not build a TypedDict with optional keys (`value`) out of a `**` of one without them
    return cast(
        JournaledDecision,
        {
            **_decision_fields(approval),
            "decision": approval.get("decision"),
            "pause_id": pause_id,
            "approval_digest": digest(body) if body else None,
        },
    )


def _decision_fields(d: Mapping[str, Any]) -> DecisionFields:
    """The fields a decision carries between its approval and its `decision` record's data, None where one is missing
    (the decision itself is the caller's: optional in a record, required once carried)."""
    return {
        "effect": d.get("effect"),
        "operator": d.get("operator"),
        "os_user": d.get("os_user"),
        "note": d.get("note"),
        "decided_at": d.get("decided_at"),
        "votes": d.get("votes"),
        "payload": d.get("payload"),
        "task_digest": d.get("task_digest"),
        "checkpoint_digest": d.get("checkpoint_digest"),
        "signature": d.get("signature"),
    }


def record_decision(
    journal: JournalWriter, pending: PendingBody, approval: AppliedDecision, carried: JournalEntry | None = None
) -> JournalEntry:
    """The point of no return: the `decision` record for the open pause, journaled (fsync'd) before it takes any
    effect. A decision this journal already holds for the pause (`carried`) is never journaled twice."""
    pause_id = pending["pause_id"]
    if carried is not None and (carried.get("data") or {}).get("pause_id") == pause_id:
        return carried
    rec = journal.last_of.get(RecordType.DECISION)
    if rec is None or (rec.get("data") or {}).get("pause_id") != pause_id:
        return journal_decision(journal, pending["step"], decision_data(approval, pause_id))
    journal.sync()
    return rec


def journal_decision(journal: JournalWriter, step: str | None, data: JournaledDecision) -> JournalEntry:
    """The one writer of `decision` records, fsync'd: a pause's decision, or an operator's reconcile of a run that
    stopped for good (operate/final_reconcile.py)."""
    rec = journal.append(RecordType.DECISION, step, data)
    journal.sync()
    return rec


def journaled_decision(records: list[JournalEntry]) -> tuple[JournalEntry, PendingBody, CarriedDecision] | None:
    """A decision the journal holds but that has not taken effect yet (the process was killed after its record):
    (its record, the pause it decided, the decision as `check_approval` returns it), or None. Once anything spends
    it (see SPENDS) it is history: what it authorised happened, at most once."""
    last: JournalEntry | None = None
    for r in records:
        if is_a(r, RecordType.DECISION):
            last = r
        elif last is not None and is_a(r, *SPENDS):
            last = None
    if last is None:
        return None
    data = last.get("data") or {}
    pause = _pause_body(records, data.get("pause_id"))
    if pause is None or data.get("decision") is None or "approval_digest" not in data:
        return None  # a record that does not carry the whole decision (older runs), or a pause never opened
    # the decision as the journal keeps it (decision_data wrote it from the checked approval), and the pause it decided
    approval: CarriedDecision = {
        **_decision_fields(data),
        "decision": data["decision"],
        "pause_id": data["pause_id"],
        "run_id": pause.get("run_id"),
        "step": pause.get("step"),
        "from_journal": last["seq"],
    }
    return last, pause, approval


def _pause_body(records: list[JournalEntry], pause_id: object) -> PendingBody | None:
    for r in reversed(records):
        body = pending_of(r) if is_a(r, RecordType.ESCALATION_OPENED, RecordType.ESCALATED) else None
        if body is not None and body.get("pause_id") == pause_id:
            return body
    return None


def consume_decision(
    run: RunHandle,
    journal: JournalWriter,
    pending: PendingBody,
    approval: AppliedDecision,
    rec: JournalEntry | None = None,
) -> JournalEntry:
    """Use the decision on `pending` once: journal it (unless `rec`, or this writer, already did), mark it used in
    the run ledger (refused if it was used anywhere else), then move approval.json to decisions/ and remove the
    pending view."""
    pause_id = pending["pause_id"]
    if rec is None or (rec.get("data") or {}).get("pause_id") != pause_id:
        rec = record_decision(journal, pending, approval)
    run.ledger_consume(pause_id, approval["decision"], rec["seq"], rec["hash"])
    if _approval_pause(run) == pause_id:  # never another pause's approval (it would overwrite the used one)
        run.consume_approval(pause_id)
    run.remove_pending()
    return rec


def _approval_pause(run: RunHandle) -> str | None:
    try:
        approval: ApprovalDoc | None = run.read_approval()
        return approval.get("pause_id") if approval is not None else None
    except RefusedError:
        return None  # unreadable: left for check_approval to name
