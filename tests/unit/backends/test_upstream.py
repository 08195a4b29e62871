"""The recorder's upstream over the VNC backend's RFB client: input in order, frames that never change after they
are handed out, settling measured from the last change, subscribers woken, and errors in our family."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np
import pytest

from openadapt_flow.backends.upstream import Upstream
from openadapt_flow.errors import AuthFailed, ConnectionFailed
from openadapt_flow.fixture.server import RfbServer

pytestmark = pytest.mark.timeout(30)


class Screen:
    """A screen the test paints; it keeps the input the server hands it."""

    name = "upstream-test"

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.frame = np.zeros((40, 60, 3), np.uint8)
        self.version = 1
        self.input: list[tuple] = []
        self._wakers: list[Callable[[], None]] = []

    @property
    def size(self) -> tuple[int, int]:
        return 60, 40

    def snapshot(self) -> tuple[int, np.ndarray]:
        with self.cond:
            return self.version, self.frame

    def paint(self, value: int) -> None:
        with self.cond:
            self.frame, self.version = np.full((40, 60, 3), value, np.uint8), self.version + 1
            wakers = list(self._wakers)
        for wake in wakers:
            wake()

    def pointer(self, x: int, y: int, mask: int) -> None:
        with self.cond:
            self.input.append(("pointer", x, y, mask))
            self.cond.notify_all()

    def key(self, keysym: int, down: bool) -> None:
        with self.cond:
            self.input.append(("key", keysym, down))
            self.cond.notify_all()

    def subscribe(self, wake: Callable[[], None]) -> None:
        with self.cond:
            self._wakers.append(wake)

    def unsubscribe(self, wake: Callable[[], None]) -> None:
        with self.cond:
            self._wakers.remove(wake)


def _shows(up: Upstream, value: int) -> bool:
    with up.cond:
        return bool(up.cond.wait_for(lambda: up.snapshot()[1][0, 0, 0] == value, 5))


def test_input_reaches_the_server_in_order() -> None:
    screen = Screen()
    with RfbServer(screen) as server:
        up = Upstream("127.0.0.1", server.port, timeout=5)
        try:
            for i in range(20):
                up.pointer(i, i + 1, i % 2)
                up.key(0x61 + i, bool(i % 2))
            want = [e for i in range(20) for e in (("pointer", i, i + 1, i % 2), ("key", 0x61 + i, bool(i % 2)))]
            with screen.cond:
                assert screen.cond.wait_for(lambda: len(screen.input) >= len(want), 5)
                assert screen.input == want
        finally:
            up.close()


def test_frames_are_never_changed_after_they_are_handed_out_and_subscribers_are_woken() -> None:
    screen = Screen()
    woken = threading.Event()
    with RfbServer(screen) as server:
        up = Upstream("127.0.0.1", server.port, timeout=5)
        try:
            version, first = up.snapshot()
            up.subscribe(woken.set)
            screen.paint(200)
            assert _shows(up, 200) and woken.wait(5)
            later_version, later = up.snapshot()
            assert later_version > version and first.max() == 0 and later.min() == 200
            up.unsubscribe(woken.set)
        finally:
            up.close()


def test_settled_waits_for_quiet_after_the_last_change() -> None:
    screen = Screen()
    with RfbServer(screen) as server:
        up = Upstream("127.0.0.1", server.port, timeout=5)
        try:
            screen.paint(50)
            assert _shows(up, 50)
            start = time.monotonic()
            frame = up.settled(0.2, since=start, timeout=5)
            assert time.monotonic() - start >= 0.2 and frame[0, 0, 0] == 50
            start = time.monotonic()
            up.settled(0.2, since=start - 10, timeout=0.05)  # bounded by its timeout
            assert time.monotonic() - start < 1
        finally:
            up.close()


def test_a_password_server_without_a_password_names_the_flag() -> None:
    with RfbServer(Screen(), password="sekrit") as server:
        with pytest.raises(AuthFailed, match="--password-env"):
            Upstream("127.0.0.1", server.port, timeout=5)
        up = Upstream("127.0.0.1", server.port, password="sekrit", timeout=5)
        up.close()


def test_a_server_that_goes_away_is_a_connection_error() -> None:
    server = RfbServer(Screen()).start()
    up = Upstream("127.0.0.1", server.port, timeout=5)
    try:
        server.stop()
        with up.cond:
            assert up.cond.wait_for(lambda: up.error is not None, 5)
        assert isinstance(up.error, ConnectionFailed)
        with pytest.raises(ConnectionFailed):
            up.settled(0.1, time.monotonic(), 1)
        with pytest.raises(ConnectionFailed):
            up.key(0x61, True)
    finally:
        up.close()


def test_nothing_listening_is_a_connection_error() -> None:
    server = RfbServer(Screen())
    port = server.port
    server.stop()
    with pytest.raises(ConnectionFailed, match="refused"):
        Upstream("127.0.0.1", port, timeout=5)
