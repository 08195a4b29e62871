"""Wait until the screen stops changing, bounded; never a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from openadapt_flow.backends.base import Backend, Frame


@dataclass
class Settled:
    frame: Frame
    settled: bool
    waited_s: float


def settle(backend: Backend, quiet_s: float, timeout_s: float, *, expect_change_s: float = 0.0,
           hold_s: float = 0.0, ready: Callable[[Frame], bool] | None = None) -> Settled:
    """Return a frame once no update arrived for `quiet_s` (or `timeout_s` passed).

    `expect_change_s`: after an input, first give the application this long to
    start reacting, so a slow app is not mistaken for a settled one.
    `hold_s`: the screen must also stay quiet until this long after the start: a reaction a toolkit delays on
    purpose (an item view opens a clicked cell's editor only once its double-click interval has passed) is
    then seen and waited out. The wait is on updates, so a backend that never blocks (fixture:) pays nothing.
    `ready`: ends the hold early, on a quiet screen whose frame shows the awaited reaction has come (a caret in
    the clicked field): nothing is left to wait out.
    """
    start = time.monotonic()
    if expect_change_s > 0 and backend.wait_for_update(expect_change_s):
        backend.capture()
    deadline = start + timeout_s
    held = start + min(hold_s, timeout_s)
    while True:
        now = time.monotonic()
        remaining = deadline - now
        if remaining <= 0:
            return Settled(backend.capture(), False, now - start)
        holding = ready is not None and held - now > quiet_s
        if not backend.wait_for_update(min(quiet_s if holding else max(quiet_s, held - now), remaining)):
            frame = backend.capture()
            if not holding or (ready is not None and ready(frame)):
                return Settled(frame, True, time.monotonic() - start)
            continue
        backend.capture()  # backends report change since the last capture: mark this update seen
