"""The `child` durable call (spec §2, §6, §14): a child run started, or continued, as its own durable run in this
process — one mechanism and one layout for a bundle's `flow` step and a workflow's `ctx.replay` / `ctx.child`.

A child lives in its parent's `children/<call id>` (RunHandle.child); a bundle run of earlier code kept its child
beside it (`<run>.<step>`, RunHandle.sibling), where resume still finds it. The call journals `child_started` once,
before the child begins; a start-up that was cut (no manifest) is no run and sent nothing: it is started afresh. The
parent is PAUSED(awaiting_child) while the child waits; when the child ends the call completes (COMPLETED), stops
(INTERRUPTED), is blocked (BLOCKED) or halts (anything else).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import FlowError, RefusedError
from openadapt_flow.records.states import PausedReason, RecordType, RunState
from openadapt_flow.runtime.act.durable.waiting import child_of, child_waiting
from openadapt_flow.runtime.judge.halt import Halt, Pause, StopRequested
from openadapt_flow.runtime.judge.policy import PolicyBlock
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.runtime.start.launch import RunOutcome
from openadapt_flow.store import CHILDREN
from openadapt_flow.store.base import RunHandle

__all__ = ["ChildCall", "Borrowed", "child_of", "run_child"]


@dataclass(frozen=True)
class ChildCall:
    """One child call: its step, its position, what it runs (a bundle path, `workflow:<entry>`), and how to start the
    child at a handle or continue the one started (runs.replay / runs.start_workflow, runs.resume)."""

    step: Step
    index: int
    what: str
    start: Callable[[RunHandle], RunOutcome]
    resume: Callable[[RunHandle], RunOutcome]


class Borrowed:
    """A parent's live backend lent to a child run: the child's close() must not close it."""

    def __init__(self, backend: Any) -> None:
        self._b = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._b, name)

    def close(self) -> None:
        pass


def run_child(rc: RunContext, call: ChildCall) -> RunHandle:
    """Start the call's child run (or continue the one started); the child once it is COMPLETED, else the pause,
    stop, block or halt its end means for this run."""
    child = child_of(rc.run, call.step.id)
    if call.step.id in rc.fold.children and child.has_manifest():
        out = _continue(rc, call, child)
    else:
        out = _start(rc, call, child)
    rc.run.add_child(child)  # (after a continue: a no-op unless the parent died before linking it)
    _outcome(call.step, child, out)
    return child


def _start(rc: RunContext, call: ChildCall, child: RunHandle) -> RunOutcome:
    if call.step.id in rc.fold.children:  # a start-up that was cut: nothing in it is a run (begin_run), clear it
        child.discard()
    else:
        rc.journal.append(
            RecordType.CHILD_STARTED,
            call.step.id,
            {"index": call.index, "run_dir": f"{CHILDREN}/{call.step.id}", "what": call.what},
            sync=True,
        )
    try:
        return call.start(child)
    except FlowError as e:  # bad bundle, params or backend: the operator fixes it, then continue retries the call
        raise Halt(
            getattr(e, "kind", None) or "input", f"{call.step.action} {call.what}: {e}", step=call.step.id
        ) from None


def _continue(rc: RunContext, call: ChildCall, child: RunHandle) -> RunOutcome:
    """The child already started: continued by the one resume, unless it waits (for an operator, a timer, another
    process driving it); then this run waits for it."""
    waiting = child_waiting(child)
    if waiting is None:
        try:
            return call.resume(child)
        except RefusedError as e:
            waiting = f"child run {child.ref}: {e}"
    raise Pause(
        PausedReason.AWAITING_CHILD, call.step.id, f"{waiting}; then flow resume {rc.run.ref}", category="child"
    )


def _outcome(step: Step, child: RunHandle, out: RunOutcome) -> None:
    if out.state == RunState.COMPLETED:
        return
    if out.state == RunState.PAUSED:
        raise Pause(
            PausedReason.AWAITING_CHILD,
            step.id,
            child_waiting(child) or f"child run {child.ref} is PAUSED: {out.message}",
            category="child",
        )
    if out.state == RunState.INTERRUPTED:
        raise StopRequested()
    if out.state == RunState.BLOCKED:
        raise PolicyBlock(
            "child_blocked", RunState.BLOCKED, None, step.id, f"child run {child.ref} ended BLOCKED: {out.message}"
        )
    raise Halt("child", f"child run {child.ref} ended {out.state}: {out.message}", step=step.id)
