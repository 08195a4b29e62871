"""`flow fixture serve` is a real RFB server: our VncBackend and the vncdotool command line connect, capture
and click; a wrong password is refused; a client vanishing mid-update does not kill it; SIGTERM is graceful."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.backends.vnc import VncBackend
from openadapt_flow.errors import AuthFailed
from openadapt_flow.fixture.model import load_fixture
from openadapt_flow.fixture.rfb import VERSION_38
from tests.support.cli import flow_env
from tests.support.fixtures import NEW, Served, centre, write_fixture
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(90)
VNCDO = shutil.which("vncdo") or str(Path(sys.executable).with_name("vncdo"))


@pytest.fixture
def fx(tmp_path):
    return write_fixture(tmp_path / "fx")


def vnc(port: int, password_env: str | None = None) -> VncBackend:
    return VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=port, password_env=password_env))


def vncdo(port: int, *args: str, password: str | None = None) -> subprocess.CompletedProcess:
    pw = ["-p", password] if password is not None else []
    return subprocess.run(
        [VNCDO, "-s", f"127.0.0.1::{port}", "-t", "20", *pw, *args], capture_output=True, text=True, timeout=30
    )


def test_our_vnc_backend_captures_and_clicks(fx, tmp_path):
    images = load_fixture(fx).images
    with Served(fx, tmp_path) as served:
        b = vnc(served.port)
        try:
            assert np.array_equal(b.capture().pixels, images["list"])
            b.click(*centre(NEW))
            assert b.wait_for_update(5)
            wait_until(lambda: np.array_equal(b.capture().pixels, images["form"]), 5, "the form screen")
        finally:
            b.close()
    assert "click at (80, 40): list -> form" in served.stderr


def test_vncdo_command_line_captures_and_clicks(fx, tmp_path):
    images = load_fixture(fx).images
    with Served(fx, tmp_path) as served:
        r = vncdo(served.port, "capture", str(tmp_path / "a.png"))
        assert r.returncode == 0, r.stderr
        assert np.array_equal(np.asarray(Image.open(tmp_path / "a.png").convert("RGB")), images["list"])
        x, y = centre(NEW)
        # one connection: the click is played before the capture's update request is read
        r = vncdo(served.port, "move", str(x), str(y), "click", "1", "capture", str(tmp_path / "b.png"))
        assert r.returncode == 0, r.stderr
        assert np.array_equal(np.asarray(Image.open(tmp_path / "b.png").convert("RGB")), images["form"])


def test_wrong_password_is_refused(fx, tmp_path, monkeypatch):
    monkeypatch.setenv("FIXTURE_PW", "s3cret")
    monkeypatch.setenv("WRONG_PW", "guess")
    with Served(fx, tmp_path, "--password-env", "FIXTURE_PW", env=flow_env(tmp_path, FIXTURE_PW="s3cret")) as served:
        with pytest.raises(AuthFailed):
            vnc(served.port, "WRONG_PW")
        assert vncdo(served.port, "capture", str(tmp_path / "x.png"), password="guess").returncode != 0
        assert not (tmp_path / "x.png").exists()
        b = vnc(served.port, "FIXTURE_PW")
        assert b.capture().width == 480
        b.close()
        assert vncdo(served.port, "capture", str(tmp_path / "y.png"), password="s3cret").returncode == 0
        assert served.alive()
    assert "wrong password" in served.stderr


def test_client_disconnecting_mid_update_does_not_kill_the_server(fx, tmp_path):
    with Served(fx, tmp_path) as served:
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", served.port), timeout=5)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            assert s.recv(12) == VERSION_38
            s.sendall(VERSION_38)
            s.recv(2)  # one security type: None
            s.sendall(b"\x01")
            s.recv(4)
            s.sendall(b"\x01")  # ClientInit
            s.recv(24)  # ServerInit up to the name
            s.sendall(struct.pack("!BBHHHH", 3, 0, 0, 0, 480, 320))
            s.recv(64)  # a little of the update…
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # …then a reset
        b = vnc(served.port)
        assert b.capture().width == 480
        b.close()
        assert served.alive()


def test_sigterm_stops_gracefully_with_a_client_connected(fx, tmp_path):
    served = Served(fx, tmp_path)
    b = vnc(served.port)
    b.capture()
    assert served.stop() == 0
    assert "stopped after 1 connection(s)" in served.stdout
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", served.port), timeout=1)
    b.close()


def listening_on(port: int) -> set[str]:
    """Addresses (hex, as in /proc/net/tcp) with a listening socket on `port`."""
    rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return {r.split()[1].split(":")[0] for r in rows if r.split()[1].endswith(f":{port:04X}") and r.split()[3] == "0A"}


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's socket table")
def test_listens_on_loopback_unless_a_host_is_given_and_warns_without_a_password(fx, tmp_path):
    with Served(fx, tmp_path) as default:
        assert listening_on(default.port) == {"0100007F"}  # 127.0.0.1 only
    assert "non-loopback" not in default.stderr
    with Served(fx, tmp_path, "--host", "0.0.0.0") as anywhere:
        assert listening_on(anywhere.port) == {"00000000"}
    assert "non-loopback 0.0.0.0 with no password" in anywhere.stderr
