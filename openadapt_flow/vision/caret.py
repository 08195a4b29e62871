"""The text cursor at the end of a typed field, found and painted out, so it cannot merge into the last glyph.

After typing, a field shows its caret right after the last character. When
it does not blink (or is caught on), Tesseract may read it as part of that
glyph: "ACME 8|" came back as "ACME g|". The caret is told from glyphs by
shape: the rightmost ink, at most CARET_MAX_WIDTH columns wide, reaching
above the text's top and below its baseline (where an `l` or `I` stops), taller
than the text by CARET_MIN_RATIO, in one unbroken bar (a `j` has its dot apart).
Painting it out can only remove ink.
"""

from __future__ import annotations

import numpy as np

from openadapt_flow.vision.ocr import local_contrast
from openadapt_flow.vision.template import to_gray

CARET_MAX_WIDTH = 3  # px: carets are 1-2 px wide
CARET_MIN_RATIO = 1.15  # the caret spans the line (ascent + descent), text ink at most cap top to descender
DESCENT_MIN = 0.12  # of the text's height: how far below the baseline a caret reaches, at least ...
DESCENT_MIN_PX = 2  # ... and at least this many pixels
CARET_MAX_GAP = 0  # px of a caret's column without ink: a drawn caret is one solid bar; a j's dot stands apart
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
        near = np.arange(max(0, left - reach), left)
        glyph_cols = near[ink[:, near].any(axis=0)] if near.size else near
        if glyph_cols.size == 0:
            if len(run) <= CARET_MAX_WIDTH:
                continue  # an isolated thin line, not a cursor after text
            return None
        marked = _caret_columns(ink, caret, glyph_cols)
        if not marked:
            return None
        out = gray.copy()
        out[:, min(marked) : max(marked) + 1] = int(np.median(gray))  # the field's own background: most of the crop
        return out, min(marked)
    return None


def _caret_columns(ink: np.ndarray, columns: list[int], glyph_cols: np.ndarray) -> list[int]:
    """Of `columns` (right to left), those up to the first that belongs to a glyph. A caret spans the line
    from above the text's top to below its baseline (into the descender zone); an `l`, `I` or `1` beside
    short letters reaches above them too, but stands on the baseline."""
    tops, bottoms = [], []
    for c in glyph_cols:
        r = np.flatnonzero(ink[:, c])
        if r.size:
            tops.append(int(r[0]))
            bottoms.append(int(r[-1]))
    if not bottoms:
        return []
    top, baseline = min(tops), _mode(bottoms)  # most glyphs stand on the baseline; descenders are the few
    height = baseline - top + 1
    marked = []
    for c in columns:
        r = np.flatnonzero(ink[:, c])
        if (r.size and r[0] < top and r[-1] >= baseline + max(DESCENT_MIN_PX, round(DESCENT_MIN * height))
                and r[-1] - r[0] + 1 >= CARET_MIN_RATIO * height
                and r[-1] - r[0] + 1 - r.size <= CARET_MAX_GAP):  # one unbroken bar: a j or i has its dot apart
            marked.append(c)
        else:
            break
    return marked


def _mode(values: list[int]) -> int:
    return int(np.bincount(np.asarray(values)).argmax())
