"""The PostgreSQL store's lease (spec §5, §10): a lease row (holder, generation, expiry) that fences a replaced
writer in the same transaction as its dispatch, and a session advisory lock that tells a live holder from a dead one."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid

import psycopg

from openadapt_flow.errors import RefusedError
from openadapt_flow.store.lease import LeaseInfo, LeaseLost, boot_id, owner_alive, process_start_time
from openadapt_flow.store.postgres.connector import PostgresConnector, RunRow

_LEASE_INFO = (
    "SELECT host, pid, start_time, boot_id, to_char(heartbeat_at AT TIME ZONE 'UTC', "
    "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), extract(epoch FROM now() - heartbeat_at)::float8, generation, holder, "
    "expires_at <= now(), ttl_s FROM flow_leases WHERE run = %s"
)

_TAKE = """
INSERT INTO flow_leases (run, holder, generation, ttl_s, expires_at, heartbeat_at, host, pid, start_time, boot_id)
VALUES (%(run)s, %(holder)s, 1, %(ttl)s, now() + make_interval(secs => %(ttl)s), now(), %(host)s, %(pid)s, %(start)s, %(boot)s)
ON CONFLICT (run) DO UPDATE SET holder = EXCLUDED.holder, generation = flow_leases.generation + 1, ttl_s = EXCLUDED.ttl_s,
    expires_at = EXCLUDED.expires_at, heartbeat_at = EXCLUDED.heartbeat_at, host = EXCLUDED.host, pid = EXCLUDED.pid,
    start_time = EXCLUDED.start_time, boot_id = EXCLUDED.boot_id
WHERE flow_leases.generation = %(seen)s
RETURNING generation
"""

_RENEW = (
    "UPDATE flow_leases SET heartbeat_at = now(), expires_at = now() + make_interval(secs => ttl_s) "
    "WHERE run = %s AND generation = %s AND holder = %s AND expires_at > now()"
)


def _clock() -> float:
    """Seconds on a clock that keeps counting while this process is stopped and while its machine is suspended
    (Linux's CLOCK_BOOTTIME; the monotonic clock elsewhere): the lease's own view of its expiry must not stand still
    while its holder does."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic()


def owner_lock_key(namespace: int, run: int) -> tuple[int, int]:
    """The run's advisory-lock key: the store's namespace (its flow_runs table's oid: advisory locks are per database,
    and two stores may share one in different schemas) and the run's row id."""
    return namespace % 2**31, run % 2**31


def try_owner_lock(conn: psycopg.Connection, namespace: int, run: int) -> bool:
    """Take the run's owner lock (a session advisory lock: the server frees it when the session ends) without waiting."""
    row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", owner_lock_key(namespace, run)).fetchone()
    return bool(row and row[0])


def lease_row(conn: psycopg.Connection, run: int) -> tuple[LeaseInfo, str | None, bool, float] | None:
    """The lease row as (LeaseInfo, holder, expired, ttl_s). Heartbeat ages are the server's, mapped onto this
    host's clock, so a reader compares like with like whatever the hosts' clocks say."""
    row = conn.execute(_LEASE_INFO, (run,)).fetchone()
    if row is None:
        return None
    host, pid, start, boot, at, age, gen, holder, expired, ttl = row
    info = LeaseInfo(
        schema_="openadapt-flow/lease@1",
        host=host,
        pid=pid,
        start_time=start,
        boot_id=boot,
        heartbeat_at=at,
        heartbeat_epoch=time.time() - age,
        generation=gen,
    )
    return info, holder, bool(expired), float(ttl)


class PostgresLease:
    """A run's owner: the lease row (holder token, generation, expiry) plus a session advisory lock that tells a live
    holder's connection from a dead one. A holder that stalls past its expiry (SIGSTOP, partition) is taken over
    without its lock, and the generation it read no longer admits its dispatches."""

    def __init__(self, run: RunRow, db: PostgresConnector, ttl_s: float = 30.0) -> None:
        self._run = run
        self._db = db
        self.ttl_s = ttl_s
        self.generation = 0
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._conn: psycopg.Connection | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # this process's own view, for the guard before every input: when the row's expiry was last pushed forward
        # (_clock(), read before the statement: never later than the server's) and whether a renewal was refused
        self._renewed_at = float("-inf")
        self._refused = False

    def acquire(self, wait_s: float = 0.0) -> "PostgresLease":
        store, rid = self._db, self._run.id(create=True)
        conn = store.connect()
        deadline = time.monotonic() + wait_s
        while True:
            locked = try_owner_lock(conn, store.lock_ns, rid)
            seen = lease_row(conn, rid)
            if self._may_take(locked, seen):
                break
            if time.monotonic() >= deadline:
                conn.close()
                who = f" (pid {seen[0].pid} on {seen[0].host})" if seen else ""
                raise RefusedError(f"{self._run.ref}: run is owned by a live process{who}; refusing")
            if locked:
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", owner_lock_key(store.lock_ns, rid))
            self._stop.wait(0.02)  # polling: an advisory lock has no timed wait that leaves the session usable
        pid = os.getpid()
        taking = _clock()
        got = conn.execute(
            _TAKE,
            {
                "run": rid,
                "holder": self.holder,
                "ttl": self.ttl_s,
                "host": socket.gethostname(),
                "pid": pid,
                "start": process_start_time(pid),
                "boot": boot_id(),
                "seen": seen[0].generation if seen else -1,
            },
        ).fetchone()
        if got is None:  # another process took it between our read and our write: exactly one wins
            conn.close()
            raise RefusedError(f"{self._run.ref}: run was just taken over by another process; refusing")
        self.generation, self._conn, self._renewed_at = int(got[0]), conn, taking
        store.register_lease(self._run, self)
        return self

    @staticmethod
    def _may_take(locked: bool, seen: tuple[LeaseInfo, str | None, bool, float] | None) -> bool:
        """With the lock, the previous holder's session is gone: take over unless its row names a process that is
        plausibly alive (another host with a fresh heartbeat). Without it, only an expired lease of a holder that
        stalled is taken — a released one (no holder) whose lock is held is being taken by a live session right now:
        wait for it, or two commands started at once race to the row and one is refused after the other's milliseconds."""
        if seen is None:
            return locked
        info, holder, expired, ttl = seen
        if expired:
            return locked or holder is not None
        return locked and (holder is None or not owner_alive(info, ttl))

    def start_heartbeat(self) -> None:
        interval = max(0.2, self.ttl_s / 3)
        conn, rid = self._conn, self._run.id()

        def beat() -> None:
            while not self._stop.wait(interval):
                try:
                    renewing = _clock()
                    if conn is not None and conn.execute(_RENEW, (rid, self.generation, self.holder)).rowcount == 0:
                        self._refused = True
                        return  # replaced or expired: never resurrected; the next input is fenced
                    self._renewed_at = renewing
                except psycopg.Error:
                    pass  # a missed heartbeat only makes the lease look older

        self._thread = threading.Thread(target=beat, name="lease-heartbeat", daemon=True)
        self._thread.start()

    def still_owner(self) -> bool:
        row = self._db.one("SELECT generation FROM flow_leases WHERE run = %s", (self._run.id(),))
        return row is not None and row[0] == self.generation

    def fence(self) -> None:
        """Before any input: stop if the lease was replaced (another generation) or has expired."""
        row = self._db.one(
            "SELECT generation, holder, expires_at > now() FROM flow_leases WHERE run = %s", (self._run.id(),)
        )
        if row is None or row[0] != self.generation or row[1] != self.holder:
            raise LeaseLost(
                f"{self._run.ref}: lease generation {self.generation} was replaced; this process must not act"
            )
        if not row[2]:
            raise LeaseLost(
                f"{self._run.ref}: lease generation {self.generation} expired (no heartbeat within "
                f"{self.ttl_s:.0f}s); this process must not act"
            )

    def guard(self) -> None:
        """Before every input call, without a round trip: stop if a renewal was refused (replaced, or expired on the
        server) or no renewal has pushed the expiry past now — a process frozen past its TTL stops here on waking,
        before its heartbeat could even ask."""
        if self._refused:
            raise LeaseLost(
                f"{self._run.ref}: lease generation {self.generation} was replaced or expired; "
                "this process must not act"
            )
        if _clock() - self._renewed_at > self.ttl_s:
            raise LeaseLost(
                f"{self._run.ref}: lease generation {self.generation} expired (not renewed within "
                f"{self.ttl_s:.0f}s); this process must not act"
            )

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        conn, self._conn = self._conn, None
        self._db.forget_lease(self._run, self)
        if conn is None:
            return
        try:
            conn.execute(
                "UPDATE flow_leases SET holder = NULL, expires_at = now() WHERE run = %s AND generation = %s "
                "AND holder = %s",
                (self._run.id(), self.generation, self.holder),
            )
            conn.execute("SELECT pg_advisory_unlock(%s, %s)", owner_lock_key(self._db.lock_ns, self._run.id()))
        except psycopg.Error:
            pass  # the row expires on its own; closing the session frees the lock
        finally:
            conn.close()
