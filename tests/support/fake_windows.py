"""Run `flow` on this Linux host with its own code seeing a Windows host (docs/windows.md, *Running flow on Windows*).

    python tests/support/fake_windows.py LOG [flow arguments…]      # e.g. LOG replay BUNDLE --url fixture:…

Every module of openadapt_flow is loaded with its own `__import__`, through which that module — and only it — sees:

- `sys` whose `platform` is "win32", so every platform choice of ours takes its Windows branch;
- no `fcntl`, `termios`, `tty`, `pty`, `pwd`, `grp`, `resource`, `syslog` (Windows' Python has none of them:
  importing one raises ImportError, and the attempt is logged);
- `os` and `signal` without their POSIX-only names (`os.fork`, `os.getuid`, `os.O_DIRECTORY`, `signal.SIGKILL`,
  `signal.SIGHUP`, …), so touching one raises AttributeError as on Windows;
- an `msvcrt` whose `locking` keeps the real call's contract on top of this host's flock: LK_NBLCK refused with
  EACCES while another open file holds the lock, or this one already does; LK_UNLCK refused on a byte that is not
  locked. Each call is logged (pid, mode, file, position, byte count, outcome), and so is an `os.close` of a file
  still locked (Windows releases such a lock only eventually).

The standard library and the third-party libraries keep seeing Linux: their Windows support is theirs, and only a
Windows machine tests it. LOG gets one JSON line per logged event.
"""

from __future__ import annotations

import builtins
import errno
import fcntl  # under the fake msvcrt; our modules cannot import it
import importlib
import importlib.abc
import importlib.machinery
import json
import os
import signal
import sys
import types
from typing import Any

BLOCKED = {"fcntl", "termios", "tty", "pty", "pwd", "grp", "resource", "syslog"}
HIDDEN = {
    "os": {
        "fork",
        "forkpty",
        "getuid",
        "geteuid",
        "getgid",
        "getegid",
        "getpgid",
        "setsid",
        "setpgid",
        "killpg",
        "uname",
        "getloadavg",
        "sched_getaffinity",
        "O_DIRECTORY",
        "O_NOFOLLOW",
        "statvfs",
        "sysconf",
        "nice",
        "mkfifo",
        "openpty",
        "chown",
        "fchown",
        "lchown",
        "sync",
        "WNOHANG",
        "wait3",
        "wait4",
    },
    "signal": {
        "SIGKILL",
        "SIGHUP",
        "SIGQUIT",
        "SIGALRM",
        "SIGUSR1",
        "SIGUSR2",
        "SIGCHLD",
        "SIGPIPE",
        "SIGSTOP",
        "SIGCONT",
        "SIGTSTP",
        "SIGWINCH",
        "alarm",
        "pause",
        "setitimer",
        "getitimer",
        "siginterrupt",
        "pthread_kill",
        "pthread_sigmask",
    },
}
LK_UNLCK, LK_LOCK, LK_NBLCK, LK_RLCK, LK_NBRLCK = 0, 1, 2, 3, 4  # msvcrt's values
MODES = {LK_UNLCK: "LK_UNLCK", LK_LOCK: "LK_LOCK", LK_NBLCK: "LK_NBLCK", LK_RLCK: "LK_RLCK", LK_NBRLCK: "LK_NBRLCK"}
OURS = "openadapt_flow"


class View(types.ModuleType):
    """A module as a Windows host shows it: the real one, less the names Windows lacks, plus `overrides`."""

    def __init__(self, real: types.ModuleType, hidden: set[str], overrides: dict[str, Any]) -> None:
        super().__init__(real.__name__, real.__doc__)
        object.__setattr__(self, "_view", (real, hidden, overrides))

    def __getattr__(self, name: str) -> Any:
        real, hidden, overrides = object.__getattribute__(self, "_view")
        if name in overrides:
            return overrides[name]
        if name in hidden:
            raise AttributeError(f"module {real.__name__!r} has no attribute {name!r} (simulated Windows)")
        return getattr(real, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_view")[0], name, value)  # sys.stdout = …: the real module's


class Log:
    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, **event: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"pid": os.getpid(), **event}) + "\n")


def fake_msvcrt(log: Log) -> tuple[types.ModuleType, Any]:
    """The fake module and the `os.close` our modules get (it logs closing a still-locked file)."""
    held: set[int] = set()

    def where(fd: int, mode: int | str, nbytes: int) -> dict[str, Any]:
        return {
            "mode": MODES.get(mode, mode) if isinstance(mode, int) else mode,
            "file": os.readlink(f"/proc/self/fd/{fd}"),
            "pos": os.lseek(fd, 0, os.SEEK_CUR),
            "n": nbytes,
        }

    def locking(fd: int, mode: int, nbytes: int) -> None:
        event = where(fd, mode, nbytes)
        if mode not in (LK_NBLCK, LK_UNLCK):
            raise NotImplementedError(f"fake msvcrt: mode {event['mode']} is not modelled")
        try:
            if mode == LK_UNLCK:
                if fd not in held:
                    raise BlockingIOError
                fcntl.flock(fd, fcntl.LOCK_UN)
                held.discard(fd)
            else:
                if fd in held:
                    raise BlockingIOError
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.add(fd)
        except BlockingIOError:
            log(**event, ok=False)
            raise PermissionError(errno.EACCES, "Permission denied") from None
        log(**event, ok=True)

    def close(fd: int) -> None:
        if fd in held:
            held.discard(fd)
            log(**where(fd, "close-while-locked", 0), ok=False)
        os.close(fd)

    module = types.ModuleType("msvcrt", "fake msvcrt (tests/support/fake_windows.py)")
    for value, name in MODES.items():
        setattr(module, name, value)
    module.locking = locking  # type: ignore[attr-defined]
    return module, close


def windows_import(log: Log) -> Any:
    """The `__import__` our modules get."""
    msvcrt, close = fake_msvcrt(log)
    views: dict[str, types.ModuleType] = {
        "sys": View(sys, set(), {"platform": "win32"}),
        "os": View(os, HIDDEN["os"], {"close": close}),
        "signal": View(signal, HIDDEN["signal"], {}),
        "msvcrt": msvcrt,
    }
    real_import = builtins.__import__

    def __import__(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and name.partition(".")[0] in BLOCKED:
            importer = (globals or {}).get("__name__", "?")
            log(mode="import-refused", module=name, importer=importer)
            raise ModuleNotFoundError(f"No module named {name!r} (simulated Windows)", name=name)
        if level == 0 and name in views:
            return views[name]
        return real_import(name, globals, locals, fromlist, level)

    return __import__


class WindowsLoader(importlib.machinery.SourceFileLoader):
    builtins: dict[str, Any] = {}

    def exec_module(self, module: types.ModuleType) -> None:
        module.__dict__["__builtins__"] = self.builtins
        super().exec_module(module)


class OurModules(importlib.abc.MetaPathFinder):
    """Finds openadapt_flow's modules as usual and loads them with the Windows `__import__`."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.partition(".")[0] != OURS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = WindowsLoader(spec.loader.name, spec.loader.path)
        return spec


def simulate_windows(log_path: str) -> None:
    WindowsLoader.builtins = {**builtins.__dict__, "__import__": windows_import(Log(log_path))}
    sys.meta_path.insert(0, OurModules())


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # this folder's modules (tty.py, …) must not stand in for the standard library's
    simulate_windows(sys.argv[1])
    sys.argv = ["flow", *sys.argv[2:]]
    importlib.import_module(f"{OURS}.cli.app").main()
