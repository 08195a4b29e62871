"""The PostgreSQL store's connection spec and schema (spec §18): numbered migrations, applied by `flow store migrate`.

Migrations are SQL files shipped in `openadapt_flow/store/postgres/migrations/` named `NNNN_name.sql`, applied in order, each in
one transaction under an advisory lock (two `migrate` commands at once apply each file once). `flow_schema` records
every applied version. Migration 0003 (the fleet) first applies procrastinate's own schema, pinned by its version
(store/postgres/jobs_schema.py). A store whose schema is newer than this code is refused (exit 6), never half-read; one that is
older (or empty) is refused until it is migrated.

A spec with a password is refused before connecting (spec.check_spec).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

import psycopg

from openadapt_flow.errors import RefusedError, Unavailable, UsageError
from openadapt_flow.store.postgres.jobs_schema import QUEUE_MIGRATION, apply_queue_schema
from openadapt_flow.store.postgres.spec import check_spec, redact

MIGRATE_LOCK = 0x666C6F77  # "flow": the advisory lock key `migrate` holds while it applies files
_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS flow_schema (version integer PRIMARY KEY, name text NOT NULL, "
    "applied_at timestamptz NOT NULL DEFAULT now())"
)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


# A failed connect carries no SQLSTATE in psycopg: libpq's text says who answered. A server's answer is prefixed
# with its severity ("FATAL:  database "x" does not exist"); without one, no server answered (refused, timed out, no
# route). These server answers mean "not now", not "no": starting up, shutting down, in recovery, no free slot.
_NOT_NOW = (
    "is starting up",
    "is shutting down",
    "in recovery mode",
    "too many clients",
    "connection slots are reserved",
)


def _temporary(text: str) -> bool:
    answered = "FATAL:" in text or "ERROR:" in text
    return not answered or any(words in text for words in _NOT_NOW)


class StoreUnavailable(Unavailable):
    """The store's server does not answer now (refused, timed out, shutting down): not the input, not the run."""


def connect(spec: str) -> psycopg.Connection:
    """An autocommit connection; a failure is one line naming the redacted spec. A server that does not answer
    (refused, timed out, no route) or answers "not now" is the environment: `Unavailable`, exit 75, retry later. A
    server that answers no to what was asked (the role, the password, the database) is the input: exit 2."""
    check_spec(spec)
    try:
        return psycopg.connect(spec, autocommit=True, application_name="openadapt-flow", connect_timeout=10)
    except psycopg.Error as e:
        text = str(e).strip()  # 'connection failed: connection to server at …, port … failed: <why>\n\t<hint>'
        detail = " ".join(text.splitlines()[0].rsplit("failed: ", 1)[-1].split()) if text else type(e).__name__
        if _temporary(text):
            raise StoreUnavailable(
                f"--store {redact(spec)}: cannot connect ({detail}); nothing was run: retry later"
            ) from None
        raise UsageError(f"--store {redact(spec)}: cannot connect ({detail})") from None


def migrations() -> list[Migration]:
    """The migrations this code ships, in version order."""
    out = []
    for entry in resources.files("openadapt_flow.store.postgres.migrations").iterdir():
        m = re.fullmatch(r"(\d{4})_(\w+)\.sql", entry.name)
        if m:
            out.append(Migration(int(m.group(1)), m.group(2), entry.read_text(encoding="utf-8")))
    if not out:  # a broken installation (package data left out), never a store to judge
        raise RuntimeError("openadapt_flow/store/postgres/migrations/*.sql is missing from this installation")
    return sorted(out, key=lambda m: m.version)


def code_version() -> int:
    return max((m.version for m in migrations()), default=0)


def applied_version(conn: psycopg.Connection) -> int:
    """The newest version applied to the database (0: none, or no flow_schema table)."""
    if conn.execute("SELECT to_regclass('flow_schema')").fetchone() == (None,):
        return 0
    row = conn.execute("SELECT max(version) FROM flow_schema").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def check_schema(conn: psycopg.Connection, where: str) -> None:
    """Refuse a store this code cannot read: newer than the code, or not (fully) migrated."""
    have, know = applied_version(conn), code_version()
    if have > know:
        raise RefusedError(
            f"--store {where}: its schema is version {have}, newer than this openadapt-flow knows ({know}); "
            f"upgrade openadapt-flow; refusing"
        )
    if have < know:
        raise RefusedError(
            f"--store {where}: schema version {have}, this openadapt-flow needs {know}; run "
            f"`flow store migrate --store {where}` first; refusing"
        )


def migrate(conn: psycopg.Connection, where: str) -> list[Migration]:
    """Apply every shipped migration the database lacks, in order; the ones applied now. Idempotent."""
    done: list[Migration] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        conn.execute(_VERSION_TABLE)
        have = applied_version(conn)
        if have > code_version():
            raise RefusedError(
                f"--store {where}: its schema is version {have}, newer than this openadapt-flow knows "
                f"({code_version()}); upgrade openadapt-flow; refusing"
            )
        for m in migrations():
            if m.version > have:
                if m.version == QUEUE_MIGRATION:  # the fleet's tables stand on procrastinate's
                    apply_queue_schema(conn)
                conn.execute(m.sql.encode())
                conn.execute("INSERT INTO flow_schema (version, name) VALUES (%s, %s)", (m.version, m.name))
                done.append(m)
    return done
