"""`fixture:PATH`: a recorded VNC fixture played in-process, no socket.

Input goes through the same RFB-level events the fixture server receives
(pointer masks, keysyms), so a bundle behaves the same here as over the wire.
The player applies every input before the call returns, so there is never an
update to wait for: `wait_for_update` answers at once. Effects are written to
the file named by the environment variable FLOW_FIXTURE_DB (SQLite or JSON
lines, as the fixture declares); without it they are logged and skipped.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from openadapt_flow.backends.base import Capabilities, Frame
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.keys import char_keysym, key_keysym
from openadapt_flow.errors import ConnectionFailed, UsageError
from openadapt_flow.fixture.player import Player, open_player

SOR_ENV = "FLOW_FIXTURE_DB"
BUTTON_MASKS = {"left": 1, "middle": 2, "right": 4}
_WHEEL_UP, _WHEEL_DOWN = 8, 16


class FixtureBackend:
    """Plays the fixture at `spec.path`, from its initial state."""

    name = "fixture"

    def __init__(self, spec: BackendSpec) -> None:
        if spec.kind != "fixture" or not spec.path:
            raise UsageError(f"FixtureBackend needs a fixture spec, got {spec.kind}")
        self.spec = spec
        self.capabilities = Capabilities(
            unicode_typing=True, event_driven_updates=True, freshness_limit_s=spec.freshness_limit_s
        )
        sor = os.environ.get(SOR_ENV)
        self.player: Player = open_player(Path(spec.path), Path(sor) if sor else None)
        self._lock = threading.Lock()
        self._seen = self.player.version
        self._closed = False

    @property
    def untouched(self) -> bool:
        """Nothing has changed the session's screen since it started at the recording's first screen (a new
        session of a `fixture:` URL always is: the player keeps no state between processes)."""
        return self.player.version == 1 and self.player.state == self.player.fixture.model.initial

    def _check(self) -> None:
        if self._closed:
            raise ConnectionFailed(f"the fixture backend for {self.spec.url} is closed")

    def _point(self, x: int, y: int) -> tuple[int, int]:
        w, h = self.player.size
        if not (0 <= x < w and 0 <= y < h):
            raise UsageError(f"point ({x}, {y}) is outside the {w}x{h} screen of {self.spec.url}")
        return int(x), int(y)

    def capture(self) -> Frame:
        with self._lock:
            self._check()
            self._seen = self.player.version
            # the player's frame is read-only and replaced (not changed) when the screen changes: share it, as the
            # VNC backend shares its mirror's frame until the next update
            return Frame(self.player.frame(), time.monotonic())

    def wait_for_update(self, timeout: float) -> bool:
        """True if the screen changed since the last capture. Never blocks: nothing changes on its own."""
        with self._lock:
            self._check()
            return self.player.version != self._seen

    def _pointer(self, events: list[tuple[int, int, int]]) -> None:
        with self._lock:
            self._check()
            for x, y, mask in events:
                self.player.pointer(x, y, mask)

    def _keys(self, events: list[tuple[int, bool]]) -> None:
        with self._lock:
            self._check()
            for sym, down in events:
                self.player.key(sym, down)

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        if button not in BUTTON_MASKS:
            raise UsageError(f"unknown mouse button {button!r} (expected left, right or middle)")
        x, y = self._point(x, y)
        events = [(x, y, 0)]
        for _ in range(max(1, count)):
            events += [(x, y, BUTTON_MASKS[button]), (x, y, 0)]
        self._pointer(events)

    def move(self, x: int, y: int) -> None:
        x, y = self._point(x, y)
        self._pointer([(x, y, 0)])

    def type_text(self, text: str) -> None:
        syms = [char_keysym(ch) for ch in text.replace("\r\n", "\n")]
        self._keys([(s, down) for s in syms for down in (True, False)])

    def press(self, keys: list[str]) -> None:
        if not keys:
            raise UsageError("press needs at least one key")
        syms = [key_keysym(k) for k in keys]
        self._keys([(s, True) for s in syms] + [(s, False) for s in reversed(syms)])

    def scroll(self, x: int, y: int, clicks: int) -> None:
        x, y = self._point(x, y)
        mask = _WHEEL_DOWN if clicks > 0 else _WHEEL_UP
        events = [(x, y, 0)]
        for _ in range(abs(int(clicks))):
            events += [(x, y, mask), (x, y, 0)]
        self._pointer(events)

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        x1, y1 = self._point(x1, y1)
        x2, y2 = self._point(x2, y2)
        self._pointer([(x1, y1, 0), (x1, y1, 1), (x2, y2, 1), (x2, y2, 0)])

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> FixtureBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
