"""Choosing a run store (spec §18), the one way code outside store/ reaches a dialect (store/fs, store/memory,
store/postgres): `--store` / config `runtime.store`; a directory (default `runs`), `memory:` or
`postgresql://…`; and the store a run reference names (`memory:NAME`, `pg:NAME`, else a run directory)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from openadapt_flow.errors import UsageError
from openadapt_flow.store.base import RunStore
from openadapt_flow.store.fs.store import FilesystemStore
from openadapt_flow.store.memory.store import PREFIX, MemoryStore
from openadapt_flow.store.postgres.spec import PREFIX as PG_PREFIX
from openadapt_flow.store.postgres.spec import is_postgres, redact

if TYPE_CHECKING:  # imported on first use below: the driver costs every `flow` start ~150 ms, and few stores need it
    from openadapt_flow.store.postgres.store import PostgresStore

_MEMORY = MemoryStore()  # `memory:` is one store per process: runs live as long as it does
# PostgreSQL stores this process opened, by spec: a resume or a child run in this process (its config pins the spec)
# reuses the store the command opened; the last one used answers `pg:NAME`.
_POSTGRES: dict[str, "PostgresStore"] = {}


def open_store(spec: str | None, default_root: str = "runs") -> RunStore:
    """The store named by `spec`: `memory:` (this process's), `postgresql://…`, a runs root directory, or (None)
    `default_root`."""
    if spec is None or spec == "":
        return FilesystemStore(default_root)
    if spec == PREFIX:
        return _MEMORY
    if is_postgres(spec):
        return postgres_store(spec)
    if "://" in spec or spec.startswith(PREFIX) or spec.startswith(PG_PREFIX):
        raise UsageError(f"--store {redact(spec)!r}: expected a runs directory, memory: or postgresql://…")
    return FilesystemStore(spec)


def postgres_store(spec: str) -> "PostgresStore":
    """This process's store for `spec`, opened once."""
    store = _POSTGRES.pop(spec, None)
    if store is None:
        store = importlib.import_module("openadapt_flow.store.postgres.store").PostgresStore(spec)
    _POSTGRES[spec] = store  # most recently used last
    return store


def store_of_ref(ref: str) -> RunStore:
    """The store a run reference names: `memory:NAME` this process's memory store, `pg:NAME` the PostgreSQL store this
    process opened last, anything else the filesystem (a run directory)."""
    if ref.startswith(PREFIX):
        return _MEMORY
    if ref.startswith(PG_PREFIX):
        if not _POSTGRES:
            raise UsageError(f"{ref}: a run of a PostgreSQL store; name the store with --store postgresql://…")
        return next(reversed(_POSTGRES.values()))
    return FilesystemStore()
