"""The next item's connection to the desktop, opened while the current item's run writes its report.

Connecting (an RFB handshake and a first whole frame) is a fixed cost of every run. A batch knows a next item will
run, so once the current run has stopped (its report is being written: `before_report`) it connects for that item on a
thread (VNC only: see `before_report`), and the next run takes that connection instead of opening its own. Each run still has a connection of its
own, opened after the run before it stopped: no state is carried from one run to the next. A connection that failed
to open is opened again by the run itself, whose error is then its own (as without this); one not taken (a reset ran
in between, the batch stopped) is closed.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import Future, ThreadPoolExecutor

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.runtime.start.launch import BackendFactory


class NextDesk:
    """`factory` for each item's run; `before_report(spec)` when a run has stopped and another item will follow;
    `drop()` when the next item must connect afresh; `close()` at the end of the batch."""

    def __init__(self, opener: BackendFactory = open_backend) -> None:
        self._opener = opener
        self._pool: ThreadPoolExecutor | None = None
        self._next: tuple[BackendSpec, Future[Backend]] | None = None

    def before_report(self, spec: BackendSpec | None) -> None:
        """Start connecting for the next item: on VNC only, where a second client shares the desktop with the first
        (an RDP logon can take the session over; a fixture may set up its system of record as it opens)."""
        if spec is None or spec.kind != "vnc" or self._next is not None:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="next-desk")
        self._next = (spec, self._pool.submit(self._opener, spec))

    def factory(self, spec: BackendSpec) -> Backend:
        """The connection opened for this run ahead of time, else a new one."""
        ready, self._next = self._next, None
        if ready is not None:
            if ready[0] == spec:
                with contextlib.suppress(Exception):  # opened again below: that error is the run's own
                    return ready[1].result()
            else:
                _close(ready[1])
        return self._opener(spec)

    def drop(self) -> None:
        """Close a connection opened ahead of time: the next run opens its own."""
        ready, self._next = self._next, None
        if ready is not None:
            _close(ready[1])

    def close(self) -> None:
        self.drop()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


def _close(opening: Future[Backend]) -> None:
    with contextlib.suppress(Exception):
        opening.result().close()
