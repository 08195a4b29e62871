"""An in-process HTTP CONNECT proxy for exactly one RDP connection, which records its traffic.

xfreerdp dials the server through it (`/proxy:http://127.0.0.1:PORT`), so the
client still addresses the real host while this side learns, with no protocol
parsing: when the server last sent bytes (a frame can only have changed, or
be confirmed current, when it did), when the client last sent (input reached
the wire), and that the server hung up or the link died (reported at once).
One thread per direction, blocking I/O, every wait bounded.
"""

from __future__ import annotations

import re
import socket
import threading
import time

from openadapt_flow.errors import BackendError, BackendTimeout, ConnectionFailed

_CONNECT = re.compile(rb"^CONNECT (\[[^\]]+\]|[^\s:]+):(\d+) HTTP/1\.[01]\r\n", re.I)
_MAX_HEADER = 8192
_CHUNK = 1 << 16


def connect_error(exc: OSError, url: str, timeout: float) -> BackendError:
    """A socket error while connecting to the server, in our family."""
    if isinstance(exc, ConnectionRefusedError):
        return ConnectionFailed(f"{url} refused the connection (is an RDP server listening there?)")
    if isinstance(exc, socket.timeout):
        return BackendTimeout(f"connecting to {url} timed out after {timeout}s")
    if isinstance(exc, socket.gaierror):
        return ConnectionFailed(f"cannot resolve the host of {url}")
    return ConnectionFailed(f"cannot connect to {url}: {exc.strerror or exc}")


def _keepalive(sock: socket.socket, dead_after_s: float) -> None:
    """Notice a dead peer within seconds, not the kernel's default two hours."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (
        ("TCP_KEEPIDLE", 5),
        ("TCP_KEEPINTVL", 2),
        ("TCP_KEEPCNT", 3),
        ("TCP_USER_TIMEOUT", int(dead_after_s * 1000)),
    ):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class ConnectProxy:
    """Relays one CONNECT to `host:port` (no other target), timing each direction's last bytes."""

    def __init__(self, host: str, port: int, url: str, connect_timeout: float, dead_after_s: float) -> None:
        self.host, self.port, self.url = host, port, url
        self.connect_timeout, self.dead_after_s = connect_timeout, dead_after_s
        self.cond = threading.Condition()
        self.server_at = 0.0  # monotonic time of the server's last bytes
        self.client_at = 0.0
        self.server_bytes = 0
        self.client_bytes = 0
        self.error: BackendError | None = None
        self.closing = False
        self.ended_by: str | None = None  # "server" or "client": who hung up first
        self._client: socket.socket | None = None
        self._upstream: socket.socket | None = None
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(1)
        self._listener.settimeout(connect_timeout)
        self.port_local = int(self._listener.getsockname()[1])
        threading.Thread(target=self._serve, name="openadapt-flow-rdp-proxy", daemon=True).start()

    # -- state shared with the backend

    def fail(self, error: BackendError) -> None:
        with self.cond:
            if self.error is None and not self.closing:
                self.error = error
            self.cond.notify_all()

    def wait_server_after(self, t: float, timeout: float) -> bool:
        """Block until the server sent bytes after monotonic time `t` (or an error, or `timeout`)."""
        with self.cond:
            self.cond.wait_for(lambda: self.server_at > t or self.error is not None, max(0.0, timeout))
            return self.server_at > t

    # -- the relay

    def _serve(self) -> None:
        try:
            client, _ = self._listener.accept()
        except OSError:  # timeout or closed: the client never dialled; the session reports that
            return
        finally:
            self._listener.close()
        self._client = client
        try:
            self._handshake(client)
        except BackendError as exc:
            self.fail(exc)
            self._close_sockets()
            return
        except OSError as exc:
            self.fail(ConnectionFailed(f"the RDP client's proxy connection failed: {exc}"))
            self._close_sockets()
            return
        threading.Thread(
            target=self._pump, args=(self._upstream, client, True), name="openadapt-flow-rdp-down", daemon=True
        ).start()
        self._pump(client, self._upstream, False)

    def _handshake(self, client: socket.socket) -> None:
        client.settimeout(self.connect_timeout)
        header = b""
        while b"\r\n\r\n" not in header:
            chunk = client.recv(1024)
            if not chunk or len(header) > _MAX_HEADER:
                raise ConnectionFailed("the RDP client sent no proxy request")
            header += chunk
        m = _CONNECT.match(header)
        want = (self.host.lower().strip("[]"), self.port)
        if not m or (m.group(1).decode().lower().strip("[]"), int(m.group(2))) != want:
            client.sendall(b"HTTP/1.1 403 Forbidden\r\n\r\n")
            raise ConnectionFailed(f"the RDP client asked the proxy for another target than {self.url}")
        try:
            upstream = socket.create_connection((self.host, self.port), self.connect_timeout)
        except OSError as exc:
            client.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
            raise connect_error(exc, self.url, self.connect_timeout) from None
        _keepalive(upstream, self.dead_after_s)
        upstream.settimeout(None)
        client.settimeout(None)
        self._upstream = upstream
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

    def _pump(self, src: socket.socket | None, dst: socket.socket | None, from_server: bool) -> None:
        assert src is not None and dst is not None
        while True:
            try:
                data = src.recv(_CHUNK)
            except OSError as exc:
                data, why = b"", str(exc.strerror or exc)
            else:
                why = "the server closed the connection" if from_server else "the RDP client closed"
            now = time.monotonic()
            with self.cond:
                if from_server:
                    self.server_at, self.server_bytes = now, self.server_bytes + len(data)
                else:
                    self.client_at, self.client_bytes = now, self.client_bytes + len(data)
                self.cond.notify_all()
            if data:
                try:
                    dst.sendall(data)
                    continue
                except OSError as exc:
                    # the far side of `dst` is gone: the client if we were relaying the server's bytes
                    from_server, why = not from_server, str(exc.strerror or exc)
            self._hang_up(from_server, why)
            return

    def _hang_up(self, by_server: bool, why: str) -> None:
        with self.cond:
            first = self.ended_by is None
            if first:
                self.ended_by = "server" if by_server else "client"
        if first and by_server:
            self.fail(ConnectionFailed(f"lost the connection to {self.url}: {why}"))
        self._close_sockets()

    def _close_sockets(self) -> None:
        for sock in (self._client, self._upstream):
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def close(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        try:
            self._listener.close()
        except OSError:
            pass
        self._close_sockets()
