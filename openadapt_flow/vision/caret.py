"""The text cursor at the end of a typed field, found and painted out, so it cannot merge into the last glyph.

After typing, a field shows its caret right after the last character. When
it does not blink (or is caught on), Tesseract may read it as part of that
glyph: "ACME 8|" came back as "ACME g|". The caret is told from glyphs by
shape: the rightmost ink, at most CARET_MAX_WIDTH columns wide, reaching
above the text's top and at least to its bottom, taller than the text's ink
by CARET_MIN_RATIO. Painting it out can only remove ink, never add any.
"""

from __future__ import annotations

import numpy as np

from openadapt_flow.vision.ocr import local_contrast
from openadapt_flow.vision.template import to_gray

CARET_MAX_WIDTH = 3  # px: carets are 1-2 px wide
CARET_MIN_RATIO = 1.15  # the caret spans the line (ascent + descent), text ink at most cap top to descender
INK_BELOW = 160  # local_contrast output darker than this is ink
BORDER_SPAN = 0.9  # ink across this much of the crop's width (or height) is a field's outline


def without_caret(crop: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The crop (as gray) with a trailing caret painted in the background's grey, and the caret's column; None if none."""
    gray = to_gray(crop)
    ink = local_contrast(gray) < INK_BELOW
    h, w = ink.shape
    ink[ink.sum(axis=1) >= BORDER_SPAN * w, :] = False  # a field's outline, top and bottom ...
    ink[:, ink.sum(axis=0) >= BORDER_SPAN * h] = False  # ... and sides (a caret never spans a padded crop)
    cols = np.flatnonzero(ink.any(axis=0))
    runs = np.split(cols, np.flatnonzero(np.diff(cols) > 1) + 1) if cols.size else []
    for run in reversed(runs):  # from the right; thin lines with no text before them (outlines) are passed over
        caret = [int(c) for c in run[::-1][:CARET_MAX_WIDTH]]  # a caret glued to the last glyph ends its run
        rows = np.flatnonzero(ink[:, caret].any(axis=1))
        reach = int(rows[-1] - rows[0] + 1)  # the candidate's height: a glyph beside it is no wider than this
        left = min(caret)
        glyph = np.flatnonzero(ink[:, max(0, left - reach) : left].any(axis=1))
        if glyph.size == 0:
            if len(run) <= CARET_MAX_WIDTH:
                continue  # an isolated thin line, not a cursor after text
            return None
        marked = _caret_columns(ink, caret, int(glyph[0]), int(glyph[-1]))
        if not marked:
            return None
        out = gray.copy()
        out[:, min(marked) : max(marked) + 1] = int(np.median(gray))  # the field's own background: most of the crop
        return out, min(marked)
    return None


def _caret_columns(ink: np.ndarray, columns: list[int], top: int, bottom: int) -> list[int]:
    """Of `columns` (right to left), those up to the first that belongs to a glyph: ink above the text's
    top, down to at least its bottom, and CARET_MIN_RATIO taller."""
    marked = []
    for c in columns:
        r = np.flatnonzero(ink[:, c])
        if r.size and r[0] < top and r[-1] >= bottom and r[-1] - r[0] + 1 >= CARET_MIN_RATIO * (bottom - top + 1):
            marked.append(c)
        else:
            break
    return marked
