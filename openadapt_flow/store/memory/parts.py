"""The memory store's records, journal writer and lease: the same invariants as the filesystem's, held in process memory."""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import dataclass, field

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.stepdoc import LedgerEntry
from openadapt_flow.store.journal import JournalWriterBase
from openadapt_flow.store.lease import LeaseInfo, LeaseLost, holder_here


@dataclass
class MemoryRecords:
    """Everything one run holds: JSON documents as their serialised text (so a read never aliases a write, and a
    test can damage one as it would a file), the journal's bytes, artifacts, the owner lock and the lease."""

    docs: dict[str, str] = field(default_factory=dict)
    changed: dict[str, float] = field(default_factory=dict)  # document -> the store's tick when it last changed
    decisions: dict[str, str] = field(default_factory=dict)  # pause_id -> consumed approval, in consumption order
    journal: bytearray = field(default_factory=bytearray)
    artifacts: dict[str, bytes] = field(default_factory=dict)  # insertion order = oldest first
    lock: threading.Lock = field(default_factory=threading.Lock)
    lease: LeaseInfo | None = None

    def survivor(self) -> "MemoryRecords":
        """What a crash leaves of this run: a copy of every record as it is, the owner lock free (as the kernel frees
        a dead process's flock); the lease document still names the dead owner."""
        return MemoryRecords(
            dict(self.docs),
            dict(self.changed),
            dict(self.decisions),
            bytearray(self.journal),
            dict(self.artifacts),
            threading.Lock(),
            self.lease,
        )


@dataclass
class MemoryContents:
    """Every run and the run ledger of one memory store. A run handle keeps the contents it was opened on: after a
    crash (`MemoryStore.restore`) the dead process's handles write only into contents nobody reads again."""

    runs: dict[str, MemoryRecords] = field(default_factory=dict)
    ledger: dict[str, LedgerEntry] = field(default_factory=dict)

    def survivor(self) -> "MemoryContents":
        """A copy of everything as it is now, every owner gone (see MemoryRecords.survivor)."""
        return MemoryContents({n: r.survivor() for n, r in self.runs.items()}, copy.deepcopy(self.ledger))

    def records_of(self, name: str) -> MemoryRecords:
        return self.runs.setdefault(name, MemoryRecords())

    def run_id_of(self, name: str) -> str | None:
        recs = self.runs.get(name)
        text = recs.docs.get("manifest") if recs is not None else None
        try:
            doc = json.loads(text) if text is not None else None
        except ValueError:
            doc = []
        if doc is not None and not isinstance(doc, dict):
            raise RefusedError(
                f"{name}: its manifest is unreadable or not a JSON object; refusing a damaged run record"
            )
        return str(doc["run_id"]) if doc and "run_id" in doc else None

    def ledger_entry(self, run_id: str, ref: str, prefix: str) -> LedgerEntry:
        """The run's entry; a second run claiming the same id while the first still holds it is refused."""
        entry = self.ledger.setdefault(run_id, {"run_id": run_id})
        known = entry.get("path")
        if known and known != ref and self.run_id_of(known.removeprefix(prefix)) == run_id:
            raise RefusedError(f"{ref}: run {run_id} is held by {known} (this is a copy); refusing")
        entry["path"] = ref
        entry.setdefault("consumed", {})
        return entry


class MemoryJournal(JournalWriterBase):
    """A run's journal as bytes in memory: the same lines the filesystem journal writes."""

    def __init__(self, recs: MemoryRecords, key: bytes, records: list[JournalEntry] | None = None) -> None:
        super().__init__(key, records)
        self._recs = recs

    def _persist(self, rec: JournalEntry, line: bytes, durable: bool) -> None:
        self._recs.journal += line  # in memory every append is as durable as the process


class MemoryLease:
    """The run's owner lock (a process-wide lock per run) plus a fencing generation."""

    def __init__(self, recs: MemoryRecords, ref: str, ttl_s: float = 30.0) -> None:
        self._recs = recs
        self._ref = ref
        self.ttl_s = ttl_s
        self.generation = 0
        self._held = False

    def acquire(self, wait_s: float = 0.0) -> "MemoryLease":
        got = self._recs.lock.acquire(timeout=wait_s) if wait_s > 0 else self._recs.lock.acquire(blocking=False)
        if not got:
            info = self._recs.lease
            who = f" (pid {info.pid} on {info.host})" if info else ""
            raise RefusedError(f"{self._ref}: run is owned by a live process{who}; refusing")
        self._held = True
        prev = self._recs.lease
        self.generation = (prev.generation if prev else 0) + 1
        self._write()
        return self

    def _write(self) -> None:
        self._recs.lease = holder_here(self.generation)

    def start_heartbeat(self) -> None:
        """In one process the owner cannot go stale without the process (and the store) going too."""

    def still_owner(self) -> bool:
        info = self._recs.lease
        return info is not None and info.generation == self.generation

    def fence(self) -> None:
        if not self.still_owner():
            raise LeaseLost(f"{self._ref}: lease generation {self.generation} was replaced; this process must not act")

    def guard(self) -> None:
        self.fence()

    def release(self) -> None:
        if self._held:
            self._held = False
            self._recs.lock.release()
