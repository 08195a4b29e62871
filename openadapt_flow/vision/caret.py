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

from openadapt_flow.imaging import components
from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.vision.ocr import local_contrast
from openadapt_flow.vision.template import Box, clip_box

CARET_MAX_WIDTH = 3  # px: carets are 1-2 px wide
CARET_MIN_RATIO = 1.15  # the caret spans the line (ascent + descent), text ink at most cap top to descender
DESCENT_MIN = 0.12  # of the text's height: how far below the baseline a caret reaches, at least ...
DESCENT_MIN_PX = 2  # ... and at least this many pixels
CARET_MAX_GAP = 0  # px of a caret's column without ink: a drawn caret is one solid bar; a j's dot stands apart
INK_BELOW = 160  # local_contrast output darker than this is ink
BORDER_SPAN = 0.9  # ink across this much of the crop's width (or height) is a field's outline
NEW_CARET_MIN_HEIGHT = 8  # px: a caret spans a line of text; shorter bars are glyph parts or noise
NEW_CARET_TOL = 48  # grey levels: a pixel changed by more than this is part of the new mark
NEW_CARET_FLAT = 12  # grey levels: where the caret now stands was plain background before (no glyph, no outline)
GLYPH_MAX = (
    24  # px: a changed mark smaller than this either way is glyph-sized (a letter, an icon), not a ring or a fill
)
NOISE_MAX = 3  # px: changed marks smaller than this are anti-aliasing specks


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
    tops, bottoms = _ends(ink, glyph_cols)
    if not bottoms:
        return []
    top, baseline = min(tops), _mode(bottoms)  # most glyphs stand on the baseline; descenders are the few
    height = baseline - top + 1
    marked = []
    for c in columns:
        r = np.flatnonzero(ink[:, c])
        if (
            r.size
            and r[0] < top
            and r[-1] >= baseline + max(DESCENT_MIN_PX, round(DESCENT_MIN * height))
            and r[-1] - r[0] + 1 >= CARET_MIN_RATIO * height
            and r[-1] - r[0] + 1 - r.size <= CARET_MAX_GAP
        ):  # one unbroken bar: a j or i has its dot apart
            marked.append(c)
        else:
            break
    return marked


def _mode(values: list[int]) -> int:
    return int(np.bincount(np.asarray(values)).argmax())


def caret_appeared(before: np.ndarray, after: np.ndarray, box: Box) -> bool:
    """Whether a text caret shows in `box` of `after` that `before` did not have: a field took keyboard focus.

    What changed in the box must hold exactly one solid upright bar, at most CARET_MAX_WIDTH wide and at least
    NEW_CARET_MIN_HEIGHT tall, clear of the box's edges, standing where `before` was plain background — and nothing
    else glyph-sized: a new word (its `l`s are bars too) or a recoloured glyph is not a caret; a focus ring or a
    selection may change around it (large marks), an I-beam pointer has serifs. Anything doubtful is False.
    """
    h, w = after.shape[:2]
    clipped = clip_box(box, w, h)
    if clipped is None or before.shape != after.shape:
        return False
    x, y, bw, bh = clipped
    b = to_gray(before[y : y + bh, x : x + bw]).astype(np.int16)
    a = to_gray(after[y : y + bh, x : x + bw]).astype(np.int16)
    changed = (np.abs(a - b) > NEW_CARET_TOL).astype(np.uint8)
    n, _, stats, _ = components.label_stats(changed, connectivity=8)
    bars, glyphs = 0, 0
    for cx, cy, cw, ch, area in stats[1:n]:
        if cw <= CARET_MAX_WIDTH and ch >= NEW_CARET_MIN_HEIGHT and area == cw * ch:
            inside = 0 < cx and cx + cw < bw and 0 < cy and cy + ch < bh
            bars += 1 if inside and _on_plain_background(b, int(cx), int(cy), int(cw), int(ch)) else 2
        elif max(cw, ch) < GLYPH_MAX and area >= NOISE_MAX:
            glyphs += 1
    return bars == 1 and glyphs == 0


def _on_plain_background(before: np.ndarray, x: int, y: int, w: int, h: int) -> bool:
    """`before` was plain where the bar now stands, one column either side included (no glyph, no outline there)."""
    was = before[y : y + h, max(0, x - 1) : x + w + 1]
    return int(was.max()) - int(was.min()) <= NEW_CARET_FLAT


CARET_INK = 60  # grey levels from the crop's background: ink of a caret drawn solid (a block's inside included)
FAINT_CARET_INK = 24  # ... a caret drawn faintly: a black block on a dark theme's #202020 is 32 away
BLOCK_MIN_WIDTH = 4  # px: a filled rectangle this wide at the end of the text is a block caret (no glyph is one)
BLOCK_MIN_SHARE = 0.8  # of the text's height a block caret spans at least
SERIF_ROWS = 2  # px from an I-beam's stem ends where its serifs lie
CARET_GAP = 0.6  # line heights at most between the last glyph and a caret after it (a space is ~0.3)
CARET_CLEAR_MIN = 3  # px above and below a caret's stroke free of ink in its column (a third of its height, at least)
LINE_GAP = (
    2  # line heights right of a caret kept clear of ink: the text goes on closer (a field's border may be further)
)
LINE_TOP_COLUMNS = 4  # the text's top is where at least this many of its columns reach


def without_caret_in_lines(crop: np.ndarray, ink_tol: int = CARET_INK) -> tuple[np.ndarray, int] | None:
    """`without_drawn_caret` where a caret may stand in a crop of several lines (a page's changed area): at each
    tall solid column that ends the ink on its rows (the end of a line of text), rightmost first, on those rows
    only. The whole crop (gray) with the first caret found painted out, and its column."""
    gray = to_gray(crop)
    ink = np.abs(gray.astype(np.int16) - int(np.median(gray))) > ink_tol
    h, w = ink.shape
    ink[ink.sum(axis=1) >= BORDER_SPAN * w, :] = False
    ink[:, ink.sum(axis=0) >= BORDER_SPAN * h] = False
    for c in range(w - 1, -1, -1):
        rows = np.flatnonzero(ink[:, c])
        for run in np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if rows.size else []:
            t, b = int(run[0]), int(run[-1])  # one unbroken stroke of the column (a line above has its own)
            if b - t + 1 < NEW_CARET_MIN_HEIGHT:
                continue
            clear = max(CARET_CLEAR_MIN, (b - t + 1) // 3)  # a caret stands alone: a j's stem has its dot above
            if ink[max(0, t - clear) : t, c].any() or ink[b + 1 : b + 1 + clear, c].any():
                continue
            end = min(w, c + 2 * SERIF_ROWS + 2)  # an I-beam's serifs reach this far right of its stem
            if ink[t : b + 1, end : end + LINE_GAP * (b - t + 1)].any():
                continue  # the text goes on right after it on these rows: not a line's end (a border is further)
            y0, y1 = max(0, t - 1), min(h, b + 2)
            found = without_drawn_caret(crop[y0:y1, :end], strip_borders=False, ink_tol=ink_tol)
            if found is not None:
                out = gray.copy()
                out[y0:y1, :end] = found[0]
                return out, found[1]
    return None


def without_drawn_caret(
    crop: np.ndarray, strip_borders: bool = True, ink_tol: int = CARET_INK
) -> tuple[np.ndarray, int] | None:
    """The crop (as gray) with a caret drawn in a shape other than a thin bar painted out: a block (a filled cell
    after the last glyph: Xaw's, a terminal's) or an I-beam (a stem with serifs, which may touch the last glyph:
    Motif's); and the caret's first column. Read on the plain grey image (`local_contrast` hollows a block out).
    Only the caret's own pixels are painted (an I-beam's serifs where they overlap a glyph: their rows only), so
    painting can only remove ink; a shape that is not clearly a caret is None."""
    gray = to_gray(crop)
    background = int(np.median(gray))
    ink = np.abs(gray.astype(np.int16) - background) > ink_tol
    h, w = ink.shape
    if strip_borders:  # a field's outline; not in a line's own rows, where a caret spans them all
        ink[ink.sum(axis=1) >= BORDER_SPAN * w, :] = False
        ink[:, ink.sum(axis=0) >= BORDER_SPAN * h] = False
    else:  # a line's own rows: the line above's descenders and the line below's ascenders caught at the edges go
        n, labels, stats, _ = components.label_stats(ink, connectivity=8)
        for i in range(1, n):
            top, height = int(stats[i][1]), int(stats[i][3])
            if (top == 0 and top + height < h / 2) or (top + height == h and top > h / 2):
                ink[labels == i] = False
    cols = np.flatnonzero(ink.any(axis=0))
    if cols.size < 2:
        return None
    spans = [_span(ink[:, c]) for c in range(w)]
    solid = [s is not None and s[2] for s in spans]  # one unbroken run
    right = int(cols[-1])
    # a block: solid columns of one span, side by side at the very end of the ink
    end_span = spans[right]
    block: list[int] = []
    if end_span is not None and end_span[2]:
        c = right
        while c >= 0 and solid[c] and spans[c] == end_span:
            block.append(c)
            c -= 1
    # the text's line from the glyphs left of where a caret may stand (a block's cells, an I-beam's serifs)
    glyphs = cols[cols < right - (len(block) + 1 if block else 2 * SERIF_ROWS + 3)]
    if glyphs.size == 0:
        return None
    top, baseline = _line(ink, glyphs)
    caret_left = min(block) if block else right - 2 * SERIF_ROWS - 2
    if caret_left - int(glyphs.max()) > CARET_GAP * (baseline - top + 1):
        return None  # a caret stands right after the text it ends; a tall line further off is a border
    if len(block) >= BLOCK_MIN_WIDTH and end_span is not None:
        t, b = end_span[:2]
        if b - t + 1 >= BLOCK_MIN_SHARE * (baseline - top + 1):
            out = gray.copy()
            out[t : b + 1, min(block) : right + 1] = background
            return out, min(block)
    return _without_ibeam(gray, ink, spans, solid, right, top, baseline, background)


def _without_ibeam(
    gray: np.ndarray,
    ink: np.ndarray,
    spans: list[tuple[int, int, bool] | None],
    solid: list[bool],
    right: int,
    top: int,
    baseline: int,
    background: int,
) -> tuple[np.ndarray, int] | None:
    height = baseline - top + 1
    for stem in range(right, max(-1, right - 2 * SERIF_ROWS - 3), -1):  # the stem stands within a serif of the end
        span = spans[stem]
        if not solid[stem] or span is None:
            continue
        t, b = span[:2]
        reach = b >= baseline + max(DESCENT_MIN_PX, round(DESCENT_MIN * height)) and t <= top
        if not reach or b - t + 1 < CARET_MIN_RATIO * height:
            return None
        ends = np.zeros(ink.shape[0], bool)
        ends[t : t + SERIF_ROWS] = ends[b - SERIF_ROWS + 1 : b + 1] = True
        if any(ink[:, c][~ends].any() for c in range(stem + 1, right + 1)):
            return None  # ink right of the stem that is no serif: a glyph, not a caret's end
        out = gray.copy()
        left = stem  # a bar caret 2-3 px wide: the solid columns of the same span beside the stem
        while left - 1 >= 0 and stem - (left - 1) < CARET_MAX_WIDTH and solid[left - 1] and spans[left - 1] == span:
            left -= 1
        out[t : b + 1, left : stem + 1] = background
        for c in range(stem + 1, min(ink.shape[1], stem + 1 + 2 * SERIF_ROWS)):
            out[ends & ink[:, c], c] = background
        for c in range(max(0, left - 2 * SERIF_ROWS), left):
            out[ends & ink[:, c], c] = background  # the serifs' left halves, over the last glyph's top or foot
        return out, left
    return None


def _span(column: np.ndarray) -> tuple[int, int, bool] | None:
    rows = np.flatnonzero(column)
    if rows.size == 0:
        return None
    return int(rows[0]), int(rows[-1]), bool(rows[-1] - rows[0] + 1 == rows.size)


def _line(ink: np.ndarray, glyph_cols: np.ndarray) -> tuple[int, int]:
    """The text's top and baseline from its glyphs' columns (most glyphs stand on the baseline)."""
    tops, bottoms = _ends(ink, glyph_cols)
    # the top reached by a tenth of the columns (at least 4): the line above's descenders caught in the crop do not
    # lift it
    k = max(LINE_TOP_COLUMNS, len(tops) // 10)
    return sorted(tops)[min(k, len(tops)) - 1], _mode(bottoms)


def _ends(ink: np.ndarray, cols: np.ndarray) -> tuple[list[int], list[int]]:
    """The first and last inked row of each column that has ink."""
    tops, bottoms = [], []
    for c in cols:
        r = np.flatnonzero(ink[:, c])
        if r.size:
            tops.append(int(r[0]))
            bottoms.append(int(r[-1]))
    return tops, bottoms
