"""The run's append-only, hash-chained write-ahead log (`journal.jsonl`).

Each line is `{seq, ts, type, step, data, prev_hash, hash}`; `hash` is an
HMAC-SHA256 (installation key) over the record without `hash`, so an edit of
any line breaks the chain from there on. Records whose loss would change what
resume does are fsync'd before `append` returns.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import Any

from openadapt_flow.errors import RefusedError
from openadapt_flow.store.atomic import StorageFault, is_storage_error
from openadapt_flow.store.faults import crash_point, io_fault

GENESIS = "0" * 64
JOURNAL_FILE = "journal.jsonl"

# Records that must be durable before the caller goes on (spec §5).
FSYNC_TYPES = frozenset(
    {"run_started", "action_dispatched", "step_verified", "halted", "run_finished", "paused", "interrupted", "decision", "run_resumed",
     "escalation_opened", "escalated", "escalation_dropped"}
)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _canonical(rec: dict[str, Any]) -> bytes:
    return json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def record_hash(key: bytes, rec: dict[str, Any]) -> str:
    body = {k: v for k, v in rec.items() if k != "hash"}
    return hmac.new(key, _canonical(body), hashlib.sha256).hexdigest()


@dataclass
class LoadResult:
    records: list[dict[str, Any]]
    truncated_bytes: int  # size of a torn tail that was cut off (0 if none)


def verify_chain(raw: bytes, key: bytes, where: str) -> tuple[list[dict[str, Any]], int, int]:
    """Parse and verify the chain of a journal's bytes: (records, length of the whole records, torn tail length).

    A torn last line is dropped; any other break raises RefusedError naming the first bad seq. Every store reads its
    journal through here, so the chain is checked the same way wherever records live."""
    lines = raw.split(b"\n")
    tail = lines.pop()  # bytes after the last newline: a torn write if non-empty
    records: list[dict[str, Any]] = []
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
            raise RefusedError(f"{where}: journal line {i + 1} is not a valid record (seq {len(records) + 1}); refusing") from None
        seq = len(records) + 1
        if rec.get("seq") != seq or rec.get("prev_hash") != prev or rec.get("hash") != record_hash(key, rec):
            raise RefusedError(f"{where}: journal chain broken at seq {seq} (edited, reordered or foreign record); refusing")
        prev = rec["hash"]
        records.append(rec)
        good_len += len(line) + 1
    return records, good_len, torn


def load_journal(path: Path, key: bytes, *, repair: bool = False) -> LoadResult:
    """Read and verify the chain. A torn last line is dropped (and cut from the file if `repair`).

    Any other break raises RefusedError naming the first bad seq.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RefusedError(f"{path}: journal not found") from None
    records, good_len, torn = verify_chain(raw, key, str(path))
    if torn and repair:
        with open(path, "r+b") as f:
            f.truncate(good_len)
            os.fsync(f.fileno())
    return LoadResult(records, torn)


def make_record(key: bytes, seq: int, prev_hash: str, type_: str, step: str | None, data: dict[str, Any] | None
                ) -> tuple[dict[str, Any], bytes]:
    """The next chained record and its journal line (every store writes the same bytes)."""
    rec: dict[str, Any] = {"seq": seq, "ts": now_iso(), "type": type_, "step": step, "data": data or {}, "prev_hash": prev_hash}
    rec["hash"] = record_hash(key, rec)
    return rec, json.dumps(rec, ensure_ascii=False, separators=(",", ":"), default=str).encode() + b"\n"


def parse_records(raw: bytes) -> list[dict[str, Any]]:
    """Whole records in order, unverified."""
    out: list[dict[str, Any]] = []
    for line in raw.split(b"\n"):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


class Journal:
    """Appends chained records; one writer per run (the lease owner)."""

    def __init__(self, path: Path, key: bytes, records: list[dict[str, Any]] | None = None) -> None:
        self.path = path
        self.key = key
        recs = records or []
        self.seq = recs[-1]["seq"] if recs else 0
        self.last_hash = recs[-1]["hash"] if recs else GENESIS
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise (StorageFault(str(path), e) if is_storage_error(e) else e) from None
        self._size = os.fstat(self._fd).st_size  # the end of the last whole record
        self._broken: OSError | None = None
        self.observers: list[Callable[[dict[str, Any]], None]] = []  # e.g. budgets counting records
        self.last_of: dict[str, dict[str, Any]] = {}  # the last record of each type this writer appended

    @classmethod
    def open_existing(cls, path: Path, key: bytes) -> tuple["Journal", list[dict[str, Any]]]:
        result = load_journal(path, key, repair=True)
        return cls(path, key, result.records), result.records

    def append(self, type_: str, step: str | None = None, data: dict[str, Any] | None = None, *, sync: bool | None = None) -> dict[str, Any]:
        rec, line = make_record(self.key, self.seq + 1, self.last_hash, type_, step, data)
        self._write_whole(line, sync if sync is not None else type_ in FSYNC_TYPES)
        self.seq = rec["seq"]
        self.last_hash = rec["hash"]
        self.last_of[type_] = rec
        for observe in self.observers:
            observe(rec)
        crash_point("after:" + type_, step)
        return rec

    def _write_whole(self, line: bytes, sync: bool) -> None:
        """Append one whole record or none: on a full disk or an I/O error the file is cut back to the last whole
        record (a later append never follows a torn line) and StorageFault stops the run (spec §6)."""
        if self._broken is not None:
            raise StorageFault(str(self.path), self._broken)
        try:
            io_fault("journal")
            done = 0
            while done < len(line):
                done += os.write(self._fd, line[done:])
            if sync:
                io_fault("journal:fsync")
                os.fsync(self._fd)
        except OSError as e:
            if not is_storage_error(e):
                raise
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                self._broken = e  # a torn tail may remain: load truncates it; nothing more is appended after it
            raise StorageFault(str(self.path), e) from None
        self._size += len(line)

    def sync(self) -> None:
        """Make every record appended so far durable (before a seal names the journal's end)."""
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            except OSError as e:
                raise (StorageFault(str(self.path), e) if is_storage_error(e) else e) from None

    def close(self) -> None:
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            except OSError as e:
                if not is_storage_error(e):
                    raise
            finally:
                os.close(self._fd)
                self._fd = -1


def read_records(path: Path) -> list[dict[str, Any]]:
    """Whole records in order, unverified (for views such as reports; decisions use load_journal)."""
    try:
        return parse_records(path.read_bytes())
    except FileNotFoundError:
        return []
