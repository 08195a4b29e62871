"""The run ledger: what this installation knows about each run, kept OUTSIDE every run directory (spec §8).

A run directory can be copied (a backup, a restore, a careless `cp -r`); a copy carries the same journal, the same
pending pause and, once copied in, the same approval. What a copy cannot carry is this ledger, one small file per
run under the user's state dir (`FLOW_STATE_DIR`, else `$XDG_STATE_HOME/openadapt-flow`):

- `path`: the one directory that holds the run. A second directory with the same run_id is refused while the
  first still holds it; when the first no longer does (the run was moved), the ledger follows the run.
- `seal`: the journal's end (seq, hash) at the run's last state transition. A journal that does not reach it — an
  older copy restored over the run, or a cut tail — is refused.
- `consumed`: each pause whose decision was used, and where. A decision is used once per run and pause, wherever
  the directory is.

Every update happens under an exclusive lock of the run's lock file (store/filelock.py), is written to a temp file,
fsync'd, renamed, and the directory fsync'd.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.stepdoc import ConsumedDecision as ConsumedDecision  # the stores name them here
from openadapt_flow.records.stepdoc import LedgerEntry as LedgerEntry
from openadapt_flow.store.atomic import make_dirs, write_json_atomic
from openadapt_flow.store.filelock import lock_exclusive, unlock
from openadapt_flow.store.journal import now_iso

STATE_DIR_ENV = "FLOW_STATE_DIR"
SCHEMA = "openadapt-flow/ledger@1"


def state_dir() -> Path:
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "openadapt-flow"


def _where(path: Path) -> str:
    return os.path.realpath(path)  # one spelling per directory (symlinks and relative paths resolved)


def _same_dir(known: str, path: Path) -> bool:
    try:
        return os.path.samefile(known, path)
    except OSError:
        return False


def holds_run(path: Path, run_id: str) -> bool:
    """Does the directory at `path` still hold run `run_id` (its manifest names it)?"""
    try:
        return bool(json.loads((path / "manifest.json").read_text(encoding="utf-8")).get("run_id") == run_id)
    except (OSError, ValueError, AttributeError):
        return False


class Ledger:
    """The ledger entry of one run; `open()` holds its lock for the duration of a `with` block."""

    def __init__(self, run_id: str) -> None:
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise RefusedError(f"run id {run_id!r} is not a valid run id; refusing")
        self.run_id = run_id
        self.dir = state_dir() / "ledger"
        self.path = self.dir / f"{run_id}.json"

    @contextmanager
    def open(self) -> Iterator[LedgerEntry]:
        """The entry (empty dict if the run is unknown) under the lock; written back if the caller changed it."""
        try:
            make_dirs(self.dir)  # a new state dir is fsync'd into its parent: the entries in it survive a power loss
            fd = os.open(self.dir / f"{self.run_id}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise RefusedError(f"run ledger {self.dir} is not writable ({e}); refusing") from None
        try:
            lock_exclusive(fd)
        except BaseException:
            os.close(fd)
            raise
        try:
            entry = self._read()
            before = json.dumps(entry, sort_keys=True)
            yield entry
            if json.dumps(entry, sort_keys=True) != before:
                entry.update({"schema": SCHEMA, "run_id": self.run_id, "updated_at": now_iso()})
                write_json_atomic(self.path, entry)
        finally:
            unlock(fd)
            os.close(fd)

    def _read(self) -> LedgerEntry:
        try:
            entry: LedgerEntry = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise RefusedError(f"run ledger {self.path} is unreadable ({e}); refusing") from None
        if not isinstance(entry, dict) or entry.get("run_id") != self.run_id:
            raise RefusedError(f"run ledger {self.path} is not this run's entry; refusing")
        return entry


def claim(run_id: str, run_dir: Path, records: list[JournalEntry]) -> LedgerEntry:
    """Before a command acts on a run: this directory must be the one the ledger knows, and its journal must reach
    the ledger's seal. A run the ledger never saw (made by another installation) is adopted here. Returns the entry."""
    here = _where(run_dir)
    with Ledger(run_id).open() as entry:
        known = entry.get("path")
        if known and known != here and not _same_dir(known, run_dir):
            if holds_run(Path(known), run_id):
                raise RefusedError(
                    f"{run_dir}: run {run_id} is held by {known} (this directory is a copy); a run continues in one "
                    f"place only — remove one copy (keep the one to continue) and run the command there; refusing"
                )
            entry["relocated_from"] = known  # the run was moved: the ledger follows it (its seal and decisions stay)
        entry["path"] = here
        check_entry(entry, str(run_dir), records)
        return entry.copy()


def check_entry(entry: LedgerEntry, where: str, records: list[JournalEntry]) -> None:
    """The journal must reach the entry's seal and every consumed decision's record (any store's ledger)."""
    entry.setdefault("consumed", {})
    seal = entry.setdefault("seal", {"seq": 0, "hash": None})
    _check_reaches(where, records, seal.get("seq") or 0, seal.get("hash"), "the run ledger's seal")
    for pause_id, used in entry["consumed"].items():
        _check_reaches(where, records, used.get("seq") or 0, used.get("hash"), f"the consumed decision for {pause_id}")


def _check_reaches(where: str, records: list[JournalEntry], seq: int, hash_: str | None, what: str) -> None:
    if seq <= 0:
        return
    if len(records) < seq or records[seq - 1].get("hash") != hash_:
        raise RefusedError(
            f"{where}: the journal ends at seq {len(records)} but {what} is at seq {seq} — an older copy of the run "
            f"or a cut journal; refusing"
        )


def advance_seal(entry: LedgerEntry, seq: int, hash_: str | None) -> None:
    """Monotone: an end behind the recorded one is never written."""
    old = entry.get("seal")
    if old is None or seq >= (old.get("seq") or 0):
        entry["seal"] = {"seq": seq, "hash": hash_}


def mark_consumed(
    entry: LedgerEntry, where: str, here: str, pause_id: str, decision: str | None, seq: int, hash_: str
) -> None:
    """Mark the decision for `pause_id` used at journal record (seq, hash); a use at any other record is refused."""
    used = entry.get("consumed", {}).get(pause_id)
    if used is not None and (used.get("seq"), used.get("hash")) != (seq, hash_):
        raise RefusedError(
            f"{where}: the decision for {pause_id} was already used (in {used.get('path')} at "
            f"{used.get('at')}); a decision is consumed once; refusing"
        )
    entry.setdefault("consumed", {})[pause_id] = {
        "decision": decision,
        "seq": seq,
        "hash": hash_,
        "path": here,
        "at": (used.get("at") if used is not None else None) or now_iso(),
    }
    advance_seal(entry, seq, hash_)


def seal(run_id: str, run_dir: Path, seq: int, hash_: str | None) -> None:
    """Record the journal's end at a state transition (monotone: an end behind the recorded one is never written)."""
    with Ledger(run_id).open() as entry:
        known = entry.get("path")
        if known and known != _where(run_dir) and not _same_dir(known, run_dir):
            return  # a copy's transitions never move the original's seal (the copy was refused before acting)
        advance_seal(entry, seq, hash_)
        entry.setdefault("path", _where(run_dir))
        entry.setdefault("consumed", {})


def consumed(run_id: str, pause_id: str) -> ConsumedDecision | None:
    """Where and when the decision for `pause_id` was used, or None."""
    with Ledger(run_id).open() as entry:
        return entry.get("consumed", {}).get(pause_id)


def consume(run_id: str, run_dir: Path, pause_id: str, decision: str | None, seq: int, hash_: str) -> None:
    """Mark the decision for `pause_id` used, at the journal record (seq, hash) that recorded it. Using it again —
    from this directory's own journal (a crash between the record and this call) is the same use; from anywhere
    else it is refused."""
    here = _where(run_dir)
    with Ledger(run_id).open() as entry:
        mark_consumed(entry, str(run_dir), here, pause_id, decision, seq, hash_)
        entry.setdefault("path", here)
