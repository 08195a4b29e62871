"""A live mirror of a VNC server's screen over RFB, kept current by incremental updates.

The RFB protocol (vncdotool's `rfb.RFBClient`) runs in twisted's reactor thread.
After every framebuffer update the client at once asks for the next incremental
one, so the server pushes each change as it happens; `Mirror` holds the frame the
reactor paints and commits, shared with callers under its condition variable.

It is the one RFB client: the VNC backend and the recording proxy's upstream
(`backends/upstream.py`) each hold one connection (`open_mirror`/`close_mirror`).
The reactor is process-global and cannot be restarted, so it is started once,
on a daemon thread, and never stopped; each connection lives on it.
Library errors are mapped to ours here: refused/unreachable/lost →
ConnectionFailed, bad password → AuthFailed, no reply in time → BackendTimeout.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from typing import Any, Callable

import numpy as np
from twisted.internet import error as twisted_error
from twisted.internet import protocol as twisted_protocol
from twisted.internet import reactor
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.endpoints import HostnameEndpoint
from twisted.python.failure import Failure
from vncdotool import rfb
from vncdotool.const import AuthTypes, Encoding

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.errors import AuthFailed, BackendError, BackendTimeout, ConnectionFailed

PASSWORD_HINT = (
    "name the environment variable that holds it: --password-env NAME, or password_env in the config's backend"
)

# --- the process-global reactor ----------------------------------------------------------

_reactor_lock = threading.Lock()
_reactor_pid: int | None = None  # the process whose thread runs the reactor


def ensure_reactor(timeout: float) -> None:
    """Start the process-global reactor on a daemon thread unless it already runs."""
    global _reactor_pid
    with _reactor_lock:
        if reactor.running:
            if _reactor_pid not in (None, os.getpid()):
                # a forked child inherits the reactor's "running" state but not its thread: nothing would ever
                # answer (a connect would wait out its whole timeout for a first frame)
                raise BackendError(
                    "this process was forked from one running the RFB reactor; VNC needs a new "
                    "process (spawn it, do not fork)"
                )
            return
        if getattr(reactor, "_startedBefore", False):
            raise BackendError("the twisted reactor was stopped in this process; VNC needs a new process")
        started = threading.Event()
        reactor.callWhenRunning(started.set)
        threading.Thread(
            # installSignalHandlers exists on every concrete reactor, not on the interface mypy sees.
            target=lambda: reactor.run(installSignalHandlers=False),  # type: ignore[call-arg, misc]
            name="openadapt-flow-rfb",
            daemon=True,
        ).start()
        _reactor_pid = os.getpid()
        if not started.wait(timeout):
            raise BackendTimeout(f"the RFB reactor thread did not start within {timeout}s")


# --- the protocol, running in the reactor thread -----------------------------------------


class Mirror:
    """The frame shared between the reactor thread (paints, commits) and callers (copy under `cond`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.cond = threading.Condition()
        self.work = np.zeros((0, 0, 3), np.uint8)  # painted by the reactor between updates
        self.front = np.zeros((0, 0, 3), np.uint8)  # last whole update, what capture copies
        self.version = 0  # bumped when committed pixels differ from the previous frame
        self.ready = False
        self.heard_at = 0.0
        self.changed_at = time.monotonic()  # when committed pixels last changed: "settled" is measured from it
        self.wakers: list[Callable[[], None]] = []  # called (reactor thread, no lock held) after each change
        self.error: BackendError | None = None
        self.closing = False
        self.client: MirrorClient | None = None
        self.disconnected = threading.Event()

    def fail(self, error: BackendError) -> None:
        with self.cond:
            if self.error is None and not self.closing:
                self.error = error
            self.cond.notify_all()

    def resize(self, width: int, height: int) -> None:
        old = self.work
        self.work = np.zeros((height, width, 3), np.uint8)
        h, w = min(height, old.shape[0]), min(width, old.shape[1])
        self.work[:h, :w] = old[:h, :w]

    def commit(self, rects: list[tuple[int, int, int, int]]) -> None:
        with self.cond:
            changed = False
            if self.front.shape != self.work.shape:
                self.front, changed = self.work.copy(), True
            else:
                for x, y, w, h in rects:
                    src, dst = self.work[y : y + h, x : x + w], self.front[y : y + h, x : x + w]
                    if not np.array_equal(src, dst):
                        dst[...] = src
                        changed = True
            self.heard_at = time.monotonic()
            if changed:
                self.version += 1
                self.changed_at = self.heard_at
            self.ready = True
            self.cond.notify_all()
            wakers = list(self.wakers) if changed else []
        for wake in wakers:
            wake()


with warnings.catch_warnings():
    # vncdotool warns that its paint hooks may change; we pin vncdotool and own these overrides.
    warnings.simplefilter("ignore", FutureWarning)

    class MirrorClient(rfb.RFBClient):  # type: ignore[misc]  # vncdotool is untyped
        """Paints every update into its factory's `Mirror` and asks for the next one at once."""

        SUPPORTED_AUTHS = {AuthTypes.NONE, AuthTypes.VNC_AUTHENTICATION}  # ARD auth would prompt on stdin
        factory: MirrorFactory

        def connectionMade(self) -> None:
            super().connectionMade()
            self.transport.setTcpNoDelay(True)
            self.mirror = self.factory.mirror
            self.mirror.client = self
            self._full_next = False

        def dataReceived(self, data: bytes) -> None:
            self.mirror.heard_at = time.monotonic()
            super().dataReceived(data)

        def connectionLost(self, reason: Failure = twisted_protocol.connectionDone) -> None:
            mirror = self.mirror
            why = reason.getErrorMessage() if reason is not None else "closed"
            if mirror.ready:
                mirror.fail(ConnectionFailed(f"lost the connection to {mirror.url}: {why}"))
            else:
                mirror.fail(ConnectionFailed(f"{mirror.url} closed the connection during the handshake: {why}"))
            mirror.client = None
            mirror.disconnected.set()

        def vncRequestPassword(self) -> None:
            if self.factory.password is None:
                self.mirror.fail(AuthFailed(f"{self.mirror.url} requires a password: {self.factory.password_hint}"))
                self.transport.loseConnection()
                return
            self.sendPassword(self.factory.password)

        def vncAuthFailed(self, reason: Any) -> None:
            text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
            self.mirror.fail(AuthFailed(f"{self.mirror.url} refused the password: {text}"))

        def vncProtocolError(self, reason: str) -> None:
            kind = AuthFailed if "security failure" in reason.lower() else ConnectionFailed
            self.mirror.fail(kind(f"{self.mirror.url}: {reason}"))

        def vncConnectionMade(self) -> None:
            self.setPixelFormat(rfb.PixelFormat())  # 32 bpp little-endian: bytes R, G, B, pad
            # RAW + CopyRect decode at memcpy speed; the pure-Python ZRLE/Hextile decoders would not.
            self.setEncodings(
                [
                    Encoding.RAW,
                    Encoding.COPY_RECTANGLE,
                    Encoding.PSEUDO_CURSOR,
                    Encoding.PSEUDO_DESKTOP_SIZE,
                    Encoding.PSEUDO_LAST_RECT,
                ]
            )
            self.mirror.resize(self.width, self.height)
            self.framebufferUpdateRequest(incremental=False)

        def updateRectangle(self, x: int, y: int, width: int, height: int, data: bytes) -> None:
            if not data:
                return
            pixels = np.frombuffer(data, np.uint8).reshape(height, width, 4)[:, :, :3]
            target = self.mirror.work[y : y + height, x : x + width]
            target[...] = pixels[: target.shape[0], : target.shape[1]]

        def copyRectangle(self, srcx: int, srcy: int, x: int, y: int, width: int, height: int) -> None:
            work = self.mirror.work
            block = work[srcy : srcy + height, srcx : srcx + width].copy()
            target = work[y : y + block.shape[0], x : x + block.shape[1]]
            target[...] = block[: target.shape[0], : target.shape[1]]

        def fillRectangle(self, x: int, y: int, width: int, height: int, color: bytes) -> None:
            self.mirror.work[y : y + height, x : x + width] = np.frombuffer(color[:3], np.uint8)

        def updateCursor(self, *args: Any) -> None:
            pass  # the pointer is never painted into frames: templates must not see it

        def updateDesktopSize(self, width: int, height: int) -> None:
            self.width, self.height = width, height
            self.mirror.resize(width, height)
            self._full_next = True

        def commitUpdate(self, rectangles: list[tuple[int, int, int, int]] | None = None) -> None:
            self.mirror.commit(rectangles or [])
            self.framebufferUpdateRequest(incremental=not self._full_next)
            self._full_next = False


class MirrorFactory(rfb.RFBFactory):  # type: ignore[misc]  # vncdotool is untyped
    """Builds the `MirrorClient` of one connection, bound to its `Mirror` and password."""

    protocol = MirrorClient

    def __init__(self, mirror: Mirror, password: str | None, password_hint: str = PASSWORD_HINT) -> None:
        super().__init__(password=password, shared=True)
        self.mirror, self.password_hint = mirror, password_hint


def connect_error(failure: Failure, spec: BackendSpec) -> BackendError:
    """Our error for a failed TCP connect to the server of `spec`."""
    exc, url = failure.value, spec.url
    if isinstance(exc, twisted_error.ConnectionRefusedError):
        return ConnectionFailed(f"{url} refused the connection (is a VNC server listening there?)")
    if isinstance(exc, (twisted_error.TimeoutError, CancelledError)):
        return BackendTimeout(f"connecting to {url} timed out after {spec.connect_timeout_s}s")
    if isinstance(exc, twisted_error.DNSLookupError):
        return ConnectionFailed(f"cannot resolve the host of {url}")
    return ConnectionFailed(f"cannot connect to {url}: {failure.getErrorMessage()}")


# --- one connection: open (first frame in) and close, called from the caller's thread -------


def open_mirror(
    spec: BackendSpec, password: str | None, password_hint: str = PASSWORD_HINT
) -> tuple[Mirror, Deferred[Any] | None]:
    """Connect a mirror to the server of `spec` and wait for its first frame; our error if none comes.
    Returns the mirror and the connect Deferred (None if the reactor never got to it) for `close_mirror`."""
    ensure_reactor(spec.io_timeout_s)
    mirror = Mirror(spec.url)
    factory = MirrorFactory(mirror, password, password_hint)
    box: dict[str, Deferred[Any]] = {}
    started = threading.Event()

    def start() -> None:
        host, port = str(spec.host), int(spec.effective_port or 5900)  # both checked by BackendSpec
        endpoint = HostnameEndpoint(reactor, host, port, timeout=spec.connect_timeout_s)
        box["connecting"] = endpoint.connect(factory)
        box["connecting"].addErrback(lambda f: mirror.fail(connect_error(f, spec)))
        started.set()

    reactor.callFromThread(start)
    with mirror.cond:
        mirror.cond.wait_for(lambda: mirror.ready or mirror.error is not None, spec.connect_timeout_s)
        error = mirror.error
        if error is None and not mirror.ready:
            error = BackendTimeout(f"no first frame from {spec.url} within {spec.connect_timeout_s}s")
    started.wait(spec.io_timeout_s)
    connecting = box.get("connecting")
    if error is not None:
        close_mirror(mirror, connecting, spec.io_timeout_s)
        raise error
    return mirror, connecting


def close_mirror(mirror: Mirror, connecting: Deferred[Any] | None, io_timeout_s: float) -> None:
    """Hang up (cancel a connect still under way) and wait, bounded, for the connection to go."""
    with mirror.cond:
        mirror.closing = True
        mirror.cond.notify_all()

    def hang_up() -> None:
        if connecting is not None and not connecting.called:
            connecting.cancel()
        if mirror.client is not None:
            mirror.client.transport.loseConnection()
        else:
            mirror.disconnected.set()

    if reactor.running:
        reactor.callFromThread(hang_up)
        client = mirror.client
        if not mirror.disconnected.wait(io_timeout_s) and client is not None:
            reactor.callFromThread(client.transport.abortConnection)
