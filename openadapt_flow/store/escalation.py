"""pending_escalation.json and approval.json: a signed decision task and the signed answer to it."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.pausedoc import PauseHead, PendingBody
from openadapt_flow.records.states import PausedReason, RecordType
from openadapt_flow.store.atomic import fsync_dir, write_json_atomic
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.filelock import held

PENDING = "pending_escalation.json"
APPROVAL = "approval.json"
DECISIONS = "decisions"
APPROVAL_LOCK = ".approval.lock"  # held while approval.json is compared and set, or moved to decisions/
ANY_APPROVAL = "*"  # write_approval's `replaces` for an unconditional write (a test restoring a saved approval)


class ApprovalChanged(RefusedError):
    """A compare-and-set of the approval met another approval than the one it read: a decision landed meanwhile."""


def _canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def sign(key: bytes, body: Mapping[str, object]) -> str:
    return hmac.new(key, _canonical(body), hashlib.sha256).hexdigest()


def digest(body: Mapping[str, object]) -> str:
    return "sha256:" + hashlib.sha256(_canonical(body)).hexdigest()


def verify(key: bytes, body: Mapping[str, object], signature: str | None, what: str) -> None:
    if not signature or not hmac.compare_digest(sign(key, body), signature):
        raise RefusedError(f"{what}: signature does not verify (forged, edited, or signed with another key); refusing")


def write_pending(run_dir: Path, body: PendingBody) -> None:
    write_json_atomic(run_dir / PENDING, {"schema": "openadapt-flow/pending_escalation@1", **body})


def read_json_file(path: Path, what: str) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise RefusedError(f"{path}: {what} is unreadable or not JSON ({e}); refusing") from None
    if not isinstance(data, dict):
        raise RefusedError(f"{path}: {what} is not a JSON object; refusing")
    return data


def remove(path: Path) -> None:
    try:
        path.unlink()
        fsync_dir(path.parent)
    except FileNotFoundError:
        pass


def signature_of(text: str | None) -> str | None:
    """The signature of an approval document's text (None: no approval; "" when it has none or is not JSON)."""
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return ""
    return str(doc.get("signature") or "") if isinstance(doc, dict) else ""


def check_replaces(where: str, current: str | None, replaces: str | None) -> None:
    """ApprovalChanged unless the approval's current signature is the one a compare-and-set expects."""
    if replaces != ANY_APPROVAL and current != replaces:
        raise ApprovalChanged(f"{where}: another decision was recorded since this one read the approval; refusing")


@contextmanager
def approval_locked(run_dir: Path) -> Iterator[None]:
    with held(run_dir / APPROVAL_LOCK):
        yield


def write_approval(run_dir: Path, doc: Mapping[str, object], replaces: str | None) -> None:
    """Write approval.json if the one there has signature `replaces` (None: there is none); ApprovalChanged if not.
    Compared and written under one lock, so of two writers that read the same approval only the first writes."""
    path = run_dir / APPROVAL
    with approval_locked(run_dir):
        try:
            current = signature_of(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            current = None
        check_replaces(str(path), current, replaces)
        write_json_atomic(path, doc)


def consume_approval(run_dir: Path, pause_id: str) -> Path:
    """Move approval.json to decisions/<pause_id>.json: a decision is used once."""
    dest_dir = run_dir / DECISIONS
    dest_dir.mkdir(exist_ok=True)
    dest = dest_dir / f"{pause_id}.json"
    crash_point("approval:consuming")
    with approval_locked(run_dir):
        os.replace(run_dir / APPROVAL, dest)
    fsync_dir(dest_dir)
    fsync_dir(run_dir)
    crash_point("approval:consumed")
    return dest


# Pauses that go on without an operator's decision: `run_resumed` naming them closes them.
NO_DECISION_REASONS = frozenset(
    {PausedReason.AWAITING_TIMER, PausedReason.AWAITING_CHILD, PausedReason.SUSPENDED_ORPHAN}
)


def pending_of(rec: JournalEntry) -> PendingBody | None:
    """The pause an `escalation_opened` / `escalated` record carries (`pending`; a copy), or None: the record of a
    pause journaled before pauses carried their body."""
    data = rec.get("data") or {}
    if not isinstance(data.get("pending"), dict):
        return None
    body: PendingBody = data["pending"]  # the record's own object: its model (records.py) checks it where records are
    return body.copy()


def journal_pause(records: list[JournalEntry]) -> tuple[PendingBody | PauseHead | None, set[str]]:
    """The pause the journal says is open (the full pending body its `escalation_opened` / `escalated` record
    carries, or a legacy record's pause id alone), and the ids of the pauses it has closed: decided (`decision`),
    re-issued (`escalated`), dropped, resumed past (a pause that needs no decision), or ended with the run
    (`run_finished`)."""
    open_: PendingBody | PauseHead | None = None
    closed: set[str] = set()
    for r in records:
        t, d = r["type"], r.get("data") or {}
        if t in (RecordType.ESCALATION_OPENED, RecordType.ESCALATED):
            if open_ is not None:
                closed.add(open_["pause_id"])
            legacy: PauseHead | None = (
                None if isinstance(d.get("pending"), dict) else {"pause_id": d["pause_id"], "legacy": True}
            )
            open_ = legacy or pending_of(r)
        elif open_ is None:
            continue
        elif (
            t == RecordType.RUN_FINISHED
            or (t in (RecordType.DECISION, RecordType.ESCALATION_DROPPED) and d.get("pause_id") == open_["pause_id"])
            or (
                t == RecordType.RUN_RESUMED
                and d.get("pause_id") == open_["pause_id"]
                and "legacy" not in open_
                and open_["paused_reason"] in NO_DECISION_REASONS
            )
        ):
            closed.add(open_["pause_id"])
            open_ = None
    return open_, closed
