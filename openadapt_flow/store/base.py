"""The run-store interface (spec §18): where a run's records and artifacts live, behind one small protocol.

Protocols, not an abstract base class: the filesystem store's run handle is `RunDir` (with `Journal` and `Lease`),
which the runtime has used by name since the first build; a structural protocol lets it conform as it is, and lets
mypy check every store against the same surface without an inheritance tree. What a store must not re-implement
differently — verifying the hash chain, judging the seal and the checkpoint against the journal, the ledger's
consume-once rule — lives in pure functions (`journal.verify_chain`, `seal.verify_seal`,
`checkpoint.judge_checkpoint`, `ledger.check_entry`/`mark_consumed`) that every store calls on the bytes and
documents it holds.

A store holds runs; a run handle holds one run's:
- records: manifest, journal (append-only, hash-chained; fsync'd per spec §5), state (sealed), checkpoint,
  lease (+ an exclusive owner lock), pending escalation, approval and consumed decisions, incident, reports;
- artifacts: named byte blobs (`frames/…`, `bundle/…`, `patches/…`, `upgrades/…`), and a directory on disk holding
  those under a prefix for code that needs a real path (the bundle loader);
- the run ledger's entry (spec §8: one place per run, its seal, its consumed decisions), kept outside the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, Unpack, runtime_checkable

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.appender import RecordAppender
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry
from openadapt_flow.records.pausedoc import (
    ApprovalBody,
    ApprovalDoc,
    IncidentBody,
    IncidentDoc,
    PendingBody,
    PendingDoc,
)
from openadapt_flow.records.rundoc import ManifestBody, ManifestDoc, StateDoc, StateFields
from openadapt_flow.records.states import RunState
from openadapt_flow.records.stepdoc import ConsumedDecision, LedgerEntry
from openadapt_flow.store.frames import FrameWriter
from openadapt_flow.store.journal import LoadResult
from openadapt_flow.store.lease import LeaseInfo
from openadapt_flow.store.operators import OperatorBook

Unlock = Callable[[], None]

# What a handle's `describe()` names in messages.
RECORD_NAMES = (
    "manifest",
    "state",
    "journal",
    "checkpoint",
    "lease",
    "pending",
    "approval",
    "incident",
    "report",
    "report_md",
    "report_html",
)


def check_artifact_name(rel: str) -> None:
    """An artifact name is a relative path inside the run (`frames/x.png`, `patches/<pause>/bundle/flow.yaml`)."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise RefusedError(f"{rel!r}: not a path inside the run; refusing")


@runtime_checkable
class JournalWriter(RecordAppender, Protocol):
    """The one writer of a run's journal (the lease owner); `append` takes each record kind with its own data
    (records/appender.py)."""

    key: bytes
    seq: int
    last_hash: str
    observers: list[Callable[[JournalEntry], None]]
    last_of: dict[str, JournalEntry]

    def sync(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class RunLease(Protocol):
    """Ownership of a run: an exclusive lock plus a fencing generation (spec §5 invariant 7)."""

    ttl_s: float
    generation: int

    def acquire(self, wait_s: float = 0.0) -> Any: ...

    def start_heartbeat(self) -> None: ...

    def still_owner(self) -> bool: ...

    def fence(self) -> None: ...

    def guard(self) -> None:
        """Before every input call (runtime/start/fenced.py): raise LeaseLost if this process's own view says the
        lease is lost — cheap enough to run before each key batch; `fence()` is the authoritative re-read."""

    def release(self) -> None: ...


@runtime_checkable
class RunHandle(Protocol):
    """One run in a store."""

    @property
    def ref(self) -> str:
        """How users name the run: its directory, or `memory:NAME`."""

    def describe(self, what: str) -> str: ...

    def starting(self) -> AbstractContextManager[None]:
        """`begin_run`'s writes (run_started, state RUNNING, the manifest) as one unit where the store has one: on
        PostgreSQL one transaction, so a connection lost before its commit leaves none of them (a submitted run's row
        already holds a manifest, which a half-done start would leave pinned by another digest). A file store has
        none: the order of its writes is the unit (no manifest, no run)."""

    # manifest
    def has_manifest(self) -> bool: ...
    def manifest(self) -> ManifestDoc: ...
    def write_manifest(self, body: ManifestBody) -> None: ...
    def manifest_digest(self) -> str: ...
    def run_id(self) -> str | None: ...
    def add_child(self, child: "RunHandle") -> None:
        """Link a child run in the manifest's `child_runs` (its name relative to this run; the one field appended
        after the start, outside the manifest's digest)."""

    def discard(self) -> None:
        """Remove what a start-up that was cut before the manifest left (no run: nothing was sent)."""

    # journal
    def has_journal(self) -> bool: ...
    def load_journal(self, key: bytes, *, repair: bool = False) -> LoadResult: ...
    def open_journal(self, key: bytes) -> tuple[JournalWriter, list[JournalEntry]]: ...
    def new_journal(self, key: bytes) -> JournalWriter: ...
    def read_records(self) -> list[JournalEntry]: ...

    # state (sealed with the journal's end; the ledger learns the same end)
    def has_state(self) -> bool: ...
    def state(self) -> StateDoc: ...
    def write_state(
        self, state: RunState, *, journal: JournalWriter | None = None, **fields: Unpack[StateFields]
    ) -> None: ...
    def check_seal(self, records: list[JournalEntry], key: bytes) -> StateDoc | None: ...
    def restore_state(self, doc: StateDoc) -> None:
        """Put back a state document read earlier, its seal intact (a refused resume leaves the run as it was)."""

    # checkpoint
    def read_checkpoint(self) -> CheckpointDoc | None: ...
    def write_checkpoint(self, cp: CheckpointDoc) -> None: ...
    def reconcile_checkpoint(self, records: list[JournalEntry]) -> tuple[CheckpointDoc | None, str]: ...

    # lease
    def lease(self, ttl_s: float = 30.0) -> RunLease: ...
    def lease_info(self) -> LeaseInfo | None: ...
    def try_lock(self) -> Unlock | None: ...

    # escalation, approval, decisions
    def has_pending(self) -> bool: ...
    def read_pending(self) -> PendingDoc | None: ...
    def write_pending(self, body: PendingBody) -> None: ...
    def remove_pending(self) -> None: ...
    def has_approval(self) -> bool: ...
    def read_approval(self) -> ApprovalDoc | None: ...
    def write_approval(self, body: ApprovalBody, signature: str, *, replaces: str | None = "*") -> None:
        """Write the approval. `replaces` makes it a compare-and-set: the signature of the approval this one replaces
        (None: none may be stored), escalation.ApprovalChanged if the store holds another; "*" writes regardless."""

    def remove_approval(self) -> None: ...
    def consume_approval(self, pause_id: str) -> None: ...
    def has_decision(self, pause_id: str) -> bool: ...
    def read_decision(self, pause_id: str) -> ApprovalDoc | None: ...
    def decisions(self) -> list[ApprovalDoc]: ...

    # incident, reports
    def write_incident(self, body: IncidentBody) -> None: ...
    def read_incident(self) -> IncidentDoc | None: ...
    def write_reports(self, report: Mapping[str, object], markdown: str, html: str) -> None: ...

    # artifacts
    def put_artifact(self, rel: str, data: bytes) -> None: ...
    def get_artifact(self, rel: str) -> bytes | None: ...
    def list_artifacts(self, prefix: str) -> list[str]: ...
    def remove_artifacts(self, prefix: str) -> None: ...
    def artifact_dir(self, prefix: str) -> Path: ...
    def snapshot_bundle(self, root: Path, files: tuple[str, ...], like: Path | None = None) -> None: ...
    def frame_writer(self) -> FrameWriter: ...
    def frame_names(self) -> set[str]: ...

    def stamp(self) -> tuple[float, float, float]:
        """When state, pending escalation and approval last changed (0.0: absent), for cheap change detection."""

    # children
    def child(self, name: str) -> "RunHandle": ...
    def children(self) -> Sequence["RunHandle"]: ...
    def sibling(self, step: str) -> "RunHandle": ...

    # the run ledger
    def ledger_claim(self, records: list[JournalEntry]) -> LedgerEntry: ...
    def ledger_seal(self, seq: int, hash_: str | None) -> None: ...
    def ledger_consume(self, pause_id: str, decision: str | None, seq: int, hash_: str) -> None: ...
    def ledger_consumed(self, pause_id: str) -> ConsumedDecision | None: ...


@runtime_checkable
class RunStore(Protocol):
    """Where runs live: create one, open or find one, list them."""

    def create_run(self, ref: str | None = None, *, now: datetime | None = None) -> RunHandle:
        """A new run: `ref` (must hold no run) or a fresh `replay-YYYYMMDD-HHMMSS[-N]` (spec §7 collision rules)."""

    def check_new(self, ref: str) -> None: ...

    def open_run(self, ref: str) -> RunHandle: ...

    def find_run(self, run_id: str) -> RunHandle | None: ...

    def list_runs(self) -> Sequence[RunHandle]: ...

    def unstarted(self) -> Sequence[RunHandle]:
        """Runs whose start-up was cut before the manifest (a journal, no manifest): never a run."""

    def operators(self) -> OperatorBook:
        """The store's operators and their audit log (spec §20)."""
