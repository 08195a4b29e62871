"""Clean and dirty desktops (spec §22): a desktop whose run did not end COMPLETED may be off its start state (a form
half filled, a row not saved), and no new run is handed to it until its bundle's reset ran there and the start state
held (runtime/fleet/desks.py judges that at the hold).

Durable by construction: a start writes the desktop's row (migration 0008, `flow_desk_dirty`) before its run's first
input and deletes it only when that run ends COMPLETED, so a run that halted, paused or failed, and a worker killed
mid-run, all leave it. Only the desktop's holder writes it (under the desk's advisory lock), besides an operator's
`flow desk clean`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from openadapt_flow.records.states import RunState

_READ = "SELECT run_ref, reason FROM flow_desk_dirty WHERE name = %s"
_MARK = """INSERT INTO flow_desk_dirty AS d (name, run_ref, reason) VALUES (%s, %s, %s)
ON CONFLICT (name) DO UPDATE SET run_ref = excluded.run_ref, reason = excluded.reason, since = now()"""
_KEEP = "INSERT INTO flow_desk_dirty (name, run_ref, reason) VALUES (%s, %s, %s) ON CONFLICT (name) DO NOTHING"
_CLEAR = "DELETE FROM flow_desk_dirty WHERE name = %s AND run_ref = %s"
_LIST = "SELECT name, run_ref, reason, since FROM flow_desk_dirty ORDER BY name"
_CLEAN = "DELETE FROM flow_desk_dirty WHERE name = %s RETURNING run_ref, reason"


class Executes(Protocol):
    """A psycopg connection or the store: anything that runs one statement."""

    def execute(self, query: Any, params: Any = ...) -> Any: ...


@dataclass(frozen=True)
class Dirty:
    """Why desktop `name` may be off its start state: the run that left it so, and how that run ended."""

    name: str
    run: str
    reason: str
    since: datetime | None = None


def began(run: str) -> str:
    return f"run {run} began on it and has not ended"


def ended(state: str, run: str) -> str:
    return f"run {run} ended {state}"


def read(conn: Executes, name: str) -> Dirty | None:
    row = conn.execute(_READ, (name,)).fetchone()
    return Dirty(name, row[0], row[1]) if row is not None else None


def mark(conn: Executes, name: str, run: str, reason: str) -> None:
    """The desktop is dirty because of `run` (replacing what was recorded before)."""
    conn.execute(_MARK, (name, run, reason))


def mark_unless_dirty(conn: Executes, name: str, run: str, reason: str) -> None:
    """The desktop is dirty because of `run`, unless it is already dirty (then the earlier cause stands)."""
    conn.execute(_KEEP, (name, run, reason))


def run_ended(conn: Executes, name: str, run: str, state: str) -> None:
    """`run` ended `state` on the desktop: COMPLETED cleans what it dirtied itself (not another run's leftovers);
    any other end leaves the desktop dirty, naming this run."""
    if state == RunState.COMPLETED.value:
        conn.execute(_CLEAR, (name, run))
    else:
        mark(conn, name, run, ended(state, run))


def unmark(conn: Executes, name: str, run: str) -> None:
    """`run` never began on the desktop (nothing was sent): take back its mark."""
    conn.execute(_CLEAR, (name, run))


def all_dirty(conn: Executes) -> list[Dirty]:
    return [Dirty(*row) for row in conn.execute(_LIST).fetchall()]


def mark_clean(conn: Executes, name: str) -> Dirty | None:
    """An operator's word that desktop `name` is back at its start state; what it was dirty with (None: it was not)."""
    row = conn.execute(_CLEAN, (name,)).fetchone()
    return Dirty(name, row[0], row[1]) if row is not None else None


def dirty_desks(spec: str) -> list[Dirty]:
    """Every dirty desktop of the fleet's store `spec` (`flow desk list`)."""
    from openadapt_flow.runtime.fleet.submit import fleet_store

    return all_dirty(fleet_store(spec).conn())


def mark_desk_clean(spec: str, name: str) -> Dirty | None:
    """`flow desk clean NAME`: what the desktop was dirty with, None if it was not."""
    from openadapt_flow.runtime.fleet.submit import fleet_store

    return mark_clean(fleet_store(spec).conn(), name)
