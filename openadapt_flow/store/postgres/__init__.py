"""The PostgreSQL store (`postgresql://…`): runs in tables, for production and many machines.

How a store and its runs are named (spec.py) is importable without the driver: every `flow` command resolves `--store`
and run references through it. Everything else is imported on first use (psycopg costs every `flow` start ~150 ms).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openadapt_flow.store.postgres.spec import PREFIX, check_spec, is_postgres, redact

if TYPE_CHECKING:
    from openadapt_flow.store.postgres.artifacts import GC_MIN_AGE_S, gc_blobs
    from openadapt_flow.store.postgres.connector import PostgresConnector
    from openadapt_flow.store.postgres.export import export_run
    from openadapt_flow.store.postgres.jobs_schema import check_queue_schema
    from openadapt_flow.store.postgres.lease import PostgresLease
    from openadapt_flow.store.postgres.run import PostgresRun, run_name
    from openadapt_flow.store.postgres.schema import code_version, connect, migrate, migrations
    from openadapt_flow.store.postgres.store import PostgresStore

__all__ = [
    "GC_MIN_AGE_S",
    "PREFIX",
    "PostgresConnector",
    "PostgresLease",
    "PostgresRun",
    "PostgresStore",
    "check_queue_schema",
    "check_spec",
    "code_version",
    "connect",
    "export_run",
    "gc_blobs",
    "is_postgres",
    "migrate",
    "migrations",
    "redact",
    "run_name",
]

_LAZY = {
    "GC_MIN_AGE_S": "artifacts",
    "gc_blobs": "artifacts",
    "PostgresConnector": "connector",
    "export_run": "export",
    "PostgresLease": "lease",
    "check_queue_schema": "jobs_schema",
    "PostgresRun": "run",
    "run_name": "run",
    "code_version": "schema",
    "connect": "schema",
    "migrate": "schema",
    "migrations": "schema",
    "PostgresStore": "store",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
