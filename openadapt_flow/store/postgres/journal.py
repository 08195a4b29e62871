"""The PostgreSQL store's journal writer (spec §5, §10): the file journal's bytes, one row per record; fsync types
commit synchronously, and `action_dispatched` only while the writer's lease generation holds (the fence and the
record in one statement).

Records outside the fsync types commit asynchronously (no WAL flush on the hot path): a server that crashes (or is
restarted `-m immediate`) may lose the last of them — always a suffix, since a synchronous commit flushes every
record before it. So after any connection loss the writer re-reads the journal's durable tail and chains its next
record to that, never to a record the server lost (which would leave a hole: "journal chain broken at seq N"). A
tail that is not one of this writer's own records means another writer appended: this one must not act."""

from __future__ import annotations

import json

import psycopg

from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.states import RecordType, is_a
from openadapt_flow.store.journal import GENESIS, JournalWriterBase
from openadapt_flow.store.lease import LeaseLost
from openadapt_flow.store.postgres.connector import PostgresConnector, RunRow

FENCED_TYPES = (RecordType.ACTION_DISPATCHED,)  # committed only while the writer's lease generation holds
_TAIL = "SELECT seq, line FROM flow_journal WHERE run = %s ORDER BY seq DESC LIMIT 1"


class PostgresJournal(JournalWriterBase):
    """Appends chained records as rows of flow_journal."""

    def __init__(
        self, run: RunRow, db: PostgresConnector, key: bytes, records: list[JournalEntry] | None = None
    ) -> None:
        super().__init__(key, records)
        self._run = run
        self._db = db
        self._unsynced = False
        self._losses = (
            db.losses
        )  # the connector's count of lost connections when the tail was last known durable-or-ours
        # this writer's records since its last durable one, that one included (seq -> hash): what a tail re-read after
        # a connection loss may find (a record whose commit was cut off may have landed, or not). Records it was opened
        # on count as not yet durable: one read from the server may have been committed asynchronously by the last
        # writer, and visible before it was flushed.
        self._since_durable: dict[int, str] = {r["seq"]: r["hash"] for r in records or []} or {0: GENESIS}
        self.lost: list[int] = []  # seqs of records this writer appended that the server did not keep

    def _resync(self) -> None:
        if self._losses == self._db.losses:
            return
        losses = self._db.losses
        row = self._db.one(_TAIL, (self._run.id(create=True),))
        seq, tail = (int(row[0]), json.loads(bytes(row[1]))["hash"]) if row else (0, GENESIS)
        if self._since_durable.get(seq) != tail:
            raise LeaseLost(
                f"{self._run.ref}: journal seq {seq} is not a record this process appended (another "
                f"writer took the run over while the store was unreachable); this process must not act"
            )
        if seq < self.seq:
            self.lost.extend(range(seq + 1, self.seq + 1))
            self.last_of = {t: r for t, r in self.last_of.items() if r["seq"] <= seq}
        self.seq, self.last_hash = seq, tail
        self._since_durable = {s: h for s, h in self._since_durable.items() if s <= seq}
        self._losses = losses

    def _persist(self, rec: JournalEntry, line: bytes, durable: bool) -> None:
        type_, fence = rec["type"], is_a(rec, *FENCED_TYPES)
        lease = self._db.held_lease(self._run) if fence else None
        gen, holder = (lease.generation, lease.holder) if lease is not None else (0, "")
        self._since_durable[rec["seq"]] = rec["hash"]  # it may land even if its commit's answer is lost
        try:
            ok = self._db.one(
                "SELECT flow_append(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (self._run.id(create=True), rec["seq"], type_, rec["step"], line, durable, fence, gen, holder),
            )[0]
        except psycopg.errors.UniqueViolation:
            raise LeaseLost(
                f"{self._run.ref}: journal seq {rec['seq']} was already written by another writer; "
                f"this process must not act"
            ) from None
        if not ok:
            del self._since_durable[rec["seq"]]
            raise LeaseLost(
                f"{self._run.ref}: lease generation {gen} is no longer held (replaced or expired); "
                f"{type_} not recorded, this process must not act"
            )
        if durable:
            self._since_durable = {rec["seq"]: rec["hash"]}
        self._unsynced = not durable

    def sync(self) -> None:
        """Make every record appended so far durable: a synchronous commit of a transaction with an id flushes the
        WAL up to it, and with it every asynchronously committed record before it."""
        if self._unsynced:
            self._db.one("SELECT pg_current_xact_id()")
            self._unsynced = False
            self._since_durable = {self.seq: self.last_hash}

    def close(self) -> None:
        self.sync()
