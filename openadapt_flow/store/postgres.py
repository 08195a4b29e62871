"""The PostgreSQL store (spec §18 `postgresql://…`): runs in tables, for production and many machines.

A store is opened by its connection spec; its schema must be the one this code ships (`flow store migrate`). Each
thread talks over its own autocommit connection (the frame writer writes frames while the run thread journals); a
lease holds one more, whose session advisory lock marks its holder alive. A connection lost under a run is a storage
fault (the run stops at a safe boundary as INTERRUPTED, exit 5), as a failing disk is for the filesystem store.
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
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg

from openadapt_flow.errors import CutStartup, RunDirError
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.postgres_parts import PostgresLease
from openadapt_flow.store.postgres_operators import PostgresOperatorBook
from openadapt_flow.store.postgres_run import PostgresRun, run_name
from openadapt_flow.store.postgres_schema import check_schema, connect
from openadapt_flow.store.postgres_spec import PREFIX, redact

SCRATCH = "flow-pg-store-"


def _sweep_dead_scratch() -> None:
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH}*"):
        pid = path.name[len(SCRATCH):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(path, ignore_errors=True)


_HOLDS = "(manifest IS NOT NULL OR EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = flow_runs.id))"


class PostgresStore:
    """Runs in a PostgreSQL database; a run reference is `pg:NAME` (or NAME)."""

    def __init__(self, spec: str) -> None:
        self._spec = spec
        self.where = redact(spec)
        self._local = threading.local()
        self._leases: dict[int, PostgresLease] = {}
        self._scratch: Path | None = None
        check_schema(self.conn(), self.where)
        self.lock_ns = int(self.one("SELECT 'flow_runs'::regclass::oid::bigint")[0])  # owner locks' namespace

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    # connections
    def connect(self) -> psycopg.Connection:
        """A new autocommit connection of its own (a lease's, an owner lock's)."""
        return connect(self._spec)

    def conn(self) -> psycopg.Connection:
        """This thread's connection (reopened if the last one broke)."""
        c: psycopg.Connection | None = getattr(self._local, "conn", None)
        if c is None or c.closed or c.broken:
            c = self._local.conn = self.connect()
        return c

    def _fault(self, e: psycopg.OperationalError) -> StorageFault:
        return StorageFault(self.where, OSError(errno.EIO, str(e).strip().splitlines()[0] if str(e).strip() else "connection lost"))

    def one(self, sql: str, params: Any = ()) -> Any:
        """The first row of a statement (None if it returned none)."""
        try:
            cur = self.conn().execute(sql.encode(), params)
            return cur.fetchone() if cur.description else None
        except psycopg.OperationalError as e:
            raise self._fault(e) from None

    def all(self, sql: str, params: Any = ()) -> list[Any]:
        try:
            return self.conn().execute(sql.encode(), params).fetchall()
        except psycopg.OperationalError as e:
            raise self._fault(e) from None

    def run(self, sql: str, params: Any = ()) -> int:
        """Execute a statement; the rows it changed."""
        try:
            return self.conn().execute(sql.encode(), params).rowcount
        except psycopg.OperationalError as e:
            raise self._fault(e) from None

    @contextmanager
    def tx(self) -> Iterator[None]:
        """One transaction on this thread's connection: every statement of the block commits together or not at all."""
        try:
            with self.conn().transaction():
                yield
        except psycopg.OperationalError as e:
            raise self._fault(e) from None

    # leases held by this process, for the journal's fencing
    def held_lease(self, run: PostgresRun) -> PostgresLease | None:
        return self._leases.get(run.id())

    def register_lease(self, run: PostgresRun, lease: PostgresLease) -> None:
        self._leases[run.id()] = lease

    def forget_lease(self, run: PostgresRun, lease: PostgresLease) -> None:
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

    # runs
    def _holds_run(self, name: str) -> bool:
        return self.one(f"SELECT 1 FROM flow_runs WHERE name = %s AND {_HOLDS}", (name,)) is not None

    def check_new(self, ref: str) -> None:
        name = run_name(ref)
        if self._holds_run(name):
            raise RunDirError(f"{PREFIX}{name}: already holds a run; choose another --run-dir")

    def create_run(self, ref: str | None = None, *, now: datetime | None = None) -> PostgresRun:
        if ref is not None:
            self.check_new(ref)
            run = PostgresRun(self, run_name(ref))
            run.id(create=True)
            return run
        stamp = (now or datetime.now()).strftime("replay-%Y%m%d-%H%M%S")
        for n in range(1, 10**6):
            name = stamp if n == 1 else f"{stamp}-{n}"
            if self.one("INSERT INTO flow_runs (name) VALUES (%s) ON CONFLICT (name) DO NOTHING RETURNING id", (name,)):
                return PostgresRun(self, name)
        raise RunDirError(f"{self.where}: could not find a free run name for {stamp}")

    def open_run(self, ref: str) -> PostgresRun:
        name = run_name(ref)
        row = self.one("SELECT manifest IS NOT NULL, EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = flow_runs.id) "
                       "FROM flow_runs WHERE name = %s", (name,))
        if row is None or not (row[0] or row[1]):
            raise RunDirError(f"{PREFIX}{name}: run not found")
        if not row[0]:
            raise CutStartup(f"{PREFIX}{name}: not a run (its start-up was cut before the manifest; no input was sent — replay again)")
        return PostgresRun(self, name)

    def find_run(self, run_id: str) -> PostgresRun | None:
        row = self.one("SELECT name FROM flow_runs WHERE run_id = %s AND manifest IS NOT NULL AND strpos(name, '/') = 0 "
                       "ORDER BY id LIMIT 1", (run_id,))
        return None if row is None else PostgresRun(self, row[0])

    def list_runs(self, state: str | None = None) -> list[PostgresRun]:
        """Runs of the store (children excluded), by name; with `state`, only those in it (an indexed column)."""
        rows = self.all("SELECT name FROM flow_runs WHERE manifest IS NOT NULL AND strpos(name, '/') = 0 "
                        "AND (%s::text IS NULL OR state = %s) ORDER BY name", (state, state))
        return [PostgresRun(self, r[0]) for r in rows]

    def unstarted(self) -> list[PostgresRun]:
        rows = self.all("SELECT name FROM flow_runs WHERE manifest IS NULL AND strpos(name, '/') = 0 AND "
                        "EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = flow_runs.id) ORDER BY name")
        return [PostgresRun(self, r[0]) for r in rows]

    def operators(self) -> PostgresOperatorBook:
        return PostgresOperatorBook(self)
