"""Is an area blank: an empty field or page, nothing in it but its own background?

A pure pixel judgement (no OCR): ink is what differs from the area's most common grey by more than INK_TOL. Two
kinds of ink are no content and are left out: a text cursor (a thin upright bar, in a focused empty field) and the
area's own border (a line running nearly its whole width or height, let in when the area is placed a few pixels
off). Whatever ink is left, a single typed letter included, makes the area not blank. The theme does not matter: a
dark field's background is its most common grey as a light one's is.
"""

from __future__ import annotations

import numpy as np

from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.records.models import Check
from openadapt_flow.vision.template import Box, clip_box

INK_TOL = 48  # grey levels from the background that count as ink (anti-aliasing and a gradient stay below)
LINE_SHARE = 0.8  # a row or column inked along this share of the area is a border (or a cursor), not content
CARET_MAX_W = 3  # px: a run of inked columns this narrow, spanning most of the area's height, is a text cursor
CARET_MIN_SHARE = 0.5  # ... of the area's height
MAX_INK = 4  # px of ink left over that still count as blank (a stray pixel of noise)
MIN_SIDE = 4  # px: a smaller area says nothing


def blank_check(frame: np.ndarray, box: Box, expected: object = None) -> Check:
    """Judge `blank` on a frame at `box` (this frame's pixels); `expected` is what the check record names."""
    shown = expected if expected is not None else list(box)
    clipped = clip_box(box, frame.shape[1], frame.shape[0])
    if clipped is None or min(clipped[2:]) < MIN_SIDE:
        return Check("blank", shown, False, "the area lies outside the frame", {"at": list(box)})
    x, y, w, h = clipped
    gray = to_gray(np.ascontiguousarray(frame[y : y + h, x : x + w])).astype(np.int16)
    background = int(np.bincount(gray.ravel()).argmax())
    ink = np.abs(gray - background) > INK_TOL
    ink &= ~_lines(ink)
    ink &= ~_caret(ink)
    left = int(ink.sum())
    if left <= MAX_INK:
        return Check("blank", shown, True, "nothing but its background", {"at": list(clipped)})
    ys, xs = np.nonzero(ink)
    where = [x + int(xs.min()), y + int(ys.min()), int(xs.max() - xs.min()) + 1, int(ys.max() - ys.min()) + 1]
    return Check("blank", shown, False, f"{left} px of marks in it (at {where})", {"at": list(clipped), "ink": where})


def _lines(ink: np.ndarray) -> np.ndarray:
    """The rows and columns inked along nearly the whole area: its border, let in by a placement a few px off."""
    h, w = ink.shape
    out = np.zeros_like(ink)
    out[ink.sum(axis=1) >= LINE_SHARE * w, :] = True
    out[:, ink.sum(axis=0) >= LINE_SHARE * h] = True
    return out


def _caret(ink: np.ndarray) -> np.ndarray:
    """A text cursor: one run of at most CARET_MAX_W inked columns, tall, with no other ink beside it."""
    h, _ = ink.shape
    cols = np.nonzero(ink.any(axis=0))[0]
    out = np.zeros_like(ink)
    if cols.size == 0 or cols[-1] - cols[0] + 1 > CARET_MAX_W:
        return out
    rows = np.nonzero(ink[:, cols[0] : cols[-1] + 1].any(axis=1))[0]
    if rows[-1] - rows[0] + 1 >= CARET_MIN_SHARE * h:
        out[:, cols[0] : cols[-1] + 1] = True
    return out
