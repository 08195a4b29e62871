"""procrastinate's own schema in the PostgreSQL store (spec §19): applied by `flow store migrate` with migration 0003,
from the `schema.sql` shipped inside the installed procrastinate package, and pinned.

procrastinate versions its schema by the migration files it ships (`procrastinate/sql/migrations/NN.NN.NN_NN_*.sql`);
its `schema.sql` is the schema after the newest of them. That version is recorded in `flow_queue_schema` when the
schema is applied, and a fleet worker or `flow submit` whose installed procrastinate expects another is refused with
one line (exit 6): a queue half-read by a newer engine is never guessed at.

The package's files are located without importing procrastinate (the store stays cheap to open).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import psycopg

from openadapt_flow.errors import RefusedError

ENGINE = "procrastinate"
QUEUE_MIGRATION = 3  # the run store's migration that brings the fleet's tables; procrastinate's schema comes with it


def _sql_dir() -> Path:
    spec = importlib.util.find_spec(ENGINE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("procrastinate is missing from this installation (a dependency of openadapt-flow)")
    return Path(list(spec.submodule_search_locations)[0]) / "sql"


def engine_version() -> str:
    """The schema version the installed procrastinate expects: the name of the newest migration it ships (its
    schema.sql is the schema after it), e.g. `03.04.00_50`."""
    names = [
        m.group(1)
        for p in (_sql_dir() / "migrations").glob("*.sql")
        if (m := re.match(r"(\d\d\.\d\d\.\d\d_\d\d)_", p.name))
    ]
    if not names:
        raise RuntimeError(f"{_sql_dir()}/migrations has no migrations: a broken procrastinate installation")
    return max(names)


def apply_queue_schema(conn: psycopg.Connection) -> None:
    """Create procrastinate's tables, types and functions (in the store's schema, by its search_path) and record their
    version. Runs inside migrate's transaction. A store whose procrastinate tables the first fleet build created (before
    this migration existed, with this same procrastinate) keeps them."""
    if conn.execute("SELECT to_regclass('procrastinate_jobs')").fetchone() == (None,):
        conn.execute((_sql_dir() / "schema.sql").read_text(encoding="utf-8").encode())
    conn.execute(
        "CREATE TABLE flow_queue_schema (engine text PRIMARY KEY, version text NOT NULL, "
        "applied_at timestamptz NOT NULL DEFAULT now())"
    )
    conn.execute("INSERT INTO flow_queue_schema (engine, version) VALUES (%s, %s)", (ENGINE, engine_version()))


def check_queue_schema(conn: psycopg.Connection, where: str) -> None:
    """Refuse (exit 6) a store whose procrastinate schema is not the one the installed procrastinate expects."""
    row = conn.execute("SELECT version FROM flow_queue_schema WHERE engine = %s", (ENGINE,)).fetchone()
    want = engine_version()
    if row is None:
        raise RefusedError(
            f"--store {where}: no procrastinate schema recorded; run `flow store migrate --store {where}`; refusing"
        )
    if row[0] != want:
        raise RefusedError(
            f"--store {where}: its procrastinate schema is {row[0]}, the installed procrastinate expects {want}; "
            f"apply procrastinate's migrations after {row[0]} (procrastinate/sql/migrations) and update "
            f"flow_queue_schema, or install the procrastinate that matches; refusing"
        )
