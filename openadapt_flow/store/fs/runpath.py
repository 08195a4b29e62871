"""Is a path somewhere a new run directory can live? Checked before a connection or any input (spec §6, §16).

Bad input (RunDirError, exit 2): a control character in the path (a NUL no system call takes, a newline that
splits every message naming it), a path or a part of it longer than the filesystem takes, a place under a pseudo
filesystem (/proc, /sys, /dev: no run can be written there), or a parent that is a file. The environment, not the
input (StorageFault, exit 5): a parent this process may not write (EACCES, EPERM, EROFS). Either way no directory
is made and nothing is sent. `creation_error` maps what creating the directory raised the same way.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from openadapt_flow.errors import RunDirError, control_char, shown
from openadapt_flow.store.atomic import StorageFault, is_storage_error

PATH_MAX = 4096  # Linux's, in bytes, with the final NUL
NAME_MAX = 255  # the usual filesystem's, in bytes; pathconf says when it differs
PSEUDO_FS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "configfs",
        "bpf",
        "pstore",
        "efivarfs",
        "fusectl",
        "mqueue",
        "binfmt_misc",
        "autofs",
        "nsfs",
        "rpc_pipefs",
        "hugetlbfs",
    }
)
PSEUDO_ROOTS = {"/proc": "proc", "/sys": "sysfs", "/dev": "devtmpfs"}  # without /proc/self/mounts (not Linux): by name
SHOWN = 240  # characters of a path an error line shows (the rest is counted, not printed)
DENIED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def check_run_path(path: Path) -> None:
    """Refuse a run directory path that cannot hold a run (RunDirError, exit 2) or may not be written (exit 5)."""
    text = str(path)
    bad = control_char(text)
    if bad is not None:
        raise RunDirError(
            f"run directory {shown(text, SHOWN)}: the path holds a control character ({bad[1]} at position "
            f"{bad[0] + 1})"
        )
    full = Path(os.path.abspath(text))
    size = len(os.fsencode(str(full)))
    if size >= PATH_MAX:
        raise RunDirError(
            f"run directory {shown(text, SHOWN)}: the path is {size} bytes, longer than the {PATH_MAX - 1} a "
            "path may have"
        )
    base = _existing_ancestor(full)
    limit = _name_max(base)
    long = next((p for p in full.parts if len(os.fsencode(p)) > limit), None)
    if long is not None:
        raise RunDirError(
            f"run directory {shown(text, SHOWN)}: its part {shown(long, 30)} is longer than the {limit} bytes "
            "a file name may have"
        )
    fs = _fs_type(base.resolve())
    if fs in PSEUDO_FS:
        raise RunDirError(
            f"run directory {shown(text, SHOWN)}: {base} is on a {fs} pseudo filesystem, where no run can be "
            "written; choose a directory on a disk"
        )
    if not base.is_dir():
        raise RunDirError(f"run directory {shown(text, SHOWN)}: {shown(base, SHOWN)} is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        fault = StorageFault(str(base), PermissionError(errno.EACCES, "permission denied"))
        fault.message = (
            f"run directory {shown(text, SHOWN)}: {shown(base, SHOWN)} may not be written by this user (permission "
            "denied); nothing was sent — choose another --run-dir or fix its permissions"
        )
        raise fault


def creation_error(path: Path, e: OSError | ValueError) -> RunDirError | StorageFault:
    """What creating the run directory raised, as our error: permission or a full/failed disk is the environment
    (exit 5), a bad path is bad input (exit 2); the message says nothing was sent."""
    where = shown(os.path.abspath(path), SHOWN)
    if isinstance(e, OSError) and (e.errno in DENIED or is_storage_error(e)):
        fault = StorageFault(where, e)
        fault.message = (
            f"cannot create the run directory {where} ({e.strerror or e}); nothing was sent — try again "
            "once it can be written"
        )
        return fault
    why = e.strerror if isinstance(e, OSError) and e.strerror else "not a usable path"
    return RunDirError(f"cannot create the run directory {where}: {why}")


def _existing_ancestor(path: Path) -> Path:
    for p in (path, *path.parents):
        try:
            os.stat(p)
            return p
        except OSError:
            continue
    return Path(path.anchor or "/")


def _name_max(base: Path) -> int:
    try:
        return int(os.pathconf(base if base.is_dir() else base.parent, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return NAME_MAX


def _fs_type(path: Path) -> str | None:
    """The filesystem type of the mount holding `path` (Linux /proc/self/mounts), or a pseudo one named by its root."""
    best, kind = "", None
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mount = parts[1].replace("\\040", " ")
                inside = str(path) == mount or str(path).startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, parts[2]
    except OSError:
        pass
    if kind is None:
        return next((fs for r, fs in PSEUDO_ROOTS.items() if str(path) == r or str(path).startswith(r + "/")), None)
    return kind
