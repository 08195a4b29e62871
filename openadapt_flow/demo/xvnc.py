"""Start and stop a private TigerVNC Xvnc server on loopback (for `flow demo` and the tests).

Each server gets a free display number and a free RFB port, and is stopped by
its own pid. Waits are on conditions (socket accepts), never blind sleeps.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from openadapt_flow.procs import stop_process

PORT_SPAN = 10000  # loopback ports per parallel test worker, below the kernel's ephemeral range (32768+)


def _worker() -> int | None:
    """The pytest-xdist worker number (gw0 -> 0), or None outside a parallel test run."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else None


def free_port() -> int:
    """A free loopback port. Under parallel test workers each takes ports from its own range, so a server one
    worker starts can never take the port another just picked for its own (and be mistaken for it)."""
    worker = _worker()
    if worker is None or worker > 1:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    low = 12000 + worker * PORT_SPAN
    for port in random.sample(range(low, low + PORT_SPAN), 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port between {low} and {low + PORT_SPAN}")


def _free_display() -> int:
    worker = _worker()
    # each parallel test worker its own range (gw2 shared gw0's when the ranges were `worker % 2`), above the
    # numbers a user's own servers and the RDP tests' sessions (600+) take
    low, high = (40, 400) if worker is None else (1000 + 150 * worker, 1150 + 150 * worker)
    for n in range(low, high):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return n
    raise RuntimeError(f"no free X display number between {low} and {high}")


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


def start_xvnc(
    width: int = 1024,
    height: int = 768,
    password: str | None = None,
    monitors: list[tuple[int, int, int, int]] | None = None,
) -> XvncServer:
    """Start Xvnc on a free display and loopback port; return once it accepts RFB connections.

    `monitors` ([x, y, w, h] each, tiling the screen) splits the desktop into that many RandR monitors,
    as a multi-monitor desktop has (no password then: the layout is set over RFB before anyone connects).
    """
    if monitors and password is not None:
        raise ValueError("monitors are set over an unauthenticated RFB connection: start Xvnc without a password")
    exe = shutil.which("Xvnc")
    if exe is None:
        raise RuntimeError("Xvnc not installed (apt-get install tigervnc-standalone-server; `make setup` does it)")
    workdir = Path(tempfile.mkdtemp(prefix="flow-xvnc-"))
    (workdir / "Xauthority").touch()
    for _attempt in range(5):
        display, port = _free_display(), free_port()
        args = [
            exe,
            f":{display}",
            "-geometry",
            f"{width}x{height}",
            "-depth",
            "24",
            "-rfbport",
            str(port),
            "-localhost",
            "-interface",
            "127.0.0.1",
            "-nolisten",
            "tcp",
            "-AlwaysShared",
            f"-AcceptSetDesktopSize={1 if monitors else 0}",
        ]
        if password is None:
            args += ["-SecurityTypes", "None"]
        else:
            pwfile = workdir / "passwd"
            subprocess.run(["vncpasswd", "-f"], input=(password + "\n").encode(), stdout=pwfile.open("wb"), check=True)
            args += ["-SecurityTypes", "VncAuth", "-PasswordFile", str(pwfile)]
        # its own session: the Ctrl+C a terminal sends to flow's process group (the recording tutorial asks for one)
        # must not reach the desktop flow still needs to compile and replay on; flow stops it by its pid
        proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=(workdir / "xvnc.log").open("wb"), start_new_session=True
        )
        try:
            wait_until(lambda: _accepts(port) or proc.poll() is not None, 10, f"Xvnc :{display} on port {port}")
        except TimeoutError:
            proc.kill()
            raise
        if proc.poll() is None:
            server = XvncServer(display, port, proc, workdir, password)
            if monitors:
                try:
                    set_monitors(server, width, height, monitors)
                except BaseException:
                    server.stop()
                    raise
            return server
    raise RuntimeError(f"Xvnc failed to start: {(workdir / 'xvnc.log').read_text()[-500:]}")


def set_monitors(server: XvncServer, width: int, height: int, monitors: list[tuple[int, int, int, int]]) -> None:
    """Lay the desktop out as `monitors` with an RFB SetDesktopSize (RFC 6143 ExtendedDesktopSize, message 251),
    which Xvnc turns into one RandR output per screen; return once X reports them."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:

        def read(n: int) -> bytes:
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk:
                    raise ConnectionError("Xvnc closed the connection while the monitors were being set")
                data += chunk
            return data

        read(12)
        s.sendall(b"RFB 003.008\n")
        read(read(1)[0])  # security types offered; we ask for None (the server was started without a password)
        s.sendall(b"\x01")
        if struct.unpack(">I", read(4))[0] != 0:
            raise ConnectionError(f"Xvnc :{server.display} refused the connection that sets its monitors")
        s.sendall(b"\x01")  # ClientInit: shared
        read(4 + 16)  # size, pixel format
        read(struct.unpack(">I", read(4))[0])  # desktop name
        s.sendall(struct.pack(">BxHi", 2, 1, -308))  # SetEncodings: ExtendedDesktopSize, or SetDesktopSize is ignored
        screens = b"".join(struct.pack(">IHHHHI", i + 1, x, y, w, h, 0) for i, (x, y, w, h) in enumerate(monitors))
        s.sendall(struct.pack(">BxHHBx", 251, width, height, len(monitors)) + screens)
        wait_until(
            lambda: _monitor_count(server.display) == len(monitors),
            10,
            f"Xvnc :{server.display} to show {len(monitors)} monitors",
        )


def _monitor_count(display: int) -> int:
    import mss  # the launcher's only use of it: see what a screen backend will see

    with mss.MSS(backend="xlib", display=f":{display}") as m:
        return len(m.monitors) - 1  # mss: [0] is the whole desktop
