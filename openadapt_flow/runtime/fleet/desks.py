"""One run per desktop at a time: a worker holds a desktop by a PostgreSQL session advisory lock on its name,
so two workers (on any machines) never drive the same screen; a dead worker's session ends and frees it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from openadapt_flow.errors import FlowError
from openadapt_flow.runtime.fleet.targets import Target, TargetsFile


class NoDesktopFree(FlowError):
    """Every desktop that serves the run is busy: the job is retried shortly."""


class Desks:
    def __init__(self, spec: str, targets: TargetsFile) -> None:
        self.spec = spec
        self.targets = targets
        self._mine: set[str] = set()
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, label: str | None) -> Iterator[Target]:
        """A free desktop serving `label`, held until the block ends. NoDesktopFree if none is."""
        for target in self.targets.targets:
            if not target.serves(label):
                continue
            with self._guard:
                if target.name in self._mine:
                    continue
                self._mine.add(target.name)
            conn = psycopg.connect(self.spec, autocommit=True)
            try:
                row = conn.execute("SELECT pg_try_advisory_lock(hashtext('flow-desk'), hashtext(%s))", (target.name,)).fetchone()
                if row is not None and row[0]:
                    yield target
                    return
            finally:
                conn.close()  # ends the session: the advisory lock goes with it
                with self._guard:
                    self._mine.discard(target.name)
        if not any(t.serves(label) for t in self.targets.targets):
            raise FlowError(f"no target of this worker serves {label!r}")
        raise NoDesktopFree(f"every desktop serving {label or 'any run'} is busy")
