"""Named crash points and injected I/O faults, for the crash-test matrix (tests/crash/) and the full-disk suite.

When the environment variable FLOW_CRASH_AT names a point (optionally
`point@step-id`; journal points are `after:<record type>`, start-up points
`start:<stage>`), the process SIGKILLs itself there — the most abrupt death a
run can suffer, at an exact place in the write-ahead protocol. A test that
runs commands in its own process on the memory store installs a kill handler
(`kill_handler`) that stands in for the SIGKILL (tests/support/memcrash.py).

FLOW_IO_FAULT names write points (comma-separated shell patterns: `journal`,
`journal:fsync`, `checkpoint.json`, `state.json`, `pending_escalation.json`,
`frames/*`, `report*`, `manifest.json`, `lease.json`…) where a write raises
OSError(ENOSPC) (FLOW_IO_FAULT_ERRNO=EIO for an I/O error), after skipping the
first FLOW_IO_FAULT_SKIP matches. With FLOW_IO_FAULT_STICKY=1 the first fault
fills the disk: every later write point fails too. Unset (always in
production) each costs one dict lookup.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

ENV = "FLOW_CRASH_AT"
SIGNAL_ENV = "FLOW_CRASH_SIGNAL"  # TERM: SIGTERM instead (a graceful stop); STOP: SIGSTOP (a host frozen right there)
IO_ENV = "FLOW_IO_FAULT"

_io = {"seen": 0, "full": False}
_kill: list[Callable[[str], None]] = []  # the innermost kill handler last


@contextmanager
def kill_handler(handler: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, a SIGKILL crash point calls `handler(point)` instead of killing the process; the
    handler must not return (it raises a BaseException that nothing in the runtime catches)."""
    _kill.append(handler)
    try:
        yield
    finally:
        _kill.remove(handler)


def crash_point(name: str, step: str | None = None) -> None:
    want = os.environ.get(ENV)
    if not want:
        return
    point, _, for_step = want.partition("@")
    if point == name and (not for_step or for_step == step):
        how = os.environ.get(SIGNAL_ENV)
        sig = signal.SIGTERM if how == "TERM" else signal.SIGSTOP if how == "STOP" else signal.SIGKILL
        if sig == signal.SIGKILL and _kill:
            _kill[-1](want)
        if sig == signal.SIGSTOP:
            # A SIGSTOP sent to the process is taken by its main thread, which stops the others when it next runs: on a
            # loaded machine the thread at the crash point ran on for milliseconds, journaling the next step's records
            # (measured: up to its `save` step's effect baseline). Sent to this thread, it stops here, before returning.
            signal.pthread_kill(threading.get_ident(), sig)
            return
        os.kill(os.getpid(), sig)


def io_fault(point: str) -> None:
    """Raise the injected OSError at write point `point` when FLOW_IO_FAULT says so (see the module docstring)."""
    want = os.environ.get(IO_ENV)
    if not want:
        return
    if not _io["full"]:
        if not any(fnmatch.fnmatchcase(point, pat.strip()) for pat in want.split(",")):
            return
        _io["seen"] += 1
        if _io["seen"] <= int(os.environ.get("FLOW_IO_FAULT_SKIP", "0")):
            return
        _io["full"] = os.environ.get("FLOW_IO_FAULT_STICKY") == "1"
    code = getattr(errno, os.environ.get("FLOW_IO_FAULT_ERRNO", "ENOSPC"))
    raise OSError(code, f"{os.strerror(code)} (injected at {point})")
