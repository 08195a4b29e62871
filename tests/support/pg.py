"""PostgreSQL for tests: the package's throwaway server (openadapt_flow/bench/pgserver.py, which `make bench` also
uses) as a session fixture, and a store spec on a fresh schema of it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from openadapt_flow.bench.pgserver import SUPERUSER, PgServer, pg_bindir, schema_spec, start_pg, why_not_available

__all__ = [
    "SUPERUSER",
    "PgServer",
    "pg_bindir",
    "pg_server",
    "running_pg",
    "start_pg",
    "store_spec",
    "why_not_available",
]


@contextmanager
def running_pg() -> Iterator[PgServer]:
    """A throwaway server, stopped on the way out."""
    server = start_pg()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One throwaway server per test session (per xdist worker); tests import this fixture by name."""
    with running_pg() as server:
        yield server


def store_spec(
    server: PgServer, schema: str, monkeypatch: pytest.MonkeyPatch | None = None, *, migrated: bool = True
) -> str:
    """A `postgresql://…` store spec (no password: a store URL never carries one) on a new, empty schema of the server's
    database (its search_path), migrated unless told otherwise. With `monkeypatch`, PGPASSWORD is set for the test."""
    spec = schema_spec(server, schema, migrated=migrated)
    if monkeypatch is not None:
        monkeypatch.setenv("PGPASSWORD", server.password)
    return spec
