"""The one resume path's plan (spec §8–§10, §14): an opened run's open pause turned into what to continue — the pause
to resolve, the operator's checked decision (or one the journal already holds), the verified checkpoint to continue
from — or why it must go on waiting; and `run_resumed`, journaled here alone, for a bundle's run as for a workflow's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.start.backend_select import BackendFlags
from openadapt_flow.runtime.start.context import Progress, RunContext
from openadapt_flow.runtime.act.durable.waiting import still_waiting
from openadapt_flow.runtime.start.launch import BackendFactory, Reporter, RunOutcome, Runs
from openadapt_flow.runtime.start.runref import ref_path
from openadapt_flow.runtime.start.lifecycle import record_stop
from openadapt_flow.bundle.config import BackendConfig, DeployConfig
from openadapt_flow.runtime.judge.outcome import RECONCILIATION_REQUIRED
from openadapt_flow.runtime.operate.approval import check_approval
from openadapt_flow.runtime.operate.reissue import block_run
from openadapt_flow.runtime.operate.truth import journaled_decision, pending_view
from openadapt_flow.records.rundoc import ManifestDoc
from openadapt_flow.store.base import JournalWriter, RunHandle, RunLease
from openadapt_flow.records.states import DecisionKind, PausedReason, RecordType, RunState
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry
from openadapt_flow.records.pausedoc import AppliedDecision, PendingBody
from openadapt_flow.records.kinds import RunStopData

__all__ = ["Opened", "ResumePlan", "ResumeRequest", "plan_resume", "resumed"]


@dataclass(frozen=True)
class ResumeRequest:
    """What `flow resume` asks — the backend (a whole spec, or flags and `--config`'s backend section over the recorded
    one), an operator's approval required, params (checked against the run's), a bundle upgrade, the run's original
    bundle (`bundle`: for a snapshot that cannot be read, snapshot.py) — and how the resume is watched (progress,
    reporter, `notice`: one line for the operator), opens its backend and is stopped (a worker's SIGTERM)."""

    backend: BackendSpec | None = None
    require_approval: bool = False
    params: Mapping[str, Any] | None = None
    progress: Progress | None = None
    reporter: Reporter | None = None
    backend_factory: BackendFactory = open_backend
    stop: threading.Event | None = None
    backend_flags: BackendFlags | None = None
    backend_config: BackendConfig | None = None
    upgrade_bundle: Path | None = None
    bundle: Path | None = None
    notice: Callable[[str], None] | None = None
    fence: Callable[[], None] | None = None  # checked before every input besides the lease: a fleet desktop's lock


@dataclass
class Opened:
    """A run opened for resume: leased, its journal open and verified, its views caught up, not terminal."""

    run: RunHandle
    manifest: ManifestDoc
    config: DeployConfig
    lease: RunLease
    journal: JournalWriter
    records: list[JournalEntry]
    state: RunState
    dkey: bytes
    runs: Runs
    req: ResumeRequest
    loaded: LoadedBundle | None = None  # a bundle run's bundle (as taught or upgraded so far); None for a workflow's


@dataclass(frozen=True)
class ResumePlan:
    """What a resume continues: the pause it resolves, the decision it applies (checked, or `carried`: journaled by a
    resume that died before it took effect) and the verified checkpoint; or `stop`, how the run stays."""

    pending: PendingBody | None
    approval: AppliedDecision | None
    carried: JournalEntry | None
    checkpoint: CheckpointDoc | None
    stop: RunOutcome | None = None

    @property
    def decision(self) -> str | None:
        return self.approval["decision"] if self.approval else None


def plan_resume(o: Opened) -> ResumePlan:
    """The open pause (the journal's; the file must agree with it) turned into a plan. A workflow's plan never carries
    a decision: its calls find theirs in the journal as they run again."""
    workflow = o.loaded is None
    cp, _how = o.run.reconcile_checkpoint(o.records)
    pending = _interrupted_pause(o, pending_view(o.run, o.records, o.dkey), workflow)
    carried = None if workflow or pending is not None else journaled_decision(o.records)
    if carried is not None:  # decided, then killed before it took effect: applied from the journal, never asked again
        rec, decided, journaled = carried
        if journaled["decision"] == DecisionKind.REJECT:  # killed between the reject's record and the run's end: end it now
            block_run(o.run, o.journal, decided, journaled, rec)
            return ResumePlan(decided, journaled, rec, cp, _stop(o, RunState.BLOCKED, f"rejected by {journaled['operator']}"))
        return ResumePlan(decided, journaled, rec, cp)
    waiting = None if o.req.require_approval else still_waiting(o.run, pending)
    if waiting is not None:
        return ResumePlan(pending, None, None, cp, _stop(o, RunState.PAUSED, waiting, pending["category"] if pending else None))
    needs_decision = pending is not None and (pending["paused_reason"] == PausedReason.AWAITING_APPROVAL or o.run.has_approval())
    if not (needs_decision or o.req.require_approval):
        return ResumePlan(pending, None, None, cp)
    if pending is None:
        raise RefusedError(f"{o.run.ref}: --require-approval, but nothing is pending for an operator to approve")
    approval = check_approval(o.run, pending, o.dkey)
    if workflow and approval["decision"] == DecisionKind.CONTINUE and pending.get("transaction_outcome") == RECONCILIATION_REQUIRED:
        raise RefusedError(f"{o.run.ref}: call {pending['step']!r} is uncertain; continue would re-run it blindly — "
                           "an operator must reconcile it (flow approve --decision reconcile --effect landed|absent)")
    return ResumePlan(pending, approval, None, cp)


def _stop(o: Opened, state: RunState, message: str, category: str | None = None) -> RunOutcome:
    return RunOutcome(state, RunState(state).exit_code, ref_path(o.run), message, category)


def _interrupted_pause(o: Opened, pending: PendingBody | None, workflow: bool) -> PendingBody | None:
    """A run killed while pausing (its pause journaled, the state never said PAUSED). A bundle's pause is restored: the
    state says PAUSED now, so status, wait and operators see the pause that awaits them. A workflow's is dropped unless
    an operator decided it already: running its code again re-derives the pause."""
    if pending is None:
        return None
    if not workflow:
        if o.state == RunState.INTERRUPTED:
            _restore_pause(o.run, o.journal, pending)
        return pending
    if o.state == RunState.PAUSED or _decided(o.run, pending):
        return pending
    o.journal.append(RecordType.ESCALATION_DROPPED, pending["step"], {"pause_id": pending["pause_id"], "why": f"run was {o.state}"})
    o.run.remove_pending()
    return None


def _decided(run: RunHandle, pending: PendingBody) -> bool:
    """Did an operator decide this pause (a resume that was using the decision died before journaling it)?"""
    try:
        approval = run.read_approval()
    except RefusedError:
        return True  # unreadable: check_approval names what is wrong with it
    return approval is not None and approval.get("pause_id") == pending["pause_id"]


def _restore_pause(run: RunHandle, journal: JournalWriter, pending: PendingBody) -> None:
    data: RunStopData = {"state": RunState.PAUSED, "paused_reason": pending["paused_reason"], "transaction_outcome": pending.get("transaction_outcome"),
            "restored": True}
    record_stop(journal, data)
    run.write_state(RunState.PAUSED, journal=journal, paused_reason=pending["paused_reason"], transaction_outcome=pending.get("transaction_outcome"),
                    halt_category=pending.get("category"), message=pending.get("message"))


def resumed(rc: RunContext, plan: ResumePlan) -> None:
    """Journal `run_resumed` (its one writer: the lease generation, the decision applied and the pause it resolves),
    then state RESUMING from the plan's checkpoint."""
    p, a, c, cp = plan.pending, plan.approval, plan.carried, plan.checkpoint
    rc.journal.append(RecordType.RUN_RESUMED, None, {"lease_generation": rc.lease_generation, "decision": plan.decision,
                                             "pause_id": p["pause_id"] if p else None, "operator": a["operator"] if a else None,
                                             "decision_seq": c["seq"] if c else None})
    rc.run.write_state(RunState.RESUMING, journal=rc.journal, last_checkpoint_seq=cp["seq"] if cp else None)
