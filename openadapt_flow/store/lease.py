"""What every store's lease shares: the holder it names (LeaseInfo: host, pid, boot, heartbeat, fencing generation),
how a holder is judged alive, and LeaseLost. The filesystem's lease is store/fs/lease.py."""

from __future__ import annotations

import json
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from openadapt_flow.errors import RunSignal

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
        if self.host == socket.gethostname() and self.boot_id == boot_id() and self.start_time is not None:
            return process_start_time(self.pid) == self.start_time
        return True  # another host, or no start time to compare (Windows): a fresh heartbeat is alive


class LeaseLost(RunSignal):
    """Another process took the run over: this one must stop at once, writing nothing more.

    A RunSignal (a BaseException) so no handler meant for ordinary errors swallows it.
    """

    exit_code = 6
