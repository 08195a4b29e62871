"""Opening a durable pause: the pending escalation and its signed decision task (spec §9)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from openadapt_flow.records.checkpoint import checkpoint_digest
from openadapt_flow.records.entry import CheckpointDoc, step_of
from openadapt_flow.records.pausedoc import AskDoc, DecisionTaskDoc, OutcomeEvidence, PauseCore, PendingBody, TaskBody
from openadapt_flow.records.states import DecisionKind, PausedReason, RecordType
from openadapt_flow.runtime.judge.outcome import RECONCILIATION_REQUIRED
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.store.escalation import sign
from openadapt_flow.store.keys import key_id, load_decision_key


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


WAIT_DECISIONS = {
    PausedReason.AWAITING_USER: [DecisionKind.ANSWER, DecisionKind.REJECT],
    PausedReason.AWAITING_SIGNAL: [DecisionKind.SIGNAL, DecisionKind.REJECT],
    PausedReason.AWAITING_TIMER: [DecisionKind.REJECT],
    PausedReason.AWAITING_CHILD: [DecisionKind.REJECT],
}


def allowed_decisions(
    ctx: RunContext, reason: str, category: str, step_id: str, outcome: str | None, evidence: list[OutcomeEvidence]
) -> list[str]:
    if reason in WAIT_DECISIONS:
        return [*WAIT_DECISIONS[PausedReason(reason)], DecisionKind.ESCALATE]
    allowed: list[str] = [DecisionKind.CONTINUE, DecisionKind.REJECT, DecisionKind.ESCALATE]
    uncertain = {e["step"] for e in evidence if not e.get("positively_absent")}
    step = ctx.steps.get(step_id)
    # a step verified already that halts is one whose screen a resume could not re-prove (the pointer on its text, a
    # window over it): `continue` re-proves it again and may pause again for ever; skipping it sends nothing
    verified = any(step_of(r) == step_id for r in ctx.fold.verified)
    if step is not None and (step.skippable or verified) and step_id not in uncertain:
        allowed.append(DecisionKind.SKIP)
    if outcome == RECONCILIATION_REQUIRED:
        allowed.append(DecisionKind.RECONCILE)
    if category in ("resolution", "ambiguous"):
        allowed.append(DecisionKind.TEACH)
    return allowed


def _level(ctx: RunContext, index: int) -> str:
    levels = ctx.config.approvals.levels or ["default"]
    return levels[min(index, len(levels) - 1)]


@dataclass(frozen=True)
class TaskTerms:
    """Who answers a pause and how: the quorum, the approval level, what a waiting question accepts, the channels."""

    quorum: int = 1
    level: str = "default"
    ask: AskDoc | None = None
    channels: list[str] | None = None


def decision_task(ctx: RunContext, pause: PauseCore, cp: CheckpointDoc | None, terms: TaskTerms) -> DecisionTaskDoc:
    """The bounded question an operator answers about `pause` (its pending body): ids, digests and the question only
    (no frames, OCR text or values)."""
    key = load_decision_key(create=False)
    pause_id, step_id, allowed = pause["pause_id"], pause["step"], pause["allowed_decisions"]
    task: TaskBody = {
        "run_id": ctx.run_id,
        "pause_id": pause_id,
        "checkpoint_digest": checkpoint_digest(cp),
        "bundle_digest": ctx.digest,
        "step": step_id,
        "expected_transition": "PAUSED->RESUMING",
        "allowed_decisions": allowed,
        "expires_at": pause["expires_at"],
        "idempotency_scope": f"{ctx.run_id}/{pause_id}",
        "key_id": key_id(key),
        "question": f"Step {step_id!r} stopped ({pause['category']}). Which of {', '.join(allowed)}?",
        "due_epoch": pause["due_epoch"],
        "quorum": terms.quorum,
        "level": terms.level,
    }
    if (
        terms.ask is not None
    ):  # what a waiting question accepts: `flow answer`/`flow signal` check against it (no bundle needed)
        task["ask"] = terms.ask
    if terms.channels:  # signed with the task: a decision from any other channel is refused (decisions._check_channel)
        task["channels"] = terms.channels
    return {**task, "signature": sign(key, task)}


def with_task(core: PauseCore, task: DecisionTaskDoc) -> PendingBody:
    """The pending body: the pause, then its signed task (the keys in the order the journal keeps them)."""
    return {
        "pause_id": core["pause_id"],
        "run_id": core["run_id"],
        "paused_reason": core["paused_reason"],
        "category": core["category"],
        "step": core["step"],
        "message": core["message"],
        "transaction_outcome": core["transaction_outcome"],
        "evidence": core["evidence"],
        "allowed_decisions": core["allowed_decisions"],
        "created_at": core["created_at"],
        "expires_at": core["expires_at"],
        "due_epoch": core["due_epoch"],
        "level": core["level"],
        "task": task,
    }


def open_pause(
    ctx: RunContext,
    reason: str,
    category: str,
    step_id: str,
    message: str,
    outcome: str | None,
    evidence: list[OutcomeEvidence],
    cp: CheckpointDoc | None,
) -> PendingBody:
    """Journal the pause (its `escalation_opened` record carries the whole pending body), then write its view
    pending_escalation.json; the caller then journals `paused` and writes state PAUSED."""
    pause_id = "pause-" + uuid.uuid4().hex[:10]
    due = ctx.fold.timers.get(step_id) if reason == PausedReason.AWAITING_TIMER else None
    expires = time.time() + ctx.config.runtime.pause_ttl_s
    if due is not None:
        expires = max(expires, due + ctx.config.runtime.pause_ttl_s)
    allowed = allowed_decisions(ctx, reason, category, step_id, outcome, evidence)
    step = ctx.steps.get(step_id)
    consequential = step is not None and step.is_consequential
    quorum = ctx.config.approvals.quorum if consequential else 1
    channels: list[str] | None = [str(c) for c in ctx.config.approvals.channels or []] if consequential else None
    waiting = reason in (PausedReason.AWAITING_USER, PausedReason.AWAITING_SIGNAL)
    ask: AskDoc | None = (
        {"choices": step.choices, "type": step.type, "signal": step.signal} if step is not None and waiting else None
    )
    core: PauseCore = {
        "pause_id": pause_id,
        "run_id": ctx.run_id,
        "paused_reason": reason,
        "category": category,
        "step": step_id,
        "message": message,
        "transaction_outcome": outcome,
        "evidence": evidence,
        "allowed_decisions": allowed,
        "created_at": iso(time.time()),
        "expires_at": iso(expires),
        "due_epoch": due,
        "level": 0,
    }
    body = with_task(core, decision_task(ctx, core, cp, TaskTerms(quorum, _level(ctx, 0), ask, channels)))
    # The journal is the record of truth: its record carries the whole pause (fsync'd first); the file is a view of it.
    ctx.journal.append(
        RecordType.ESCALATION_OPENED,
        step_id,
        {"pause_id": pause_id, "reason": reason, "category": category, "allowed": allowed, "pending": body},
    )
    ctx.run.write_pending(body)
    return body
