"""Why a paused run is still waiting (spec §8, §14): the one place that says it, for a run's resume (bundle or Python
workflow), for a parent waiting on its child, and for a worker deciding what it may resume."""

from __future__ import annotations

import time

from openadapt_flow.runtime.start.lifecycle import effective_state
from openadapt_flow.store.base import RunHandle
from openadapt_flow.store.pausedoc import PendingBody
from openadapt_flow.store.states import LIVE_STATES, PausedReason, RunState

__all__ = ["child_of", "child_waiting", "still_waiting"]

HOW = {"awaiting_user": "flow answer", "awaiting_signal": "flow signal"}


def child_of(run: RunHandle, step_id: str) -> RunHandle:
    """Where the child run of call `step_id` lives: `children/<call id>` in its parent; a bundle run of earlier code
    kept it beside the parent (`<run>.<step>`)."""
    inside = run.child(step_id)
    if inside.has_manifest():
        return inside
    beside = run.sibling(step_id)
    return beside if beside.has_manifest() else inside


def still_waiting(run: RunHandle, pending: PendingBody | None) -> str | None:
    """Why this run's open pause cannot continue yet — nothing delivered, the timer not due, the child still waiting
    — or None (it can: resume goes on, with the operator's decision where one is needed)."""
    if pending is None:
        return None
    reason, step = pending["paused_reason"], pending["step"]
    if reason == PausedReason.AWAITING_CHILD:
        return child_waiting(child_of(run, step))
    if run.has_approval():
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
    return (f"child run {child.ref} is PAUSED({reason}) at {step!r}: {st.get('message') or ''} — decide there "
            f"({how} {child.ref})")
