"""One owner per run directory: an OS lock plus `lease.json` with a heartbeat and a fencing generation."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from openadapt_flow.errors import RefusedError, RunSignal
from openadapt_flow.store.atomic import StorageFault, write_json_atomic
from openadapt_flow.store.journal import now_iso

LEASE = "lease.json"
LOCK = ".lock"


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot), to tell a reused pid apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass
class LeaseInfo:
    host: str
    pid: int
    start_time: str | None
    boot_id: str
    heartbeat_at: str
    heartbeat_epoch: float
    generation: int

    @classmethod
    def read(cls, run_dir: Path) -> "LeaseInfo | None":
        try:
            data = json.loads((run_dir / LEASE).read_text())
            return cls(**{k: data[k] for k in cls.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def held_elsewhere(self, ttl_s: float) -> bool:
        """Named by a process on another host whose heartbeat is fresh: our OS lock cannot see it, the lease can."""
        return self.host != socket.gethostname() and time.time() - self.heartbeat_epoch <= ttl_s

    def owner_alive(self, ttl_s: float) -> bool:
        """Is the process named here plausibly still working on the run?"""
        if time.time() - self.heartbeat_epoch > ttl_s:
            return False
        if self.host == socket.gethostname() and self.boot_id == boot_id():
            return process_start_time(self.pid) == self.start_time and self.start_time is not None
        return True  # another host with a fresh heartbeat: assume alive


class LeaseLost(RunSignal):
    """Another process took the run over: this one must stop at once, writing nothing more.

    A RunSignal (a BaseException) so no handler meant for ordinary errors swallows it.
    """

    exit_code = 6


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
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    self._stop.wait(0.02)  # polling the lock: flock has no timed wait
                    continue
            os.close(fd)
            info = LeaseInfo.read(self.run_dir)
            who = f" (pid {info.pid} on {info.host})" if info else ""
            raise RefusedError(f"{self.run_dir}: run is owned by a live process{who}; refusing") from None
        prev = LeaseInfo.read(self.run_dir)
        if prev is not None and prev.held_elsewhere(self.ttl_s):  # a live owner on another host: the lock is local only
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            age = time.time() - prev.heartbeat_epoch
            raise RefusedError(f"{self.run_dir}: run is owned by pid {prev.pid} on {prev.host} (heartbeat {age:.0f}s ago, "
                               f"lease TTL {self.ttl_s:.0f}s); refusing")
        self._fd = fd
        self.generation = (prev.generation if prev else 0) + 1
        try:
            self._write()
        except StorageFault:
            self.release()
            raise
        return self

    def _write(self) -> None:
        pid = os.getpid()
        info = LeaseInfo(socket.gethostname(), pid, process_start_time(pid), boot_id(), now_iso(), time.time(), self.generation)
        write_json_atomic(self.run_dir / LEASE, {"schema": "openadapt-flow/lease@1", **asdict(info)})

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
        info = LeaseInfo.read(self.run_dir)
        return info is not None and info.generation == self.generation

    def fence(self) -> None:
        """Before any input: stop if another process took the run over (its generation replaced ours)."""
        if not self.still_owner():
            raise LeaseLost(f"{self.run_dir}: lease generation {self.generation} was replaced; this process must not act")

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1


def try_lock(run_dir: Path) -> int | None:
    """Take the run's OS lock without waiting; the fd, or None if a live process holds it."""
    fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
