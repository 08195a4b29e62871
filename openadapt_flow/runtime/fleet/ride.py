"""A fleet worker rides through a PostgreSQL restart (issue 34): procrastinate's worker stops when its listener, its
heartbeat or a fetch loses the database (its listener tries one reconnect, while the server is still going down), and
returns as if asked to stop. Around it, `ride` tells a stop that was asked for (SIGTERM/SIGINT: the worker drains and
exits 0) from one that was not: then it waits for the store with a bounded backoff — one log line per attempt — and
runs the worker again once the store answers, so queued and newly submitted runs keep draining. Only a store that does
not answer for `retry_for_s` ends the worker: Unavailable, exit 75, one line (a supervisor restarts it).

Runs that were on a desktop when the connection went stopped at a safe boundary (a storage fault: INTERRUPTED); the
reconciler (runtime/fleet/jobs.py) finalises and re-queues them as it does a dead worker's."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
from procrastinate.exceptions import ConnectorException

from openadapt_flow.errors import Unavailable
from openadapt_flow.store import StoreUnavailable, redact

T = TypeVar("T")

DB_RETRY_FOR_S = 300.0  # how long a worker waits for its store to come back before it gives up (exit 75)
BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 10.0
CONNECT_TIMEOUT_S = 5  # one attempt's bound: a server that accepts no connection must not hold an attempt for minutes


class _QueueLog(logging.Handler):
    """procrastinate's own log (and asyncio's, which runs its jobs), on the worker's: a lost connection is one line (ours say what happens next), not a
    traceback; anything else it reports at ERROR keeps its traceback. Keeps why its worker stopped, for our line."""

    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__(logging.ERROR)
        self.say = say
        self.reason: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        lost = isinstance(exc, (ConnectorException, psycopg.OperationalError))
        if getattr(record, "action", None) == "side_task_failed":
            self.reason = (
                f"{getattr(record, 'task_name', 'a side task')}: {first_line(exc) if exc else record.getMessage()}"
            )
        elif lost:
            self.say(f"queue: {record.getMessage().strip().splitlines()[0]}: {first_line(exc) if exc else ''}")
        else:
            self.say(self.format(record))


def first_line(e: BaseException) -> str:
    """One line for an error; procrastinate's ConnectorException says only "Database error.": its cause says why."""
    if isinstance(e, ConnectorException) and e.__cause__ is not None:
        e = e.__cause__
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def store_answers(spec: str) -> str | None:
    """None if the store takes a connection and answers a query now, else why not (one line)."""
    try:
        with psycopg.connect(spec, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            conn.execute("SELECT 1")
        return None
    except psycopg.Error as e:
        return first_line(e)


def wait_for_store(
    spec: str, retry_for_s: float, say: Callable[[str], None], stop: threading.Event, lost_at: float
) -> bool:
    """Try the store with a doubling backoff (BACKOFF_FIRST_S … BACKOFF_MAX_S) until it answers (True), the worker is
    asked to stop (False), or `retry_for_s` has passed since `lost_at` (monotonic): Unavailable (exit 75)."""
    delay, attempt = BACKOFF_FIRST_S, 0
    while not stop.is_set():
        attempt += 1
        why = store_answers(spec)
        waited = time.monotonic() - lost_at
        if why is None:
            say(
                f"fleet worker: store {redact(spec)} answers again (attempt {attempt}, {waited:.1f}s after it was lost); "
                f"draining the queue again"
            )
            return True
        if waited >= retry_for_s:
            raise Unavailable(
                f"fleet worker: store {redact(spec)} has not answered for {waited:.0f}s ({attempt} attempts, "
                f"--db-retry-for {retry_for_s:g}s; last: {why}); giving up"
            )
        delay = min(delay, max(0.0, retry_for_s - waited))
        say(f"fleet worker: store unreachable (attempt {attempt}, {waited:.1f}s): {why}; next try in {delay:.1f}s")
        stop.wait(delay)
        delay = min(delay * 2, BACKOFF_MAX_S)
    return False


def opened(spec: str, open_: Callable[[], T], retry_for_s: float, say: Callable[[str], None]) -> T | None:
    """`open_()` once the store answers: a store that refuses connections at the worker's start (a restart under way)
    is waited for as a lost one, within the same window; None if the worker is asked to stop meanwhile."""
    lost_at: float | None = None
    while True:
        try:
            return open_()
        except StoreUnavailable as e:
            lost_at = time.monotonic() if lost_at is None else lost_at
            say(f"fleet worker: store unreachable at start ({first_line(e)}); waiting, for at most {retry_for_s:g}s")
            if not _waiting(spec, retry_for_s, say, threading.Event(), lost_at):
                return None


def ride(spec: str, drain: Callable[[], Awaitable[None]], retry_for_s: float, say: Callable[[str], None]) -> None:
    """Run `drain` (procrastinate's worker, with its own signal handlers off) until SIGTERM/SIGINT; a stop that was
    not asked for is a lost store: wait for it (wait_for_store) and drain again."""
    stop = threading.Event()
    watch = _QueueLog(say)
    queue_log, pool_log = logging.getLogger("procrastinate"), logging.getLogger("psycopg.pool")
    loop_log = logging.getLogger("asyncio")  # a job's task whose status could not be written: "never retrieved"
    queue_log.addHandler(watch)
    loop_log.addHandler(watch)
    pool_log.addHandler(logging.NullHandler())  # its reconnect attempts: ours are logged, one line each
    pool_log.propagate = False
    try:
        while not stop.is_set():
            watch.reason = None
            why = asyncio.run(_until_stopped(drain, stop, watch))
            if stop.is_set():
                return
            lost_at = time.monotonic()
            say(f"fleet worker: lost store {redact(spec)} ({why}); reconnecting, for at most {retry_for_s:g}s")
            if not _waiting(spec, retry_for_s, say, stop, lost_at):
                return
    finally:
        queue_log.removeHandler(watch)
        loop_log.removeHandler(watch)


def _waiting(spec: str, retry_for_s: float, say: Callable[[str], None], stop: threading.Event, lost_at: float) -> bool:
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s in old:
        signal.signal(s, lambda *_: stop.set())
    try:
        return wait_for_store(spec, retry_for_s, say, stop, lost_at)
    finally:
        for s, h in old.items():
            signal.signal(s, h)


async def _until_stopped(drain: Callable[[], Awaitable[None]], stop: threading.Event, watch: _QueueLog) -> str:
    """Run `drain` until it returns (why, for the log) or a signal cancels it: procrastinate's worker, cancelled, stops
    taking jobs and waits for its running ones (a graceful stop)."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(drain())

    def asked() -> None:
        stop.set()
        task.cancel()

    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, asked)
    try:
        await task
        return watch.reason or "the queue's worker stopped"
    except asyncio.CancelledError:
        if stop.is_set():
            return "stopped"
        raise
    except (ConnectorException, psycopg.OperationalError) as e:
        return watch.reason or first_line(e)
    finally:
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(s)
