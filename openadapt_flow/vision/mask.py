"""Where typed text shows, and painting a region over so a saved frame cannot show it (a typed secret)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from openadapt_flow.vision.template import Box, clip_box

# A single-line field around the point typing clicked: generous to the right, where the text runs on.
FIELD_LEFT = 200
FIELD_RIGHT = 400
FIELD_HALF_HEIGHT = 30
TARGET_PAD = 6  # px around the matched target box: the field's border and a glyph's faint edge
FILL = (96, 96, 96)  # RGB: flat grey, no pattern: hatching reads as glyphs and garbles the OCR of text beside it
WHOLE_FRAME: Box = (0, 0, 1 << 20, 1 << 20)  # clipped to any frame: all of it


def union(a: Box, b: Box) -> Box:
    """The smallest box holding both."""
    x0, y0 = min(a[0], b[0]), min(a[1], b[1])
    x1, y1 = max(a[0] + a[2], b[0] + b[2]), max(a[1] + a[3], b[1] + b[3])
    return (x0, y0, x1 - x0, y1 - y0)


def field_band(point: tuple[int, int], target: Box | None = None, scale: tuple[float, float] = (1.0, 1.0)) -> Box:
    """The band in which text typed at `point` shows (frame pixels), grown to hold the matched target box."""
    sx, sy = scale
    x, y = point
    band = (
        x - round(FIELD_LEFT * sx),
        y - round(FIELD_HALF_HEIGHT * sy),
        round((FIELD_LEFT + FIELD_RIGHT) * sx),
        round(2 * FIELD_HALF_HEIGHT * sy),
    )
    if target is not None:
        tx, ty, tw, th = target
        band = union(band, (tx - TARGET_PAD, ty - TARGET_PAD, tw + 2 * TARGET_PAD, th + 2 * TARGET_PAD))
    return band


def paint_over(pixels: np.ndarray, boxes: Iterable[Box]) -> np.ndarray:
    """A copy of `pixels` with every box (clipped to the frame) painted flat grey; idempotent."""
    out = np.ascontiguousarray(pixels).copy()
    h, w = out.shape[:2]
    for box in boxes:
        clipped = clip_box(box, w, h)
        if clipped is None:
            continue
        x, y, bw, bh = clipped
        out[y : y + bh, x : x + bw] = FILL if out.ndim == 3 else FILL[0]
    return out
