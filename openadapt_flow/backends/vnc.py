"""VNC backend: a live mirror of the remote screen, kept current by incremental updates.

The mirror (`rfb_mirror`: vncdotool's `rfb.RFBClient` in twisted's reactor thread)
asks for the next incremental update after every one, so the server pushes each
change as it happens: `capture()` is a memory copy, and `wait_for_update()` wakes
on the update itself. The server stays silent while nothing changes, so a frame
not confirmed within the freshness limit is re-confirmed by a one-pixel
non-incremental request before it is used.

Library errors are mapped to ours at the edge (in `rfb_mirror` and here):
refused/unreachable/lost → ConnectionFailed, bad password → AuthFailed, no reply
in time → BackendTimeout.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable

import numpy as np
from twisted.internet import reactor

from openadapt_flow.backends.base import Capabilities, Frame
from openadapt_flow.backends.rfb_mirror import MirrorClient, close_mirror, open_mirror
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.keys import KEYSYMS, char_keysym, key_keysym
from openadapt_flow.errors import BackendError, BackendTimeout, ConnectionFailed, UsageError

BUTTON_MASKS = {"left": 1, "middle": 2, "right": 4}
_WHEEL_UP, _WHEEL_DOWN = 8, 16  # buttons 4 and 5
_DRAG_STEPS = 8
_DRAG_STEP_S = 0.015  # pacing so toolkits see a gesture, not a teleport
_ECHO_WAIT_S = 2.0  # longest wait for an app to echo a non-ASCII character (see type_text)
_ECHO_QUIET_S = 0.08  # the screen still this long after it changed: the app drew what it was sent


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
        self._shot: tuple[int, np.ndarray] | None = None  # (mirror version, its read-only copy)
        self._closed = False
        self._mirror, self._connecting = open_mirror(spec, _password(spec))
        with self._mirror.cond:
            self._seen_version = self._mirror.version

    # -- plumbing

    def _call(self, fn: Callable[[MirrorClient], Any], what: str) -> Any:
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

    def _live_client(self) -> MirrorClient:
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
        def write(client: MirrorClient) -> None:
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
        """Copy the mirror (once per screen change: the copy is read-only and shared); if the server
        has been silent past the freshness limit, confirm it first."""
        mirror, limit = self._mirror, self.spec.freshness_limit_s
        # The round trip lets the reactor handle any pending close before we trust the mirror.
        self._call(lambda client: None, "capture")
        if time.monotonic() - mirror.heard_at > limit:
            self._ping()
        with mirror.cond:
            if mirror.error is not None:
                raise mirror.error
            self._seen_version = mirror.version
            if self._shot is None or self._shot[0] != mirror.version:
                pixels = mirror.front.copy()
                pixels.flags.writeable = False  # shared by every capture until the screen changes
                self._shot = (mirror.version, pixels)
            return Frame(self._shot[1], time.monotonic())

    def _ping(self) -> None:
        mirror, sent = self._mirror, time.monotonic()
        self._call(lambda c: c.framebufferUpdateRequest(0, 0, 1, 1, incremental=False), "liveness check")
        with mirror.cond:
            mirror.cond.wait_for(lambda: mirror.heard_at >= sent or mirror.error is not None, self.spec.io_timeout_s)
            if mirror.error is not None:
                raise mirror.error
            if mirror.heard_at < sent:
                raise BackendTimeout(
                    f"{self.spec.url} did not answer within {self.spec.io_timeout_s}s; "
                    f"refusing a frame {sent - mirror.heard_at:.1f}s old"
                )

    def wait_for_update(self, timeout: float) -> bool:
        """True as soon as the screen differs from the last capture; False after `timeout`."""
        self._check()
        mirror = self._mirror
        with mirror.cond:
            mirror.cond.wait_for(
                lambda: mirror.version != self._seen_version or mirror.error is not None, max(0.0, timeout)
            )
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

    def move(self, x: int, y: int) -> None:
        x, y = self._point(x, y)
        self._send([("ptr", x, y, 0)], "pointer move")

    def type_text(self, text: str) -> None:
        """Send each character as its keysym; the server picks the key and shift state for it.

        X-based servers (Xvnc, x11vnc) bind a keysym missing from their keymap to a
        spare key code of the VNC keyboard on the fly; X's core keymap follows the
        device that sent the last key. Measured on TigerVNC: when the unbound
        character is the first key since another device (or none) typed, the app
        sees the key code with no symbol and types nothing. So non-ASCII text starts
        with a Shift tap confirmed by a round trip, and each non-ASCII character
        after the first waits (bounded) for the screen to echo the previous one, so
        no app looks a key code up after the server rebound it. The echo is a change
        followed by a still screen, not the first change: on a loaded machine the
        app drew the chunk's first letters, the next character was sent and rebound
        the key code before the app read the previous one ("Café" came out "Caf").
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
                self._wait_for_echo(version, _ECHO_WAIT_S)
            with self._mirror.cond:
                version = self._mirror.version
            self._send([("key", s, down, 0) for s in chunk for down in (1, 0)], "typing")

    def _wait_for_echo(self, version: int, timeout: float) -> None:
        """Wait, at most `timeout`, until the screen changed since `version` and then held still for _ECHO_QUIET_S."""
        mirror = self._mirror
        deadline = time.monotonic() + timeout
        with mirror.cond:
            seen = version
            changed = False
            while mirror.error is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                moved = mirror.cond.wait_for(
                    lambda: mirror.version != seen or mirror.error is not None,
                    min(_ECHO_QUIET_S, left) if changed else left,
                )
                if not moved and changed:
                    return  # still since its last change: the echo is drawn
                changed, seen = changed or moved, mirror.version

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
        close_mirror(self._mirror, self._connecting, self.spec.io_timeout_s)

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
