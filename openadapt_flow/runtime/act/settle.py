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


def settle(
    backend: Backend,
    quiet_s: float,
    timeout_s: float,
    *,
    expect_change_s: float = 0.0,
    hold_s: float = 0.0,
    ready: Callable[[Frame], bool] | None = None,
    look: Callable[[Frame], object] | None = None,
) -> Settled:
    """Return a frame once no update arrived for `quiet_s` (or `timeout_s` passed).

    `expect_change_s`: after an input, first give the application this long to
    start reacting, so a slow app is not mistaken for a settled one.
    `hold_s`: the screen must also stay quiet until this long after the start: a reaction a toolkit delays on
    purpose (an item view opens a clicked cell's editor only once its double-click interval has passed) is
    then seen and waited out. The wait is on updates, so a backend that never blocks (fixture:) pays nothing.
    `ready`: ends the hold early, on a quiet screen whose frame shows the awaited reaction has come (a caret in
    the clicked field): nothing is left to wait out.
    `look`: called with a frame that has been quiet for half of `quiet_s`, while the rest of the quiet time is waited
    out (the caller's work on what is likely the settled frame, done while the engine would only wait); the screen
    must still stay quiet for the whole `quiet_s`, so the frame returned is the one settled without it.
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
        if look is not None and not holding and held <= now and remaining >= quiet_s:
            if _looked(backend, look, quiet_s, remaining):
                frame = backend.capture()  # the frame `look` saw: nothing changed since it was captured
                return Settled(frame, True, time.monotonic() - start)
            continue  # it changed (that update is seen): quiet again from now
        if not backend.wait_for_update(min(quiet_s if holding else max(quiet_s, held - now), remaining)):
            frame = backend.capture()
            if not holding or (ready is not None and ready(frame)):
                return Settled(frame, True, time.monotonic() - start)
            continue
        backend.capture()  # backends report change since the last capture: mark this update seen


def _looked(backend: Backend, look: Callable[[Frame], object], quiet_s: float, remaining: float) -> bool:
    """True when the screen stayed quiet for `quiet_s` with `look` run on its frame half-way; False (and the frame of
    the change seen) when it changed in that time."""
    quiet_from = time.monotonic()
    half = min(quiet_s / 2, remaining)
    if backend.wait_for_update(half):
        backend.capture()
        return False
    frame = backend.capture()
    look(frame)
    rest = quiet_s - (time.monotonic() - quiet_from)
    if backend.wait_for_update(max(0.0, min(rest, remaining - half))):
        backend.capture()
        return False
    return True
