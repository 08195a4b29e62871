"""What every store's lease shares: the holder it names (records/runfiles.py's LeaseInfo, lease.json's one type: host,
pid, boot, heartbeat, fencing generation), this process as a holder, how a holder is judged alive, and LeaseLost. The
filesystem's lease is store/fs/lease.py."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from openadapt_flow.errors import RunSignal
from openadapt_flow.records.runfiles import LeaseInfo
from openadapt_flow.store.journal import now_iso

__all__ = [
    "LEASE",
    "LeaseInfo",
    "LeaseLost",
    "boot_id",
    "held_elsewhere",
    "holder_here",
    "owner_alive",
    "process_start_time",
    "read_lease",
]

LEASE = "lease.json"


def boot_id() -> str:
    if sys.platform == "win32":  # no /proc: holders on this host are judged by their heartbeat (owner_alive)
        return "unknown"
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def process_start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot), to tell a reused pid apart; None where unknown."""
    if sys.platform == "win32":
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def holder_here(generation: int, *, heartbeat_epoch: float | None = None) -> LeaseInfo:
    """This process as a run's holder (generation `generation`), its heartbeat now (or at `heartbeat_epoch`)."""
    pid = os.getpid()
    return LeaseInfo(
        schema_="openadapt-flow/lease@1",
        host=socket.gethostname(),
        pid=pid,
        start_time=process_start_time(pid),
        boot_id=boot_id(),
        heartbeat_at=now_iso(),
        heartbeat_epoch=time.time() if heartbeat_epoch is None else heartbeat_epoch,
        generation=generation,
    )


def read_lease(run_dir: Path) -> LeaseInfo | None:
    """A run directory's lease.json; None when there is none or it cannot be read as one."""
    try:
        return LeaseInfo.model_validate_json((run_dir / LEASE).read_bytes())
    except (OSError, ValidationError):
        return None


def held_elsewhere(info: LeaseInfo, ttl_s: float) -> bool:
    """Named by a process on another host whose heartbeat is fresh: our OS lock cannot see it, the lease can."""
    return info.host != socket.gethostname() and time.time() - info.heartbeat_epoch <= ttl_s


def owner_alive(info: LeaseInfo, ttl_s: float) -> bool:
    """Is the process named here plausibly still working on the run?"""
    if time.time() - info.heartbeat_epoch > ttl_s:
        return False
    if info.host == socket.gethostname() and info.boot_id == boot_id() and info.start_time is not None:
        return process_start_time(info.pid) == info.start_time
    return True  # another host, or no start time to compare (Windows): a fresh heartbeat is alive


class LeaseLost(RunSignal):
    """Another process took the run over: this one must stop at once, writing nothing more.

    A RunSignal (a BaseException) so no handler meant for ordinary errors swallows it.
    """

    exit_code = 6
