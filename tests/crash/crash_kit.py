"""The crash matrices' `kit`: one desk per store, the same cases on each (SPEC §18: every store keeps every guarantee).

filesystem: the real demo app on Xvnc, each `flow` a forked (or spawned) process SIGKILLed at its point
(crash_support.Desktop); memory: the app's recorded fixture, each `flow` a command of this process killed by the
store's kill handler (tests/support/memcrash.py MemoryDesk); postgres: the filesystem desk's processes with their runs
in a schema of the session's PostgreSQL server (pgcrash_support.PgDesk).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.crash.pgcrash_support import PgDesk
from tests.support.memcrash import MemoryDesk

STORES = ["filesystem", "memory", "postgres"]


@pytest.fixture(scope="module", params=STORES)
def kit(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The crash matrices' desk on each store (the module's desktop and, on postgres, a schema of its own)."""
    yield from desk_on(request.param, request, tmp_path_factory)


@pytest.fixture(scope="module")
def pg_kit(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The desk on the PostgreSQL store only (test_crash_matrix_pg.py: the demo matrix there, in a file of its own so
    that `--dist loadfile` runs it beside the other matrices)."""
    yield from desk_on("postgres", request, tmp_path_factory)


def desk_on(store: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if store == "filesystem":
        yield request.getfixturevalue("desk")
        return
    mp = pytest.MonkeyPatch()
    try:
        if store == "postgres":
            yield PgDesk(
                request.getfixturevalue("desk"),
                request.getfixturevalue("pg_server"),
                f"crash_{uuid.uuid4().hex[:12]}",
                mp,
            )
        else:
            yield MemoryDesk(tmp_path_factory.mktemp("crash-memory"), mp)
    finally:
        mp.undo()
