"""Stopping a child process we started: by its own pid, politely first."""

from __future__ import annotations

import signal
import subprocess
from typing import Any

STOP_WAIT_S = 5.0


def stop_process(proc: subprocess.Popen[Any], wait_s: float = STOP_WAIT_S) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `wait_s`."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=wait_s)
