"""Reset by restart for the batch tests: stop the app a launch started and start it again on the same display, as a
bundle's `reset: {command: [...]}` does (SPEC §22).

A launch for a batch writes a handle (JSON: the app's command, its environment's changes, its pid, its window class,
size and place); `restart(handle)` stops that pid, starts the command again, waits until its window is mapped, placed
as the launch placed it and the screen has settled, and writes the new pid back. The same function runs in the test
process (the harness's own reset, while bundles have no `reset:`) and as the reset command a bundle declares:

    python -m tests.realapps.restart_app HANDLE.json     # exit 0 once the app's window is back

Every process is stopped by its own pid.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from openadapt_flow.demo.thirdparty import RunningApp, wait_settled, window_geometry
from openadapt_flow.demo.xvnc import wait_until

STOP_WAIT_S = 5.0
START_TIMEOUT_S = 60.0


def write_handle(app: RunningApp, args: list[str], path: Path) -> Path:
    """The handle of a running launch: enough to restart it on its display and to stop whatever runs now."""
    spec = app.spec
    extra = spec.drift_args(app.home, app.drift) if spec.drift_args is not None else []
    env = {k: v for k, v in app.env.items() if os.environ.get(k) != v}
    unset = sorted(k for k in os.environ if k not in app.env)
    handle = {
        "command": [*spec.command, *args, *extra],
        "env": env,
        "unset": unset,
        "cwd": str(app.home),
        "pid": app.proc.pid,
        "window_class": spec.window_class,
        "window_size": spec.window_size,
        "position": list(app.drift.position) if app.drift.position else None,
        "display": app.display,
        "log": str(app.log_path),
        "restarts": 0,
    }
    path.write_text(json.dumps(handle, indent=1))
    return path


def _env(handle: dict[str, Any]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in handle["unset"]}
    env.update(handle["env"])
    return env


def _gone(pid: int) -> bool:
    """The process has exited (reaped, or a zombie whose parent has not reaped it yet)."""
    try:
        os.waitpid(pid, os.WNOHANG)  # our own child (the launch's first process): reap it
    except ChildProcessError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def stop_pid(pid: int) -> None:
    """SIGTERM, then SIGKILL if it has not exited within STOP_WAIT_S."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        try:
            wait_until(lambda: _gone(pid), STOP_WAIT_S, f"process {pid} to exit")
            return
        except TimeoutError:
            continue


def _xdotool(env: dict[str, str], *args: str) -> str:
    r = subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=10)
    return r.stdout if r.returncode == 0 else ""


def _main_window(env: dict[str, str], window_class: str) -> str | None:
    """The app's largest visible window of its class (toolkits also map tiny helper windows)."""
    best: tuple[int, str] | None = None
    for wid in _xdotool(env, "search", "--onlyvisible", "--classname", window_class).split():
        geo = window_geometry(env, wid)
        if geo and geo[2] > 50 and geo[3] > 50 and (best is None or geo[2] * geo[3] > best[0]):
            best = (geo[2] * geo[3], wid)
    return best[1] if best else None


def restart(path: Path, timeout: float = START_TIMEOUT_S) -> int:
    """Stop the app the handle names and start it again; return the new pid once its window is mapped, placed and
    the screen settled."""
    handle = json.loads(path.read_text())
    env = _env(handle)
    stop_pid(handle["pid"])
    wait_until(lambda: _main_window(env, handle["window_class"]) is None, timeout, "the old window to go")
    with open(handle["log"], "ab") as log:
        proc = subprocess.Popen(
            handle["command"], env=env, cwd=handle["cwd"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    handle["pid"], handle["restarts"] = proc.pid, handle["restarts"] + 1
    path.write_text(json.dumps(handle, indent=1))  # written before the wait: a timeout still leaves it stoppable

    def mapped() -> str | None:
        if proc.poll() is not None:
            raise RuntimeError(f"{handle['command'][0]} exited with {proc.returncode} on restart")
        return _main_window(env, handle["window_class"])

    window = wait_until(mapped, timeout, "the restarted app's window", interval=0.1)
    wait_settled(handle["display"], timeout=timeout)
    if handle["window_size"]:
        w, h = handle["window_size"]
        _xdotool(env, "windowsize", window, str(w), str(h))
        wait_until(lambda: (window_geometry(env, window) or (0, 0, 0, 0))[2:] == (w, h), 10, "the window's size")
    if handle["position"]:
        x, y = handle["position"]
        _xdotool(env, "windowmove", window, str(x), str(y))
        wait_until(lambda: (window_geometry(env, window) or (0, 0, 0, 0))[:2] == (x, y), 10, "the window's place")
    wait_settled(handle["display"], timeout=timeout)
    return proc.pid


def stop(path: Path) -> None:
    """Stop whatever the handle's pid is now (the launch's own process or a restart's)."""
    stop_pid(json.loads(path.read_text())["pid"])


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.realapps.restart_app HANDLE.json", file=sys.stderr)
        return 2
    started = time.monotonic()
    pid = restart(Path(argv[0]))
    print(f"restarted: pid {pid} in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
