"""Is a field's text scrolled — an editor too narrow for its value, scrolled to the end it was typed at, its first
glyph cut by the edge of the area the field draws its text in — rather than shown whole? Read on the field's face
(inside its border). Only then may the readback take the value's end for the value (`verify.readback`).

A field clips its text in one of two places, and each leaves its own proof:

- **at its face's edge** (a Qt table cell's editor has no padding): ink in the face's first CUT_COLUMNS columns. A
  field that shows its value whole has a margin there.
- **at its padding** (a GTK entry draws its text 8 px inside its border, and clips it there): a value shown whole
  starts at the padding and leaves its spare room on the right; a scrolled value fills the text area from one edge
  to the other — the caret at the end typed at stands as far from the face's right side as the first ink stands
  from its left side (within FLUSH_TOL either way; the last glyph, the caret blinked off, CARET_ROOM further), and
  that first ink stands no further in than a field's padding (FLUSH_MAX_PAD line heights: a value centred or
  aligned right leaves the room on its left). And the first column is a cut, not a glyph's own edge: ink at full
  stroke strength (CUT_STRENGTH of the text's darkest) right after a clear column — an anti-aliased glyph edge
  fades in — and not a whole upright stem (a stem cut or not looks the same: refused).

A value typed short by its first letter ("atherine Johnson" for "Katherine Johnson") shows whole with room to spare
on the right: not scrolled, and the readback refuses it. What a single frame cannot tell apart is said in
docs/bundle.md ("Readback"): a shorter value that happens to fill the field to within FLUSH_TOL and begins with a
full-strength glyph edge.
"""

from __future__ import annotations

import numpy as np

from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.vision.caret import BORDER_SPAN, without_caret

CUT_COLUMNS = 2  # px at a face's left (inside its border) where a field showing its value whole has no ink
CUT_INK = 80  # grey levels from the face's background that count as ink
FAINT_INK = 24  # grey levels: the faintest anti-aliased edge of a glyph (where its first column is looked for)
CUT_STRENGTH = 0.8  # of the text's darkest ink: a first column this dark is a stroke cut, not a glyph's faded edge
STEM_SHARE = 0.75  # of the text's height: a first column inked over this much of it is a whole stem (refused)
FLUSH_TOL = 2  # px (or FLUSH_TOL_SHARE of the text's height, if more) the gaps either side may differ by
FLUSH_TOL_SHARE = 0.1
CARET_ROOM = 2  # px (or CARET_ROOM_SHARE of the text's height) more when no caret shows: the room kept for it
CARET_ROOM_SHARE = 0.15
FLUSH_MAX_PAD = 1.0  # line heights: the most padding a field leaves left of its text area


def scrolled(crop: np.ndarray) -> bool:
    """Does the field's face `crop` show its text scrolled, its first glyph cut at the left (see the module)?"""
    gray = to_gray(crop).astype(np.int16)
    if gray.size == 0 or gray.shape[1] < 4:
        return False
    diff = np.abs(gray - int(np.median(gray)))
    ink = _stripped(diff > CUT_INK)
    if not ink.any():
        return False
    if ink[:, :CUT_COLUMNS].any():
        return True  # no padding: the face's own edge cut it
    return _flush_in_padding(diff, ink)


def _stripped(ink: np.ndarray) -> np.ndarray:
    """`ink` without a field's outline caught at the face's edges: rows or columns inked across most of it."""
    h, w = ink.shape
    ink = ink.copy()
    ink[ink.sum(axis=1) >= BORDER_SPAN * w, :] = False
    ink[:, ink.sum(axis=0) >= BORDER_SPAN * h] = False
    return ink


def _flush_in_padding(diff: np.ndarray, ink: np.ndarray) -> bool:
    w = ink.shape[1]
    faint = _stripped(diff > FAINT_INK).any(axis=0)
    caret = without_caret(np.clip(255 - diff, 0, 255).astype(np.uint8))  # dark ink on light, whatever the theme
    glyphs = ink.copy()
    if caret is not None:
        glyphs[:, caret[1] :] = False  # the caret is not the text's
    rows = np.flatnonzero(glyphs.any(axis=1))
    if rows.size == 0:
        return False
    height = int(rows[-1] - rows[0] + 1)
    first = int(np.flatnonzero(faint)[0])  # where the text's ink begins, its faintest edge included
    end = caret[1] if caret is not None else int(np.flatnonzero(faint)[-1])
    left, right = first, w - 1 - end
    tol = max(FLUSH_TOL, round(FLUSH_TOL_SHARE * height))
    room = max(CARET_ROOM, round(CARET_ROOM_SHARE * height)) if caret is None else 0
    if left > FLUSH_MAX_PAD * height or not -tol <= right - left <= tol + room:
        return False  # room to spare on the right (a value shown whole) or on the left (centred, aligned right)
    column = diff[:, first]
    if column.max() < CUT_STRENGTH * diff[glyphs].max():
        return False  # the first column fades in: a glyph's own anti-aliased edge
    stroke = np.flatnonzero(column > CUT_INK)
    return bool(stroke.size) and int(stroke[-1] - stroke[0] + 1) < STEM_SHARE * height
