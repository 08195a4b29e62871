"""Operator records and the operator audit log, kept in the store (spec §20).

An operator record is `{"name", "role", "hash" (argon2id), "disabled", "created_at", "changed_at"}` — never a
plaintext credential. The audit log is append-only and hash-chained like the journal (each entry names the previous
entry's sha256), so an edited or removed entry breaks the chain. Hashing and checking credentials is the runtime's
job (runtime/operate/operators.py); the store only keeps the records.

The filesystem store keeps both at the runs root (`operators.json`, written atomically; `operator_audit.jsonl`,
appended and fsync'd) — never inside a run directory. The memory store keeps them in memory; PostgreSQL in
`flow_operators` / `flow_operator_audit` (migration 0002).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, runtime_checkable

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.pausedoc import OperatorRecord
from openadapt_flow.store.atomic import write_bytes_atomic
from openadapt_flow.store.filelock import held
from openadapt_flow.store.journal import now_iso

# an audit log's event, and its entry (the event's own fields between `seq`/`at` and `prev`/`hash`): open by kind
AuditEntry = dict[str, object]
OPERATORS_FILE = "operators.json"
AUDIT_FILE = "operator_audit.jsonl"
GENESIS = "0" * 64


def entry_hash(entry: AuditEntry) -> str:
    body = {k: v for k, v in entry.items() if k != "hash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def chain_entry(prev: AuditEntry | None, seq: int, event: AuditEntry) -> AuditEntry:
    """The next audit entry after `prev`: a sequence number, a time, the previous hash and its own."""
    entry: AuditEntry = {"seq": seq, "at": now_iso(), **event, "prev": prev["hash"] if prev else GENESIS}
    entry["hash"] = entry_hash(entry)
    return entry


def verify_audit(entries: list[AuditEntry], where: str) -> list[AuditEntry]:
    """The entries, or RefusedError naming the first one whose chain is broken."""
    prev = GENESIS
    for i, e in enumerate(entries):
        own = entry_hash(e)
        if e.get("prev") != prev or e.get("hash") != own or e.get("seq") != i + 1:
            raise RefusedError(f"{where}: audit entry {i + 1} breaks the hash chain (edited or removed); refusing")
        prev = own
    return entries


@runtime_checkable
class OperatorBook(Protocol):
    """A store's operators and its audit log."""

    def get(self, name: str) -> OperatorRecord | None: ...

    def put(self, record: OperatorRecord) -> None:
        """Insert or replace the operator named `record["name"]`."""

    def all(self) -> list[OperatorRecord]: ...

    def audit(self, event: AuditEntry) -> AuditEntry:
        """Append an event (`{"event": "login"|"login_failed"|"decision"|…, …}`); returns the chained entry."""

    def audit_log(self) -> list[AuditEntry]:
        """Every entry, its chain verified."""


class FileOperatorBook:
    """`operators.json` and `operator_audit.jsonl` at a runs root."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / OPERATORS_FILE
        self.audit_path = self.root / AUDIT_FILE

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with held(self.root / ".operators.lock"):
            yield

    def _load(self) -> dict[str, OperatorRecord]:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise RefusedError(f"{self.path}: unreadable operators file ({e}); refusing") from None
        return {r["name"]: r for r in doc.get("operators", [])}

    def get(self, name: str) -> OperatorRecord | None:
        return self._load().get(name)

    def put(self, record: OperatorRecord) -> None:
        with self._locked():
            ops = self._load()
            ops[record["name"]] = record
            body = {"schema": "openadapt-flow/operators@1", "operators": sorted(ops.values(), key=lambda r: r["name"])}
            write_bytes_atomic(self.path, json.dumps(body, indent=2).encode() + b"\n")
            os.chmod(self.path, 0o600)

    def all(self) -> list[OperatorRecord]:
        return sorted(self._load().values(), key=lambda r: r["name"])

    def _entries(self) -> list[AuditEntry]:
        try:
            lines = self.audit_path.read_bytes().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def audit(self, event: AuditEntry) -> AuditEntry:
        with self._locked():
            entries = self._entries()
            entry = chain_entry(entries[-1] if entries else None, len(entries) + 1, event)
            fd = os.open(self.audit_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, json.dumps(entry, sort_keys=True).encode() + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
        return entry

    def audit_log(self) -> list[AuditEntry]:
        return verify_audit(self._entries(), str(self.audit_path))


class MemoryOperatorBook:
    """Operators and audit entries in this process's memory (the memory store's)."""

    def __init__(self) -> None:
        self.ops: dict[str, OperatorRecord] = {}
        self.entries: list[AuditEntry] = []

    def get(self, name: str) -> OperatorRecord | None:
        r = self.ops.get(name)
        return r.copy() if r else None

    def put(self, record: OperatorRecord) -> None:
        self.ops[record["name"]] = record.copy()

    def all(self) -> list[OperatorRecord]:
        return [self.ops[k].copy() for k in sorted(self.ops)]

    def audit(self, event: AuditEntry) -> AuditEntry:
        entry = chain_entry(self.entries[-1] if self.entries else None, len(self.entries) + 1, event)
        self.entries.append(entry)
        return entry

    def audit_log(self) -> list[AuditEntry]:
        return verify_audit([dict(e) for e in self.entries], "memory:operator_audit")
