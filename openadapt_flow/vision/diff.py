"""Has the screen changed? Pixel-difference helpers for settle, the `region_changed` postcondition and the
fallback check that a step with nothing declared changed the screen where it acted."""

from __future__ import annotations

import numpy as np

from openadapt_flow.imaging.pixels import differs
from openadapt_flow.vision.template import Box, clip_box

PIXEL_TOL = 16  # per-channel difference below this is noise (compression, dithering)


def changed_fraction(a: np.ndarray, b: np.ndarray, box: Box | None = None, *, pixel_tol: int = PIXEL_TOL) -> float:
    """Fraction (0-1) of pixels in `box` (default: all) whose colour differs by more than `pixel_tol` in any channel.

    Frames of different sizes count as entirely changed.
    """
    if a.shape != b.shape:
        return 1.0
    h, w = a.shape[:2]
    area = clip_box(box, w, h) if box else (0, 0, w, h)
    if area is None:
        return 0.0
    x, y, bw, bh = area
    return int(np.count_nonzero(_mask(a, b, area, pixel_tol))) / float(bw * bh)


def changed_share(a: np.ndarray, b: np.ndarray, box: Box, spread: tuple[int, int] = (0, 0)) -> float:
    """The share of `box`'s pixels that changed, the change looked for up to `spread` (x, y) px around it (a box
    placed only to within that much) and counted against the box's own size (capped at 1)."""
    ex, ey = spread
    if ex == 0 and ey == 0:
        return changed_fraction(a, b, box)
    x, y, w, h = box
    return min(1.0, changed_pixels(a, b, (x - ex, y - ey, w + 2 * ex, h + 2 * ey)) / float(max(1, w * h)))


def changed_pixels(a: np.ndarray, b: np.ndarray, box: Box | None = None, *, pixel_tol: int = PIXEL_TOL) -> int:
    """How many pixels in `box` (default: all) differ by more than `pixel_tol`; frames of different sizes: all of them."""
    if a.shape != b.shape:
        return int(b.shape[0] * b.shape[1])
    h, w = a.shape[:2]
    area = clip_box(box, w, h) if box else (0, 0, w, h)
    if area is None:
        return 0
    return int(np.count_nonzero(_mask(a, b, area, pixel_tol)))


def same(
    a: np.ndarray, b: np.ndarray, box: Box | None = None, tol: float = 0.0005, *, pixel_tol: int = PIXEL_TOL
) -> bool:
    """True when at most `tol` of the pixels in `box` changed (a blinking caret stays under the default)."""
    return changed_fraction(a, b, box, pixel_tol=pixel_tol) <= tol


def changed_box(a: np.ndarray, b: np.ndarray, box: Box | None = None, *, pixel_tol: int = PIXEL_TOL) -> Box | None:
    """Bounding box of the changed pixels (frame coordinates), or None when nothing changed."""
    if a.shape != b.shape:
        return (0, 0, int(b.shape[1]), int(b.shape[0]))
    h, w = a.shape[:2]
    area = clip_box(box, w, h) if box else (0, 0, w, h)
    if area is None:
        return None
    x, y = area[0], area[1]
    mask = _mask(a, b, area, pixel_tol)
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        return None
    return (x + int(cols[0]), y + int(rows[0]), int(cols[-1] - cols[0]) + 1, int(rows[-1] - rows[0]) + 1)


def _mask(a: np.ndarray, b: np.ndarray, area: Box, pixel_tol: int) -> np.ndarray:
    """True where any channel differs by more than pixel_tol."""
    x, y, w, h = area
    return differs(a[y : y + h, x : x + w], b[y : y + h, x : x + w], pixel_tol)
