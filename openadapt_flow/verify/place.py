"""Where a recorded area is on this frame: placed by the step's own target (`Anchor`), or, for a fact no target of
its step places (a key after keys: ctrl+s after Enter after typing), by the window's displacement the targets found
so far in this run agree on (a `Placement`).

Pure geometry, as `verify.screen` is pure deciding. A displacement is trusted only when every target found so far
says the same: a row found lower than recorded (a batch's next item) while a toolbar stayed put is no move of the
window, and then nothing is shifted (the area is read where the recording had it, as before). A fact read at a
shifted place must also be drawn anew there by the step (`drawn_anew`): a word that was already on the screen before
the step proves nothing about it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from openadapt_flow.ladder.types import Box, Point
from openadapt_flow.vision.diff import changed_fraction

SHIFT_TOL = 24  # px (at scale 1) apart, two targets' displacements are one window's
SCALE_TOL = 0.1  # and their match scales this close
DRAWN_MIN = 0.1  # share of a word's box that changed since the step's before frame: drawn anew by the step


@dataclass(frozen=True)
class Anchor:
    """Where a step's target was recorded and where it was found now: a fact marked `relative_to: target` is
    placed by it, so a moved window moves the fact's area with it (recorded offsets scaled by `scale`)."""

    recorded: Point  # the target's click point in the recorded frame
    live: Point  # the resolved click point in this frame
    scale: tuple[float, float]

    def place(self, box: Box) -> Box:
        """A recorded-frame box moved with the target, in this frame's pixels."""
        x, y, w, h = box
        sx, sy = self.scale
        rx, ry = self.recorded
        lx, ly = self.live
        return (lx + round((x - rx) * sx), ly + round((y - ry) * sy), round(w * sx), round(h * sy))

    def spread(self, placed: Box, screen: tuple[float, float]) -> tuple[int, int]:
        """How far a placed box may be off each way: found at another scale than the `screen`'s (the app draws
        bigger or smaller), the box's distance from the target is known only to within that difference."""
        x, y, w, h = placed
        (lx, ly), (sx, sy) = self.live, self.scale
        return (
            round(abs(sx - screen[0]) * max(abs(x - lx), abs(x + w - lx))),
            round(abs(sy - screen[1]) * max(abs(y - ly), abs(y + h - ly))),
        )

    def offset(self) -> tuple[float, float]:
        """The displacement this target says the window has: live = scale * recorded + offset."""
        return (self.live[0] - self.scale[0] * self.recorded[0], self.live[1] - self.scale[1] * self.recorded[1])


@dataclass(frozen=True)
class Placement:
    """Where the recorded frame's pixels are on this frame: live = scale * recorded + offset, per axis (the start
    check's placement of the app, `verify.start`; the window's displacement the run's targets agree on)."""

    sx: float
    sy: float
    dx: float = 0.0
    dy: float = 0.0

    def box(self, box: Box) -> Box:
        x, y, w, h = box
        return (
            round(self.sx * x + self.dx),
            round(self.sy * y + self.dy),
            max(1, round(self.sx * w)),
            max(1, round(self.sy * h)),
        )

    def point(self, x: float, y: float) -> tuple[float, float]:
        return (self.sx * x + self.dx, self.sy * y + self.dy)


def agreed_shift(found: Sequence[Anchor], screen: tuple[float, float]) -> Placement | None:
    """The displacement every target found so far agrees on (their offsets within SHIFT_TOL, scales within
    SCALE_TOL), or None: no target found, targets that disagree (a row moved, its toolbar did not), or no move at all
    (the screen's own scaling already puts the area where it is)."""
    if not found:
        return None
    offsets = np.array([a.offset() for a in found], float)
    scales = np.array([a.scale for a in found], float)
    tol = SHIFT_TOL * float(scales.max())
    if float(np.ptp(offsets, axis=0).max()) > tol or float(np.ptp(scales, axis=0).max()) > SCALE_TOL:
        return None
    (dx, dy), (sx, sy) = offsets.mean(axis=0), scales.mean(axis=0)
    shift = Placement(float(sx), float(sy), float(dx), float(dy))
    probe = (0, 0, 1000, 1000)  # a still window at the screen's own scale: today's placement, nothing to add
    still = (0, 0, round(screen[0] * 1000), round(screen[1] * 1000))
    if max(abs(a - b) for a, b in zip(shift.box(probe), still)) <= tol:
        return None
    return shift


def drawn_anew(before: np.ndarray | None, frame: np.ndarray, box: Box) -> bool:
    """Did the step draw what is at `box` (at least DRAWN_MIN of its pixels changed since its before frame)? With no
    before frame of the same size nothing can say so."""
    if before is None or before.shape != frame.shape:
        return False
    return changed_fraction(before, frame, box) >= DRAWN_MIN
