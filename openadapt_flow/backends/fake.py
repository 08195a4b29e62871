"""An in-memory backend for unit tests: a frame you set, and a list of the inputs it received.

    fake = FakeBackend(frame, on_event=lambda b, ev: b.set_frame(after) if ev[0] == "click" else None)
    fake.click(10, 20)
    assert fake.events == [("click", 10, 20, "left", 1)]

Events: ("click", x, y, button, count), ("move", x, y), ("type", text), ("press", (key, ...)),
("scroll", x, y, clicks), ("drag", x1, y1, x2, y2).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from openadapt_flow.backends.base import Capabilities, Frame
from openadapt_flow.bundle.keys import is_valid_key
from openadapt_flow.errors import BackendError, ConnectionFailed, UsageError

BUTTONS = ("left", "right", "middle")


def _checked(frame: np.ndarray) -> np.ndarray:
    arr = np.asarray(frame)
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8:
        raise ValueError(f"a frame is an HxWx3 uint8 array, got {arr.dtype} {arr.shape}")
    return arr.copy()


class FakeBackend:
    """Records every input in `.events`; `set_frame` swaps the screen; `fail_next` makes the next call raise."""

    name = "fake"

    def __init__(
        self,
        frame: np.ndarray,
        on_event: Callable[[FakeBackend, tuple], None] | None = None,
        capabilities: Capabilities | None = None,
    ) -> None:
        self._frame = _checked(frame)
        self.on_event = on_event
        self.capabilities = capabilities or Capabilities(unicode_typing=True, event_driven_updates=True)
        self.events: list[tuple] = []
        self.fail_next: BackendError | None = None
        self.closed = False
        self.captures = 0
        self._version = 0
        self._seen_version = 0

    @property
    def frame(self) -> np.ndarray:
        return self._frame

    @property
    def typed(self) -> list[str]:
        """Each text typed, its consecutive `type` events joined (a run types a text in bounded batches, each behind
        its own fence: runtime/start/fenced.py)."""
        out: list[str] = []
        last = None
        for ev in self.events:
            if ev[0] == "type" and last == "type":
                out[-1] += ev[1]
            elif ev[0] == "type":
                out.append(ev[1])
            last = ev[0]
        return out

    def set_frame(self, frame: np.ndarray) -> None:
        """Replace the screen; the next `wait_for_update` reports a change."""
        self._frame = _checked(frame)
        self._version += 1

    def _enter(self) -> None:
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        if self.closed:
            raise ConnectionFailed("fake backend is closed")

    def _record(self, event: tuple) -> None:
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(self, event)

    def capture(self) -> Frame:
        self._enter()
        self.captures += 1
        self._seen_version = self._version
        return Frame(self._frame.copy(), time.monotonic())

    def wait_for_update(self, timeout: float) -> bool:
        """Return at once: True if `set_frame` was called since the last capture or wait."""
        self._enter()
        changed = self._version != self._seen_version
        self._seen_version = self._version
        return changed

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        self._enter()
        if button not in BUTTONS:
            raise UsageError(f"unknown mouse button {button!r} (expected one of {', '.join(BUTTONS)})")
        if count < 1:
            raise UsageError(f"click count must be 1 or more, got {count}")
        self._record(("click", int(x), int(y), button, int(count)))

    def move(self, x: int, y: int) -> None:
        self._enter()
        self._record(("move", int(x), int(y)))

    def type_text(self, text: str) -> None:
        self._enter()
        self._record(("type", text))

    def press(self, keys: list[str]) -> None:
        self._enter()
        bad = [k for k in keys if not is_valid_key(k)]
        if bad or not keys:
            raise UsageError(f"unknown key name(s) {bad!r}" if bad else "press needs at least one key")
        self._record(("press", tuple(keys)))

    def scroll(self, x: int, y: int, clicks: int) -> None:
        self._enter()
        self._record(("scroll", int(x), int(y), int(clicks)))

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        self._enter()
        self._record(("drag", int(x1), int(y1), int(x2), int(y2)))

    def close(self) -> None:
        self.closed = True
