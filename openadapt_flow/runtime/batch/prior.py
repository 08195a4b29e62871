"""What an earlier attempt at an item means for this batch: skip it, resume its run, send it again, or report it.

The run is the truth, the item ledger only says which run it was: an item whose run an operator has since resumed to
completion is done; one whose run's owner died is finalised first (INTERRUPTED, its outcome classified from its
journal). An item is sent again only when nothing of it can have landed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import FlowError, RunDirError
from openadapt_flow.records.states import LIVE_STATES, RunState
from openadapt_flow.records.stepdoc import RecheckedEffect
from openadapt_flow.runtime.batch.reread import reread_effect
from openadapt_flow.runtime.batch.status import ItemResult, ItemStatus, effect_verdict, status_of
from openadapt_flow.runtime.judge.outcome import classify, landed
from openadapt_flow.runtime.operate.reconciler import reconcile_one
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store.base import RunHandle
from openadapt_flow.store.items import Attempt, ItemRecord
from openadapt_flow.verify.effects import ABSENT, CONFIRMED


@dataclass(frozen=True)
class Prior:
    """The verdict on an item's last attempt: `result` to report as it is (nothing sent), else `resume` that run,
    else (both None) send the item."""

    result: ItemResult | None = None
    resume: str | None = None
    why: str = ""  # why it is sent again (for the reason of the new attempt's line)
    reread: RecheckedEffect | None = None  # the earlier run's write read again ABSENT: the evidence it did not land


SEND = Prior()


def judge_prior(record: ItemRecord | None, line: int, changed: bool, stop: threading.Event) -> Prior:
    """The verdict on `record`'s last attempt at the item on `line` (`changed`: this file gives it other values;
    `stop` ends a wait to re-read an uncertain write)."""
    last = record.last if record is not None else None
    if record is None or last is None:
        return SEND
    at = _Item(record.key, line)
    try:
        run = open_ref(last.run)
    except RunDirError:
        return _without_run(at, last)
    try:
        return _judge_run(at, run, changed, stop)
    except FlowError as e:  # a damaged or tampered run: never a reason to send the item again
        return at.report(ItemStatus.UNCERTAIN, last.run, f"its earlier run cannot be read ({e}); check it")


@dataclass(frozen=True)
class _Item:
    key: str
    line: int

    def report(self, status: ItemStatus, run: str, reason: str, effect: str | None = None) -> Prior:
        """Report the item as its earlier attempt left it; nothing is sent."""
        return Prior(ItemResult(self.line, self.key, status, shown(run), reason, effect))


def _without_run(at: _Item, last: Attempt) -> Prior:
    """The attempt's run directory holds no run. The batch makes it (empty) before it records the attempt, so an empty
    or cut one sent nothing; one that is gone was removed by hand, and what it did is no longer known."""
    status = ItemStatus(last.status) if last.status else None
    if status is ItemStatus.DONE:
        return at.report(
            ItemStatus.SKIPPED_DONE, last.run, "done in an earlier batch (its run directory is gone)", last.effect
        )
    if Path(last.run).is_dir() or (status is not None and status.rerunnable):
        return Prior(why=f"its earlier run {shown(last.run)} never started")
    if status is None:
        return at.report(
            ItemStatus.UNCERTAIN,
            last.run,
            "its earlier run's directory is gone and how it ended was "
            "never recorded: it may have written; check the system of record; not sent again",
        )
    return at.report(
        status,
        last.run,
        f"{last.reason or status.value} (an earlier batch; its run directory is gone); not sent again",
        last.effect,
    )


def shown(ref: str) -> str:
    """A run directory as lines and results show it: relative to the current directory when it is under it."""
    path = Path(ref)
    try:
        return str(path.relative_to(Path.cwd())) if path.is_absolute() else ref
    except ValueError:
        return ref


def _judge_run(at: _Item, run: RunHandle, changed: bool, stop: threading.Event) -> Prior:
    state = str(run.state().get("state")) if run.has_state() else RunState.PENDING
    if state in LIVE_STATES:
        reconcile_one(run)  # its owner died (a killed batch): INTERRUPTED, outcome from its journal
        state = str(run.state().get("state"))
        if state in LIVE_STATES:
            return at.report(ItemStatus.NOT_RUN, run.ref, f"its run {shown(run.ref)} is running in another process")
    durable = bool(run.manifest().get("durable"))
    records = run.read_records()
    steps = load_bundle(run.artifact_dir("bundle")).model.steps
    effect = effect_verdict(steps, records)
    if state == RunState.COMPLETED:
        note = " — the file now gives it other values; give it a new key to enter those" if changed else ""
        return at.report(ItemStatus.SKIPPED_DONE, run.ref, f"done in an earlier batch{note}", effect)
    if (state == RunState.INTERRUPTED and durable) or (state == RunState.PAUSED and run.has_approval()):
        return Prior(
            resume=run.ref
        )  # the durable runtime continues it: never a verified step again, never a blind retry
    if state == RunState.BLOCKED:
        why = run.state().get("message") or "a policy or an operator"
        return at.report(ItemStatus.HALTED, run.ref, f"its earlier run was BLOCKED ({why}); not sent again", effect)
    outcome, _ = classify(steps, records)
    status = status_of(state, str(outcome), landed(steps, records), durable)
    if status.rerunnable:
        return Prior(why=f"its earlier run {shown(run.ref)} stopped before any write ({state})")
    if status is ItemStatus.UNCERTAIN:
        return _uncertain(at, run, list(steps), effect, stop)
    return at.report(status, run.ref, f"{_earlier(status, run)}; not sent again", effect)


def _uncertain(at: _Item, run: RunHandle, steps: list[Step], effect: str | None, stop: threading.Event) -> Prior:
    """A write that may have landed, read again read-only: ABSENT sends the item again, anything else never does."""
    reread = reread_effect(run, steps, stop)
    if reread is not None and reread[0] == ABSENT:
        after = reread[1]["read_after_dispatch_s"]
        return Prior(
            why=f"its earlier run {shown(run.ref)} sent its write and never verified it; read again {after} s "
            "after it was sent, the write was ABSENT",
            reread=reread[1],
        )
    if reread is not None and reread[0] == CONFIRMED:
        return at.report(
            ItemStatus.FAILED_AFTER_EFFECT,
            run.ref,
            "its earlier run's write landed (read again: "
            "CONFIRMED), then the run stopped before its end: finish it by hand; not sent again",
            CONFIRMED,
        )
    seen = f" (read again: {reread[0]})" if reread is not None else ""
    return at.report(
        ItemStatus.UNCERTAIN, run.ref, f"{_earlier(ItemStatus.UNCERTAIN, run)}{seen}; not sent again", effect
    )


def _earlier(status: ItemStatus, run: RunHandle) -> str:
    message = run.state().get("message") or ""
    if status is ItemStatus.PAUSED:
        return f"its earlier run waits for a decision ({message}): flow status {shown(run.ref)}"
    if status is ItemStatus.FAILED_AFTER_EFFECT:
        return f"its earlier run's write landed, then it stopped ({message}): finish it by hand"
    return f"its earlier run may have written ({message}): check the system of record"
