"""VNC backend: a live mirror of the remote screen, kept current by incremental updates.

The RFB protocol (vncdotool's `rfb.RFBClient`) runs in twisted's reactor thread.
After every framebuffer update the client at once asks for the next incremental
one, so the server pushes each change as it happens: `capture()` is a memory
copy, and `wait_for_update()` wakes on the update itself. The server stays
silent while nothing changes, so a frame not confirmed within the freshness
limit is re-confirmed by a one-pixel non-incremental request before it is used.

The reactor is process-global and cannot be restarted, so it is started once,
on a daemon thread, and never stopped; each backend is one connection on it.
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

from openadapt_flow.backends.base import Capabilities, Frame
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.errors import AuthFailed, BackendError, BackendTimeout, ConnectionFailed, UsageError

# X11 keysyms, which RFB key events carry (RFC 6143 §7.5.4).
KEYSYMS: dict[str, int] = {
    "enter": 0xFF0D, "tab": 0xFF09, "escape": 0xFF1B, "backspace": 0xFF08, "delete": 0xFFFF,
    "space": 0x20, "home": 0xFF50, "end": 0xFF57, "pageup": 0xFF55, "pagedown": 0xFF56,
    "up": 0xFF52, "down": 0xFF54, "left": 0xFF51, "right": 0xFF53, "insert": 0xFF63,
    "ctrl": 0xFFE3, "shift": 0xFFE1, "alt": 0xFFE9, "super": 0xFFEB,
    **{f"f{i}": 0xFFBE + i - 1 for i in range(1, 13)},
}
_TEXT_KEYSYMS = {"\n": 0xFF0D, "\r": 0xFF0D, "\t": 0xFF09, "\b": 0xFF08}
BUTTON_MASKS = {"left": 1, "middle": 2, "right": 4}
_WHEEL_UP, _WHEEL_DOWN = 8, 16  # buttons 4 and 5
_DRAG_STEPS = 8
_DRAG_STEP_S = 0.015  # pacing so toolkits see a gesture, not a teleport
_ECHO_WAIT_S = 0.5  # longest wait for an app to echo a non-ASCII character (see type_text)


def char_keysym(ch: str) -> int:
    """The keysym for one character: Latin-1 maps to itself, other Unicode to 0x01000000 + code point."""
    if ch in _TEXT_KEYSYMS:
        return _TEXT_KEYSYMS[ch]
    cp = ord(ch)
    if 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF:
        return cp
    if cp < 0x20 or 0x7F <= cp < 0xA0:
        raise UsageError(f"cannot type control character {ch!r}")
    return 0x01000000 + cp


def key_keysym(name: str) -> int:
    """The keysym for a backend-neutral key name (see base.KEY_NAMES) or a single character."""
    if name in KEYSYMS:
        return KEYSYMS[name]
    if len(name) == 1 and name.isprintable():
        return char_keysym(name)
    raise UsageError(f"unknown key name {name!r}")


# --- the process-global reactor ----------------------------------------------------------

_reactor_lock = threading.Lock()


def _ensure_reactor(timeout: float) -> None:
    with _reactor_lock:
        if reactor.running:
            return
        if getattr(reactor, "_startedBefore", False):
            raise BackendError("the twisted reactor was stopped in this process; VNC needs a new process")
        started = threading.Event()
        reactor.callWhenRunning(started.set)
        threading.Thread(
            # installSignalHandlers exists on every concrete reactor, not on the interface mypy sees.
            target=lambda: reactor.run(installSignalHandlers=False),  # type: ignore[call-arg, misc]
            name="openadapt-flow-rfb", daemon=True,
        ).start()
        if not started.wait(timeout):
            raise BackendTimeout(f"the RFB reactor thread did not start within {timeout}s")


# --- the protocol, running in the reactor thread -----------------------------------------


class _Mirror:
    """The frame shared between the reactor thread (paints, commits) and callers (copy under `cond`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.cond = threading.Condition()
        self.work = np.zeros((0, 0, 3), np.uint8)  # painted by the reactor between updates
        self.front = np.zeros((0, 0, 3), np.uint8)  # last whole update, what capture copies
        self.version = 0  # bumped when committed pixels differ from the previous frame
        self.ready = False
        self.heard_at = 0.0
        self.error: BackendError | None = None
        self.closing = False
        self.client: _MirrorClient | None = None
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
                    src, dst = self.work[y:y + h, x:x + w], self.front[y:y + h, x:x + w]
                    if not np.array_equal(src, dst):
                        dst[...] = src
                        changed = True
            self.heard_at = time.monotonic()
            if changed:
                self.version += 1
            self.ready = True
            self.cond.notify_all()


with warnings.catch_warnings():
    # vncdotool warns that its paint hooks may change; we pin vncdotool and own these overrides.
    warnings.simplefilter("ignore", FutureWarning)

    class _MirrorClient(rfb.RFBClient):
        SUPPORTED_AUTHS = {AuthTypes.NONE, AuthTypes.VNC_AUTHENTICATION}  # ARD auth would prompt on stdin
        factory: _MirrorFactory

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
                self.mirror.fail(AuthFailed(
                    f"{self.mirror.url} requires a password: set password_env to the name of an "
                    "environment variable that holds it"))
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
            self.setEncodings([Encoding.RAW, Encoding.COPY_RECTANGLE, Encoding.PSEUDO_CURSOR,
                               Encoding.PSEUDO_DESKTOP_SIZE, Encoding.PSEUDO_LAST_RECT])
            self.mirror.resize(self.width, self.height)
            self.framebufferUpdateRequest(incremental=False)

        def updateRectangle(self, x: int, y: int, width: int, height: int, data: bytes) -> None:
            if not data:
                return
            pixels = np.frombuffer(data, np.uint8).reshape(height, width, 4)[:, :, :3]
            target = self.mirror.work[y:y + height, x:x + width]
            target[...] = pixels[:target.shape[0], :target.shape[1]]

        def copyRectangle(self, srcx: int, srcy: int, x: int, y: int, width: int, height: int) -> None:
            work = self.mirror.work
            block = work[srcy:srcy + height, srcx:srcx + width].copy()
            target = work[y:y + block.shape[0], x:x + block.shape[1]]
            target[...] = block[:target.shape[0], :target.shape[1]]

        def fillRectangle(self, x: int, y: int, width: int, height: int, color: bytes) -> None:
            self.mirror.work[y:y + height, x:x + width] = np.frombuffer(color[:3], np.uint8)

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


class _MirrorFactory(rfb.RFBFactory):
    protocol = _MirrorClient

    def __init__(self, mirror: _Mirror, password: str | None) -> None:
        super().__init__(password=password, shared=True)
        self.mirror = mirror


def _connect_error(failure: Failure, spec: BackendSpec) -> BackendError:
    exc, url = failure.value, spec.url
    if isinstance(exc, twisted_error.ConnectionRefusedError):
        return ConnectionFailed(f"{url} refused the connection (is a VNC server listening there?)")
    if isinstance(exc, (twisted_error.TimeoutError, CancelledError)):
        return BackendTimeout(f"connecting to {url} timed out after {spec.connect_timeout_s}s")
    if isinstance(exc, twisted_error.DNSLookupError):
        return ConnectionFailed(f"cannot resolve the host of {url}")
    return ConnectionFailed(f"cannot connect to {url}: {failure.getErrorMessage()}")


# --- the backend, called from the caller's thread ----------------------------------------


class VncBackend:
    """Drives a VNC server through a live mirror of its screen. Connects in the constructor."""

    name = "vnc"

    def __init__(self, spec: BackendSpec) -> None:
        if spec.kind != "vnc":
            raise UsageError(f"VncBackend needs a vnc spec, got {spec.kind}")
        self.spec = spec
        self.capabilities = Capabilities(
            unicode_typing=True, event_driven_updates=True, freshness_limit_s=spec.freshness_limit_s
        )
        self._mirror = _Mirror(spec.url)
        self._seen_version = 0
        self._closed = False
        self._connecting: Deferred | None = None
        self._connect(_password(spec))

    def _connect(self, password: str | None) -> None:
        _ensure_reactor(self.spec.io_timeout_s)
        spec, mirror = self.spec, self._mirror
        factory = _MirrorFactory(mirror, password)

        def start() -> None:
            host, port = str(spec.host), int(spec.effective_port or 5900)  # both checked by BackendSpec
            endpoint = HostnameEndpoint(reactor, host, port, timeout=spec.connect_timeout_s)
            self._connecting = endpoint.connect(factory)
            self._connecting.addErrback(lambda f: mirror.fail(_connect_error(f, spec)))

        reactor.callFromThread(start)
        with mirror.cond:
            mirror.cond.wait_for(lambda: mirror.ready or mirror.error is not None, spec.connect_timeout_s)
            error = mirror.error
            if error is None and not mirror.ready:
                error = BackendTimeout(f"no first frame from {spec.url} within {spec.connect_timeout_s}s")
            self._seen_version = mirror.version
        if error is not None:
            self.close()
            raise error

    # -- plumbing

    def _call(self, fn: Callable[[_MirrorClient], Any], what: str) -> Any:
        """Run `fn(client)` in the reactor thread and return its result, bounded by io_timeout_s."""
        done, box = threading.Event(), {}

        def run() -> None:
            try:
                client = self._live_client()
                box["value"] = fn(client)
            except BaseException as exc:  # handed back to the caller's thread below
                box["error"] = exc
            finally:
                done.set()

        self._check()
        reactor.callFromThread(run)
        if not done.wait(self.spec.io_timeout_s):
            raise BackendTimeout(f"{what} on {self.spec.url}: no progress within {self.spec.io_timeout_s}s")
        exc = box.get("error")
        if isinstance(exc, BackendError):
            raise exc
        if exc is not None:
            raise ConnectionFailed(f"{what} on {self.spec.url} failed: {exc}") from exc
        return box.get("value")

    def _check(self) -> None:
        if self._closed:
            raise ConnectionFailed(f"the VNC backend for {self.spec.url} is closed")
        with self._mirror.cond:
            if self._mirror.error is not None:
                raise self._mirror.error

    def _live_client(self) -> _MirrorClient:
        self._check()
        client = self._mirror.client
        if client is None:
            raise ConnectionFailed(f"lost the connection to {self.spec.url}")
        return client

    def _frame_size(self) -> tuple[int, int]:
        with self._mirror.cond:
            return self._mirror.front.shape[1], self._mirror.front.shape[0]

    def _point(self, x: int, y: int) -> tuple[int, int]:
        w, h = self._frame_size()
        if not (0 <= x < w and 0 <= y < h):
            raise UsageError(f"point ({x}, {y}) is outside the {w}x{h} screen of {self.spec.url}")
        return int(x), int(y)

    def _send(self, events: list[tuple[str, int, int, int]], what: str) -> None:
        def write(client: _MirrorClient) -> None:
            for kind, a, b, c in events:
                if kind == "ptr":
                    client.pointerEvent(a, b, c)
                else:
                    client.keyEvent(a, down=bool(b))
            # Hand the bytes to the kernel now, not on the reactor's next turn: once an input call
            # returns, the input is on the wire even if this process is killed the next instant
            # (the journal's `action_sent` must be true).
            flush = getattr(client.transport, "doWrite", None)
            if flush is not None:
                flush()

        self._call(write, what)

    # -- Backend

    def capture(self) -> Frame:
        """Copy the mirror; if the server has been silent past the freshness limit, confirm it first."""
        mirror, limit = self._mirror, self.spec.freshness_limit_s
        # The round trip lets the reactor handle any pending close before we trust the mirror.
        self._call(lambda client: None, "capture")
        if time.monotonic() - mirror.heard_at > limit:
            self._ping()
        with mirror.cond:
            if mirror.error is not None:
                raise mirror.error
            self._seen_version = mirror.version
            return Frame(mirror.front.copy(), time.monotonic())

    def _ping(self) -> None:
        mirror, sent = self._mirror, time.monotonic()
        self._call(lambda c: c.framebufferUpdateRequest(0, 0, 1, 1, incremental=False), "liveness check")
        with mirror.cond:
            mirror.cond.wait_for(lambda: mirror.heard_at >= sent or mirror.error is not None,
                                 self.spec.io_timeout_s)
            if mirror.error is not None:
                raise mirror.error
            if mirror.heard_at < sent:
                raise BackendTimeout(
                    f"{self.spec.url} did not answer within {self.spec.io_timeout_s}s; "
                    f"refusing a frame {sent - mirror.heard_at:.1f}s old")

    def wait_for_update(self, timeout: float) -> bool:
        """True as soon as the screen differs from the last capture; False after `timeout`."""
        self._check()
        mirror = self._mirror
        with mirror.cond:
            mirror.cond.wait_for(
                lambda: mirror.version != self._seen_version or mirror.error is not None, max(0.0, timeout))
            if mirror.error is not None:
                raise mirror.error
            return mirror.version != self._seen_version

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        if button not in BUTTON_MASKS:
            raise UsageError(f"unknown mouse button {button!r} (expected left, right or middle)")
        x, y = self._point(x, y)
        events = [("ptr", x, y, 0)]
        for _ in range(max(1, count)):
            events += [("ptr", x, y, BUTTON_MASKS[button]), ("ptr", x, y, 0)]
        self._send(events, "click")

    def type_text(self, text: str) -> None:
        """Send each character as its keysym; the server picks the key and shift state for it.

        X-based servers (Xvnc, x11vnc) bind a keysym missing from their keymap to a
        spare key code of the VNC keyboard on the fly; X's core keymap follows the
        device that sent the last key. Measured on TigerVNC: when the unbound
        character is the first key since another device (or none) typed, the app
        sees the key code with no symbol and types nothing. So non-ASCII text starts
        with a Shift tap confirmed by a round trip, and each non-ASCII character
        after the first waits (bounded) for the screen to echo the previous one, so
        no app looks a key code up after the server rebound it.
        """
        text = text.replace("\r\n", "\n")  # one Return per line break, whatever the source's line endings
        syms = [char_keysym(ch) for ch in text]  # refuse control characters before sending anything
        chunks: list[list[int]] = [[]]
        for ch, sym in zip(text, syms):
            chunks[-1].append(sym)
            if not ch.isascii():
                chunks.append([])
        if len(chunks) > 1:
            self._send([("key", KEYSYMS["shift"], 1, 0), ("key", KEYSYMS["shift"], 0, 0)], "typing")
            self._ping()
        version = None
        for chunk in filter(None, chunks):
            if version is not None:
                self._wait_for_change(version, _ECHO_WAIT_S)
            with self._mirror.cond:
                version = self._mirror.version
            self._send([("key", s, down, 0) for s in chunk for down in (1, 0)], "typing")

    def _wait_for_change(self, version: int, timeout: float) -> None:
        mirror = self._mirror
        with mirror.cond:
            mirror.cond.wait_for(lambda: mirror.version != version or mirror.error is not None, timeout)

    def press(self, keys: list[str]) -> None:
        if not keys:
            raise UsageError("press needs at least one key")
        syms = [key_keysym(k) for k in keys]
        events = [("key", s, 1, 0) for s in syms] + [("key", s, 0, 0) for s in reversed(syms)]
        self._send(events, "key press")

    def scroll(self, x: int, y: int, clicks: int) -> None:
        x, y = self._point(x, y)
        mask = _WHEEL_DOWN if clicks > 0 else _WHEEL_UP
        events = [("ptr", x, y, 0)]
        for _ in range(abs(int(clicks))):
            events += [("ptr", x, y, mask), ("ptr", x, y, 0)]
        self._send(events, "scroll")

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        x1, y1 = self._point(x1, y1)
        x2, y2 = self._point(x2, y2)
        self._send([("ptr", x1, y1, 0), ("ptr", x1, y1, 1)], "drag")
        for i in range(1, _DRAG_STEPS + 1):
            time.sleep(_DRAG_STEP_S)
            x, y = x1 + (x2 - x1) * i // _DRAG_STEPS, y1 + (y2 - y1) * i // _DRAG_STEPS
            self._send([("ptr", x, y, 1)], "drag")
        self._send([("ptr", x2, y2, 0)], "drag")

    def close(self) -> None:
        """Disconnect; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        mirror = self._mirror
        with mirror.cond:
            mirror.closing = True
            mirror.cond.notify_all()

        def hang_up() -> None:
            if self._connecting is not None and not self._connecting.called:
                self._connecting.cancel()
            if mirror.client is not None:
                mirror.client.transport.loseConnection()
            else:
                mirror.disconnected.set()

        if reactor.running:
            reactor.callFromThread(hang_up)
            client = mirror.client
            if not mirror.disconnected.wait(self.spec.io_timeout_s) and client is not None:
                reactor.callFromThread(client.transport.abortConnection)

    def __enter__(self) -> VncBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _password(spec: BackendSpec) -> str | None:
    if spec.password_env is None:
        return None
    value = os.environ.get(spec.password_env)
    if value is None:
        raise UsageError(f"environment variable {spec.password_env} (the VNC password_env) is not set")
    if not value.isascii():
        raise UsageError(f"the VNC password in {spec.password_env} must be ASCII (RFB's DES auth takes bytes)")
    return value
