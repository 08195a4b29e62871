"""The run's append-only, hash-chained write-ahead log (`journal.jsonl`): its format, and the one journal writer.

Each line is `{seq, ts, type, step, data, prev_hash, hash}`; `hash` is an
HMAC-SHA256 (installation key) over the record without `hash`, so an edit of
any line breaks the chain from there on. Records whose loss would change what
resume does are made durable before `append` returns.

`JournalWriterBase.append` is the one place a record is chained, numbered, observed and crash-pointed; a store's
writer (store/fs/journal.py, store/memory/parts.py, store/postgres/journal.py) supplies only `_persist`: how one
whole line is kept.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, cast

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.states import RecordType
from openadapt_flow.store.faults import crash_point

__all__ = [
    "FSYNC_TYPES",
    "GENESIS",
    "JOURNAL_FILE",
    "JournalWriterBase",
    "LoadResult",
    "make_record",
    "now_iso",
    "parse_records",
    "record_hash",
    "verify_chain",
]

GENESIS = "0" * 64
JOURNAL_FILE = "journal.jsonl"

# Records that must be durable before the caller goes on (spec §5).
FSYNC_TYPES = frozenset(
    {
        RecordType.RUN_STARTED,
        RecordType.ACTION_DISPATCHED,
        RecordType.STEP_VERIFIED,
        RecordType.HALTED,
        RecordType.RUN_FINISHED,
        RecordType.PAUSED,
        RecordType.INTERRUPTED,
        RecordType.DECISION,
        RecordType.RUN_RESUMED,
        RecordType.ESCALATION_OPENED,
        RecordType.ESCALATED,
        RecordType.ESCALATION_DROPPED,
    }
)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _canonical(rec: Mapping[str, Any]) -> bytes:
    return json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def record_hash(key: bytes, rec: Mapping[str, Any]) -> str:
    body = {k: v for k, v in rec.items() if k != "hash"}
    return hmac.new(key, _canonical(body), hashlib.sha256).hexdigest()


@dataclass
class LoadResult:
    records: list[JournalEntry]
    truncated_bytes: int  # size of a torn tail that was cut off (0 if none)


def verify_chain(raw: bytes, key: bytes, where: str) -> tuple[list[JournalEntry], int, int]:
    """Parse and verify the chain of a journal's bytes: (records, length of the whole records, torn tail length).

    A torn last line is dropped; any other break raises RefusedError naming the first bad seq. Every store reads its
    journal through here, so the chain is checked the same way wherever records live."""
    lines = raw.split(b"\n")
    tail = lines.pop()  # bytes after the last newline: a torn write if non-empty
    records: list[JournalEntry] = []
    good_len = 0
    prev = GENESIS
    torn = len(tail)
    for i, line in enumerate(lines):
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError
        except ValueError:
            if i == len(lines) - 1 and not tail:
                torn = len(line) + 1  # last line garbled mid-write, newline included
                break
            raise RefusedError(
                f"{where}: journal line {i + 1} is not a valid record (seq {len(records) + 1}); refusing"
            ) from None
        seq = len(records) + 1
        if rec.get("seq") != seq or rec.get("prev_hash") != prev or rec.get("hash") != record_hash(key, rec):
            raise RefusedError(
                f"{where}: journal chain broken at seq {seq} (edited, reordered or foreign record); refusing"
            )
        prev = rec["hash"]
        records.append(cast(JournalEntry, rec))  # its keys are the ones just hashed
        good_len += len(line) + 1
    return records, good_len, torn


def make_record(
    key: bytes, seq: int, prev_hash: str, type_: RecordType, step: str | None, data: Mapping[str, object] | None
) -> tuple[JournalEntry, bytes]:
    """The next chained record and its journal line (every store writes the same bytes). `data` is the record type's
    own object (a TypedDict of records/stepdoc.py, or one the runtime builds): the entry keeps a copy of its keys. The
    entry's `type` is the kind's wire string (`str()` of a member is its value), so a record just written is the
    same plain dict as one read back from the journal."""
    rec: JournalEntry = {
        "seq": seq,
        "ts": now_iso(),
        "type": str(type_),
        "step": step,
        "data": dict(data) if data else {},
        "prev_hash": prev_hash,
        "hash": "",
    }
    rec["hash"] = record_hash(key, rec)  # over every key but `hash`: the placeholder is not hashed
    return rec, json.dumps(rec, ensure_ascii=False, separators=(",", ":"), default=str).encode() + b"\n"


def parse_records(raw: bytes) -> list[JournalEntry]:
    """Whole records in order, unverified (their keys are trusted as the writer's: views only, never decisions)."""
    out: list[JournalEntry] = []
    for line in raw.split(b"\n"):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(cast(JournalEntry, rec))
    return out


class JournalWriterBase:
    """Appends chained records; one writer per run (the lease owner). A store's writer persists each whole line."""

    def __init__(self, key: bytes, records: list[JournalEntry] | None = None) -> None:
        self.key = key
        self.seq: int = records[-1]["seq"] if records else 0
        self.last_hash: str = records[-1]["hash"] if records else GENESIS
        self.observers: list[Callable[[JournalEntry], None]] = []  # e.g. budgets counting records
        self.last_of: dict[str, JournalEntry] = {}  # the last record of each type this writer appended

    def append(
        self,
        type_: RecordType,
        step: str | None = None,
        data: Mapping[str, object] | None = None,
        *,
        sync: bool | None = None,
    ) -> JournalEntry:
        self._resync()
        rec, line = make_record(self.key, self.seq + 1, self.last_hash, type_, step, data)
        self._persist(rec, line, sync if sync is not None else type_ in FSYNC_TYPES)
        self.seq, self.last_hash = rec["seq"], rec["hash"]
        self.last_of[rec["type"]] = rec
        for observe in self.observers:
            observe(rec)
        crash_point(f"after:{type_}", step)
        return rec

    def _resync(self) -> None:
        """Before a record is chained: a store whose last records may have been lost since (a database that restarted)
        sets `seq` and `last_hash` back to its durable tail, so the next record chains to what was kept."""

    def _persist(self, rec: JournalEntry, line: bytes, durable: bool) -> None:
        """Keep one whole record's line (durable before returning if `durable`), or raise and keep none."""
        raise NotImplementedError

    def sync(self) -> None:
        """Make every record appended so far durable (before a seal names the journal's end)."""

    def close(self) -> None:
        """Release what the writer holds."""
