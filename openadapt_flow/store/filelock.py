"""Exclusive locks on an open lock file, the one primitive the filesystem store's locks use (run lease, run ledger,
operator book).

What the store relies on, on both systems: the lock belongs to the open file (the fd), a second open of the same file
— in this process or another — is refused while it is held, and the operating system drops it when the fd is
closed or the process dies however it dies (the SIGKILL crash tests take a run over after exactly that).

- POSIX: `flock(2)` on the whole file.
- Windows: `msvcrt.locking` (the C runtime's `_locking`, a Windows byte-range lock) on the file's first byte; the
  store's lock files stay empty, so no reader of them meets the locked byte. Windows releases a dead process's
  locks too, but its documentation gives no bound on how soon: a taker may find the lock held for a moment after
  the holder died. `msvcrt` has no shared lock, and its blocking mode gives up after ten one-second tries, so a
  blocking lock here polls the non-blocking one.

The module is chosen once, at import, by `sys.platform`; `fcntl` is never imported on Windows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

if sys.platform == "win32":
    import errno
    import msvcrt
    import time

    _HELD = {errno.EACCES, getattr(errno, "EDEADLOCK", errno.EDEADLK)}  # what LockFileEx's refusal becomes

    def _locking(fd: int, mode: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)  # msvcrt locks from the file position: always the first byte
        msvcrt.locking(fd, mode, 1)

    def try_lock_exclusive(fd: int) -> bool:
        """Take the exclusive lock without waiting; False if another open file holds it."""
        try:
            _locking(fd, msvcrt.LK_NBLCK)
        except OSError as e:
            if e.errno in _HELD:
                return False
            raise
        return True

    def lock_exclusive(fd: int) -> None:
        """Take the exclusive lock, waiting as long as another open file holds it."""
        while not try_lock_exclusive(fd):
            time.sleep(0.01)  # polling the lock: LK_LOCK gives up after ten one-second tries

    def unlock(fd: int) -> None:
        _locking(fd, msvcrt.LK_UNLCK)

else:
    import fcntl

    def try_lock_exclusive(fd: int) -> bool:
        """Take the exclusive lock without waiting; False if another open file holds it."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def lock_exclusive(fd: int) -> None:
        """Take the exclusive lock, waiting as long as another open file holds it."""
        fcntl.flock(fd, fcntl.LOCK_EX)

    def unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of the lock file `path` (created, mode 0600, if absent), waiting for it; released and
    closed on the way out (Windows drops a closed file's locks only eventually, so it is unlocked first)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        lock_exclusive(fd)
        try:
            yield
        finally:
            unlock(fd)
    finally:
        os.close(fd)
