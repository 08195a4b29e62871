"""A thin rectangle drawn tight around typed text — the box a form filler or a drawing program draws around the text
object being edited (flpsed's, on FLTK) — found and painted out, so the readback reads the text and not its box.

Drawn a pixel or two from the glyphs, the box's sides merge into the first and last letters: "Rosa Diaz" in
flpsed's box read as "‘osa Diaz)". The box is told from glyphs by shape, never by colour: two unbroken horizontal
runs of ink (OUTLINE_MIN_RUN px at least, most of the crop's width) with the same ends, OUTLINE_MIN_HEIGHT px apart or
more, joined at both ends by unbroken columns of ink. Glyphs never make such a closed ring around a line; an
underline or a dotted focus ring is not one (no top, or gaps). Painting only removes ink, and what is read
afterwards is held to the readback's exact rule, so this can rescue a read, never loosen it.
"""

from __future__ import annotations

import numpy as np

from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.vision.caret import CARET_INK

OUTLINE_MIN_RUN = 20  # px: the shortest side a box around typed text has
OUTLINE_SHARE = 0.5  # of the crop's width: a box around what typing changed spans most of the crop
OUTLINE_MIN_HEIGHT = 8  # px between the top and the bottom side: a line of text fits inside
OUTLINE_MAX_STROKE = 3  # px: the thickest side painted
END_TOL = 1  # px the top and the bottom side's ends may differ by


def without_outline(crop: np.ndarray, ink_tol: int = CARET_INK) -> tuple[np.ndarray, tuple[int, int, int, int]] | None:
    """The crop (as gray) with a box drawn around its text painted in the background's grey, and the box (x, y, w,
    h); None when there is none."""
    gray = to_gray(crop)
    background = int(np.median(gray))
    ink = np.abs(gray.astype(np.int16) - background) > ink_tol
    h, w = ink.shape
    least = max(OUTLINE_MIN_RUN, round(OUTLINE_SHARE * w))
    sides = [(r, c0, c1) for r in range(h) for c0, c1 in _runs(ink[r]) if c1 - c0 + 1 >= least]
    for top, a0, a1 in sides:
        for bottom, b0, b1 in sides:
            if bottom - top < OUTLINE_MIN_HEIGHT or abs(a0 - b0) > END_TOL or abs(a1 - b1) > END_TOL:
                continue
            c0, c1 = max(a0, b0), min(a1, b1)
            left = [c for c in range(c0, c0 + OUTLINE_MAX_STROKE) if ink[top : bottom + 1, c].all()]
            right = [c for c in range(c1, c1 - OUTLINE_MAX_STROKE, -1) if ink[top : bottom + 1, c].all()]
            if not left or not right or left[0] != c0 or right[0] != c1:
                continue
            out = gray.copy()
            for r, s0, s1 in sides:  # the top and the bottom side, as thick as they are drawn
                if (
                    (top <= r < top + OUTLINE_MAX_STROKE or bottom - OUTLINE_MAX_STROKE < r <= bottom)
                    and s0 <= c0 + END_TOL
                    and s1 >= c1 - END_TOL
                ):
                    out[r, s0 : s1 + 1] = background
            for c in (*_solid(left), *_solid(right)):
                out[top : bottom + 1, c] = background
            return out, (c0, top, c1 - c0 + 1, bottom - top + 1)
    return None


def _solid(cols: list[int]) -> list[int]:
    """The side's columns: the inked ones next to each other from its outer edge in."""
    kept = cols[:1]
    for c in cols[1:]:
        if abs(c - kept[-1]) != 1:
            break
        kept.append(c)
    return kept


def _runs(covered: np.ndarray) -> list[tuple[int, int]]:
    cols = np.flatnonzero(covered)
    if cols.size == 0:
        return []
    return [(int(r[0]), int(r[-1])) for r in np.split(cols, np.flatnonzero(np.diff(cols) > 1) + 1)]
