"""A run of the PostgreSQL store (spec §18): the store's run handle (store/base.py RunHandle) over its tables.

Documents are kept as the exact JSON text written (so a damaged one is refused as a damaged file is); the journal as
one row per record holding the line the file journal would hold, verified with `verify_chain` on every read; the
ledger in its own table keyed by run_id (outside the run's rows, so a restored backup of them cannot rewind it). Every invariant is the shared pure function every store calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any, Self, Unpack

from openadapt_flow.errors import RefusedError, RunDirError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.pausedoc import ApprovalDoc
from openadapt_flow.records.rundoc import StateFields
from openadapt_flow.records.states import RunState
from openadapt_flow.store import ledger
from openadapt_flow.store.atomic import dumps
from openadapt_flow.store.base import JournalWriter
from openadapt_flow.store.docrun import DocumentRun
from openadapt_flow.store.escalation import ApprovalChanged, check_replaces, signature_of
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.lease import LeaseInfo
from openadapt_flow.store.postgres.artifacts import PostgresArtifacts
from openadapt_flow.store.postgres.connector import PostgresConnector
from openadapt_flow.store.postgres.journal import PostgresJournal
from openadapt_flow.store.postgres.lease import PostgresLease, lease_row, try_owner_lock
from openadapt_flow.store.postgres.spec import PREFIX, is_postgres
from openadapt_flow.store.seal import sealed_state

NOW = "extract(epoch FROM clock_timestamp())"
# document -> (table, column, change-clock column or None); the tables keyed by run hold one row per run
DOCS: dict[str, tuple[str, str, str | None]] = {
    "manifest": ("flow_runs", "manifest", None),
    "state": ("flow_runs", "state_doc", "state_at"),
    "report": ("flow_runs", "report", None),
    "checkpoint": ("flow_checkpoints", "body", None),
    "pending": ("flow_escalations", "pending", "pending_at"),
    "approval": ("flow_escalations", "approval", "approval_at"),
    "incident": ("flow_incidents", "body", None),
}


def run_name(ref: str) -> str:
    name = ref.removeprefix(PREFIX)
    if not name or name.startswith("/") or ".." in name.split("/") or is_postgres(name):
        raise RunDirError(f"{ref!r}: not a run name in a PostgreSQL store")
    return name


class PostgresRun(PostgresArtifacts, DocumentRun):
    """One run of a PostgreSQL store; its reference is `pg:NAME`. `store` is the store's connector (the store itself
    is one), the only object of the store a run talks through."""

    def __init__(self, store: PostgresConnector, name: str) -> None:
        self.store = store
        self.name = name
        self._id: int | None = None

    @property
    def ref(self) -> str:
        return PREFIX + self.name

    def __repr__(self) -> str:
        return f"PostgresRun({self.ref!r})"

    def id(self, create: bool = False) -> int:
        """The run's row id; created on the first write (a child or sibling handle names a run not yet stored)."""
        if self._id is None:
            row = self.store.one("SELECT id FROM flow_runs WHERE name = %s", (self.name,))
            if row is None and create:
                row = self.store.one(
                    "INSERT INTO flow_runs (name) VALUES (%s) ON CONFLICT (name) DO UPDATE "
                    "SET name = EXCLUDED.name RETURNING id",
                    (self.name,),
                )
            if row is None:
                return -1  # no such run: every read finds nothing
            self._id = int(row[0])
        return self._id

    # JSON documents, kept as their text
    def doc_text(self, what: str) -> str | None:
        """One document's text exactly as stored (None: absent)."""
        table, col, _ = DOCS[what]
        key = "id" if table == "flow_runs" else "run"
        row = self.store.one(f"SELECT {col} FROM {table} WHERE {key} = %s", (self.id(),))
        return None if row is None else row[0]

    def _put(self, what: str, doc: Mapping[str, object]) -> None:
        self.put_text(what, dumps(doc), doc)

    def _remove(self, what: str) -> None:
        self.put_text(what, None)

    def put_text(self, what: str, text: str | None, doc: Mapping[str, object] | None = None) -> None:
        """Replace (None: remove) one document's text in one statement; the run's `state` and `run_id` columns follow
        the document (`doc`, else what the text parses to)."""
        if doc is None and text is not None:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            doc = parsed if isinstance(parsed, dict) else None
        table, col, at = DOCS[what]
        rid = self.id(create=True)
        stamp = f", {at} = {NOW}" if at and text is not None else (f", {at} = NULL" if at else "")
        if table == "flow_runs":
            extra = {"state": ", state = %(state)s", "manifest": ", run_id = %(run_id)s"}.get(what, "")
            self.store.run(
                f"UPDATE flow_runs SET {col} = %(text)s{stamp}{extra} WHERE id = %(id)s",
                {"text": text, "id": rid, "state": (doc or {}).get("state"), "run_id": (doc or {}).get("run_id")},
            )
        elif text is None and at is None:
            self.store.run(f"DELETE FROM {table} WHERE run = %s", (rid,))
        else:
            vals = f"%(text)s, {NOW}" if at else "%(text)s"
            self.store.run(
                f"INSERT INTO {table} (run, {col}{', ' + at if at else ''}) VALUES (%(id)s, {vals}) "
                f"ON CONFLICT (run) DO UPDATE SET {col} = EXCLUDED.{col}{stamp}",
                {"text": text, "id": rid},
            )

    def stamp(self) -> tuple[float, float, float]:
        row = self.store.one(
            "SELECT CASE WHEN r.state_doc IS NULL THEN 0 ELSE r.state_at END, "
            "CASE WHEN e.pending IS NULL THEN 0 ELSE e.pending_at END, "
            "CASE WHEN e.approval IS NULL THEN 0 ELSE e.approval_at END FROM flow_runs r LEFT JOIN flow_escalations e ON e.run = r.id WHERE r.id = %s",
            (self.id(),),
        )
        return (0.0, 0.0, 0.0) if row is None else (float(row[0] or 0), float(row[1] or 0), float(row[2] or 0))

    # manifest
    def starting(self) -> AbstractContextManager[None]:
        """A run's start in one transaction (store/base.py): cut before its commit, the row is as it was."""
        return self.store.tx()

    def run_id(self) -> str | None:
        row = self.store.one("SELECT run_id FROM flow_runs WHERE id = %s", (self.id(),))
        return None if row is None or row[0] is None else str(row[0])

    def discard(self) -> None:
        self.store.run("DELETE FROM flow_runs WHERE name = %s", (self.name,))
        self._id = None

    # journal
    def journal_bytes(self) -> bytes:
        return b"".join(
            bytes(r[0])
            for r in self.store.all("SELECT line FROM flow_journal WHERE run = %s ORDER BY seq", (self.id(),))
        )

    def has_journal(self) -> bool:
        return self.store.one("SELECT 1 FROM flow_journal WHERE run = %s LIMIT 1", (self.id(),)) is not None

    def _cut_journal(self, records: int, good_len: int) -> None:
        self.store.run(
            "DELETE FROM flow_journal WHERE run = %s AND seq > %s", (self.id(), records)
        )  # rows are whole lines

    def _writer(self, key: bytes, records: list[JournalEntry]) -> PostgresJournal:
        return PostgresJournal(self, self.store, key, records)

    # state
    def write_state(
        self, state: RunState, *, journal: JournalWriter | None = None, **fields: Unpack[StateFields]
    ) -> None:
        if journal is None:
            self._put("state", sealed_state(state, fields, None))
            return
        doc = sealed_state(state, fields, journal)
        if self.run_id() is not None:
            with self.store.tx():
                entry = self._ledger(lock=True)
                ledger.advance_seal(entry, journal.seq, doc["journal_hash"])
                self._save_ledger(entry)
                self._put("state", doc)
            return
        self._put("state", doc)

    # lease
    def lease(self, ttl_s: float = 30.0) -> PostgresLease:
        return PostgresLease(self, self.store, ttl_s)

    def lease_info(self) -> LeaseInfo | None:
        seen = lease_row(self.store.conn(), self.id())
        return None if seen is None else seen[0]

    def try_lock(self) -> Any:
        """The run's owner lock (a session advisory lock on a connection of its own), or None if a live session holds it."""
        conn = self.store.connect()
        if not try_owner_lock(conn, self.store.lock_ns, self.id(create=True)):
            conn.close()
            return None
        return conn.close  # closing the session frees its lock

    # escalation, approval, decisions
    def _swap_approval(self, doc: Mapping[str, object], replaces: str | None) -> None:
        """Compare and set in one transaction: the escalation row is locked (FOR UPDATE) while its approval is compared;
        with no row yet, the insert sets the approval only if no other writer's row has one."""
        text, where = dumps(doc), self.describe("approval")
        rid = self.id(create=True)
        with self.store.tx():
            row = self.store.one("SELECT approval FROM flow_escalations WHERE run = %s FOR UPDATE", (rid,))
            check_replaces(where, signature_of(row[0]) if row else None, replaces)
            changed = self.store.run(
                f"INSERT INTO flow_escalations (run, approval, approval_at) VALUES (%(id)s, %(text)s, {NOW}) ON CONFLICT (run) "
                f"DO UPDATE SET approval = EXCLUDED.approval, approval_at = EXCLUDED.approval_at "
                f"WHERE flow_escalations.approval IS NOT DISTINCT FROM %(old)s",
                {"id": rid, "text": text, "old": row[0] if row else None},
            )
            if not changed:  # another writer's insert landed between our read and our write
                raise ApprovalChanged(
                    f"{where}: another decision was recorded since this one read the approval; refusing"
                )

    def consume_approval(self, pause_id: str) -> None:
        """Move the approval to decisions in one transaction: a decision is used once."""
        crash_point("approval:consuming")
        with self.store.tx():
            row = self.store.one(
                "UPDATE flow_escalations e SET approval = NULL, approval_at = NULL FROM "
                "(SELECT approval FROM flow_escalations WHERE run = %s FOR UPDATE) old "
                "WHERE e.run = %s AND old.approval IS NOT NULL RETURNING old.approval",
                (self.id(), self.id()),
            )
            if row is None:
                raise RefusedError(f"{self.describe('approval')}: no approval to consume; refusing")
            self.store.run(
                "INSERT INTO flow_decisions (run, pause_id, body) VALUES (%s, %s, %s) ON CONFLICT (run, pause_id) "
                "DO UPDATE SET body = EXCLUDED.body, consumed_at = clock_timestamp()",
                (self.id(), pause_id, row[0]),
            )
        crash_point("approval:consumed")

    def read_decision(self, pause_id: str) -> ApprovalDoc | None:
        row = self.store.one("SELECT body FROM flow_decisions WHERE run = %s AND pause_id = %s", (self.id(), pause_id))
        doc: ApprovalDoc | None = None if row is None else json.loads(row[0])
        return doc

    def decision_texts(self) -> list[tuple[str, str]]:
        """Consumed decisions as (pause_id, text), oldest first."""
        rows = self.store.all(
            "SELECT pause_id, body FROM flow_decisions WHERE run = %s ORDER BY consumed_at", (self.id(),)
        )
        return [(r[0], r[1]) for r in rows]

    # children
    def _handle(self, name: str) -> Self:
        return type(self)(self.store, name)

    def children(self) -> list["PostgresRun"]:
        head = f"{self.name}/children/"
        rows = self.store.all(
            "SELECT name FROM flow_runs WHERE starts_with(name, %s) AND strpos(substr(name, %s), '/') = 0 "
            "ORDER BY name",
            (head, len(head) + 1),
        )
        return [PostgresRun(self.store, r[0]) for r in rows]

    # the run ledger: a row of flow_ledger keyed by run_id, outside the run's rows (as a runs root's ledger is outside
    # every run directory), naming the row that holds the run
    def _ledger(self, lock: bool = False) -> ledger.LedgerEntry:
        row = self.store.one(
            "SELECT entry FROM flow_ledger WHERE run_id = %s" + (" FOR UPDATE" if lock else ""), (self.run_id(),)
        )
        entry: ledger.LedgerEntry = row[0] if row and row[0] else {}  # a row's jsonb decodes to a new dict
        if (run_id := self.run_id()) is not None:
            entry.setdefault("run_id", run_id)
        entry.setdefault("path", self.ref)
        entry.setdefault("consumed", {})
        return entry

    def _save_ledger(self, entry: ledger.LedgerEntry) -> None:
        self.store.run(
            "INSERT INTO flow_ledger (run_id, holder, entry) VALUES (%s, %s, %s::jsonb) ON CONFLICT (run_id) "
            "DO UPDATE SET entry = EXCLUDED.entry",
            (self.run_id(), self.name, json.dumps(entry)),
        )

    def ledger_claim(self, records: list[JournalEntry]) -> ledger.LedgerEntry:
        self.manifest()
        with self.store.tx():
            self.store.run("SELECT pg_advisory_xact_lock(hashtext('flow_ledger:' || %s))", (self.run_id(),))
            entry = self._ledger(lock=True)
            self._hold(entry)
            ledger.check_entry(entry, self.ref, records)
            self._save_ledger(entry)
        return entry.copy()

    def _hold(self, entry: ledger.LedgerEntry) -> None:
        """This row must be the one the ledger names as holding the run. Another row with the same run_id while the
        named one still holds it is a copy (its rows copied under another name), refused (spec §8, as the runs root's
        ledger refuses a copied run directory); a holder gone (the run's rows moved or restored under another name)
        lets this row take the run over, the ledger's seal and consumed decisions still binding it."""
        run_id = self.run_id()
        row = self.store.one("SELECT holder FROM flow_ledger WHERE run_id = %s", (run_id,))
        holder = row[0] if row else None
        if holder is not None and holder != self.name:
            held = self.store.one("SELECT 1 FROM flow_runs WHERE name = %s AND run_id = %s", (holder, run_id))
            if held is not None:
                raise RefusedError(
                    f"{self.ref}: run {run_id} is held by {PREFIX}{holder} (this is a copy); a run "
                    f"continues in one place only; refusing"
                )
            entry["relocated_from"] = f"{PREFIX}{holder}"
        entry["path"] = self.ref
        self.store.run(
            "INSERT INTO flow_ledger (run_id, holder, entry) VALUES (%s, %s, '{}'::jsonb) ON CONFLICT (run_id) "
            "DO UPDATE SET holder = EXCLUDED.holder",
            (run_id, self.name),
        )

    def ledger_seal(self, seq: int, hash_: str | None) -> None:
        self.manifest()
        with self.store.tx():
            entry = self._ledger(lock=True)
            ledger.advance_seal(entry, seq, hash_)
            self._save_ledger(entry)

    def ledger_consume(self, pause_id: str, decision: str | None, seq: int, hash_: str) -> None:
        self.manifest()
        with self.store.tx():
            entry = self._ledger(lock=True)
            ledger.mark_consumed(entry, self.ref, self.ref, pause_id, decision, seq, hash_)
            self._save_ledger(entry)

    def ledger_consumed(self, pause_id: str) -> ledger.ConsumedDecision | None:
        self.manifest()
        return self._ledger().get("consumed", {}).get(pause_id)
