"""Thin decoration strokes under text — a spell-checker's wavy underline, a link's underline — found and painted out,
so the readback reads the text and not the stroke (issue 35, finding 5: a red squiggle under "Kenji Sato" read back
as "Ken: | Sato|").

A decoration is told from glyphs by shape, never by colour: a band at most a few pixels tall (DECOR_MAX_SHARE of the
line) inked without a single gap along a run at least as long as the line is tall (DECOR_MIN_RUN), lying under text (most of
its columns have ink within a line's height above it) and at the text's foot. The bottoms of glyphs standing on a
baseline always leave gaps between letters; an underscore or a dash has no text above it. Painting only removes ink,
and what is read afterwards is held to the readback's exact rule, so this can rescue a read, never loosen it.
"""

from __future__ import annotations

import numpy as np

from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.vision.caret import BORDER_SPAN, CARET_INK

DECOR_MAX_SHARE = 0.4  # of the line's height: the most rows a decoration band takes (a squiggle's wave included)
DECOR_MIN_ROWS = 3  # px: ... and at least this many may be taken (a 1 px underline under a small font)
DECOR_FOOT = 0.6  # of the line's height (its stroke included) from its top: where a decoration may begin, at least
DECOR_MIN_RUN = 1.5  # line heights: the shortest unbroken run a decoration spans (a flagged word is rarely shorter)
GAP_INK_SHARE = 0.25  # of the run's columns inked in the row right above the band: the gap under the text (descenders)
TEXT_ABOVE_SHARE = 0.6  # of the run's columns with text ink above the band
FOOT_CLEAR_SHARE = 0.7  # of the run's columns clear of ink right below the band (descenders cross it, nothing else)
STROKE_ROW_SHARE = 0.1  # of the run's columns inked in a row below the band: the stroke goes on (a squiggle's troughs)
LINE_ROW_INK = 3  # px inked in a row of a line of text, at least
MAX_STROKES = 8  # strokes looked for under one line
FAINT = 16  # grey levels from the background: a decoration's anti-aliased edge, painted with it
LINE_MIN = 8  # px: a line of text at least this tall is looked under


def without_decoration(
    crop: np.ndarray, ink_tol: int = CARET_INK
) -> tuple[np.ndarray, list[tuple[int, int, int, int]]] | None:
    """The crop (as gray) with every decoration stroke under its text painted in the background's grey, and the
    strokes' boxes (x, y, w, h); None when there is none."""
    gray = to_gray(crop)
    background = int(np.median(gray))
    diff = np.abs(gray.astype(np.int16) - background)
    ink = diff > ink_tol
    h, w = ink.shape
    ink[ink.sum(axis=1) >= BORDER_SPAN * w, :] = False  # a field's outline, top and bottom ...
    ink[:, ink.sum(axis=0) >= BORDER_SPAN * h] = False  # ... and sides
    out, boxes = gray.copy(), []
    for top, bottom in _lines(ink):
        for _ in range(MAX_STROKES):  # each flagged word has its own stroke, at its own height
            found = _stroke(ink, top, bottom)
            if found is None:
                break
            t, k, c0, c1 = found
            _paint(out, diff, ink, t, k, c0, c1, background)
            ink[t : t + k, c0 : c1 + 1] = False  # found once
            boxes.append((c0, t, c1 - c0 + 1, k))
    return (out, boxes) if boxes else None


def _lines(ink: np.ndarray) -> list[tuple[int, int]]:
    """The crop's lines of ink: runs of rows with ink, at least LINE_MIN tall (a decoration is part of its line's run,
    or a thin run right under it: joined to the line above when no wider than a band)."""
    rows = np.flatnonzero(ink.sum(axis=1) >= LINE_ROW_INK)  # a field's side or a caret inks a row or two per row
    if rows.size == 0:
        return []
    runs = [(int(r[0]), int(r[-1])) for r in np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1)]
    out: list[tuple[int, int]] = []
    for t, b in runs:
        if out and b - t + 1 < LINE_MIN and t - out[-1][1] <= 3:  # a stroke a gap below its text
            out[-1] = (out[-1][0], b)
        else:
            out.append((t, b))
    return [(t, b) for t, b in out if b - t + 1 >= LINE_MIN]


def _stroke(ink: np.ndarray, top: int, bottom: int) -> tuple[int, int, int, int] | None:
    """The highest thin band in the line's lower half whose ink runs unbroken along DECOR_MIN_RUN text heights, with
    a clear row above it (the gap under the glyphs' feet), text above that, and nothing but descenders below it:
    (its first row, its rows, first column, last column)."""
    line = bottom - top + 1
    rows = max(DECOR_MIN_ROWS, round(DECOR_MAX_SHARE * line))
    for t in range(top + round(DECOR_FOOT * line), bottom + 1):
        for k in range(1, min(rows, bottom + 1 - t) + 1):
            for c0, c1 in _runs(np.asarray(ink[t : t + k].any(axis=0))):
                if c1 - c0 + 1 < DECOR_MIN_RUN * line:
                    continue
                cols = slice(c0, c1 + 1)
                if (
                    ink[t - 1, cols].mean() > GAP_INK_SHARE
                    or ink[top : t - 1, cols].any(axis=0).mean() < TEXT_ABOVE_SHARE
                ):
                    continue
                while k < rows and t + k <= bottom and ink[t + k, cols].mean() > STROKE_ROW_SHARE:
                    k += 1  # the stroke's lower rows (a squiggle's troughs)
                if t + k > bottom or ink[t + k, cols].mean() <= 1 - FOOT_CLEAR_SHARE:
                    return t, k, c0, c1
    return None


def _runs(covered: np.ndarray) -> list[tuple[int, int]]:
    cols = np.flatnonzero(covered)
    if cols.size == 0:
        return []
    return [(int(r[0]), int(r[-1])) for r in np.split(cols, np.flatnonzero(np.diff(cols) > 1) + 1)]


def _paint(
    out: np.ndarray, diff: np.ndarray, ink: np.ndarray, t: int, k: int, c0: int, c1: int, background: int
) -> None:
    """Paint the band's pixels (and its faint anti-aliased edge a row either side: never a glyph's ink there) over the
    run, but where a glyph's stroke crosses it: a column inked in the gap right above the band (a descender reaching
    into it) keeps its pixels, so a j or a g keeps its tail."""
    h = ink.shape[0]
    for c in range(c0, c1 + 1):
        if t >= 1 and ink[t - 1, c]:
            continue
        band = diff[t : t + k, c] > FAINT
        out[t : t + k, c][band] = background
        for y in (t - 1, t + k):
            if 0 <= y < h and FAINT < diff[y, c] and not ink[y, c]:
                out[y, c] = background
