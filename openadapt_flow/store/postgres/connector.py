"""The connector of a PostgreSQL store (spec §18): the one object every part of the store is handed (runs, their
journal and lease, artifacts, operators), as procrastinate's App takes its connector. No part reaches back to the
store (store.py) that lists runs.

Each thread talks over its own autocommit connection (the frame writer writes frames while the run thread journals);
a lease holds one more, whose session advisory lock marks its holder alive. A connection lost under a run is a
storage fault (the run stops at a safe boundary as INTERRUPTED, exit 5), as a failing disk is for the filesystem
store. A connection replaced after it broke bumps `losses`: a server that restarted may have lost its last
asynchronously committed rows, and the journal re-reads its durable tail before it chains to it again.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import psycopg

from openadapt_flow.errors import Unavailable
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.postgres.schema import check_schema, connect
from openadapt_flow.store.postgres.spec import redact

SCRATCH = "flow-pg-store-"


def _sweep_dead_scratch() -> None:
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH}*"):
        pid = path.name[len(SCRATCH) :].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(path, ignore_errors=True)


class RunRow(Protocol):
    """What a part of the store knows of a run: how users name it and its row id."""

    @property
    def ref(self) -> str: ...

    def id(self, create: bool = False) -> int: ...


class HeldLease(Protocol):
    """What the journal's fencing reads of a lease this process holds."""

    generation: int
    holder: str


class PostgresConnector:
    """One PostgreSQL store's connections: its spec, a connection per thread, the statements and transactions every
    part of the store runs, the leases this process holds (for the journal's fencing) and a scratch directory."""

    def __init__(self, spec: str) -> None:
        self._spec = spec
        self.where = redact(spec)
        self._local = threading.local()
        self._leases: dict[int, HeldLease] = {}
        self._scratch: Path | None = None
        self.losses = 0  # connections found broken (or closed under us) and replaced, in every thread
        check_schema(self.conn(), self.where)
        self.lock_ns = int(self.one("SELECT 'flow_runs'::regclass::oid::bigint")[0])  # owner locks' namespace

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where!r})"

    # connections
    def connect(self) -> psycopg.Connection:
        """A new autocommit connection of its own (a lease's, an owner lock's)."""
        return connect(self._spec)

    def conn(self) -> psycopg.Connection:
        """This thread's connection (reopened if the last one broke, but never inside a transaction: a statement of
        `tx()` that ran on a new connection would commit on its own, outside the transaction that lost its session)."""
        c: psycopg.Connection | None = getattr(self._local, "conn", None)
        if getattr(self._local, "in_tx", 0) and (c is None or c.closed or c.broken):
            raise psycopg.OperationalError("the connection was lost inside a transaction")
        if c is None or c.closed or c.broken:
            if c is not None:
                self.losses += 1
            c = self._local.conn = self.connect()
        return c

    def _fault(self, e: psycopg.OperationalError | Unavailable) -> StorageFault:
        self.losses += 1  # the statement may or may not have committed; what else the server kept is unknown too
        return StorageFault(
            self.where, OSError(errno.EIO, str(e).strip().splitlines()[0] if str(e).strip() else "connection lost")
        )

    def one(self, sql: str, params: Any = ()) -> Any:
        """The first row of a statement (None if it returned none)."""
        try:
            cur = self.conn().execute(sql.encode(), params)
            return cur.fetchone() if cur.description else None
        except (psycopg.OperationalError, Unavailable) as e:  # lost, or not reconnected yet (a restart)
            raise self._fault(e) from None

    def all(self, sql: str, params: Any = ()) -> list[Any]:
        try:
            return self.conn().execute(sql.encode(), params).fetchall()
        except (psycopg.OperationalError, Unavailable) as e:  # lost, or not reconnected yet (a restart)
            raise self._fault(e) from None

    def run(self, sql: str, params: Any = ()) -> int:
        """Execute a statement; the rows it changed."""
        try:
            return self.conn().execute(sql.encode(), params).rowcount
        except (psycopg.OperationalError, Unavailable) as e:  # lost, or not reconnected yet (a restart)
            raise self._fault(e) from None

    @contextmanager
    def tx(self) -> Iterator[None]:
        """One transaction on this thread's connection: every statement of the block commits together or not at all."""
        try:
            with self.conn().transaction():
                self._local.in_tx = getattr(self._local, "in_tx", 0) + 1
                try:
                    yield
                finally:
                    self._local.in_tx -= 1
        except (psycopg.OperationalError, Unavailable) as e:  # lost, or not reconnected yet (a restart)
            raise self._fault(e) from None

    # leases held by this process, for the journal's fencing
    def held_lease(self, run: RunRow) -> HeldLease | None:
        return self._leases.get(run.id())

    def register_lease(self, run: RunRow, lease: HeldLease) -> None:
        self._leases[run.id()] = lease

    def forget_lease(self, run: RunRow, lease: HeldLease) -> None:
        if self._leases.get(run.id()) is lease:
            del self._leases[run.id()]

    def scratch(self) -> Path:
        """This process's private directory for materialised artifacts, removed with the store; a killed process's
        (SIGKILL skips every finaliser) is removed by the next one that makes its own."""
        if self._scratch is None:
            _sweep_dead_scratch()
            self._scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH}{os.getpid()}-"))
            weakref.finalize(self, shutil.rmtree, self._scratch, True)
        return self._scratch
