"""One run per desktop at a time: a worker holds a desktop by a PostgreSQL session advisory lock on its name,
so two workers (on any machines) never drive the same screen; a dead worker's session ends and frees it.

Each desktop keeps one session of its own for the worker's life (opened on first use, reopened if it broke): holding
a desktop is then one statement, not a new authenticated connection per job. The lock is released explicitly at the
end of each hold; a session that broke under a hold took its lock with it."""

from __future__ import annotations

import select
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from openadapt_flow.errors import BackendTimeout, ConnectionFailed, FlowError
from openadapt_flow.runtime.fleet import dirty
from openadapt_flow.runtime.fleet.dirty import Dirty
from openadapt_flow.runtime.fleet.targets import Target, TargetsFile
from openadapt_flow.store.lease import LeaseLost

# What a new run's start does with a dirty desktop it holds: reset it (None: at its start state now) or say why not.
Ready = Callable[[Target, Dirty], str | None]

# A worker cut off from PostgreSQL (partitioned, its host gone) must not keep its desktops locked until TCP's default
# keepalive gives up (~2 h): the server probes each desk session after 10 s idle and ends it after 3 unanswered probes
# 5 s apart, freeing the desktop in about the lease's time. Safe: a cut-off worker cannot send input anyway — every
# input needs its action_dispatched committed under a lease it no longer holds (fencing).
KEEPALIVE: dict[str, int] = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
SERVER_KEEPALIVE = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"


def desk_conninfo(spec: str) -> dict[str, str | int | None]:
    """The store's connection parameters for a desk session, with the keepalives; the spec's own server options (its
    schema's search_path) kept beside the server's keepalive settings, not replaced by them."""
    params: dict[str, str | int | None] = {**conninfo_to_dict(spec), **KEEPALIVE}
    params["options"] = f"{params.get('options') or ''} {SERVER_KEEPALIVE}".strip()
    return params


# the desktop's lock, unless it rests (no row then: a resting desktop is not locked, only passed over), and whether
# it failed before (a rest over): only then does a hold that went well have a row to clear
_TRY = """SELECT pg_try_advisory_lock(hashtext('flow-desk'), hashtext(%(n)s)),
    EXISTS (SELECT 1 FROM flow_desk_rest WHERE name = %(n)s)
FROM (SELECT 1) one WHERE NOT EXISTS (SELECT 1 FROM flow_desk_rest WHERE name = %(n)s AND rest_until > now())"""
_UNLOCK = "SELECT pg_advisory_unlock(hashtext('flow-desk'), hashtext(%s))"
_REST = """INSERT INTO flow_desk_rest AS d (name, failures, rest_until) VALUES (%(n)s, 1, now() + make_interval(secs => %(rest)s))
ON CONFLICT (name) DO UPDATE SET failures = d.failures + 1,
    rest_until = now() + make_interval(secs => least(%(rest)s * power(2, d.failures), %(max)s))"""
REST_S = 5.0  # a desktop that did not answer is left alone this long by every worker, doubling per failure in a row
REST_MAX_S = 300.0


class NoDesktopFree(FlowError):
    """Every desktop that serves the run is busy or rests: the job is retried shortly."""


class DeskLost(LeaseLost):
    """The session that held the run's desktop lock ended (the server ended it, or it broke): another worker may
    drive that desktop now, so this process sends it no more input — fenced like a lost lease."""


class Desks:
    def __init__(self, spec: str, targets: TargetsFile) -> None:
        self.spec = spec
        self.targets = targets
        self._mine: set[str] = set()
        self._sessions: dict[str, psycopg.Connection] = {}
        self._guard = threading.Lock()
        self.rest_s = REST_S
        self.say: Callable[[str], None] = lambda line: None  # the worker's log (the CLI's stderr)
        self._said: set[str] = set()

    def _session(self, name: str) -> psycopg.Connection:
        """The desktop's own session (only its holder uses it: `_mine` guards it)."""
        conn = self._sessions.get(name)
        if conn is None or conn.closed or conn.broken:
            conn = self._sessions[name] = psycopg.connect(
                make_conninfo("", **desk_conninfo(self.spec)), autocommit=True, application_name="openadapt-flow desk"
            )
        return conn

    def _try(self, name: str) -> tuple[psycopg.Connection, bool] | None:
        """The desktop's session holding its lock, and whether it failed before; None if another session holds it or
        it rests."""
        for _ in range(2):  # a session that broke while idle (server restart) is reopened once
            try:
                conn = self._session(name)
                row = conn.execute(_TRY, {"n": name}).fetchone()
                return (conn, bool(row[1])) if row is not None and row[0] else None
            except psycopg.OperationalError:
                self._sessions.pop(name, None)
        return None

    @staticmethod
    def _release(conn: psycopg.Connection, name: str) -> None:
        try:
            conn.execute(_UNLOCK, (name,))
        except psycopg.Error:
            conn.close()  # ends the session: the lock goes with it

    @contextmanager
    def hold(self, label: str | None, run: str | None = None, ready: Ready | None = None) -> Iterator[Target]:
        """A free desktop serving `label` that does not rest, held until the block ends. NoDesktopFree if none is.

        `run` (pg:NAME) marks the desktop dirty for the block (runtime/fleet/dirty.py; `ended` says how it went).
        With `ready` (a new run's start), a dirty desktop is used only once `ready` brought it back to its start
        state; one it could not is passed over, staying dirty with why. Without it (a resume: its app's state
        lives on that desktop) a dirty desktop is used as it is, and an earlier run's mark stands.

        A block that fails because the desktop did not answer (ConnectionFailed, BackendTimeout) rests it, for every
        worker: REST_S, twice as long after each failure in a row, at most REST_MAX_S, so a dead desktop is not where
        every run goes, nor where a retried start goes next. A block that ends well clears its failures."""
        unready: list[str] = []
        for target in self.targets.targets:
            if not target.serves(label):
                continue
            with self._guard:
                if target.name in self._mine:
                    continue
                self._mine.add(target.name)
            try:
                held = self._try(target.name)
                if held is not None:
                    conn, failed_before = held
                    try:
                        if run is not None:
                            why = self._prepare(conn, target, run, ready)
                            if why is not None:
                                unready.append(why)
                                continue
                        yield target
                    except (ConnectionFailed, BackendTimeout):
                        conn.execute(_REST, {"n": target.name, "rest": self.rest_s, "max": REST_MAX_S})
                        raise
                    else:
                        if failed_before:
                            conn.execute("DELETE FROM flow_desk_rest WHERE name = %s", (target.name,))
                    finally:
                        self._release(conn, target.name)
                    return
            finally:
                with self._guard:
                    self._mine.discard(target.name)
        if not any(t.serves(label) for t in self.targets.targets):  # another worker's targets may: retried too
            raise NoDesktopFree(f"no target of this worker serves {label!r}")
        raise NoDesktopFree(
            f"every desktop serving {label or 'any run'} is busy or resting" + "".join(f"; {why}" for why in unready)
        )

    def fence(self, name: str) -> Callable[[], None]:
        """What a run on the held desktop `name` calls before every input (runtime/start/fenced.py): DeskLost once
        the session holding its lock is gone. Cheap: a zero-wait poll of the idle session's socket; only when the
        server sent something (a session it ends says so, then closes) is the session asked, once."""

        def held() -> None:
            conn = self._sessions.get(name)
            if conn is None or conn.closed or conn.broken:
                raise DeskLost(
                    f"desktop {name}: the session holding its lock is gone; this process must not send it input"
                )
            try:
                if select.select([conn.fileno()], [], [], 0)[0]:
                    conn.execute("SELECT 1")
            except (psycopg.Error, OSError, ValueError):
                conn.close()
                raise DeskLost(
                    f"desktop {name}: the session holding its lock ended; this process must not send it input"
                ) from None

        return held

    def _prepare(self, conn: psycopg.Connection, target: Target, run: str, ready: Ready | None) -> str | None:
        """Mark the held desktop dirty for `run` before its first input; None, or why a new run may not use it."""
        if ready is None:
            dirty.mark_unless_dirty(conn, target.name, run, dirty.began(run))
            return None
        found = dirty.read(conn, target.name)
        if found is not None:
            why = ready(target, found)
            if why is not None:
                self._say(f"desktop {target.name} is dirty ({found.reason}): {why}")
                return f"{target.name} is dirty: {why}"
        dirty.mark(conn, target.name, run, dirty.began(run))
        return None

    def _say(self, line: str) -> None:
        """One line in the worker's log, once per distinct line (a retried start repeats it every second)."""
        with self._guard:
            if line in self._said:
                return
            self._said.add(line)
        self.say(line)

    def ended(self, name: str, run: str, state: str | None) -> None:
        """`run`, on the desktop it holds, ended `state` (None: it never began there: nothing was sent)."""
        conn = self._session(name)
        if state is None:
            dirty.unmark(conn, name, run)
        else:
            dirty.run_ended(conn, name, run, state)

    def open_sessions(self) -> None:
        """Open every desktop's session now (a worker starting up), not on its first hold."""
        for target in self.targets.targets:
            with self._guard:
                if target.name in self._mine:
                    continue
                self._mine.add(target.name)
            try:
                self._session(target.name)
            except psycopg.OperationalError:
                pass  # opened on its first hold instead
            finally:
                with self._guard:
                    self._mine.discard(target.name)

    def close(self) -> None:
        for conn in self._sessions.values():
            conn.close()
        self._sessions.clear()
