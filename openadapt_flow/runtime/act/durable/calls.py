"""The durable calls (spec §2, §14), written once for a bundle's step kinds (act/durable_steps.py) and a Python
workflow's calls (workflow/ctx.py): each journals its records in one shape, then completes or raises Pause, leaving
no process behind. Each record type here has this one writer (tests/unit/test_one_writer.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, NoReturn, Unpack

from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.kinds import StepCall, StepStartedData
from openadapt_flow.records.states import PausedReason, RecordType
from openadapt_flow.runtime.judge.halt import Halt, Pause
from openadapt_flow.runtime.start.context import RunContext

__all__ = ["ask_user", "dispatch", "dispatched", "jsonable", "sleep", "started", "wait_signal"]


def started(
    rc: RunContext,
    step: Step,
    index: int,
    *,
    intent: str | None,
    sync: bool | None = None,
    action: str | None = None,
    **call: Unpack[StepCall],
) -> JournalEntry:
    """Journal `step_started`: a bundle step's action and intent, or a workflow call's kind (`action`), its
    `name`, the keyed digest of its `inputs` and whether it is `consequential`."""
    data: StepStartedData = {
        "index": index,
        "action": action if action is not None else step.action,
        "intent": intent,
        **call,
    }
    return rc.journal.append(RecordType.STEP_STARTED, step.id, data, sync=sync)


def ask_user(
    rc: RunContext, step_id: str, index: int, question: str, choices: list[str] | None, type_: str | None
) -> NoReturn:
    """Ask once (`asked`, fsync'd: never asked twice), then PAUSED(awaiting_user) until an answer is delivered."""
    if step_id not in rc.fold.asked:
        rc.journal.append(
            RecordType.ASKED,
            step_id,
            {"index": index, "question": question, "choices": choices, "type": type_},
            sync=True,
        )
    raise Pause(PausedReason.AWAITING_USER, step_id, question, category="ask_user")


def wait_signal(rc: RunContext, step_id: str, index: int, signal: str | None) -> NoReturn:
    """Note the wait once (`waiting_signal`), then PAUSED(awaiting_signal) until the signal is delivered."""
    if step_id not in rc.fold.signals:
        rc.journal.append(RecordType.WAITING_SIGNAL, step_id, {"index": index, "signal": signal}, sync=True)
    raise Pause(PausedReason.AWAITING_SIGNAL, step_id, f"waiting for signal {signal!r}", category="wait_signal")


def sleep(rc: RunContext, step_id: str, index: int, due_at: Callable[[], float]) -> float:
    """A durable timer: its due time journaled once (`timer_set`, from `due_at()`); the due time once it is past,
    else PAUSED(awaiting_timer) holding no process."""
    due = rc.fold.timers.get(step_id)
    if due is None:
        due = due_at()
        rc.journal.append(RecordType.TIMER_SET, step_id, {"index": index, "due_epoch": due}, sync=True)
    if time.time() < due:
        when = datetime.fromtimestamp(due, timezone.utc).isoformat(timespec="seconds")
        raise Pause(PausedReason.AWAITING_TIMER, step_id, f"timer due at {when}", category="timer")
    return due


def dispatched(rc: RunContext, step: Step, point: tuple[int, int] | None = None) -> JournalEntry:
    """Right before any input: the retry budget, the lease fence (spec §5 invariant 7), then `action_dispatched`
    (fsync'd) with the lease generation it is sent under — for a GUI step's input as for a tool's call."""
    rc.before_dispatch(step)
    return rc.journal.append(
        RecordType.ACTION_DISPATCHED,
        step.id,
        {
            "action": step.action,
            "point": list(point) if point else None,
            "call": step.call,
            "lease_generation": rc.lease_generation,
        },
    )


def dispatch(rc: RunContext, step: Step, what: str, act: Callable[[], Any], *, approved: bool) -> Any:
    """A call that acts (a tool, a domain action): an operator's approval first where the step needs one, then the
    fence and `action_dispatched`, then the act; its result as JSON. What the act raises halts the run (dispatched:
    never re-run blindly)."""
    if step.approval == "before" and not approved:
        raise Pause(PausedReason.AWAITING_APPROVAL, step.id, f"{what} needs an operator's approval before it acts")
    dispatched(rc, step)
    try:
        value = act()
    except RefusedError:
        raise
    except Exception as e:  # (RunSignals are BaseExceptions: they pass) a tool that raises halts like any step
        raise Halt("tool", f"{what} raised {type(e).__name__}: {e}", step=step.id, dispatched=True) from None
    return jsonable(value, what, step.id)


def jsonable(value: Any, what: str, step_id: str | None = None) -> Any:
    """The value as the journal will give it back on resume (a tuple becomes a list), so both runs see the same."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError) as e:
        raise Halt("tool", f"{what} returned something that is not JSON ({e})", step=step_id, dispatched=True) from None
