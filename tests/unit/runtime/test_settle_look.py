"""The settle after an input runs the step's postconditions on its likely-settled frame while it waits out the quiet
time (`look`): what it returns is still a frame the screen stayed quiet on for the whole quiet time."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from openadapt_flow.backends.base import Capabilities, Frame
from openadapt_flow.runtime.act.settle import settle

pytestmark = pytest.mark.timeout(30)


class Screen:
    """A backend whose screen changes when told (`change`), with waits that block like a live VNC mirror's; frames
    are read-only and shared until the screen changes, as the VNC backend hands them out."""

    name = "screen"
    capabilities = Capabilities(event_driven_updates=True)

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.version = self.seen = 0
        self._set(0)

    def _set(self, value: int) -> None:
        frame = np.full((20, 20, 3), value, np.uint8)
        frame.flags.writeable = False
        self.frame = frame

    def change(self, value: int) -> None:
        with self.cond:
            self._set(value)
            self.version += 1
            self.cond.notify_all()

    def capture(self) -> Frame:
        with self.cond:
            self.seen = self.version
            return Frame(self.frame)

    def wait_for_update(self, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.version != self.seen, timeout)


def test_look_sees_the_frame_the_settle_returns_and_the_quiet_time_is_still_kept():
    screen, seen = Screen(), []
    t = time.monotonic()
    s = settle(screen, 0.2, 5, look=lambda f: seen.append(f.pixels))  # type: ignore[arg-type]
    assert s.settled and len(seen) == 1
    assert s.frame.pixels is seen[0]  # the very frame the checks ran on: they hold for what is returned
    assert time.monotonic() - t >= 0.19  # the whole quiet time, not half of it


def test_a_change_after_the_look_is_settled_on_and_looked_at_again():
    screen, seen = Screen(), []

    def look(f: Frame) -> None:
        seen.append(int(f.pixels[0, 0, 0]))
        if len(seen) == 1:  # the app draws again while the engine is checking the first frame
            screen.change(255)

    s = settle(screen, 0.1, 5, look=look)  # type: ignore[arg-type]
    assert s.settled and s.frame.pixels[0, 0, 0] == 255  # never the frame the screen moved on from
    assert seen == [0, 255]


def test_a_change_in_the_first_half_of_the_quiet_time_is_waited_out_before_any_look():
    screen, seen = Screen(), []
    threading.Timer(0.03, screen.change, (9,)).start()
    s = settle(screen, 0.2, 5, look=lambda f: seen.append(int(f.pixels[0, 0, 0])))  # type: ignore[arg-type]
    assert s.settled and s.frame.pixels[0, 0, 0] == 9 and seen == [9]
