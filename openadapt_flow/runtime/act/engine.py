"""The engine loop: execute a run's steps from an index, stop with a state and an exit code (the run itself is
assembled — backend, store, lease, context — by act/assemble.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from functools import partial
from types import EllipsisType

from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import FlowError
from openadapt_flow.records.kinds import BlockedData, HaltedData, RunStopData
from openadapt_flow.records.pausedoc import IncidentBody
from openadapt_flow.records.states import PausedReason, RecordType, RunState
from openadapt_flow.records.stepdoc import VerifiedData
from openadapt_flow.runtime.act.child import run_child_step
from openadapt_flow.runtime.act.durable import durable_call
from openadapt_flow.runtime.act.durable_steps import run_durable_step
from openadapt_flow.runtime.act.halt_pictures import save_halt_pictures
from openadapt_flow.runtime.act.pause import open_pause
from openadapt_flow.runtime.act.start_state import check_start_in_run
from openadapt_flow.runtime.act.step import StepRecord, run_gui_step
from openadapt_flow.runtime.judge.halt import Halt, Pause, StopRequested
from openadapt_flow.runtime.judge.outcome import classify, landed
from openadapt_flow.runtime.judge.policy import PolicyBlock, check_step
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.runtime.start.launch import RunOutcome
from openadapt_flow.runtime.start.lifecycle import record_interrupted, record_stop
from openadapt_flow.runtime.start.runref import ref_path
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.journal import now_iso
from openadapt_flow.store.lease import LeaseLost
from openadapt_flow.vision.annotate import annotate

Stop = tuple[RunState, str, str | None, str | None, str | None]  # state, message, category, paused_reason, step


def execute(ctx: RunContext, start: int) -> RunOutcome:
    """Run a bundle's steps from `start` until the end, a halt, a pause or a stop; write the final state."""
    try:
        stop = run_body(ctx, partial(_steps, ctx, start))
    except StorageFault as f:  # a full disk or an I/O error on the run's files: a safe boundary, never FAILED (spec §6)
        stop = (RunState.INTERRUPTED, f.message, "storage", None, None)
    return finish(ctx, *stop)


def _steps(ctx: RunContext, start: int) -> None:
    """A bundle run's body: each step one durable call."""
    steps = ctx.model.steps
    for i in range(start, len(steps)):
        step = steps[i]
        ran: list[StepRecord] = []
        durable_call(ctx, step.id, partial(_perform, ctx, i, step, ran))
        for rec in ran:
            ctx.progress.step_finished(
                i, len(steps), step.id, {"ok": True, "rung": rec.rung, "score": rec.score, "ms": rec.elapsed_ms}
            )


def run_body(ctx: RunContext, body: Callable[[], None]) -> Stop:
    """Run a run's body — a bundle's step loop, a workflow's code — to its end or the RunSignal that stops it, and
    say how it stopped. The one place a signal becomes a run's stop, for every kind of run."""
    try:
        body()
    except LeaseLost:
        ctx.frames.close()
        ctx.journal.close()
        raise
    except PolicyBlock as b:
        write_incident(ctx, b)
        return RunState.BLOCKED, b.message, "policy", None, b.step
    except StopRequested as s:
        if ctx.bundle is None:
            message = "stopped by signal at a call boundary; no call was in flight"
        else:
            message = "stopped by signal " + (
                "while verifying a dispatched step" if s.dispatched else "at a step boundary; no input was pending"
            )
        record_interrupted(ctx.journal, {"message": message, "input_pending": s.dispatched})
        return RunState.INTERRUPTED, message, None, None, None
    except Pause as p:
        return RunState.PAUSED, p.message, p.category, p.reason, p.step
    except Halt as h:
        return _halted(ctx, h)
    except FlowError as e:
        if ctx.bundle is None:  # a workflow's body turns its own errors into halts; what passes is the caller's
            raise
        record_halt(ctx, Halt("backend", str(e)), input_sent=None)
        return (
            (RunState.PAUSED if ctx.durable else RunState.FAILED),
            str(e),
            "backend",
            (PausedReason.AWAITING_APPROVAL if ctx.durable else None),
            None,
        )
    return RunState.COMPLETED, "", None, None, None


def record_halt(
    ctx: RunContext,
    h: Halt,
    *,
    input_sent: bool | None | EllipsisType = ...,
    evidence: list[Mapping[str, object]] | None = None,
    frame: str | None = None,
    pictures: dict[str, str] | None = None,
) -> None:
    """Journal the halt (`halted`, its one writer): what stopped, and whether input was sent (`h.dispatched` unless
    the caller knows better); the evidence, frame and pictures where it has them."""
    data: HaltedData = {
        "category": h.category,
        "message": h.message,
        "input_sent": h.dispatched if isinstance(input_sent, EllipsisType) else input_sent,
    }
    if evidence is not None:
        data["evidence"] = evidence
    if frame is not None:
        data["frame"] = frame
    if pictures:
        data["pictures"] = pictures
    ctx.journal.append(RecordType.HALTED, h.step, data)


def _halted(ctx: RunContext, h: Halt) -> Stop:
    """Journal the halt; a durable run (every workflow run) then pauses for an operator, any other fails."""
    if ctx.bundle is None:
        record_halt(ctx, h)
        return RunState.PAUSED, h.message, h.category, PausedReason.AWAITING_APPROVAL, h.step
    frame_ref = save_halt_frame(ctx, h)
    record_halt(ctx, h, evidence=h.evidence, frame=frame_ref, pictures=save_halt_pictures(ctx, h))
    ctx.progress.step_finished(
        -1, len(ctx.model.steps), h.step or "", {"ok": False, "category": h.category, "message": h.message}
    )
    if ctx.durable:
        return RunState.PAUSED, h.message, h.category, PausedReason.AWAITING_APPROVAL, h.step
    return RunState.FAILED, h.message, h.category, None, h.step


def _perform(ctx: RunContext, i: int, step: Step, ran: list[StepRecord]) -> VerifiedData:
    """Run one bundle step (policy and approval first); the data of its `step_verified` record."""
    if ctx.stop.is_set():
        raise StopRequested()
    typed = ctx.interp(step.text) if step.text and not ctx.interp.uses_secret(step.text) else None
    blocked = check_step(ctx.config.policy, ctx.budget, step, typed)
    if blocked is not None:
        raise blocked
    if step.approval == "before" and ctx.approved_before != step.id:
        raise Pause(
            PausedReason.AWAITING_APPROVAL, step.id, f"step {step.id!r} needs an operator's approval before it acts"
        )
    ctx.progress.step_started(i, len(ctx.model.steps), step.id, step.intent)
    if step.action == "flow" or not step.is_durable_kind:  # it can send input: the screen must be the start's
        check_start_in_run(ctx, step)
    if step.action == "flow":
        rec = StepRecord(step.id, data=run_child_step(ctx, i, step))
    elif step.is_durable_kind:
        rec = StepRecord(step.id, data=run_durable_step(ctx, i, step))
    else:
        rec = run_gui_step(ctx, i, step)
    ran.append(rec)
    assert rec.data is not None  # every way a step completes says what it verified
    return rec.data


def finish(
    ctx: RunContext,
    state: RunState,
    message: str,
    category: str | None,
    paused_reason: str | None = None,
    step: str | None = None,
) -> RunOutcome:
    """Write the stop: journal, state (with transaction_outcome), escalation when pausing, report.

    If the run's files cannot be written (StorageFault) the stop is INTERRUPTED (exit 5) with whatever reached the
    journal; `flow reconcile`/`flow resume` finalise it once space is freed. A report that cannot be written never
    changes the outcome.
    """
    ctx.frames.close()
    try:
        state, message = _write_stop(ctx, state, message, category, paused_reason, step)
    except StorageFault as f:
        ctx.journal.close()
        state, paused_reason = RunState.INTERRUPTED, None
        message = message + "; " + f.message if category == "storage" else f.message
        category = "storage"
    if ctx.reporter is not None:
        try:
            ctx.reporter(ctx.run)
        except StorageFault as f:
            message = (message + "; " if message else "") + f"report not written ({f.detail})"
    return RunOutcome(
        state,
        state.exit_code,
        ref_path(ctx.run),
        message,
        category,
        parked=ctx.parked_at_end and state == RunState.COMPLETED,
    )


def _write_stop(
    ctx: RunContext, state: RunState, message: str, category: str | None, paused_reason: str | None, step: str | None
) -> tuple[RunState, str]:
    """Journal and write the stop; the state and message written (FAILED becomes FAILED_AFTER_EFFECT when a
    consequential write of the run landed)."""
    run, journal = ctx.run, ctx.journal
    outcome = evidence = None
    landed_steps: list[str] = []
    if state != RunState.COMPLETED:
        records = run.load_journal(journal.key).records
        outcome, evidence = classify(ctx.steps.values(), records)
        landed_steps = landed(ctx.steps.values(), records)
        if state == RunState.FAILED and landed_steps:  # a plain FAILED invites a re-run, which would write again
            state = RunState.FAILED_AFTER_EFFECT
            message = (
                f"{message} — the write of step {', '.join(landed_steps)} landed; do not re-run this bundle "
                "from the start: finish the remaining steps by hand"
            )
    cp = ctx.fold.checkpoint() if ctx.durable else None
    if state == RunState.PAUSED:
        open_pause(
            ctx,
            paused_reason or PausedReason.AWAITING_APPROVAL,
            category or "approval",
            step or "",
            message,
            outcome,
            evidence or [],
            cp,
        )
    stop: RunStopData = {
        "state": state,
        "paused_reason": paused_reason,
        "transaction_outcome": outcome,
        "outcome_evidence": evidence,
        "frame_errors": ctx.frames.errors,
    }
    if landed_steps:
        stop["landed"] = landed_steps
    record_stop(journal, stop)
    journal.close()
    run.write_state(
        state,
        journal=journal,
        paused_reason=paused_reason,
        transaction_outcome=outcome,
        halt_category=category,
        message=message or None,
        last_checkpoint_seq=cp["seq"] if cp else None,
    )
    return state, message


def write_incident(ctx: RunContext, b: PolicyBlock) -> None:
    """ExecutionIncident: the policy decision that ended the run, on disk before the state says BLOCKED."""
    blocked: BlockedData = {
        "id": "incident-" + uuid.uuid4().hex[:10],
        "rule": b.rule,
        "observed": b.observed,
        "limit": b.limit,
    }
    incident: IncidentBody = {
        "id": blocked["id"],
        "run_id": ctx.run_id,
        "rule": b.rule,
        "decision": "policy",
        "observed": b.observed,
        "limit": b.limit,
        "step": b.step,
        "message": b.message,
        "decided_at": now_iso(),
    }
    ctx.run.write_incident(incident)
    ctx.journal.append(RecordType.BLOCKED, b.step, blocked)


def save_halt_frame(ctx: RunContext, h: Halt) -> str | None:
    if h.frame is None:
        try:
            h.frame = ctx.backend.capture().pixels
        except FlowError:
            return None
    img = annotate(h.frame, search=h.search, best=h.best, point=h.point, label=f"{h.category}: {h.step or ''}")
    if h.step and ctx.durable and h.category in ("resolution", "ambiguous"):
        ctx.frames.save_now(f"halt-{h.step}-raw.png", h.frame)  # what `teach` cuts a new template from
    return ctx.frames.save_now(f"halt-{h.step or 'run'}.png", img)
