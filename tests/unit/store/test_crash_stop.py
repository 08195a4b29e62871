"""A STOP crash point (store/faults.py) freezes the thread that reaches it right there, not a few statements later.

The child reaches the point on a thread of its own while its main thread sleeps at idle priority on the same CPU: a
SIGSTOP sent to the process is taken by the main thread, which only then stops the rest, so the thread at the point
would run on (as a fleet worker's run did on a loaded machine, journaling its next step's records)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import os, sys, threading
from openadapt_flow.store.faults import crash_point
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one CPU for every thread (inherited)
out, go = sys.argv[1], threading.Event()

def run():
    go.wait()
    with open(out, "a") as f:
        f.write("before\n"); f.flush()
        crash_point("after:step_verified", "amount")
        f.write("after\n"); f.flush()

worker = threading.Thread(target=run)
worker.start()
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # this (main) thread runs only when the CPU is idle
go.set()
worker.join()
"""


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_a_stop_crash_point_freezes_the_thread_that_reaches_it_before_its_next_statement(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    env = dict(os.environ, FLOW_CRASH_AT="after:step_verified@amount", FLOW_CRASH_SIGNAL="STOP")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(out)], env=env)
    try:
        deadline = time.monotonic() + 30
        while _state(child.pid) != "T" and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _state(child.pid) == "T", "the child never stopped"
        assert out.read_text() == "before\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
