"""The memory store (spec §18 `memory:`): runs held in process memory, for development and tests.

Records do not survive the process. The invariants do hold: the journal is the same hash-chained bytes (verified on
every read, a torn tail cut), state is sealed with the journal's end, a checkpoint is judged against the journal,
the lease fences a replaced owner, and a decision is consumed once (the store's own ledger). Artifacts are bytes in
memory; code that needs a real directory (the bundle loader) gets one materialised from them into a private
temporary directory that lives as long as the store.
"""

from __future__ import annotations

import json
import posixpath
import shutil
import tempfile
import threading
import weakref
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Self, Unpack

from openadapt_flow.errors import CutStartup, RefusedError, RunDirError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.pausedoc import ApprovalDoc
from openadapt_flow.records.rundoc import StateFields
from openadapt_flow.records.states import RunState
from openadapt_flow.store import ledger
from openadapt_flow.store.atomic import dumps
from openadapt_flow.store.base import JournalWriter, RunHandle, check_artifact_name
from openadapt_flow.store.docrun import DocumentRun
from openadapt_flow.store.escalation import check_replaces, signature_of
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.layout import free_run_name
from openadapt_flow.store.lease import LeaseInfo
from openadapt_flow.store.memory.parts import MemoryContents, MemoryJournal, MemoryLease, MemoryRecords
from openadapt_flow.store.operators import MemoryOperatorBook
from openadapt_flow.store.seal import sealed_state

PREFIX = "memory:"
_SWAP = (
    threading.Lock()
)  # held while an approval is compared and set (memory runs are shared by this process's threads)


class MemoryRun(DocumentRun):
    """One run of a MemoryStore (the store's run handle, store/base.py RunHandle), on the store's contents as they
    were when it was opened (a handle of a process that crashed writes only into what the crash discarded)."""

    def __init__(self, store: "MemoryStore", name: str, contents: MemoryContents | None = None) -> None:
        self.store = store
        self.name = name
        self.contents = contents or store.contents  # a child or sibling: the contents its parent's handle was opened on

    @property
    def recs(self) -> MemoryRecords:
        return self.contents.records_of(self.name)

    def _entry(self, run_id: str) -> ledger.LedgerEntry:
        return self.contents.ledger_entry(run_id, self.ref, PREFIX)

    @property
    def ref(self) -> str:
        return PREFIX + self.name

    def __repr__(self) -> str:
        return f"MemoryRun({self.ref!r})"

    # JSON documents, kept as their text
    def _put(self, what: str, doc: Mapping[str, object]) -> None:
        self.recs.docs[what] = dumps(doc)
        self.recs.changed[what] = self.store.tick()

    def _drop(self, what: str) -> str | None:
        self.recs.changed[what] = self.store.tick()
        return self.recs.docs.pop(what, None)

    def _remove(self, what: str) -> None:
        self._drop(what)

    def doc_text(self, what: str) -> str | None:
        return self.recs.docs.get(what)

    def _swap_approval(self, doc: Mapping[str, object], replaces: str | None) -> None:
        with _SWAP:
            check_replaces(self.describe("approval"), signature_of(self.doc_text("approval")), replaces)
            self._put("approval", doc)

    def stamp(self) -> tuple[float, float, float]:
        docs, changed = self.recs.docs, self.recs.changed
        state, pending, approval = (changed.get(k, 0.0) if k in docs else 0.0 for k in ("state", "pending", "approval"))
        return state, pending, approval

    # manifest
    def run_id(self) -> str | None:
        doc = self._get("manifest") if self.has_manifest() else None
        return str(doc["run_id"]) if doc and "run_id" in doc else None

    def _link(self, child: RunHandle) -> str:
        return posixpath.relpath(child.ref.removeprefix(PREFIX), self.name)  # names, without the store's prefix

    def discard(self) -> None:
        self.contents.runs.pop(self.name, None)

    # journal
    def has_journal(self) -> bool:
        return self.name in self.contents.runs and bool(self.recs.journal)

    def journal_bytes(self) -> bytes:
        return bytes(self.recs.journal) if self.name in self.contents.runs else b""

    def _cut_journal(self, records: int, good_len: int) -> None:
        del self.recs.journal[good_len:]

    def _writer(self, key: bytes, records: list[JournalEntry]) -> MemoryJournal:
        return MemoryJournal(self.recs, key, records)

    # state
    def write_state(
        self, state: RunState, *, journal: JournalWriter | None = None, **fields: Unpack[StateFields]
    ) -> None:
        if journal is None:
            self._put("state", sealed_state(state, fields, None))
            return
        doc = sealed_state(state, fields, journal)
        run_id = self.run_id()
        if run_id is not None:
            ledger.advance_seal(self._entry(run_id), journal.seq, doc["journal_hash"])
        self._put("state", doc)

    # lease
    def lease(self, ttl_s: float = 30.0) -> MemoryLease:
        return MemoryLease(self.recs, self.ref, ttl_s)

    def lease_info(self) -> LeaseInfo | None:
        return self.recs.lease

    def try_lock(self) -> Any:
        lock = self.recs.lock
        return lock.release if lock.acquire(blocking=False) else None

    # escalation, approval, decisions
    def consume_approval(self, pause_id: str) -> None:
        crash_point("approval:consuming")
        text = self._drop("approval")
        if text is None:
            raise RefusedError(f"{self.describe('approval')}: no approval to consume; refusing")
        self.recs.decisions.pop(pause_id, None)
        self.recs.decisions[pause_id] = text
        crash_point("approval:consumed")

    def read_decision(self, pause_id: str) -> ApprovalDoc | None:
        text = self.recs.decisions.get(pause_id)
        doc: ApprovalDoc | None = None if text is None else json.loads(text)
        return doc

    def decision_texts(self) -> list[tuple[str, str]]:
        return list(self.recs.decisions.items())

    # artifacts
    def put_artifact(self, rel: str, data: bytes) -> None:
        check_artifact_name(rel)
        arts = self.recs.artifacts
        arts.pop(rel, None)  # re-inserted: newest last
        arts[rel] = bytes(data)

    def get_artifact(self, rel: str) -> bytes | None:
        check_artifact_name(rel)
        return self.recs.artifacts.get(rel) if self.name in self.contents.runs else None

    def list_artifacts(self, prefix: str) -> list[str]:
        check_artifact_name(prefix)
        head = prefix.rstrip("/") + "/"
        return [r for r in self.recs.artifacts if r.startswith(head)] if self.name in self.contents.runs else []

    def remove_artifacts(self, prefix: str) -> None:
        for rel in self.list_artifacts(prefix) + ([prefix] if prefix in self.recs.artifacts else []):
            self.recs.artifacts.pop(rel, None)

    def _drop_artifact(self, rel: str) -> None:
        self.recs.artifacts.pop(rel, None)

    def _artifacts_under(self, prefix: str) -> list[tuple[str, bytes]]:
        return [(rel, self.recs.artifacts[rel]) for rel in self.list_artifacts(prefix)]

    def _scratch(self) -> Path:
        return self.store.scratch()

    # children
    def _handle(self, name: str) -> Self:
        return type(self)(self.store, name, self.contents)

    def children(self) -> list["MemoryRun"]:
        head = f"{self.name}/children/"
        runs = self.contents.runs
        return [
            MemoryRun(self.store, n, self.contents)
            for n in sorted(runs)
            if n.startswith(head) and "/" not in n[len(head) :]
        ]

    # the run ledger (the store's own: it lives outside every run, as the filesystem's does)
    def ledger_claim(self, records: list[JournalEntry]) -> ledger.LedgerEntry:
        entry = self._entry(self.manifest()["run_id"])
        ledger.check_entry(entry, self.ref, records)
        return entry.copy()

    def ledger_seal(self, seq: int, hash_: str | None) -> None:
        ledger.advance_seal(self._entry(self.manifest()["run_id"]), seq, hash_)

    def ledger_consume(self, pause_id: str, decision: str | None, seq: int, hash_: str) -> None:
        entry = self._entry(self.manifest()["run_id"])
        ledger.mark_consumed(entry, self.ref, self.ref, pause_id, decision, seq, hash_)

    def ledger_consumed(self, pause_id: str) -> ledger.ConsumedDecision | None:
        return self._entry(self.manifest()["run_id"]).get("consumed", {}).get(pause_id)


class MemoryStore:
    """Runs in this process's memory; a run reference is `memory:NAME` (or NAME).

    A crash of the process (the crash kit's kill, in process: tests/support/memcrash.py) is `freeze()` at the crash
    point and `restore()` of what it returned once the dead command has unwound: nothing written after the point
    survives, and every owner lock is free, as the kernel frees a dead process's flock."""

    def __init__(self) -> None:
        self.contents = MemoryContents()
        self._scratch: Path | None = None
        self._tick = 0.0
        self.operator_book = MemoryOperatorBook()

    def operators(self) -> MemoryOperatorBook:
        return self.operator_book

    @property
    def runs(self) -> dict[str, MemoryRecords]:
        return self.contents.runs

    def freeze(self) -> MemoryContents:
        """What survives a crash at this instant (every record and artifact as it is, every owner gone)."""
        return self.contents.survivor()

    def restore(self, contents: MemoryContents) -> None:
        """After a crash: `contents` (from `freeze`) are the store's; handles opened before keep the discarded ones."""
        self.contents = contents

    def tick(self) -> float:
        """A logical clock for `stamp()`: every change of a run's documents moves it."""
        self._tick += 1.0
        return self._tick

    def scratch(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="flow-memory-store-"))
            weakref.finalize(self, shutil.rmtree, self._scratch, True)
        return self._scratch

    def _holds_run(self, name: str) -> bool:
        recs = self.runs.get(name)
        return recs is not None and ("manifest" in recs.docs or bool(recs.journal))

    def check_new(self, ref: str) -> None:
        name = _name(ref)
        if self._holds_run(name):
            raise RunDirError(f"{PREFIX}{name}: already holds a run; choose another --run-dir")

    def create_run(self, ref: str | None = None, *, now: datetime | None = None) -> MemoryRun:
        if ref is not None:
            self.check_new(ref)
            name = _name(ref)
        else:
            name = free_run_name(lambda c: c not in self.runs, PREFIX, now)
        self.contents.records_of(name)
        return MemoryRun(self, name)

    def open_run(self, ref: str) -> MemoryRun:
        name = _name(ref)
        recs = self.runs.get(name)
        if recs is None:
            raise RunDirError(f"{PREFIX}{name}: run not found")
        if "manifest" not in recs.docs:
            if recs.journal:
                raise CutStartup(
                    f"{PREFIX}{name}: not a run (its start-up was cut before the manifest; no input was sent — replay again)"
                )
            raise RunDirError(f"{PREFIX}{name}: not a run (no manifest)")
        return MemoryRun(self, name)

    def find_run(self, run_id: str) -> MemoryRun | None:
        return next((r for r in self.list_runs() if r.run_id() == run_id), None)

    def list_runs(self) -> list[MemoryRun]:
        return [MemoryRun(self, n) for n in sorted(self.runs) if "/" not in n and "manifest" in self.runs[n].docs]

    def unstarted(self) -> list[MemoryRun]:
        return [
            MemoryRun(self, n)
            for n in sorted(self.runs)
            if "/" not in n and "manifest" not in self.runs[n].docs and self.runs[n].journal
        ]


def _name(ref: str) -> str:
    name = ref.removeprefix(PREFIX)
    if not name or name.startswith("/") or ".." in name.split("/"):
        raise RunDirError(f"{ref!r}: not a memory run name")
    return name
