"""A target's look at rest: what a focus ring, a caret, a selection or any other transient state drew into the
screen a template is cut from is taken out of the template.

The rule holds for every toolkit because it asks the demonstration, not the toolkit: a pixel of a target's crop
that looks different in another recorded screen where the same widget is still there, in the same place and
mostly unchanged, shows a state (a field's focus ring and caret go when the focus moves on; a selection goes when
another row is picked; a typed field fills). Such pixels are painted over from their surroundings (OpenCV's
inpainting), so the template shows the widget as it looks at rest, and the crop's uniqueness is judged on that
look: an empty focused field that was unique only by its ring grows to take in its label. Screens where the
pointer rests on the crop are not compared (their hovered look is `hover.unhovered`'s business), nor screens where
most of the crop changed (another widget, a closed dialog: not a state of this one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from openadapt_flow.fixture.recorder import Recording
from openadapt_flow.vision.template import Box, clip_box, intersect

STATE_TOL = 24  # grey levels (any channel): a smaller difference is rendering noise, not a state
SAME_MAX_SHARE = 0.35  # a screen where more of the crop changed shows something else there, not a state of it
POINTER_PAD = 8  # px: a screen whose pointer rests this near the crop is not compared (its hovered look)
INPAINT_RADIUS = 3


@dataclass(frozen=True)
class Screen:
    """A settled recorded screen and where the pointer was on it (None: away, or not known to be near)."""

    pixels: np.ndarray
    pointer: tuple[int, int] | None = None


@dataclass
class RestLook:
    """The recorded screens one frame's crops are compared with; `crop(box)` gives a crop at rest."""

    frame: np.ndarray
    others: Sequence[Screen]
    changed: dict[Box, int] = field(default_factory=dict)  # box -> transient pixels painted over (for the notes)

    def mask(self, box: Box) -> np.ndarray:
        """The crop's pixels that showed a state: True where another comparable screen differs."""
        h, w = self.frame.shape[:2]
        clipped = clip_box(box, w, h)
        assert clipped is not None
        x, y, bw, bh = clipped
        mine = self.frame[y : y + bh, x : x + bw].astype(np.int16)
        out = np.zeros((bh, bw), bool)
        near = (x - POINTER_PAD, y - POINTER_PAD, bw + 2 * POINTER_PAD, bh + 2 * POINTER_PAD)
        for s in self.others:
            if s.pixels is self.frame or s.pixels.shape != self.frame.shape:
                continue
            if s.pointer is not None and intersect(near, (s.pointer[0], s.pointer[1], 1, 1)) is not None:
                continue
            diff = (np.abs(s.pixels[y : y + bh, x : x + bw].astype(np.int16) - mine) > STATE_TOL)
            diff = diff.any(axis=2) if diff.ndim == 3 else diff
            share = float(diff.mean())
            if 0 < share <= SAME_MAX_SHARE:
                out |= diff
        return out

    def crop(self, box: Box) -> np.ndarray:
        """The frame's crop at `box` with its state pixels painted from their surroundings."""
        x, y, bw, bh = box
        crop = np.ascontiguousarray(self.frame[y : y + bh, x : x + bw])
        mask = self.mask(box)
        if not mask.any():
            return crop
        grown = cv2.dilate(mask.astype(np.uint8), np.ones((3, 3), np.uint8))  # a state's anti-aliased edge too
        self.changed[box] = int(grown.sum())
        return cv2.inpaint(crop, grown, INPAINT_RADIUS, cv2.INPAINT_TELEA)


def recorded_screens(rec: Recording) -> list[Screen]:
    """Every settled screen of a recording a crop may be compared with: each input's screen before it (the pointer
    away from its target), and the screens after it with the pointer where that input left it. The pressed and
    later screens are left out: the pointer rests on a target there (its hovered look)."""
    out: list[Screen] = []
    pointer: tuple[int, int] | None = None
    for b in rec.batches:
        out.append(Screen(b.before))
        acted = b.acted
        if acted is not None and acted.kind.endswith("click"):  # a key leaves the pointer where it was
            pointer = (acted.x, acted.y)
        for frame in (b.mid, b.after):
            if frame is not None:
                out.append(Screen(frame, pointer))
    return out
