"""A field's label above it, when none stands left of it on its row (issue 35): GTK's and web forms' layout, and a
pane's title bar over a multi-line text pane (Poedit's "Translation" over its translation pane).

The label is the first word of the nearest line of text above the field, starting where the field starts (its
left edge within ABOVE_SLACK of the field's), ending at most ABOVE_REACH above the field's top. Its place counts:
a word further off, or standing over the field's middle (a column header of a list above), or sitting in a face
shaped as the field (the cell above a table's cell: another row's data), or one of a line of words set apart (a
menu bar), is no label. The target is then cut as the label and the field's top under it down to the click
(`crop_above`): a tall field keeps its width while its contents grow with a scale (a pane drawn in a window that
did not grow), so its whole face fits no scale, where a label and the field's top under it grow together.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from openadapt_flow.record.anchor import face_at
from openadapt_flow.record.facts import FIELD_PART, LABEL_SURE, repeats, shows_typed
from openadapt_flow.vision.ocr import OcrEngine, Word, normalise, phrases
from openadapt_flow.vision.template import Box, pad_box

ABOVE_REACH = 36  # px between a label's bottom and its field's top, at most
ABOVE_SLACK = 24  # px a label's left edge may stand from its field's left edge
STRIP = 20  # px of the field's top kept under its label in the target, at least
CELL_SLACK = 4  # px a face may differ from the field's and still be a cell of its column


def label_above(frame: np.ndarray, field: Box, ocr: OcrEngine, avoid: Collection[str] = ()) -> Word | None:
    """The word that labels `field` from above, or None (nothing there, read unsurely, or a typed value)."""
    fx, fy, fw, fh = field
    band = pad_box(
        (fx - ABOVE_SLACK, fy - ABOVE_REACH, min(fw, FIELD_PART * 4) + ABOVE_SLACK, ABOVE_REACH),
        0,
        frame.shape[1],
        frame.shape[0],
    )
    if band is None:
        return None
    first = _first(frame, ocr.read(frame, band), field)
    if first is None or first.conf < LABEL_SURE:  # a small or bold font half read at 1x: read enlarged, as a left label
        again = _first(frame, ocr.read_enlarged(frame, band), field)
        first = again if again is not None and (first is None or again.conf > first.conf) else first
    if (
        first is None
        or abs(first.box[0] - fx) > ABOVE_SLACK
        or first.conf < LABEL_SURE
        or shows_typed(first.text, avoid)
    ):
        return None
    return None if _cell_above(frame, first, field) else first


def _cell_above(frame: np.ndarray, word: Word, field: Box) -> bool:
    """Does the word sit in a face shaped as the field (as wide, about as tall, in its column): the cell above it in
    a table, data of another row, not its label (a label stands on the window's background or in a bar)?"""
    x, y, w, h = word.box
    face = face_at(frame, x + w // 2, y + h // 2)
    if face is None:
        return False
    return (
        abs(face[0] - field[0]) <= CELL_SLACK
        and abs(face[2] - field[2]) <= 2 * CELL_SLACK
        and abs(face[3] - field[3]) <= max(CELL_SLACK, field[3] // 4)
    )


def _first(frame: np.ndarray, read: list[Word], field: Box) -> Word | None:
    """The first word of the nearest line above the field, when that line is one phrase: a line of words set apart
    (a menu bar's File, Edit, View over galculator's display; a toolbar's) names items, not the field."""
    words = [w for w in read if _fit(frame, w, field)]
    if not words:
        return None
    bottom = max(w.box[1] + w.box[3] for w in words)
    line = [w for w in words if w.box[1] + w.box[3] >= bottom - w.box[3] // 2]
    if len(phrases(line)) > 1:
        return None
    return min(line, key=lambda w: w.box[0])


def _fit(frame: np.ndarray, w: Word, field: Box) -> bool:
    x, y, bw, bh = w.box
    n = normalise(w.text)
    return (
        y + bh <= field[1]
        and len(n) >= 2
        and any(c.isalpha() for c in n)
        and not repeats(frame[y : y + bh, x : x + bw])
    )


def crop_above(frame: np.ndarray, field: Box, label: Word, click: tuple[int, int]) -> Box:
    """The label above a field and the field's top under it (STRIP px at least), reaching across and down past the
    click (as a label beside a field is cut with the field up to the click): not the field's whole face."""
    fx, fy, fw, fh = field
    lx, ly, lw, lh = label.box
    x0, y0 = min(lx - 4, fx), ly - 4
    x1 = max(lx + lw + 4, min(fx + fw, max(fx + FIELD_PART, click[0] + 8)))
    y1 = min(fy + fh, max(fy + STRIP, click[1] + 8))
    return pad_box((x0, y0, x1 - x0, y1 - y0), 0, frame.shape[1], frame.shape[0]) or field
