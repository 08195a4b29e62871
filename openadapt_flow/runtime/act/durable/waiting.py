"""Why a paused run is still waiting, and when it may go on (spec §8, §14): the one place that says it, for a run's
resume (bundle or Python workflow), for a parent waiting on its child, and for a worker deciding what it may resume
(`ready_at`: its schedule's epoch, from the same records)."""

from __future__ import annotations

import time

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.errors import FlowError
from openadapt_flow.records.entry import StateDoc
from openadapt_flow.records.pausedoc import PendingBody
from openadapt_flow.records.states import FINAL_STATES, LIVE_STATES, PausedReason, RecordType, RunState, is_a
from openadapt_flow.runtime.start.lifecycle import effective_state
from openadapt_flow.store.base import RunHandle

__all__ = ["child_of", "child_waiting", "nothing_uncertain", "ready_at", "state_of", "still_waiting"]

HOW = {"awaiting_user": "flow answer", "awaiting_signal": "flow signal"}


def child_of(run: RunHandle, step_id: str) -> RunHandle:
    """Where the child run of call `step_id` lives: `children/<call id>` in its parent; a bundle run of earlier code
    kept it beside the parent (`<run>.<step>`)."""
    inside = run.child(step_id)
    if inside.has_manifest():
        return inside
    beside = run.sibling(step_id)
    return beside if beside.has_manifest() else inside


def still_waiting(run: RunHandle, pending: PendingBody | None, *, approved: bool | None = None) -> str | None:
    """Why this run's open pause cannot continue yet — nothing delivered, the timer not due, the child still waiting
    — or None (it can: resume goes on, with the operator's decision where one is needed). `approved`: whether an
    approval awaits the pause, when the caller knows better than approval.json (a plan that retires a used one)."""
    if pending is None:
        return None
    reason, step = pending["paused_reason"], pending["step"]
    if reason == PausedReason.AWAITING_CHILD:
        return child_waiting(child_of(run, step))
    if run.has_approval() if approved is None else approved:
        return None
    if reason == PausedReason.AWAITING_TIMER:
        due = pending.get("due_epoch") or 0
        return f"timer of step {step!r} is due in {due - time.time():.1f}s" if time.time() < due else None
    if reason in HOW:
        return f"still {reason} at step {step!r} ({HOW[reason]} {run.ref} …)"
    return None


def child_waiting(child: RunHandle) -> str | None:
    """Why a child run cannot be continued by its parent's resume yet — another process drives it, or it is paused
    and waits (still_waiting), or no operator decided its pause — or None."""
    if not child.has_manifest():
        return None
    st = effective_state(child)  # as a reader sees it: a child whose owner died is INTERRUPTED, and continues here
    state = st.get("state")
    if state in LIVE_STATES:
        return f"child run {child.ref} is {state} in another process; resume this run once it stops"
    if state != RunState.PAUSED:
        return None
    pending = child.read_pending()
    why = still_waiting(child, pending) if pending else None
    reason, step = (pending.get("paused_reason"), pending.get("step")) if pending else (None, None)
    if why is not None:
        return why if reason == PausedReason.AWAITING_CHILD else f"child run {child.ref}: {why}"
    if reason in (PausedReason.AWAITING_CHILD, PausedReason.AWAITING_TIMER) or child.has_approval():
        return None
    how = HOW.get(str(reason), "flow approve")
    return (
        f"child run {child.ref} is PAUSED({reason}) at {step!r}: {st.get('message') or ''} — decide there "
        f"({how} {child.ref})"
    )


def state_of(run: RunHandle) -> StateDoc | None:
    """The run's state.json, or None when it has none or it cannot be read."""
    try:
        return run.state() if run.has_state() else None
    except FlowError:
        return None


def ready_at(run: RunHandle) -> float | None:
    """When (epoch) a worker may continue this run — its wait satisfied, or INTERRUPTED with nothing uncertain —
    read from its small state/pending records; None if never by a worker (the why: `still_waiting`)."""
    state = state_of(run)
    if state is None:
        return None
    if state.get("state") == RunState.INTERRUPTED:
        return 0.0 if nothing_uncertain(run) else None
    if state.get("state") != RunState.PAUSED:
        return None
    try:
        pending = run.read_pending()
    except FlowError:
        return None
    if pending is None:
        return None
    reason = pending.get("paused_reason")
    if reason == PausedReason.AWAITING_CHILD:
        child = child_of(run, str(pending.get("step")))  # driven by its parent (runtime/act/durable/child.py)
        child_doc = state_of(child)
        child_state = child_doc.get("state") if child_doc is not None else None
        if child_state is None:
            return None
        if child_state in FINAL_STATES:
            return 0.0
        # No worker drives a child: its parent is due when the child's own wait is satisfied.
        return ready_at(child)
    if reason == PausedReason.AWAITING_TIMER:
        return float(pending.get("due_epoch") or 0)
    if not run.has_approval():
        return None
    if reason == PausedReason.AWAITING_APPROVAL:
        try:
            cfg = DeployConfig.model_validate(run.manifest()["config"])
        except (FlowError, ValueError, KeyError):
            return None
        return 0.0 if cfg.approvals.auto_resume else None
    return 0.0  # an answer or signal was delivered


def nothing_uncertain(run: RunHandle) -> bool:
    """A durable run of the root (not a `flow` child: its parent drives it) with no dispatched-but-unverified step.

    Read without verifying the chain: resume verifies everything before it acts, and refuses what does not hold.
    """
    try:
        manifest = run.manifest()
    except FlowError:
        return False
    if not manifest.get("durable") or manifest.get("parent_run"):
        return False
    open_steps: set[str | None] = set()
    for r in run.read_records():
        if is_a(r, RecordType.ACTION_DISPATCHED):
            open_steps.add(r.get("step"))
        elif is_a(r, RecordType.STEP_VERIFIED, RecordType.STEP_SKIPPED):
            open_steps.discard(r.get("step"))
    return not open_steps
