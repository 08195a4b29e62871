"""One owner per run directory: an OS lock plus `lease.json` with a heartbeat and a fencing generation."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from openadapt_flow.errors import RefusedError
from openadapt_flow.store.atomic import StorageFault, write_json_atomic
from openadapt_flow.store.filelock import try_lock_exclusive
from openadapt_flow.store.filelock import unlock as unlock_fd
from openadapt_flow.store.lease import LEASE, LeaseLost, held_elsewhere, holder_here, read_lease

LOCK = ".lock"


class Lease:
    """Held by the process that runs (or resumes) a run; heartbeats until released."""

    def __init__(self, run_dir: Path, ttl_s: float = 30.0) -> None:
        self.run_dir = run_dir
        self.ttl_s = ttl_s
        self.generation = 0
        self._fd = -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, wait_s: float = 0.0) -> "Lease":
        """Take the OS lock (RefusedError if a live process holds it for `wait_s`) and bump the generation.

        Short commands (`approve`, `answer`, `signal`) wait a few seconds so that two of them started at the same
        instant are serialised instead of one being refused for the other's milliseconds."""
        fd = os.open(self.run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait_s
        while not try_lock_exclusive(fd):
            if time.monotonic() < deadline:
                self._stop.wait(0.02)  # polling the lock: neither flock nor msvcrt has a timed wait
                continue
            os.close(fd)
            info = read_lease(self.run_dir)
            who = f" (pid {info.pid} on {info.host})" if info else ""
            raise RefusedError(f"{self.run_dir}: run is owned by a live process{who}; refusing") from None
        prev = read_lease(self.run_dir)
        if prev is not None and held_elsewhere(
            prev, self.ttl_s
        ):  # a live owner on another host: the lock is local only
            unlock_fd(fd)
            os.close(fd)
            age = time.time() - prev.heartbeat_epoch
            raise RefusedError(
                f"{self.run_dir}: run is owned by pid {prev.pid} on {prev.host} (heartbeat {age:.0f}s ago, "
                f"lease TTL {self.ttl_s:.0f}s); refusing"
            )
        self._fd = fd
        self.generation = (prev.generation if prev else 0) + 1
        try:
            self._write()
        except StorageFault:
            self.release()
            raise
        return self

    def _write(self) -> None:
        write_json_atomic(self.run_dir / LEASE, holder_here(self.generation).model_dump(by_alias=True))

    def start_heartbeat(self) -> None:
        interval = max(0.5, self.ttl_s / 3)

        def beat() -> None:
            while not self._stop.wait(interval):
                try:
                    if self.still_owner():
                        self._write()
                except (OSError, StorageFault):
                    pass  # a missed heartbeat only makes the lease look older

        self._thread = threading.Thread(target=beat, name="lease-heartbeat", daemon=True)
        self._thread.start()

    def still_owner(self) -> bool:
        info = read_lease(self.run_dir)
        return info is not None and info.generation == self.generation

    def fence(self) -> None:
        """Before any input: stop if another process took the run over (its generation replaced ours)."""
        if not self.still_owner():
            raise LeaseLost(
                f"{self.run_dir}: lease generation {self.generation} was replaced; this process must not act"
            )

    def guard(self) -> None:
        """Before every input call: the fence (one small file read). Another process on this host cannot take the
        run while this one holds the OS lock; one on another host replaces the generation, seen here."""
        self.fence()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._fd >= 0:
            unlock_fd(self._fd)
            os.close(self._fd)
            self._fd = -1


def try_lock(run_dir: Path) -> int | None:
    """Take the run's OS lock without waiting; the fd, or None if a live process holds it."""
    fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    if try_lock_exclusive(fd):
        return fd
    os.close(fd)
    return None


def unlock(fd: int) -> None:
    unlock_fd(fd)
    os.close(fd)
