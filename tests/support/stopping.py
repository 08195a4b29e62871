"""Stopping a test's child processes: woken if stopped (SIGSTOP), terminated, killed if they do not go."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterable


def stop_procs(procs: Iterable[subprocess.Popen[bytes]]) -> None:
    procs = list(procs)
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
