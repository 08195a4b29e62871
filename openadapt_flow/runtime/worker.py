"""`flow worker [ROOT]`: resume runs whose wait is satisfied — a timer due, an answer or signal delivered,
an approval recorded (when the config allows auto-resume) — and durable runs that were INTERRUPTED (or whose owner
died) with nothing uncertain (spec §10, §19). Each run is resumed under its own lease, so several workers on one
root never run the same run twice. A resume refused while another command holds the run for a moment (a decision
being recorded, a status read) is tried again as soon as that holder lets go (waiting at most `hold_wait_s`); a run
whose resume was refused for any other reason, or interrupted again, waits `retry_s`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.errors import FlowError, RefusedError
from openadapt_flow.records.rundoc import WorkerRow
from openadapt_flow.records.states import LIVE_STATES, RunState
from openadapt_flow.runtime.act.assemble import stop_on_signals
from openadapt_flow.runtime.act.durable.waiting import nothing_uncertain, ready_at, state_of
from openadapt_flow.runtime.operate.reconciler import as_store
from openadapt_flow.runtime.runs import resume
from openadapt_flow.runtime.start.launch import Reporter, RunOutcome
from openadapt_flow.runtime.start.lifecycle import owner_gone
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.base import RunHandle, RunStore


@dataclass
class _Seen:
    stamp: tuple[float, ...]  # state, pending, approval, sibling children, nested children
    ready_at: float | None  # epoch when the run becomes resumable; None = not by a worker
    live: bool = False  # state says RUNNING/RESUMING/PENDING: whether its owner died is re-checked every scan


def _live(run: RunHandle) -> bool:
    state = state_of(run)
    return state is not None and state.get("state") in LIVE_STATES


def _nested_stamp(run: RunHandle) -> float:
    """The newest state, pending or approval change of a workflow's child runs (recursively)."""
    return max((max(*child.stamp(), _nested_stamp(child)) for child in run.children()), default=0.0)


HOLD_WAIT_S = 5.0  # how long a refused resume waits for a brief holder of the run (a decision, a status read) to let go
HOLD_POLL_S = 0.05  # how often it looks: the lock has no timed wait that every store offers


def _wait_for_holder(run: RunHandle, deadline: float, stop: threading.Event) -> bool | None:
    """Once `run`'s lock is free: True if another command held it when we first looked (and let go before
    `deadline`), False if it was free at once; None if the holder kept it past the deadline (or the worker stops).

    Looks with the store's `try_lock` (held for an instant, writing nothing), never by taking the lease."""
    held = False
    while True:
        unlock = run.try_lock()
        if unlock is not None:
            unlock()
            return held
        held = True
        if time.monotonic() >= deadline or stop.wait(HOLD_POLL_S):
            return None


def resume_past_holders(run: RunHandle, hold_wait_s: float, stop: threading.Event, **kwargs: Any) -> RunOutcome:
    """Resume `run` (`kwargs` go to `resume`). After a refusal it looks at the run's lock: while another command holds
    it (a decision being recorded, a status read) it waits, up to `hold_wait_s`, and tries again as soon as that holder
    lets go. If the lock is free when it looks, a holder may have let go in between: it tries once more at once. A
    second refusal with the lock free stands (a real refusal), as does one whose holder keeps the run past the bound
    (another worker's resume, a live owner). A `flow worker` and a fleet worker's resume job both resume this way."""
    deadline = time.monotonic() + hold_wait_s
    free_retry = True
    while True:
        try:
            return resume(run, stop=stop, **kwargs)
        except RefusedError:
            held = _wait_for_holder(run, deadline, stop)
            if held is None or stop.is_set() or not (held or free_retry):
                raise
            free_retry = free_retry and held


class Worker:
    """Scans a runs root cheaply: a run's files are re-read only when their mtimes change."""

    def __init__(
        self,
        root: Path | RunStore,
        reporter: Reporter | None = None,
        log: Callable[[str], None] = print,
        backend_factory: Callable[[BackendSpec], Backend] = open_backend,
        retry_s: float = 30.0,
        hold_wait_s: float = HOLD_WAIT_S,
    ) -> None:
        self.store = as_store(root)
        self.reporter = reporter
        self.log = log
        self.backend_factory = backend_factory
        self.stop = threading.Event()
        self._seen: dict[str, _Seen] = {}  # by run reference
        self._retry_at: dict[str, float] = {}
        self.retry_s = retry_s
        self.hold_wait_s = hold_wait_s

    def due_runs(self) -> list[RunHandle]:
        now = time.time()
        due = []
        runs = self.store.list_runs()
        for run in runs:
            path = run.ref
            siblings = max(
                (c.stamp()[0] for c in runs if c.ref.startswith(run.ref + ".")), default=0.0
            )  # `flow` child runs
            stamp = (*run.stamp(), siblings, _nested_stamp(run))
            seen = self._seen.get(path)
            if seen is None or seen.stamp != stamp:
                seen = self._seen[path] = _Seen(
                    stamp, ready_at(run) if stamp[0] else None, _live(run) if stamp[0] else False
                )
            ready = seen.ready_at
            if seen.live and owner_gone(run):  # its owner died: resume finalises it
                ready = 0.0 if nothing_uncertain(run) else None
            if ready is not None and ready <= now and self._retry_at.get(path, 0.0) <= now:
                due.append(run)
        return due

    def run_once(self) -> list[WorkerRow]:
        done: list[WorkerRow] = []
        for run in self.due_runs():
            if self.stop.is_set():
                break
            try:
                out = self._resume(run)
                row: WorkerRow = {"run_dir": run.ref, "state": out.state, "message": out.message}
            except (
                FlowError,
                StorageFault,
            ) as e:  # another worker owns it, it was refused, or the disk is full: report, go on
                row = {"run_dir": run.ref, "state": "SKIPPED", "message": str(e)}
            self._seen.pop(run.ref, None)
            if row["state"] in (
                "SKIPPED",
                RunState.INTERRUPTED,
            ):  # refused, unreachable, or stopped again: not every scan
                self._retry_at[run.ref] = time.time() + self.retry_s
            self.log(f"{row['run_dir']}\t{row['state']}\t{row['message'] or ''}")
            done.append(row)
        return done

    def _resume(self, run: RunHandle) -> RunOutcome:
        return resume_past_holders(
            run, self.hold_wait_s, self.stop, reporter=self.reporter, backend_factory=self.backend_factory
        )

    def serve(self, poll_s: float = 0.5) -> None:
        with stop_on_signals(self.stop):
            while not self.stop.is_set():
                self.run_once()
                self.stop.wait(poll_s)
