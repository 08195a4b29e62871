"""Crash-safe file replacement: temp file, fsync, rename, fsync the directory; and directories made so that a power
loss keeps them (`make_dirs`: each new directory fsync'd into its parent). Which run file is made durable how, and
when: docs/durability.md.

A full disk or an I/O error on the run's own files (ENOSPC, EIO, …) raises StorageFault: the run stops at the next
safe boundary as INTERRUPTED (spec §6), never FAILED, and a half-written temp file is removed.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Iterable
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
        self.message = (
            f"cannot write the run's files ({self.detail}); stopped at a safe boundary, resume once the fault is gone"
        )

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


def sync_dirs(dirs: Iterable[Path]) -> None:
    """fsync each directory once, the deepest first (a batch of files in one folder costs one directory fsync)."""
    for d in sorted(set(dirs), key=lambda p: len(Path(p).parts), reverse=True):
        fsync_dir(Path(d))


def create_dirs(path: Path) -> list[Path]:
    """Create `path` and every missing parent (`mkdir -p`); the directories this call created, outermost first."""
    missing: list[Path] = []
    p = Path(path)
    while not p.exists() and p.parent != p:
        missing.append(p)
        p = p.parent
    made: list[Path] = []
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue  # made meanwhile by another process, which syncs it
        made.append(d)
    if not Path(path).is_dir():
        raise FileExistsError(errno.EEXIST, "exists and is not a directory", str(path))
    return made


def make_dirs(path: Path) -> list[Path]:
    """`mkdir -p` that a power loss cannot undo: every directory it creates is fsync'd into its parent (one fsync per
    parent), so a file later fsync'd into it is reachable after a crash. Returns the directories created."""
    made = create_dirs(path)
    sync_dirs(d.parent for d in made)
    return made


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new file, never a mix."""
    write_files_atomic(Path(path).parent, {Path(path).name: data})


def write_files_atomic(folder: Path, files: dict[str, bytes], *, make: bool = False, sync: bool = True) -> None:
    """Replace each file of `folder` named in `files` as write_bytes_atomic does, one after another; a name may be a
    relative path (`templates/a.png`). With `make`, missing folders (`folder` too) are created, durably (make_dirs);
    without, a missing folder is an error (a run directory removed meanwhile is never brought back). Then one fsync
    per directory that gained an entry (each folder written into, and the parent of each folder created), after the
    last rename, not one per file: each file is the old or the new one after a crash, and on disk when this returns.
    `sync=False`: renamed whole but not fsync'd — for a file rewritten again soon whose last writing syncs (a reader
    never sees a torn file; a power loss may bring back an earlier version)."""
    if not files:
        return
    dirs: set[Path] = set()
    path = Path(folder)
    for name, data in files.items():
        path = Path(folder) / name
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            if make:
                dirs.update(d.parent for d in create_dirs(path.parent))
            dirs.add(path.parent)
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
        sync_dirs(dirs)
    except OSError as e:
        _failed(None, e, path)


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
