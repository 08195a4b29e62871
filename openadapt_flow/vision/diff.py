"""Has the screen changed? Pixel-difference helpers for settle, the `region_changed` postcondition and the
fallback check that a step with nothing declared changed the screen where it acted."""

from __future__ import annotations

import cv2
import numpy as np

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
    return cv2.countNonZero(_mask(a, b, area, pixel_tol)) / float(bw * bh)


def changed_pixels(a: np.ndarray, b: np.ndarray, box: Box | None = None, *, pixel_tol: int = PIXEL_TOL) -> int:
    """How many pixels in `box` (default: all) differ by more than `pixel_tol`; frames of different sizes: all of them."""
    if a.shape != b.shape:
        return int(b.shape[0] * b.shape[1])
    h, w = a.shape[:2]
    area = clip_box(box, w, h) if box else (0, 0, w, h)
    if area is None:
        return 0
    return int(cv2.countNonZero(_mask(a, b, area, pixel_tol)))


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
    pts = cv2.findNonZero(_mask(a, b, area, pixel_tol))
    if pts is None:
        return None
    rx, ry, rw, rh = cv2.boundingRect(pts)
    return (x + rx, y + ry, rw, rh)


def _mask(a: np.ndarray, b: np.ndarray, area: Box, pixel_tol: int) -> np.ndarray:
    """Nonzero where any channel differs by more than pixel_tol (per-channel threshold, then any-of via gray)."""
    x, y, w, h = area
    d = cv2.absdiff(a[y : y + h, x : x + w], b[y : y + h, x : x + w])
    _, over = cv2.threshold(d, pixel_tol, 255, cv2.THRESH_BINARY)
    # Any channel at 255 leaves a nonzero gray value (smallest weight 0.114 * 255 > 0).
    return cv2.cvtColor(over, cv2.COLOR_RGB2GRAY) if over.ndim == 3 else over
