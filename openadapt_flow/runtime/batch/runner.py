"""`flow batch`: one run per work item, in order, on one live app; every item exactly once.

Each item's key goes into the item ledger (store/items.py) before its run is created, and its status after the run
stops, so a batch run again — after a halt, a kill, a crash — skips what is done, resumes what a durable run can
continue, never re-sends an item whose write may have landed, and sends the items never started (runtime/batch/
prior.py). Each item is an ordinary run (the runtime entry `flow replay` uses) in its own run directory.

Between items: after an item that did not end done (and before every item when asked), the batch runs the `reset` it
was given — a callable that brings the app back to its start state and returns None when the start state holds, else
why not. With no reset, a halted item stops the batch: the next item is never sent into an app the halted one may have
left dirty. A reset that fails stops it too; the items not sent are `not_run`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.items import Item
from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.records.states import RunState
from openadapt_flow.runtime.act.assemble import stop_on_signals
from openadapt_flow.runtime.batch.desk import NextDesk
from openadapt_flow.runtime.batch.prior import Prior, judge_prior, shown
from openadapt_flow.runtime.batch.reports import ReportsBehind
from openadapt_flow.runtime.batch.status import ItemResult, ItemStatus, effect_verdict, status_of
from openadapt_flow.runtime.judge.outcome import classify, landed
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.context import Progress
from openadapt_flow.runtime.start.launch import ReplayRequest, Reporter, RunOutcome
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store.base import RunHandle
from openadapt_flow.store.items import Attempt, ItemLedger, values_digest
from openadapt_flow.store.journal import now_iso
from openadapt_flow.vision.ocr import OcrEngine

Reset = Callable[[], str | None]  # bring the app to its start state: None when it holds, else why not


class BatchEvents:
    """Callbacks as items run; the CLI renders them (a progress bar on a TTY, one line per item always)."""

    def item_started(self, index: int, total: int, item: Item) -> None: ...

    def item_finished(self, index: int, total: int, result: ItemResult) -> None: ...

    def report_failed(self, run: str, why: str) -> None:
        """A completed item's report, written behind the batch (runtime/batch/reports.py), could not be written."""


@dataclass
class BatchRequest:
    """A batch: the bundle, its checked items (bundle/items.py `read_items`) and file, where their runs go, and how
    each run is driven (as `flow replay`'s request)."""

    bundle: Path
    items: Sequence[Item]
    items_file: Path
    runs_dir: Path  # each item's run: <runs_dir>/<nnn>-<key>[-<attempt>]
    backend: BackendSpec | None
    config: DeployConfig
    durable: bool = False
    allow_model: bool = False
    reset: Reset | None = None
    reset_before_each: bool = False
    progress: Progress | None = None  # each run's step progress
    reporter: Reporter | None = None
    stop: threading.Event = field(default_factory=threading.Event)  # set: send no further item (SIGTERM/SIGINT)


def run_batch(req: BatchRequest, events: BatchEvents | None = None) -> list[ItemResult]:
    """Run every item once, in order; one result per item. Bad input before the first item raises (nothing sent)."""
    if req.config.runtime.store is not None:
        raise UsageError(
            "flow batch keeps its runs in a runs directory; for the PostgreSQL store, queue the items to "
            "the fleet: flow submit BUNDLE --items FILE --store postgresql://…"
        )
    if req.reset_before_each and req.reset is None:
        raise UsageError("the bundle asks for a reset before each item, but no reset was given")
    loaded = load_bundle(req.bundle)
    batch = _Batch(req, loaded, ItemLedger(loaded.model.name), events or BatchEvents())
    try:
        with batch.ledger.hold(), stop_on_signals(req.stop):
            for index, item in enumerate(req.items):
                batch.events.item_started(index, len(req.items), item)
                result = batch.one(index, item)
                batch.results.append(result)
                batch.events.item_finished(index, len(req.items), result)
    finally:
        batch.desk.close()
        if batch.behind is not None:
            for run, why in batch.behind.close():
                batch.events.report_failed(shown(run.ref), f"report not written ({why}); flow report renders it again")
    return batch.results


@dataclass
class _Batch:
    req: BatchRequest
    loaded: LoadedBundle
    ledger: ItemLedger
    events: BatchEvents
    results: list[ItemResult] = field(default_factory=list)
    dirty: str | None = None  # why the app may not be in its start state (an item this batch sent did not end done)
    stopped: str | None = None  # why the batch sends nothing more
    sent: int = 0  # items this batch sent (or resumed)
    ocr: OcrEngine | None = None  # one OCR engine for every item: its model loads once, not once per run
    desk: NextDesk = field(default_factory=NextDesk)  # the next item's connection, opened as a run stops
    behind: ReportsBehind | None = None  # completed items' reports, written while the next item runs
    parked: bool = False  # the last run this batch sent ended with the pointer parked, nothing sent since (pointer.py)
    snapshot: Path | None = None  # a run's bundle snapshot this batch made: the next run hard-links its files

    def reader(self) -> OcrEngine:
        if self.ocr is None:
            self.ocr = OcrEngine()
        return self.ocr

    def one(self, index: int, item: Item) -> ItemResult:
        record = self.ledger.get(item.key)
        digest = values_digest(item.values or item.params)
        changed = record is not None and record.last is not None and record.last.values != digest
        prior = judge_prior(record, item.line, changed, self.req.stop)
        if prior.result is not None:
            return prior.result  # done, waiting, or possibly written: nothing is sent
        if self.req.stop.is_set() and self.stopped is None:
            self.stopped = "the batch was stopped by a signal"
        if self.stopped is None and (self.dirty is not None or self.req.reset_before_each):
            self.desk.drop()  # after a reset the item connects afresh
            self.parked = False  # a reset sends input of its own
            self.stopped = self._reset()
        if self.stopped is not None:
            return ItemResult(item.line, item.key, ItemStatus.NOT_RUN, None, f"not sent: {self.stopped}")
        sent = self.sent
        result = self._resume(item, prior) if prior.resume else self._send(index, item, digest, prior)
        if self.sent > sent and result.status is not ItemStatus.DONE:
            self.dirty = f"item {item.key!r} (line {item.line}) ended {result.status.value}"
        return result

    def _reset(self) -> str | None:
        """None when the app is (back) in its start state; else why the batch must stop."""
        if self.req.reset is None:
            assert self.dirty is not None
            return f"{self.dirty} and may have left the app off its start state; no reset is given"
        why = self.req.reset()
        if why is not None:
            return f"the reset did not bring the app back to its start state: {why}"
        self.dirty = None
        return None

    def _send(self, index: int, item: Item, digest: str, prior: Prior) -> ItemResult:
        run_dir = self._run_dir(index, item.key)
        run_dir.mkdir(
            parents=True
        )  # before the attempt is recorded: a recorded run whose directory is gone was removed
        attempt = Attempt(
            run=str(run_dir.absolute()),
            items_file=str(self.req.items_file.absolute()),
            line=item.line,
            values=digest,
            started_at=now_iso(),
            why=prior.why or None,
            reread=dict(prior.reread) if prior.reread else None,
        )
        self.ledger.started(item.key, attempt)
        req = ReplayRequest(
            bundle=self.req.bundle,
            params=item.params,
            backend=self.req.backend,
            config=self.req.config,
            run_dir=run_dir,
            durable=self.req.durable,
            allow_model=self.req.allow_model,
            loaded=self.loaded,
            ocr=self.reader(),
            park_after=index + 1 < len(self.req.items),
            parked=self.parked,
            snapshot_like=self.snapshot,
        )
        self.parked = False
        try:
            outcome = replay(
                req, progress=self.req.progress, reporter=self._reporter(index), backend_factory=self.desk.factory
            )
        except FlowError as e:  # raised before the run began: nothing of this item was sent
            if self.sent == 0:
                self.ledger.finished(item.key, ItemStatus.NOT_RUN.value, str(e), None)
                raise  # bad input, an unreachable desktop: the batch's own error (exit 2, 75), nothing sent at all
            return self._not_started(item, e)
        self.sent += 1
        self.parked = outcome.parked
        # (a file of it missing or other than the bundle's is copied instead: the snapshot compares the bytes)
        self.snapshot = Path(outcome.run_dir) / "bundle"
        return self._finished(item, outcome, self.loaded, f"sent again: {prior.why}" if prior.why else "")

    def _reporter(self, index: int) -> Reporter | None:
        """The run's reporter; with an item after this one, it first starts connecting for that item (the run has
        stopped: nothing more of it reaches the desktop), and a completed run's report is written behind the batch."""
        report = self.req.reporter
        if report is None or index + 1 >= len(self.req.items):
            return report

        if self.behind is None:
            self.behind = ReportsBehind(report)
        behind = self.behind

        def connect_then_report(run: RunHandle) -> object:
            if not self.req.stop.is_set():
                self.desk.before_report(self.req.backend)
            return behind(run)

        return connect_then_report

    def _resume(self, item: Item, prior: Prior) -> ItemResult:
        assert prior.resume is not None
        self.desk.drop()  # the resumed run connects on its own
        self.parked = False
        try:
            outcome = resume(
                prior.resume, backend=self.req.backend, progress=self.req.progress, reporter=self.req.reporter
            )
        except RefusedError as e:  # nothing was sent: the run is as it was, for an operator to look at
            st = open_ref(prior.resume).state()
            status = status_of(str(st.get("state")), st.get("transaction_outcome"), [], durable=False)
            return ItemResult(
                item.line,
                item.key,
                ItemStatus.HALTED if status.rerunnable else status,
                shown(prior.resume),
                f"its earlier run could not be resumed: {e}",
            )
        except FlowError as e:  # the desktop did not answer, or the like: nothing was sent; the batch stops
            self.stopped = f"item {item.key!r} (line {item.line}) could not resume its run: {e}"
            return ItemResult(item.line, item.key, ItemStatus.NOT_RUN, shown(prior.resume), f"not sent: {e}")
        self.sent += 1
        return self._finished(
            item, outcome, load_bundle(open_ref(outcome.run_dir).artifact_dir("bundle")), "resumed its earlier run"
        )

    def _not_started(self, item: Item, e: FlowError) -> ItemResult:
        self.stopped = f"item {item.key!r} (line {item.line}) could not start: {e}"
        self.ledger.finished(item.key, ItemStatus.NOT_RUN.value, str(e), None)
        return ItemResult(item.line, item.key, ItemStatus.NOT_RUN, None, f"not sent: {e}")

    def _finished(self, item: Item, outcome: RunOutcome, bundle: LoadedBundle, note: str) -> ItemResult:
        """The item's result from its run's stop (`bundle`: what the run executed), recorded in the item ledger."""
        run = open_ref(outcome.run_dir)
        records = run.read_records()
        steps = bundle.model.steps
        outcome_name, _ = classify(steps, records)
        durable = bool(run.manifest().get("durable"))
        status = status_of(
            outcome.state, run.state().get("transaction_outcome") or str(outcome_name), landed(steps, records), durable
        )
        reason = _reason(outcome, status, durable)
        if note and status is not ItemStatus.DONE:
            reason = f"{reason} ({note})"
        if outcome.state == RunState.INTERRUPTED:
            self.stopped = f"item {item.key!r} (line {item.line}) was interrupted: {outcome.message}"
        result = ItemResult(
            item.line, item.key, status, shown(str(outcome.run_dir)), reason, effect_verdict(steps, records)
        )
        self.ledger.finished(item.key, status.value, result.reason or None, result.effect)
        return result

    def _run_dir(self, index: int, key: str) -> Path:
        """<runs_dir>/<nnn>-<key>, with -2, -3 … for a later attempt at the same item."""
        base = self.req.runs_dir / f"{index + 1:03d}-{_slug(key)}"
        path, n = base, 1
        while path.exists():
            n += 1
            path = base.with_name(f"{base.name}-{n}")
        return path


def _slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", key).strip("-.")[:40] or "item"


def _reason(outcome: RunOutcome, status: ItemStatus, durable: bool) -> str:
    if status is ItemStatus.DONE:
        return ""
    head = f"{outcome.category}: {outcome.message}" if outcome.category else (outcome.message or outcome.state)
    ref = shown(str(outcome.run_dir))
    if status is ItemStatus.PAUSED:
        return f"{head} — waits for a decision: flow status {ref}"
    if status is ItemStatus.UNCERTAIN:
        return f"{head} — its write may have landed: check the system of record before anything else; never re-sent"
    if status is ItemStatus.FAILED_AFTER_EFFECT:
        return f"{head} — never re-sent"
    if outcome.state == RunState.INTERRUPTED and durable:
        return f"{head} — the next `flow batch` over these items resumes its run"
    return head
