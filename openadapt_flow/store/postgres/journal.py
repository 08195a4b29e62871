"""The PostgreSQL store's journal writer (spec §5, §10): the file journal's bytes, one row per record; fsync types
commit synchronously, and `action_dispatched` only while the writer's lease generation holds (the fence and the
record in one statement)."""

from __future__ import annotations

import psycopg

from openadapt_flow.store.journal import JournalEntry, JournalWriterBase
from openadapt_flow.store.lease import LeaseLost
from openadapt_flow.store.postgres.connector import PostgresConnector, RunRow
from openadapt_flow.store.states import RecordType, is_a

FENCED_TYPES = (RecordType.ACTION_DISPATCHED,)  # committed only while the writer's lease generation holds


class PostgresJournal(JournalWriterBase):
    """Appends chained records as rows of flow_journal."""

    def __init__(self, run: RunRow, db: PostgresConnector, key: bytes, records: list[JournalEntry] | None = None) -> None:
        super().__init__(key, records)
        self._run = run
        self._db = db
        self._unsynced = False

    def _persist(self, rec: JournalEntry, line: bytes, durable: bool) -> None:
        type_, fence = rec["type"], is_a(rec, *FENCED_TYPES)
        lease = self._db.held_lease(self._run) if fence else None
        gen, holder = (lease.generation, lease.holder) if lease is not None else (0, "")
        try:
            ok = self._db.one("SELECT flow_append(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                              (self._run.id(create=True), rec["seq"], type_, rec["step"], line, durable, fence, gen, holder))[0]
        except psycopg.errors.UniqueViolation:
            raise LeaseLost(f"{self._run.ref}: journal seq {rec['seq']} was already written by another writer; "
                            f"this process must not act") from None
        if not ok:
            raise LeaseLost(f"{self._run.ref}: lease generation {gen} is no longer held (replaced or expired); "
                            f"{type_} not recorded, this process must not act")
        self._unsynced = not durable

    def sync(self) -> None:
        """Make every record appended so far durable: a synchronous commit of a transaction with an id flushes the
        WAL up to it, and with it every asynchronously committed record before it."""
        if self._unsynced:
            self._db.one("SELECT pg_current_xact_id()")
            self._unsynced = False

    def close(self) -> None:
        self.sync()
