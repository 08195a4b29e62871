"""The item ledger: which work item of a bundle ran in which run, kept beside the run ledger (store/ledger.py) under
the user's state dir (`FLOW_STATE_DIR`), outside every run directory and every items file.

One small file per item key, under the bundle's name (the scope: the same invoice entered by the same bundle is the
same work, whichever file lists it): `items/<bundle>/<key digest>.json`, holding every attempt at the item — the
run it started (written, fsync'd, BEFORE the run is created, so a batch killed at any point leaves the run to look
at) and, once the run stopped, the item's status. A `flow batch` holds the scope's lock for as long as it runs, so
two batches never run the same bundle's items at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openadapt_flow.errors import RefusedError
from openadapt_flow.store.atomic import make_dirs, write_json_atomic
from openadapt_flow.store.filelock import try_lock_exclusive, unlock
from openadapt_flow.store.journal import now_iso
from openadapt_flow.store.ledger import state_dir

SCHEMA = "openadapt-flow/item@1"
ITEMS_DIR = "items"
LOCK = ".batch.lock"


class Attempt(BaseModel):
    """One run of an item: written when it starts (status None), completed when the run stops."""

    model_config = ConfigDict(extra="forbid")

    run: str = Field(description="the run's reference: its directory")
    items_file: str = Field(description="the items file that listed the item")
    line: int = Field(description="the item's line in that file")
    values: str = Field(description="a digest of the item's params, to say when a later file changed them")
    started_at: str
    why: str | None = Field(default=None, description="why the item was sent again after an earlier attempt")
    reread: dict[str, Any] | None = Field(
        default=None, description="the earlier attempt's write read again: the evidence it did not land"
    )
    status: str | None = Field(default=None, description="the item's status when its run stopped; None: not known")
    reason: str | None = None
    effect: str | None = None
    finished_at: str | None = None


class ItemRecord(BaseModel):
    """Every attempt at one item of one bundle, oldest first."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["openadapt-flow/item@1"] = Field(default="openadapt-flow/item@1", alias="schema")
    scope: str = Field(description="the bundle's name")
    key: str
    attempts: list[Attempt] = Field(default_factory=list)

    @property
    def last(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None


def _slug(text: str, limit: int) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:limit] or "x"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ItemLedger:
    """The item ledger of one bundle (its scope)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self.dir = state_dir() / ITEMS_DIR / f"{_slug(scope, 60)}-{_digest(scope)[:8]}"

    def _path(self, key: str) -> Path:
        return self.dir / f"{_digest(key)[:32]}.json"

    @contextmanager
    def hold(self) -> Iterator[None]:
        """The scope's lock for the block: one batch at a time per bundle (RefusedError, exit 6, if another holds it)."""
        try:
            make_dirs(self.dir)
            fd = os.open(self.dir / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise RefusedError(f"item ledger {self.dir} is not writable ({e.strerror or e}); refusing") from None
        try:
            if not try_lock_exclusive(fd):
                raise RefusedError(
                    f"another `flow batch` is running the items of bundle {self.scope!r} (it holds "
                    f"{self.dir / LOCK}); one batch per bundle at a time; refusing"
                )
            try:
                yield
            finally:
                unlock(fd)
        finally:
            os.close(fd)

    def get(self, key: str) -> ItemRecord | None:
        path = self._path(key)
        try:
            record = ItemRecord.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError) as e:
            raise RefusedError(f"item ledger {path} is unreadable ({str(e).splitlines()[0]}); refusing") from None
        if record.key != key or record.scope != self.scope:
            raise RefusedError(f"item ledger {path} is not the entry of item {key!r}; refusing")
        return record

    def started(self, key: str, attempt: Attempt) -> None:
        """Record that `attempt`'s run is about to start (on disk before the run is created)."""
        record = self.get(key) or ItemRecord(scope=self.scope, key=key)
        record.attempts.append(attempt)
        self._write(record)

    def finished(self, key: str, status: str, reason: str | None, effect: str | None) -> None:
        """Record how the item's last attempt ended."""
        record = self.get(key)
        if record is None or record.last is None:
            raise RefusedError(f"item {key!r} has no started attempt in {self.dir}; refusing")
        record.last.status, record.last.reason, record.last.effect = status, reason, effect
        record.last.finished_at = now_iso()
        self._write(record)

    def _write(self, record: ItemRecord) -> None:
        make_dirs(self.dir)  # durable: the attempt is on disk, under a name that survives a power loss, before the run
        write_json_atomic(self._path(record.key), record.model_dump(mode="json", by_alias=True))


def values_digest(values: object) -> str:
    """A short digest of an item's params (canonical JSON), to tell a later file's changed values."""
    return _digest(json.dumps(values, sort_keys=True, separators=(",", ":"), default=str))[:16]
