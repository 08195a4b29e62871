"""The one durable step (spec §5, §14): record a verified step; perform a durable call.

Every kind of step goes through here — a bundle's GUI steps, its tool/question/timer/child steps, a Python
workflow's calls, an operator's answer delivered to a waiting call, a step an operator skipped or reconciled.
As DBOS's step wrapper: look up the journal for the call's saved result, else run it, then record it.

The package holds the rest of the durable vocabulary, written once for bundles and Python workflows alike:
`calls` (ask_user, wait_signal, sleep, dispatch), `child` (one child-run mechanism and layout), `waiting` (why an
open pause cannot continue yet) and `marks` (the run-level records a stop or a resume journals).
"""

from __future__ import annotations

from collections.abc import Callable

from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.states import RecordType
from openadapt_flow.records.stepdoc import SkippedData, VerifiedData
from openadapt_flow.runtime.start.context import RunContext

__all__ = ["durable_call", "record_skipped", "record_verified"]


def record_verified(ctx: RunContext, step_id: str, data: VerifiedData) -> JournalEntry:
    """Journal `step_verified` (the fold notes it), then replace checkpoint.json (durable runs): the order of spec §5.
    The journal record is the truth; a crash before the checkpoint is caught up from it on resume. A durable run's
    record is fsync'd here; a non-durable run's rides on the journal's next fsync (the next `action_dispatched`, or the
    stop), as nothing is sent before that: a power loss in between leaves the step uncertain, never wrongly verified,
    and a non-durable run is never resumed from a checkpoint."""
    return _checkpointed(ctx, ctx.journal.append(RecordType.STEP_VERIFIED, step_id, data, sync=ctx.durable))


def record_skipped(ctx: RunContext, step_id: str, data: SkippedData) -> JournalEntry:
    """Journal `step_skipped` (an operator's skip: the other record that advances the checkpoint), as `record_verified`."""
    return _checkpointed(ctx, ctx.journal.append(RecordType.STEP_SKIPPED, step_id, data, sync=ctx.durable))


def _checkpointed(ctx: RunContext, rec: JournalEntry) -> JournalEntry:
    if ctx.durable:
        cp = ctx.fold.checkpoint()
        assert cp is not None
        ctx.run.write_checkpoint(cp)
    return rec


def durable_call(ctx: RunContext, step_id: str, body: Callable[[], VerifiedData]) -> JournalEntry:
    """The verified record of this step: the journal's, if it has one (never run twice), else `body()`'s data
    recorded now. `body` raises a RunSignal (Halt, Pause, …) when the step cannot complete."""
    saved = ctx.fold.saved(step_id)
    if saved is not None:
        return saved
    return record_verified(ctx, step_id, body())
