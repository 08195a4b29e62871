"""A completed item's report, written on a thread while the next item runs.

A report is a view of a run's records (`flow report RUN` renders it again at any time); once a run has completed
nothing of it changes, so in a batch its rendering and writing need not hold up the next item. A run that stopped any
other way (halted, paused, interrupted) is reported before the batch goes on, as outside a batch: an operator may be
about to act on it. Every report is written before `flow batch` returns; one that could not be written is said
(`BatchEvents.report_failed`), as a run's own stop says it.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from openadapt_flow.records.states import RunState
from openadapt_flow.runtime.start.launch import Reporter
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.base import RunHandle


class ReportsBehind:
    def __init__(self, report: Reporter) -> None:
        self._report = report
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[tuple[RunHandle, Future[object]]] = []

    def __call__(self, run: RunHandle) -> object:
        """Report `run`: on the thread when it completed, else now."""
        if run.state().get("state") != RunState.COMPLETED:
            return self._report(run)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="reports")
        self._pending.append((run, self._pool.submit(self._report, run)))
        return None

    def close(self) -> list[tuple[RunHandle, str]]:
        """Wait for every report; the runs whose report was not written, and why."""
        failed = []
        for run, done in self._pending:
            try:
                done.result()
            except StorageFault as f:  # as a run's own stop says it: the report only, never the outcome
                failed.append((run, f.detail))
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown()
        return failed
