"""A command run with its stderr on a pseudo-terminal (where the CLI shows live progress) and its stdout piped."""

from __future__ import annotations

import os
import select
import subprocess
from pathlib import Path


def run_on_tty(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """(exit code, what the terminal showed, stdout). The command must end by itself (the test's timeout bounds it)."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env={**env, "COLUMNS": "120", "TERM": "xterm"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
        )
        chunks = []
        while proc.poll() is None or select.select([master], [], [], 0)[0]:
            if select.select([master], [], [], 0.2)[0]:
                chunks.append(os.read(master, 65536))
        out = proc.stdout.read().decode() if proc.stdout else ""
        proc.wait()
    finally:
        os.close(slave)
        os.close(master)
    return proc.returncode, b"".join(chunks).decode("utf-8", "replace"), out
