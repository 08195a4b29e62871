"""CPU accounting for the fleet bench, read from /proc: processes' user+sys seconds, and the machine's busy share."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on: the name may hold spaces


def cpu_s(pid: int, children: bool = False) -> float:
    """user+sys seconds of `pid` so far (with `children`, also of its children it has waited for)."""
    f = _stat(pid)
    if f is None:
        return 0.0
    ticks = int(f[11]) + int(f[12]) + ((int(f[13]) + int(f[14])) if children else 0)
    return ticks / TICK


def tree_cpu_s(root: int) -> float:
    """user+sys seconds of a server (PostgreSQL's postmaster): its own, its exited children's (it reaps them: its
    backends and their connections) and its live children's."""
    total = cpu_s(root, children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            f = _stat(int(entry.name))
            if f is not None and int(f[1]) == root:
                total += cpu_s(int(entry.name))
    return total


@dataclass
class MachineCpu:
    """The machine's CPU ticks so far (all cores): busy (not idle, not iowait) and total."""

    busy: int
    total: int

    @classmethod
    def now(cls) -> "MachineCpu":
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = fields[3] + fields[4]
        return cls(sum(fields) - idle, sum(fields))

    def busy_share(self, since: "MachineCpu") -> float:
        """The share (0..1) of all cores' time that was busy since `since`."""
        return (self.busy - since.busy) / max(1, self.total - since.total)
