"""checkpoint.json: the durable record that steps up to N were verified.

The journal is the source of truth: every `step_verified` record carries what
a checkpoint needs, so a checkpoint that lags the journal is rebuilt from it,
and one that claims more than the journal (or disagrees with it) is tampering.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path
from typing import Any, cast

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.checkpoint import checkpoint_digest, checkpoint_from_records
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry
from openadapt_flow.records.states import RecordType, is_a
from openadapt_flow.store.atomic import StorageFault, dumps, fsync_dir, is_storage_error, write_json_atomic
from openadapt_flow.store.faults import crash_point, io_fault

CHECKPOINT = "checkpoint.json"


def write_checkpoint(run_dir: Path, cp: CheckpointDoc) -> None:
    """Atomic replace (temp, fsync, rename, fsync dir), with crash points inside for the crash matrix."""
    path = run_dir / CHECKPOINT
    tmp = path.with_name(f".{CHECKPOINT}.{os.getpid()}.tmp")
    try:
        io_fault(CHECKPOINT)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            data = dumps(cp).encode()
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point("checkpoint:tmp_written", cp.get("step"))
        os.replace(tmp, path)
        fsync_dir(run_dir)
    except OSError as e:
        if not is_storage_error(e):
            raise
        with contextlib.suppress(OSError):
            tmp.unlink(
                missing_ok=True
            )  # the previous checkpoint stays intact; the journal still has the step (rebuilt on resume)
        raise StorageFault(str(path), e) from None
    crash_point("checkpoint:renamed", cp.get("step"))


def reconcile_checkpoint(run_dir: Path, records: list[JournalEntry]) -> tuple[CheckpointDoc | None, str]:
    """Check checkpoint.json against the journal: (checkpoint, 'ok'|'rebuilt'). Tampering raises RefusedError."""
    path = run_dir / CHECKPOINT
    try:
        on_disk = json.loads(path.read_text()) if path.exists() else None
    except ValueError:
        raise RefusedError(f"{path}: not valid JSON (tampered or corrupt); refusing") from None
    cp, status = judge_checkpoint(on_disk, records, str(path))
    if status == "rebuilt":
        write_json_atomic(path, cp)  # lagging or missing: the journal is the source of truth
    return cp, status


def judge_checkpoint(stored: Any, records: list[JournalEntry], where: str) -> tuple[CheckpointDoc | None, str]:
    """A stored checkpoint judged against the journal (every store): (the checkpoint to use, 'ok'|'rebuilt').

    'rebuilt' (missing or lagging: the caller writes the returned one back); one ahead of or disagreeing with the
    journal is tampering (RefusedError)."""
    implied = checkpoint_from_records(records)
    if stored is None:
        return (implied, "rebuilt") if implied is not None else (None, "ok")
    if not isinstance(stored, dict):
        raise RefusedError(f"{where}: not a JSON object (tampered or corrupt); refusing")
    by_seq = {r["seq"]: r for r in records}
    seq = stored.get("seq")
    rec = by_seq.get(seq) if isinstance(seq, int) else None
    if rec is None or not isinstance(seq, int):
        raise RefusedError(f"{where}: claims journal seq {seq}, which the journal does not have (tampered); refusing")
    if (
        rec["hash"] != stored.get("journal_hash")
        or not is_a(rec, RecordType.STEP_VERIFIED, RecordType.STEP_SKIPPED)
        or rec["step"] != stored.get("step")
    ):
        raise RefusedError(f"{where}: disagrees with journal record {seq} (tampered); refusing")
    assert implied is not None
    if implied["seq"] > seq:
        return implied, "rebuilt"
    if checkpoint_digest(stored) != checkpoint_digest(implied):
        raise RefusedError(f"{where}: content differs from what journal record {seq} says (tampered); refusing")
    return cast(CheckpointDoc, stored), "ok"  # the digest of what the journal implies
