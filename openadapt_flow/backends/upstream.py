"""The live VNC server behind the recording proxy, mirrored by the same RFB client as the VNC backend.

`rfb_mirror` keeps the frame current (one incremental request always outstanding)
and notes when its pixels last changed, which is what "settled" is measured from.
The viewer's input is forwarded as it arrives, in order, through the reactor
thread; the proxy never waits for it (measured: 0.04 ms from call to the server
parsing it, against 0.02 ms for a hand-written socket client; docs/decisions.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
from twisted.internet import reactor

from openadapt_flow.backends.rfb_mirror import MirrorClient, close_mirror, open_mirror
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.errors import BackendError, ConnectionFailed


class Upstream:
    """A live mirror of one VNC server for the recorder. Connects in the constructor; `close()` when done."""

    def __init__(self, host: str, port: int, password: str | None = None, timeout: float = 10.0) -> None:
        self.spec = BackendSpec(kind="vnc", host=host, port=port, connect_timeout_s=timeout)
        self.url = self.spec.url
        self._mirror, self._connecting = open_mirror(self.spec, password, "pass --password-env NAME")
        self.cond: threading.Condition = self._mirror.cond
        self._shot: tuple[int, np.ndarray] | None = None  # (mirror version, its copy: never changed after)

    @property
    def error(self) -> BackendError | None:
        """Why the connection ended, or None while it lives (or after `close()`)."""
        with self.cond:
            return self._mirror.error

    @property
    def version(self) -> int:
        with self.cond:
            return self._mirror.version

    def _frame(self) -> np.ndarray:
        """The mirror's frame, copied once per change (call with `cond` held)."""
        mirror = self._mirror
        if self._shot is None or self._shot[0] != mirror.version:
            self._shot = (mirror.version, mirror.front.copy())
        return self._shot[1]

    def snapshot(self) -> tuple[int, np.ndarray]:
        """(version, frame); the frame is never changed after it is handed out."""
        with self.cond:
            return self._mirror.version, self._frame()

    def settled(self, quiet_s: float, since: float, timeout: float) -> np.ndarray:
        """The frame once nothing changed for `quiet_s` after both `since` and the last change (bounded)."""
        mirror, deadline = self._mirror, time.monotonic() + timeout
        with self.cond:
            while True:
                if mirror.error is not None:
                    raise mirror.error
                now = time.monotonic()
                quiet_until = max(mirror.changed_at, since) + quiet_s
                if now >= quiet_until or now >= deadline:
                    return self._frame()
                self.cond.wait(min(quiet_until, deadline) - now)

    def _forward(self, send: Callable[[MirrorClient], None]) -> None:
        with self.cond:
            if self._mirror.error is not None:
                raise self._mirror.error
            client = self._mirror.client
        if client is None:
            raise ConnectionFailed(f"lost the connection to {self.url}")
        reactor.callFromThread(send, client)

    def pointer(self, x: int, y: int, mask: int) -> None:
        self._forward(lambda client: client.pointerEvent(x, y, mask))

    def key(self, keysym: int, down: bool) -> None:
        self._forward(lambda client: client.keyEvent(keysym, down=int(down)))

    def subscribe(self, wake: Callable[[], None]) -> None:
        """Call `wake` (from the reactor thread) after every change of the frame."""
        with self.cond:
            self._mirror.wakers.append(wake)

    def unsubscribe(self, wake: Callable[[], None]) -> None:
        with self.cond:
            self._mirror.wakers.remove(wake)

    def close(self) -> None:
        close_mirror(self._mirror, self._connecting, self.spec.io_timeout_s)
