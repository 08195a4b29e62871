"""Crash-safe file replacement: temp file, fsync, rename, fsync the directory.

A full disk or an I/O error on the run's own files (ENOSPC, EIO, …) raises StorageFault: the run stops at the next
safe boundary as INTERRUPTED (spec §6), never FAILED, and a half-written temp file is removed.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path
from typing import Any

from openadapt_flow.errors import RunSignal
from openadapt_flow.store.faults import io_fault

STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EROFS})


class StorageFault(RunSignal):
    """The run's own files cannot be written (disk full, I/O error): stop at a safe boundary as INTERRUPTED (exit 5).

    A RunSignal (a BaseException), like LeaseLost, so that no handler meant for a step's ordinary errors turns it into a halt.
    """

    exit_code = 5

    def __init__(self, where: str, error: OSError) -> None:
        super().__init__(f"{where}: {error.strerror or error}")
        self.where = where
        self.errno = error.errno
        self.detail = f"{where}: {error.strerror or error}"
        self.message = f"cannot write the run's files ({self.detail}); stopped at a safe boundary, resume once the fault is gone"

    def __str__(self) -> str:
        return self.message


def is_storage_error(e: OSError) -> bool:
    return e.errno in STORAGE_ERRNOS


def fault_point(path: Path) -> str:
    """The name FLOW_IO_FAULT matches for a file of the run: `state.json`, `frames/000-x-before.png`, …"""
    return f"{path.parent.name}/{path.name}" if path.parent.name == "frames" else path.name


def fsync_dir(path: Path) -> None:
    if sys.platform == "win32":  # Windows opens no directory to fsync; NTFS journals the rename (docs/windows.md)
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new file, never a mix."""
    write_files_atomic(Path(path).parent, {Path(path).name: data})


def write_files_atomic(folder: Path, files: dict[str, bytes], *, sync: bool = True) -> None:
    """Replace each file of `folder` named in `files` as write_bytes_atomic does, one after another, with one fsync of
    the folder after the last rename (not one per file): each file is the old or the new one after a crash.
    `sync=False`: renamed whole but not fsync'd — for a file rewritten again soon whose last writing syncs (a reader
    never sees a torn file; a power loss may bring back an earlier version)."""
    if not files:
        return
    for name, data in files.items():
        path = Path(folder) / name
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            io_fault(fault_point(path))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError as e:
            _failed(tmp, e, path)
    if not sync:
        return
    try:
        fsync_dir(Path(folder))
    except OSError as e:
        _failed(None, e, Path(folder) / list(files)[-1])


def _failed(tmp: Path | None, e: OSError, path: Path) -> None:
    if not is_storage_error(e):
        raise e
    try:
        if tmp is not None:
            tmp.unlink(missing_ok=True)  # never leave a half-written temp file taking the space
    except OSError:
        pass
    raise StorageFault(str(path), e) from None


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False, default=str) + "\n"


def write_json_atomic(path: Path, obj: Any) -> None:
    write_bytes_atomic(path, dumps(obj).encode("utf-8"))
