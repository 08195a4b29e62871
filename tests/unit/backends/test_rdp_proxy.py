"""The rdp backend's loopback machinery without an RDP server: the CONNECT proxy and the certificate policy.

Fake servers here speak just enough: a byte relay target, and an "RDP server"
that answers the X.224 negotiation and then TLS with a throwaway self-signed
certificate (made with the openssl CLI, which xrdp's own install brings).
"""

from __future__ import annotations

import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from openadapt_flow.backends.rdp_proxy import ConnectProxy
from openadapt_flow.backends.rdp_session import accepted_fingerprint
from openadapt_flow.backends.rdp_wire import PROTOCOL_SSL, cert_fingerprint
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.errors import BackendTimeout, ConnectionFailed

pytestmark = pytest.mark.timeout(30)


class Server:
    """A loopback TCP server handling each connection with `handle` on its own thread, until closed."""

    def __init__(self, handle: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.handle = handle
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._run, args=(conn,), daemon=True).start()

    def _run(self, conn: socket.socket) -> None:
        try:
            self.handle(conn)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes a handler blocked in recv; close() alone would not
            except OSError:
                pass
            conn.close()


def until(cond: Callable[[], object], timeout: float = 5) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


# --- the CONNECT proxy -------------------------------------------------------------------------------


def echo_upper(conn: socket.socket) -> None:
    while data := conn.recv(1024):
        conn.sendall(data.upper())


@pytest.fixture
def upstream() -> Iterator[Server]:
    server = Server(echo_upper)
    yield server
    server.close()


def dial(proxy: ConnectProxy, target: str) -> tuple[socket.socket, bytes]:
    client = socket.create_connection(("127.0.0.1", proxy.port_local), timeout=5)
    client.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return client, client.recv(1024)


def test_proxy_relays_and_times_both_directions(upstream: Server) -> None:
    proxy = ConnectProxy("127.0.0.1", upstream.port, "rdp://test", 5, 5)
    client, reply = dial(proxy, f"127.0.0.1:{upstream.port}")
    assert reply.startswith(b"HTTP/1.1 200")
    before = time.monotonic()
    client.sendall(b"hello")
    assert client.recv(1024) == b"HELLO"
    until(lambda: proxy.server_bytes == 5)
    assert proxy.client_at >= before and proxy.server_at >= proxy.client_at and proxy.client_bytes == 5
    assert proxy.wait_server_after(time.monotonic(), 0.05) is False
    client.close()
    until(lambda: proxy.ended_by == "client")
    assert proxy.error is None  # our side hanging up is not a lost connection
    proxy.close()


def test_proxy_reports_the_server_hanging_up(upstream: Server) -> None:
    proxy = ConnectProxy("127.0.0.1", upstream.port, "rdp://test", 5, 5)
    client, _ = dial(proxy, f"127.0.0.1:{upstream.port}")
    until(lambda: upstream.conns)
    upstream.close()
    until(lambda: proxy.error is not None)
    assert isinstance(proxy.error, ConnectionFailed) and "lost the connection to rdp://test" in str(proxy.error)
    assert client.recv(1024) == b""  # the client is told too
    proxy.close()


def test_proxy_refuses_other_targets_and_maps_a_refused_upstream(upstream: Server) -> None:
    proxy = ConnectProxy("127.0.0.1", upstream.port, "rdp://test", 5, 5)
    _, reply = dial(proxy, "10.1.2.3:3389")
    assert reply.startswith(b"HTTP/1.1 403")
    until(lambda: proxy.error is not None)
    assert "another target" in str(proxy.error)
    proxy.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    proxy = ConnectProxy("127.0.0.1", closed, "rdp://test", 5, 5)
    _, reply = dial(proxy, f"127.0.0.1:{closed}")
    assert reply.startswith(b"HTTP/1.1 502")
    until(lambda: proxy.error is not None)
    assert "refused the connection" in str(proxy.error)
    proxy.close()


# --- the certificate policy ----------------------------------------------------------------------------


def confirm(selected: int | None = PROTOCOL_SSL, failure: int | None = None) -> bytes:
    neg = b""
    if failure is not None:
        neg = struct.pack("<BBHI", 3, 0, 8, failure)
    elif selected is not None:
        neg = struct.pack("<BBHI", 2, 0, 8, selected)
    x224 = bytes([6 + len(neg), 0xD0, 0, 0, 0, 0, 0]) + neg
    return struct.pack(">BBH", 3, 0, 4 + len(x224)) + x224


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not installed (`make setup` installs it)")
    d = tmp_path_factory.mktemp("cert")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=fake-rdp",
            "-keyout",
            str(d / "key.pem"),
            "-out",
            str(d / "cert.pem"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    der = ssl.PEM_cert_to_DER_cert((d / "cert.pem").read_text())
    return d / "cert.pem", d / "key.pem", cert_fingerprint(der)


def rdp_server(reply: bytes, tls: tuple[Path, Path] | None) -> Server:
    def handle(conn: socket.socket) -> None:
        conn.recv(1024)
        conn.sendall(reply)
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            with ctx.wrap_socket(conn, server_side=True) as t:
                t.recv(1)  # until the client hangs up

    return Server(handle)


def spec(port: int, **kw: object) -> BackendSpec:
    return BackendSpec(kind="rdp", host="127.0.0.1", port=port, io_timeout_s=1, **kw)  # type: ignore[arg-type]


def test_certificate_pinned_default_and_ignored(cert: tuple[Path, Path, str]) -> None:
    server = rdp_server(confirm(), cert[:2])
    try:
        assert accepted_fingerprint(spec(server.port, cert_fingerprint=cert[2])) == cert[2]
        with pytest.raises(ConnectionFailed, match="not the pinned"):
            accepted_fingerprint(spec(server.port, cert_fingerprint=":".join(["00"] * 32)))
        with pytest.raises(ConnectionFailed, match="not trusted") as err:
            accepted_fingerprint(spec(server.port))  # self-signed: refused unless pinned or ignored
        assert f"sha256:{cert[2]}" in str(err.value)
        assert accepted_fingerprint(spec(server.port, ignore_certificate=True)) is None
    finally:
        server.close()


def test_certificate_check_refuses_legacy_and_maps_negotiation_errors() -> None:
    for reply, words in (
        (confirm(selected=None), "legacy RDP security"),
        (confirm(failure=5), "Network Level Authentication"),
        (b"SSH-2.0-OpenSSH_9.2\r\n", "not RDP"),
    ):
        server = rdp_server(reply, None)
        try:
            with pytest.raises(ConnectionFailed, match=words):
                accepted_fingerprint(spec(server.port))
        finally:
            server.close()


def test_certificate_check_times_out_on_a_silent_server() -> None:
    server = Server(lambda conn: conn.recv(1024) and conn.recv(1024))  # reads, never answers
    try:
        started = time.monotonic()
        with pytest.raises(BackendTimeout, match="did not answer"):
            accepted_fingerprint(spec(server.port))
        assert time.monotonic() - started < 3
    finally:
        server.close()
