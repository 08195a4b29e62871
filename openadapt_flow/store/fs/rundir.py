"""The run directory: the filesystem store's run handle (spec §7 layout) — manifest, journal, state, frames, report."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Unpack, cast

from openadapt_flow.errors import CutStartup, RefusedError, RunDirError
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
from openadapt_flow.store import checkpoint, escalation, ledger
from openadapt_flow.store.atomic import (
    StorageFault,
    create_dirs,
    dumps,
    fsync_dir,
    is_storage_error,
    make_dirs,
    sync_dirs,
    write_files_atomic,
    write_json_atomic,
)
from openadapt_flow.store.base import JournalWriter, RunHandle, check_artifact_name
from openadapt_flow.store.frames import FrameWriter
from openadapt_flow.store.fs.journal import Journal, load_journal, read_records
from openadapt_flow.store.fs.lease import Lease, try_lock, unlock
from openadapt_flow.store.fs.runpath import check_run_path, creation_error
from openadapt_flow.store.journal import JOURNAL_FILE, LoadResult
from openadapt_flow.store.layout import (
    BUNDLE,
    CHILDREN,
    FRAMES,
    INCIDENT,
    MANIFEST,
    REPORT_FILES,
    RUN_FILES,
    STATE,
    digest_manifest,
    free_run_name,
)
from openadapt_flow.store.lease import LeaseInfo, read_lease
from openadapt_flow.store.seal import SCHEMA_PREFIX, sealed_state, verify_seal

# The file `flow export` (store/postgres/export.py) writes into the run directory it makes: the stored run it copies
# (`pg:NAME --store SPEC`). Plain text, not JSON (no §7 run record): a marker that the directory is a copy to read.
EXPORT_MARK = "EXPORTED_FROM"


def refuse_exported(run_dir: Path) -> None:
    """An exported run directory is a copy of a run that lives on in its store: resuming or deciding on it would run
    its remaining steps in two places. Refused (exit 6), naming the store; reading it (status, report) is fine."""
    mark = run_dir / EXPORT_MARK
    if mark.is_file():
        origin = mark.read_text(encoding="utf-8", errors="replace").strip()
        raise RefusedError(
            f"{run_dir}: an export of {origin} (a copy to read); decide on and resume the run in its store "
            f"({origin}), never in the copy; refusing"
        )


def check_new_run_dir(run_dir: Path) -> None:
    """Refuse a --run-dir that holds a run or anything else, or where no run can be made (runpath.py; checked
    before connecting)."""
    check_run_path(run_dir)
    if (run_dir / MANIFEST).exists() or (run_dir / JOURNAL_FILE).exists():
        raise RunDirError(f"{run_dir}: already holds a run; choose another --run-dir")
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: exists and is not a directory")
    if run_dir.is_dir() and any(run_dir.iterdir()):
        raise RunDirError(f"{run_dir}: directory is not empty; choose another --run-dir")


def new_run_dir(runs_root: Path, run_dir: Path | None = None, *, now: datetime | None = None) -> Path:
    """Create the run directory: the given one (empty or absent) or runs_root/replay-YYYYMMDD-HHMMSS[-N]. Durably: the
    new directory (and each parent it needed, the runs root's too) is fsync'd into its parent before it is used. A
    creation that fails is our error (runpath.py): permission or a failed disk exit 5, a bad path exit 2."""
    if run_dir is not None:
        check_new_run_dir(run_dir)
        try:
            make_dirs(run_dir)
        except (OSError, ValueError) as e:
            raise creation_error(run_dir, e) from None
        return run_dir
    try:
        make_dirs(runs_root)
    except (OSError, ValueError) as e:
        raise creation_error(runs_root, e) from None

    def take(name: str) -> bool:
        try:
            (runs_root / name).mkdir()
        except FileExistsError:
            return False
        except (OSError, ValueError) as e:
            raise creation_error(runs_root / name, e) from None
        return True

    cand = runs_root / free_run_name(take, str(runs_root), now)
    fsync_dir(runs_root)
    return cand


def _short(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:120]


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def runs_root(run: Path) -> Path:
    """The runs root holding a run directory: its parent, or for a workflow's child run (`P/children/NAME`) that of
    the outermost run. The root's own files (the operator book, its audit log) are never written inside a run."""
    path = Path(run).resolve()
    while path.parent.name == CHILDREN and (path.parent.parent / "manifest.json").exists():
        path = path.parent.parent
    return path.parent


class RunDir:
    """Typed access to the files of one run directory: the filesystem store's run handle (store/base.py RunHandle)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._id: str | None = None  # the manifest's run_id, read once: it never changes, and every state
        # transition and consequential dispatch seals the ledger under it

    # paths (for the runtime modules that still open files by path; new code uses the handle methods below)
    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def state_path(self) -> Path:
        return self.path / STATE

    @property
    def journal_path(self) -> Path:
        return self.path / JOURNAL_FILE

    @property
    def frames_dir(self) -> Path:
        return self.path / FRAMES

    @property
    def bundle_dir(self) -> Path:
        return self.path / BUNDLE

    @classmethod
    def open(cls, path: str | Path) -> "RunDir":
        """An existing run directory, or RunDirError (exit 2) naming what is wrong."""
        p = Path(path)
        if not p.exists():
            raise RunDirError(f"{p}: run directory not found")
        if not p.is_dir():
            raise RunDirError(f"{p}: not a directory")
        if not (p / MANIFEST).is_file():
            if (p / JOURNAL_FILE).is_file():  # a start-up cut before the manifest: a run that never began (spec §7)
                raise CutStartup(
                    f"{p}: not a run directory (its start-up was cut before {MANIFEST}; no input was sent — replay again)"
                )
            raise RunDirError(f"{p}: not a run directory (no {MANIFEST})")
        return cls(p)

    def write_json(self, name: str, schema: str, body: Mapping[str, object]) -> None:
        write_json_atomic(self.path / name, {"schema": SCHEMA_PREFIX + schema, **body})

    def read_json(self, name: str) -> dict[str, object]:
        """One of the run's JSON files. A damaged one (unreadable, not JSON, not an object) is a refusal (exit 6):
        the run's records were tampered with or torn, which no better input can fix."""
        path = self.path / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunDirError(f"{path}: missing") from None
        except (OSError, ValueError) as e:
            raise RefusedError(f"{path}: unreadable or not JSON ({_short(e)}); refusing a damaged run file") from None
        if not isinstance(data, dict):
            raise RefusedError(f"{path}: expected a JSON object; refusing a damaged run file")
        return data

    def manifest(self) -> ManifestDoc:
        return cast(ManifestDoc, self.read_json(MANIFEST))  # as written (`flow verify` validates it against its model)

    def manifest_digest(self) -> str:
        return digest_manifest(self.manifest())

    def add_child(self, child: RunHandle | Path) -> None:
        m = self.manifest()
        rel = os.path.relpath(child if isinstance(child, Path) else child.ref, self.path)
        if rel not in m.get("child_runs", []):
            m["child_runs"] = [*m.get("child_runs", []), rel]
            write_json_atomic(self.manifest_path, m)

    def state(self) -> StateDoc:
        return cast(StateDoc, self.read_json(STATE))  # as written (check_seal verifies it against the journal)

    def write_state(
        self, state: RunState, *, journal: JournalWriter | None = None, **fields: Unpack[StateFields]
    ) -> None:
        """Replace state.json. With the run's `journal`, the state is sealed: it names the journal's end (seq, hash)
        and is HMAC-signed with the installation key, and the run ledger records the same end (spec §8), so a cut
        journal tail or an edited state is detected. Every transition of a run passes its journal."""
        if journal is None:
            write_json_atomic(self.state_path, sealed_state(state, fields, None))
            return
        doc = sealed_state(state, fields, journal)
        run_id = self._run_id()
        if run_id is not None:  # a start that writes its state before the manifest: the ledger learns it next time
            ledger.seal(run_id, self.path, journal.seq, doc["journal_hash"])
        write_json_atomic(self.state_path, doc)

    def _run_id(self) -> str | None:
        if self._id is None:
            try:
                self._id = str(json.loads(self.manifest_path.read_text(encoding="utf-8"))["run_id"])
            except (OSError, ValueError, KeyError, TypeError):
                return None
        return self._id

    def _ledger_id(self) -> str:
        """The run_id the ledger knows this run by; a missing or damaged manifest is refused as manifest() does."""
        if self._id is None:
            self._id = str(self.manifest()["run_id"])
        return self._id

    def check_seal(self, records: list[JournalEntry], key: bytes) -> StateDoc | None:
        """state.json, verified against the journal (see verify_seal). None when the run has neither state nor journal."""
        path = self.state_path
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            doc = None
        except (OSError, ValueError) as e:
            raise RefusedError(f"{path}: unreadable or not JSON ({e}); refusing") from None
        return verify_seal(doc, records, key, str(path), str(self.journal_path))

    def snapshot_bundle(self, root: Path, files: tuple[str, ...], like: Path | None = None) -> None:
        """Copy the bundle files the run executes into `bundle/` (resume uses this copy), durably before the first
        input: each file fsync'd, then each folder once (`bundle/templates/`, `bundle/`, the run directory).

        `like`: another run's snapshot, already durable, on the same filesystem (a batch's item before): where each of
        its files holds the same bytes as the bundle's, it is hard-linked instead — its contents are on disk already,
        so only the new names are synced (each folder once). Anything else (a file that differs, a link refused) is
        copied as above."""
        try:
            data = {rel: (root / rel).read_bytes() for rel in files}
        except OSError as e:
            raise (StorageFault(str(root), e) if is_storage_error(e) else e) from None
        if like is not None and self._link_snapshot(like, data):
            return
        write_files_atomic(self.bundle_dir, data, make=True)

    def _link_snapshot(self, like: Path, data: Mapping[str, bytes]) -> bool:
        """Hard-link `like`'s files into `bundle/` when each holds `data`'s bytes; False, with nothing left, if not."""
        made: list[Path] = []
        dirs: set[Path] = set()
        try:
            if any((like / rel).read_bytes() != body for rel, body in data.items()):
                return False
            for rel in data:
                dst = self.bundle_dir / rel
                dirs.update(d.parent for d in create_dirs(dst.parent))
                dirs.add(dst.parent)
                os.link(like / rel, dst)
                made.append(dst)
            sync_dirs(dirs)
            return True
        except OSError:
            for dst in made:
                dst.unlink(missing_ok=True)
            return False

    # --- the run-store handle (store/base.py RunHandle): every file of the run is named here, nowhere else ---
    @property
    def ref(self) -> str:
        return str(self.path)

    def describe(self, what: str) -> str:
        return str(self.path / RUN_FILES[what])

    def has_manifest(self) -> bool:
        return self.manifest_path.is_file()

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def starting(self) -> AbstractContextManager[None]:
        return nullcontext()  # the order of begin_run's fsync'd writes is the unit: manifest.json last

    def write_manifest(self, body: ManifestBody) -> None:
        self.write_json(MANIFEST, "manifest@1", body)

    def run_id(self) -> str | None:
        return self._run_id()

    def has_journal(self) -> bool:
        return self.journal_path.is_file()

    def load_journal(self, key: bytes, *, repair: bool = False) -> LoadResult:
        return load_journal(self.journal_path, key, repair=repair)

    def open_journal(self, key: bytes) -> tuple[Journal, list[JournalEntry]]:
        return Journal.open_existing(self.journal_path, key)

    def new_journal(self, key: bytes) -> Journal:
        return Journal(self.journal_path, key)

    def read_records(self) -> list[JournalEntry]:
        return read_records(self.journal_path)

    def has_state(self) -> bool:
        return self.state_path.exists()

    def restore_state(self, doc: StateDoc) -> None:
        self.write_json(STATE, "state@1", doc)

    def read_checkpoint(self) -> CheckpointDoc | None:
        """As stored (reconcile_checkpoint judges it against the journal)."""
        return cast("CheckpointDoc | None", escalation.read_json_file(self.path / checkpoint.CHECKPOINT, "checkpoint"))

    def write_checkpoint(self, cp: CheckpointDoc) -> None:
        checkpoint.write_checkpoint(self.path, cp)

    def reconcile_checkpoint(self, records: list[JournalEntry]) -> tuple[CheckpointDoc | None, str]:
        return checkpoint.reconcile_checkpoint(self.path, records)

    def lease(self, ttl_s: float = 30.0) -> Lease:
        refuse_exported(self.path)  # every command that acts on a run takes its lease; an export is a copy to read
        return Lease(self.path, ttl_s)

    def lease_info(self) -> LeaseInfo | None:
        return read_lease(self.path)

    def try_lock(self) -> Callable[[], None] | None:
        fd = try_lock(self.path)
        return None if fd is None else (lambda: unlock(fd))

    def has_pending(self) -> bool:
        return (self.path / escalation.PENDING).is_file()

    def read_pending(self) -> PendingDoc | None:
        # a run file read is its document (its model checks it where records are validated: tests, `flow verify`)
        return cast(
            "PendingDoc | None", escalation.read_json_file(self.path / escalation.PENDING, "pending escalation")
        )

    def write_pending(self, body: PendingBody) -> None:
        escalation.write_pending(self.path, body)

    def remove_pending(self) -> None:
        escalation.remove(self.path / escalation.PENDING)

    def has_approval(self) -> bool:
        return (self.path / escalation.APPROVAL).exists()

    def read_approval(self) -> ApprovalDoc | None:
        return cast("ApprovalDoc | None", escalation.read_json_file(self.path / escalation.APPROVAL, "approval"))

    def write_approval(
        self, body: ApprovalBody, signature: str, *, replaces: str | None = escalation.ANY_APPROVAL
    ) -> None:
        escalation.write_approval(
            self.path, {"schema": SCHEMA_PREFIX + "approval@1", **body, "signature": signature}, replaces
        )

    def remove_approval(self) -> None:
        escalation.remove(self.path / escalation.APPROVAL)

    def consume_approval(self, pause_id: str) -> None:
        escalation.consume_approval(self.path, pause_id)

    def has_decision(self, pause_id: str) -> bool:
        return (self.path / escalation.DECISIONS / f"{pause_id}.json").exists()

    def read_decision(self, pause_id: str) -> ApprovalDoc | None:
        return cast(
            "ApprovalDoc | None",
            escalation.read_json_file(self.path / escalation.DECISIONS / f"{pause_id}.json", "decision"),
        )

    def decisions(self) -> list[ApprovalDoc]:
        """Consumed decisions, oldest first (unreadable ones left out: views only)."""
        d = self.path / escalation.DECISIONS
        out: list[ApprovalDoc] = []
        for p in sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime) if d.is_dir() else []:
            try:
                data: ApprovalDoc = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                out.append(data)
        return out

    def write_incident(self, body: IncidentBody) -> None:
        write_json_atomic(self.path / INCIDENT, {"schema": SCHEMA_PREFIX + "incident@1", **body})

    def read_incident(self) -> IncidentDoc | None:
        return cast("IncidentDoc | None", escalation.read_json_file(self.path / INCIDENT, "incident"))

    def write_reports(self, report: Mapping[str, object], markdown: str, html: str) -> None:
        body = dumps({"schema": SCHEMA_PREFIX + "report@1", **report}).encode("utf-8")
        write_files_atomic(
            self.path, {REPORT_FILES[0]: body, REPORT_FILES[1]: markdown.encode(), REPORT_FILES[2]: html.encode()}
        )

    def put_artifact(self, rel: str, data: bytes) -> None:
        self._artifact(rel)  # a name inside the run
        write_files_atomic(self.path, {rel: data}, make=True)  # a new folder (`upgrades/2/templates/`) fsync'd too

    def get_artifact(self, rel: str) -> bytes | None:
        try:
            return self._artifact(rel).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def list_artifacts(self, prefix: str) -> list[str]:
        """Files under `prefix`, as paths relative to the run, oldest first."""
        root = self._artifact(prefix)
        files = [p for p in root.rglob("*") if p.is_file()] if root.is_dir() else []
        return [
            p.relative_to(self.path).as_posix() for p in sorted(files, key=lambda p: (p.stat().st_mtime, p.as_posix()))
        ]

    def remove_artifacts(self, prefix: str) -> None:
        root = self._artifact(prefix)
        if root.is_dir():
            shutil.rmtree(root)
        elif root.exists():
            root.unlink()

    def artifact_dir(self, prefix: str) -> Path:
        """The directory holding the artifacts under `prefix` (here they are files already)."""
        return self._artifact(prefix)

    def _artifact(self, rel: str) -> Path:
        check_artifact_name(rel)
        return self.path / rel

    def frame_writer(self) -> FrameWriter:
        return FrameWriter(self.frames_dir)

    def frame_names(self) -> set[str]:
        return {p.name for p in self.frames_dir.glob("*.png")} if self.frames_dir.exists() else set()

    def stamp(self) -> tuple[float, float, float]:
        return (
            _mtime(self.state_path),
            _mtime(self.path / escalation.PENDING),
            _mtime(self.path / escalation.APPROVAL),
        )

    def child(self, name: str) -> "RunDir":
        return RunDir(self.path / CHILDREN / name)

    def children(self) -> list["RunDir"]:
        """A workflow's child runs (one per ctx.replay / ctx.child call)."""
        return [RunDir(p) for p in (self.path / CHILDREN).glob("*")]

    def sibling(self, step: str) -> "RunDir":
        """A bundle `flow` step's child run: a run of the same root, named after its parent."""
        return RunDir(self.path.with_name(f"{self.path.name}.{step}"))

    def ledger_claim(self, records: list[JournalEntry]) -> ledger.LedgerEntry:
        return ledger.claim(self.manifest()["run_id"], self.path, records)

    def ledger_seal(self, seq: int, hash_: str | None) -> None:
        ledger.seal(self._ledger_id(), self.path, seq, hash_)

    def ledger_consume(self, pause_id: str, decision: str | None, seq: int, hash_: str) -> None:
        ledger.consume(self._ledger_id(), self.path, pause_id, decision, seq, hash_)

    def ledger_consumed(self, pause_id: str) -> ledger.ConsumedDecision | None:
        return ledger.consumed(self._ledger_id(), pause_id)
