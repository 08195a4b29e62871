"""Start and stop a private TigerVNC Xvnc server on loopback (for `flow demo` and the tests).

Each server gets a free display number and a free RFB port, and is stopped by
its own pid. Waits are on conditions (socket accepts), never blind sleeps.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from openadapt_flow.procs import stop_process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _free_display() -> int:
    for n in range(40, 400):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return n
    raise RuntimeError("no free X display number between 40 and 400")


def wait_until(cond, timeout: float, what: str, interval: float = 0.02):
    """Poll `cond` until it returns a truthy value; raise naming `what` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@dataclass
class XvncServer:
    display: int
    port: int
    proc: subprocess.Popen
    workdir: Path
    password: str | None = None

    @property
    def env(self) -> dict[str, str]:
        """Environment for X clients of this server (DISPLAY and an XAUTHORITY file)."""
        env = dict(os.environ)
        env["DISPLAY"] = f":{self.display}"
        env["XAUTHORITY"] = str(self.workdir / "Xauthority")
        return env

    @property
    def url(self) -> str:
        return f"vnc://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_process(self.proc)
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_xvnc(width: int = 1024, height: int = 768, password: str | None = None) -> XvncServer:
    """Start Xvnc on a free display and loopback port; return once it accepts RFB connections."""
    exe = shutil.which("Xvnc")
    if exe is None:
        raise RuntimeError("Xvnc not installed (apt-get install tigervnc-standalone-server; `make setup` does it)")
    workdir = Path(tempfile.mkdtemp(prefix="flow-xvnc-"))
    (workdir / "Xauthority").touch()
    for _attempt in range(5):
        display, port = _free_display(), free_port()
        args = [
            exe, f":{display}", "-geometry", f"{width}x{height}", "-depth", "24",
            "-rfbport", str(port), "-localhost", "-interface", "127.0.0.1",
            "-nolisten", "tcp", "-AlwaysShared", "-AcceptSetDesktopSize=0",
        ]
        if password is None:
            args += ["-SecurityTypes", "None"]
        else:
            pwfile = workdir / "passwd"
            subprocess.run(["vncpasswd", "-f"], input=(password + "\n").encode(), stdout=pwfile.open("wb"), check=True)
            args += ["-SecurityTypes", "VncAuth", "-PasswordFile", str(pwfile)]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=(workdir / "xvnc.log").open("wb"))
        try:
            wait_until(lambda: _accepts(port) or proc.poll() is not None, 10, f"Xvnc :{display} on port {port}")
        except TimeoutError:
            proc.kill()
            raise
        if proc.poll() is None:
            return XvncServer(display, port, proc, workdir, password)
    raise RuntimeError(f"Xvnc failed to start: {(workdir / 'xvnc.log').read_text()[-500:]}")
