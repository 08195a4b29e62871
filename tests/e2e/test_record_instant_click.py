"""A viewer that connects to `flow record`, clicks at once and hangs up (a one-shot script): the click reaches the app.

Such a viewer leaves the screen update the proxy pushed unread, so its close resets the connection, and Linux drops
whatever the proxy had not yet read from it. The proxy used to read the release only after the held press was
forwarded (the press waits for the screen to settle): the app got the press, never the release."""

from __future__ import annotations

import re
import signal
import socket
import struct
import subprocess
import sys

import pytest

from tests.support.cli import flow_env
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(120)
NEW_INVOICE = (130, 112)


def click_and_hang_up(port: int, x: int, y: int) -> None:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.recv(12)
        s.sendall(b"RFB 003.008\n")
        s.recv(s.recv(1)[0])  # security types
        s.sendall(b"\x01")
        s.recv(4)  # security result
        s.sendall(b"\x01")  # shared
        init = b""
        while len(init) < 24:
            init += s.recv(24 - len(init))
        name_len = struct.unpack("!I", init[20:24])[0]
        while name_len:
            name_len -= len(s.recv(name_len))
        w, h = struct.unpack("!HH", init[:4])
        s.sendall(struct.pack("!BBHHHH", 3, 0, 0, 0, w, h)  # a full update, never read
                  + struct.pack("!BBHH", 5, 1, x, y) + struct.pack("!BBHH", 5, 0, x, y))
    finally:
        s.close()


def test_a_click_sent_the_instant_a_viewer_connected_reaches_the_app(tmp_path, demo_app):
    app = demo_app("normal")
    cmd = [sys.executable, "-m", "openadapt_flow", "record", "--url", app.xvnc.url, "--out", str(tmp_path / "b"), "--json"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=flow_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        port = re.search(r"connect your VNC viewer to [\w.:]+:(\d+)", line)
        assert port, line + (proc.stderr.read() if proc.stderr else "")
        click_and_hang_up(int(port.group(1)), *NEW_INVOICE)
        wait_until(lambda: app.current_screen() == "form", 10, "the form the click opens")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0, err
    assert "cut 1: click at (130, 112)" in err
