"""The run store (spec §18): one format, three small dialects.

The format lives once, at this package's top level (the record types themselves are openadapt_flow/records/, below
the store): the journal's chain and its one writer (journal.py), the seal (seal.py), the checkpoint and ledger rules (checkpoint.py,
ledger.py), the lease's holder (lease.py), a run's records by name (layout.py), the store protocols (base.py) and the
document-run base the memory and PostgreSQL run handles share (docrun.py). Each dialect supplies only where bytes and
documents live: store/fs (run directories, the default), store/memory (`memory:`), store/postgres (`postgresql://…`).

Code outside store/ reaches a dialect through here or the selector (select.py), never by a dialect's module. The
PostgreSQL names are imported on first use: the driver costs every `flow` start ~150 ms, and few stores need it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.base import JournalWriter, RunHandle, RunLease, RunStore
from openadapt_flow.store.frames import FrameWriter
from openadapt_flow.store.fs import (
    EXPORT_MARK,
    FilesystemStore,
    Journal,
    Lease,
    RunDir,
    check_new_run_dir,
    load_journal,
    new_run_dir,
    refuse_exported,
    runs_root,
)
from openadapt_flow.store.layout import CHILDREN, MANIFEST, RUN_FILES, digest_manifest
from openadapt_flow.store.memory import PREFIX as MEMORY_PREFIX
from openadapt_flow.store.memory import MemoryContents, MemoryRun, MemoryStore
from openadapt_flow.store.postgres.spec import PREFIX as PG_PREFIX
from openadapt_flow.store.postgres.spec import check_spec, is_postgres, redact
from openadapt_flow.store.select import open_store, postgres_store, store_of_ref

if TYPE_CHECKING:
    from openadapt_flow.store.postgres.artifacts import GC_MIN_AGE_S, gc_blobs
    from openadapt_flow.store.postgres.export import export_run
    from openadapt_flow.store.postgres.jobs_schema import check_queue_schema
    from openadapt_flow.store.postgres.lease import PostgresLease
    from openadapt_flow.store.postgres.run import PostgresRun
    from openadapt_flow.store.postgres.run import run_name as pg_run_name
    from openadapt_flow.store.postgres.schema import StoreUnavailable
    from openadapt_flow.store.postgres.schema import code_version as pg_code_version
    from openadapt_flow.store.postgres.schema import connect as pg_connect
    from openadapt_flow.store.postgres.schema import migrate as pg_migrate
    from openadapt_flow.store.postgres.schema import migrations as pg_migrations
    from openadapt_flow.store.postgres.store import PostgresStore

__all__ = [
    "CHILDREN",
    "EXPORT_MARK",
    "GC_MIN_AGE_S",
    "MANIFEST",
    "MEMORY_PREFIX",
    "PG_PREFIX",
    "RUN_FILES",
    "FilesystemStore",
    "FrameWriter",
    "Journal",
    "JournalWriter",
    "Lease",
    "MemoryContents",
    "MemoryRun",
    "MemoryStore",
    "PostgresLease",
    "PostgresRun",
    "PostgresStore",
    "RunDir",
    "RunHandle",
    "RunLease",
    "RunStore",
    "StorageFault",
    "StoreUnavailable",
    "check_new_run_dir",
    "check_queue_schema",
    "check_spec",
    "digest_manifest",
    "export_run",
    "gc_blobs",
    "is_postgres",
    "load_journal",
    "new_run_dir",
    "open_store",
    "pg_code_version",
    "pg_connect",
    "pg_migrate",
    "pg_migrations",
    "pg_run_name",
    "postgres_store",
    "redact",
    "refuse_exported",
    "runs_root",
    "store_of_ref",
]

# name here -> (module under store/postgres/, its name there)
_POSTGRES = {
    "GC_MIN_AGE_S": ("artifacts", "GC_MIN_AGE_S"),
    "gc_blobs": ("artifacts", "gc_blobs"),
    "export_run": ("export", "export_run"),
    "PostgresLease": ("lease", "PostgresLease"),
    "check_queue_schema": ("jobs_schema", "check_queue_schema"),
    "PostgresRun": ("run", "PostgresRun"),
    "pg_run_name": ("run", "run_name"),
    "pg_code_version": ("schema", "code_version"),
    "pg_connect": ("schema", "connect"),
    "pg_migrate": ("schema", "migrate"),
    "pg_migrations": ("schema", "migrations"),
    "StoreUnavailable": ("schema", "StoreUnavailable"),
    "PostgresStore": ("store", "PostgresStore"),
}


def __getattr__(name: str) -> Any:
    if name not in _POSTGRES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _POSTGRES[name]
    return getattr(importlib.import_module(f"openadapt_flow.store.postgres.{module}"), attr)
