"""store/filelock.py on this host (flock): what the lease, the ledger and the operator book rely on — a lock held by
another process refuses a non-blocking take, a blocking take waits for it, and the OS drops it when the holder dies,
even by SIGKILL (the crash tests take a run over after exactly that)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from openadapt_flow.store.filelock import lock_exclusive, try_lock_exclusive, unlock
from tests.support.cli import REPO

pytestmark = pytest.mark.timeout(30)

HOLDER = """
import os, sys
from openadapt_flow.store.filelock import try_lock_exclusive, unlock
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
print("held" if try_lock_exclusive(fd) else "refused", flush=True)
sys.stdin.readline()  # hold until told (or killed)
unlock(fd)
"""


class Holder:
    """Another process that takes the lock of `path` and holds it until told to release, or killed."""

    def __init__(self, path: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stdout is not None
        self.first = self.proc.stdout.readline().strip()  # printed once it holds the lock

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.wait(timeout=10) == 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=10) == -signal.SIGKILL

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def lock_file(tmp_path):
    return tmp_path / ".lock"


def opened(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def test_a_lock_held_by_a_process_killed_with_sigkill_is_free_again(lock_file):
    holder = Holder(lock_file)
    fd = opened(lock_file)
    try:
        assert holder.first == "held"
        assert try_lock_exclusive(fd) is False  # the other process holds it
        assert try_lock_exclusive(fd) is False  # and a refusal leaves nothing behind
        holder.kill()
        assert try_lock_exclusive(fd) is True  # the OS dropped the dead holder's lock
        assert Holder(lock_file).first == "refused"  # …and ours now keeps others out
    finally:
        holder.close()
        os.close(fd)


def test_a_blocking_lock_waits_for_the_holder_to_release(lock_file):
    holder = Holder(lock_file)
    fd = opened(lock_file)
    taken = threading.Event()

    def take() -> None:
        lock_exclusive(fd)
        taken.set()

    waiter = threading.Thread(target=take, daemon=True)
    try:
        assert holder.first == "held"
        waiter.start()
        assert not taken.wait(0.3)  # still held by the other process: the lock waits
        holder.release()
        assert taken.wait(10)
        unlock(fd)
        assert try_lock_exclusive(fd) is True  # unlock let go; this fd takes it again
    finally:
        holder.close()
        os.close(fd)


def test_two_open_files_in_one_process_exclude_each_other_and_unlock_frees(lock_file):
    a, b = opened(lock_file), opened(lock_file)
    try:
        assert try_lock_exclusive(a) is True
        assert try_lock_exclusive(b) is False  # the lock is the open file's, not the process's
        unlock(a)
        assert try_lock_exclusive(b) is True
        os.close(b)  # closing the file drops its lock
        b = -1
        assert try_lock_exclusive(a) is True
    finally:
        os.close(a)
        if b >= 0:
            os.close(b)
