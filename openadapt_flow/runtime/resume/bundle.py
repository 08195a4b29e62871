"""A bundle run's part of the one resume (spec §8–§10), once the executor (execute.py) made its plan's acts: its
effects probed, then the step loop from the verified checkpoint — or from the uncertain step, re-checked first, never
blind-retried."""

from __future__ import annotations

from typing import NoReturn, cast

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry, step_of
from openadapt_flow.records.pausedoc import AppliedDecision
from openadapt_flow.records.rundoc import StateDoc
from openadapt_flow.records.states import DecisionKind, PausedReason, RecordType, RunState, is_a
from openadapt_flow.records.stepdoc import PatchInfo, StepEffect, VerifiedBy
from openadapt_flow.runtime.act.assemble import RunInputs, RunSetup, make_context, open_or_none, stop_on_signals
from openadapt_flow.runtime.act.durable import record_skipped, record_verified
from openadapt_flow.runtime.act.engine import execute, finish, record_halt
from openadapt_flow.runtime.act.fixture_resume import refuse_restarted_fixture
from openadapt_flow.runtime.act.recheck import (
    CONFIRMED_DONE,
    POSITIVELY_ABSENT,
    RETRYABLE,
    RecheckResult,
    Uncertain,
    check_facts,
    find_uncertain,
    recheck,
)
from openadapt_flow.runtime.act.step import screen_facts
from openadapt_flow.runtime.judge.halt import Halt
from openadapt_flow.runtime.operate.truth import consume_decision, record_decision
from openadapt_flow.runtime.resume.opened import Opened, resumed
from openadapt_flow.runtime.resume.plan import ResumePlan, backend_spec
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.runtime.start.launch import RunOutcome
from openadapt_flow.runtime.start.preflight import probe_effects
from openadapt_flow.store.atomic import StorageFault


def suspend(o: Opened, reason: str) -> None:
    """A child run whose parent is gone or BLOCKED: suspended, not continued (the plan's `Suspend`)."""
    o.journal.append(RecordType.SUSPENDED, None, {"reason": reason})
    o.journal.close()
    o.run.write_state(RunState.PAUSED, journal=o.journal, paused_reason=PausedReason.SUSPENDED_ORPHAN, message=reason)


def continue_bundle(o: Opened, plan: ResumePlan) -> RunOutcome:
    """Resume a bundle run from its plan (its acts made): its steps on a live backend."""
    assert o.loaded is not None and plan.bound is not None
    bound = plan.bound
    patch = _taught(o, plan)
    live = open_or_none(backend_spec(o.manifest, o.req.backend), o.req.backend_factory)
    try:
        # every system of record that steps still to come will read answers now, before any input
        if patch is not None:  # a teach: its taught steps look for their targets on the screen the run stopped at
            refuse_restarted_fixture(live, o.run.ref, o.manifest, o.records)  # before any input, the decision unused
        probe_effects(
            o.loaded,
            o.config,
            bound,
            o.manifest["run_id"],
            started={step_of(r) for r in o.records if is_a(r, RecordType.STEP_STARTED)},
        )
        ctx = make_context(
            o.run,
            o.manifest["run_id"],
            o.journal,
            live,
            RunInputs(o.loaded, bound),
            RunSetup(
                o.config,
                o.runs,
                bool(o.manifest.get("allow_model")),
                True,
                o.req.progress,
                o.req.reporter,
                fence=o.req.fence,
            ),
        )
        ctx.lease = o.lease
        ctx.watch(o.records)
        if o.req.stop is not None:
            ctx.stop = o.req.stop
        if patch is not None and not any(
            is_a(r, RecordType.PATCHED) and r["data"].get("pause_id") == patch["pause_id"] for r in o.records
        ):
            o.journal.append(
                RecordType.PATCHED,
                str(patch["step"]),
                {
                    "pause_id": patch["pause_id"],
                    "bundle_dir": patch["bundle_dir"],
                    "digest": patch["digest"],
                    "template": patch["template"],
                    "region": patch["region"],
                    "point": patch["point"],
                },
            )
        with stop_on_signals(ctx.stop):
            return _continue(ctx, o.records, plan)
    finally:
        live.close()


def _taught(o: Opened, plan: ResumePlan) -> PatchInfo | None:
    """A `teach` decision's patch (patch.json's fields, signed with the approval): the bundle is resolved afresh with the
    taught target (it must be the approved one)."""
    if plan.decision != DecisionKind.TEACH:
        return None
    assert plan.approval is not None
    patch = plan.approval["payload"]
    assert patch is not None, "a teach's approval carries its patch"
    o.loaded = load_bundle(o.run.artifact_dir(str(patch["bundle_dir"])))
    if o.loaded.digest != patch["digest"]:
        raise RefusedError(f"{patch['bundle_dir']}: taught bundle differs from the approved patch; refusing")
    return cast(PatchInfo, patch)  # a teach's payload is the patch it signed (records/stepdoc.py's PatchInfo)


def _continue(ctx: RunContext, records: list[JournalEntry], plan: ResumePlan) -> RunOutcome:
    try:
        start = _reenter(ctx, records, plan)
        return start if isinstance(start, RunOutcome) else execute(ctx, start)
    except StorageFault as f:  # a full disk before the first step: INTERRUPTED (exit 5), resumable once space is freed
        return finish(ctx, RunState.INTERRUPTED, f.message, "storage")
    finally:
        ctx.frames.close()  # never exit with the frame writer alive (a C++ abort at interpreter shutdown)


def _reenter(ctx: RunContext, records: list[JournalEntry], plan: ResumePlan) -> int | RunOutcome:
    """Journal the resume, re-check, re-prove, journal the decision, apply it; the index to continue at (or the pause
    it ended in).

    The `decision` record is the point of no return: it is journaled (whole) before the decision takes any effect, so a
    resume killed after it finds it (`carried`) and applies it from the journal — never asking again, never journaling
    a second one. What it authorises happens at most once: its first effect (a dispatch, a checkpoint) spends it."""
    run, journal, pending, approval = ctx.run, ctx.journal, plan.pending, plan.approval
    prev = run.state()
    resumed(ctx, plan)
    rec = plan.carried
    try:
        uncertain = find_uncertain(records, ctx.model.steps)
        result = recheck(ctx, uncertain) if uncertain is not None else None  # first: it may have changed the screen
        if uncertain is not None and result is not None:
            journal.append(
                RecordType.RECHECKED,
                uncertain.step.id,
                {"verdict": result.verdict, "effect": result.effect, "checks": result.checks},
            )
        cp = plan.checkpoint
        if (
            cp
            and cp.get("screen_facts")
            and _screen_still_shows_checkpoint(uncertain, result, approval)
            and not _skipping(plan, cp["step"])
        ):
            _reprove_checkpoint(ctx, cp)
        if uncertain is not None and result is not None and not _covered(result, plan.decision):
            _refuse_uncertain(ctx, uncertain, result, plan, prev)
        if pending is not None and approval is not None:
            rec = record_decision(journal, pending, approval, plan.carried)  # the point of no return
        start = _apply(ctx, plan, uncertain, result)
        if pending is not None:
            if approval is not None:
                consume_decision(run, journal, pending, approval, rec)  # marked used in the run ledger, moved
            run.remove_pending()
        run.write_state(RunState.RUNNING, journal=journal, last_checkpoint_seq=ctx.fold.checkpoint_seq())
    except Halt as h:
        record_halt(ctx, h, input_sent=False)
        if approval is not None and pending is not None:
            consume_decision(run, journal, pending, approval, rec)
        return finish(ctx, RunState.PAUSED, h.message, h.category, PausedReason.AWAITING_APPROVAL, h.step)
    return start


def _apply(ctx: RunContext, plan: ResumePlan, uncertain: Uncertain | None, result: RecheckResult | None) -> int:
    """The decision's (and the re-check's) effect: the index of the step to continue at."""
    pending, approval, decision = plan.pending, plan.approval, plan.decision
    start = ctx.fold.next_index  # the step after the last verified one, folded from the journal
    if uncertain is not None and result is not None:
        if decision == DecisionKind.RECONCILE and approval is not None and approval["effect"] == "landed":
            _checkpoint_step(ctx, uncertain.index, "operator", result.effect)
            start = uncertain.index + 1
        elif decision != DecisionKind.RECONCILE and result.verdict == CONFIRMED_DONE:
            _checkpoint_step(ctx, uncertain.index, "reconciled", result.effect)
            start = uncertain.index + 1
        else:  # RETRYABLE, ABSENT with `continue`, or reconciled absent: performed again, once, after resolving
            start = uncertain.index  # afresh and passing the identity gate (its dispatch spends the decision)
    elif decision == DecisionKind.SKIP and pending is not None:
        idx = next(i for i, s in enumerate(ctx.model.steps) if s.id == pending["step"])
        record_skipped(
            ctx,
            pending["step"],
            {"index": idx, "verified_by": "operator", "operator": approval["operator"] if approval else None},
        )
        start = idx + 1
    if decision == DecisionKind.CONTINUE and pending is not None:
        ctx.approved_before = pending["step"]
    if decision in (DecisionKind.ANSWER, DecisionKind.SIGNAL) and pending is not None and approval is not None:
        payload = approval["payload"]
        if payload is not None:  # (none: nothing delivered, as an empty inbox says)
            ctx.inbox[pending["step"]] = payload
    return start


def _covered(result: RecheckResult, decision: str | None) -> bool:
    """May resume go on from this re-check, given the decision (if any)?"""
    return (
        decision == DecisionKind.RECONCILE
        or result.verdict in (CONFIRMED_DONE, RETRYABLE)
        or (result.verdict == POSITIVELY_ABSENT and decision == DecisionKind.CONTINUE)
    )


def _refuse_uncertain(
    ctx: RunContext, uncertain: Uncertain, result: RecheckResult, plan: ResumePlan, prev: StateDoc
) -> NoReturn:
    """An uncertain step that no decision covers: nothing is sent. An interrupted run opens a pause; a decided one
    keeps its decision unused (an approval stays in approval.json, a journaled decision stays in force)."""
    run, journal = ctx.run, ctx.journal
    msg = f"step {uncertain.step.id!r} was dispatched but is {result.verdict} on re-check; nothing was sent"
    pending, carried = plan.pending, plan.carried
    if pending is None:  # an interrupted run: open a pause so an operator can decide
        finish(ctx, RunState.PAUSED, msg, "uncertain", PausedReason.AWAITING_APPROVAL, uncertain.step.id)
        raise RefusedError(msg + "; the run now awaits an operator decision (flow approve)")
    journal.close()
    run.restore_state(prev)
    if carried is not None:
        raise RefusedError(
            msg + f"; the journaled decision {carried['data'].get('decision')!r} (seq {carried['seq']}) "
            "stays in force — resume again once the re-check is conclusive"
        )
    raise RefusedError(
        msg + "; an operator must reconcile it (flow approve --decision reconcile --effect landed|absent)"
    )


def _screen_still_shows_checkpoint(
    uncertain: Uncertain | None, result: RecheckResult | None, approval: AppliedDecision | None
) -> bool:
    """Can the screen still show what held after the checkpoint? Only if no later input landed (spec §9, docs/durable.md).

    Nothing dispatched after it: yes. An uncertain later step that will be performed again (its re-check found it
    not done): its input did not take, so yes. A later step that landed (re-check CONFIRMED, or an operator's
    `reconcile --effect landed`) changed the screen: its own re-checked facts stand in for the checkpoint's.
    A re-check that is still unknown (or absent with no decision) refuses anyway, before any input.
    """
    if uncertain is None or result is None:
        return True
    decision = approval["decision"] if approval is not None else None
    if decision == DecisionKind.RECONCILE:
        return approval is not None and approval.get("effect") != "landed"
    return result.verdict == RETRYABLE or (result.verdict == POSITIVELY_ABSENT and decision == DecisionKind.CONTINUE)


def _skipping(plan: ResumePlan, step_id: str) -> bool:
    """Did the operator decide to skip the checkpointed step itself (its screen could not be re-proved: the pause
    offered skip for a verified step)? Then it is not re-proved again: that would pause the run again for ever."""
    return plan.decision == DecisionKind.SKIP and plan.pending is not None and plan.pending["step"] == step_id


def _reprove_checkpoint(ctx: RunContext, cp: CheckpointDoc) -> None:
    checks = check_facts(ctx, cp["screen_facts"], ctx.steps.get(cp["step"]))
    ctx.journal.append(
        RecordType.CHECKPOINT_REPROVED, cp["step"], {"ok": all(c["ok"] for c in checks), "checks": checks}
    )
    if not all(c["ok"] for c in checks):
        raise Halt(
            "postcondition",
            f"the screen no longer shows what held after step {cp['step']!r}: "
            + "; ".join(f"{c['kind']} {c['expected']!r}" for c in checks if not c["ok"]),
            step=cp["step"],
        )


def _checkpoint_step(ctx: RunContext, index: int, verified_by: VerifiedBy, effect: StepEffect | None) -> None:
    step = ctx.model.steps[index]
    record_verified(
        ctx,
        step.id,
        {"index": index, "verified_by": verified_by, "effect": effect, "screen_facts": screen_facts(ctx, step)},
    )
