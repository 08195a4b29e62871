"""A viewer that connects to `flow record`, clicks at once and hangs up (a one-shot script): the click reaches the app.

Such a viewer leaves the screen update the proxy pushed unread, so its close resets the connection, and Linux drops
whatever the proxy had not yet read from it. The proxy used to read the release only after the held press was
forwarded (the press waits for the screen to settle): the app got the press, never the release."""

from __future__ import annotations

import socket
import struct

import pytest

from tests.support.cli import record_via_proxy
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
        s.sendall(
            struct.pack("!BBHHHH", 3, 0, 0, 0, w, h)  # a full update, never read
            + struct.pack("!BBHH", 5, 1, x, y)
            + struct.pack("!BBHH", 5, 0, x, y)
        )
    finally:
        s.close()


def test_a_click_sent_the_instant_a_viewer_connected_reaches_the_app(tmp_path, demo_app):
    app = demo_app("normal")

    def demonstrate(port: int) -> None:
        click_and_hang_up(port, *NEW_INVOICE)
        wait_until(lambda: app.current_screen() == "form", 10, "the form the click opens")

    r = record_via_proxy(
        ["--url", app.xvnc.url, "--out", str(tmp_path / "b"), "--json"], tmp_path, demonstrate, timeout=60
    )
    assert r.returncode == 0, r.stderr
    err = r.stderr
    assert "cut 1: click at (130, 112)" in err
