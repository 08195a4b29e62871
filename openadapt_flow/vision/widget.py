"""The face of the widget under a point: the uniform-colour area around it (a button's face, a field's inside).

A pure image function, used by verification (where a typed field's text is) and by the recording compilers
(what was clicked). Only as good as the app is plain.
"""

from __future__ import annotations

import cv2
import numpy as np

Box = tuple[int, int, int, int]
MAX_WIDGET_FRACTION = 0.2  # a "widget" bigger than this share of the screen is the background


def mode_colour(block: np.ndarray) -> np.ndarray:
    """The most common RGB colour of a block."""
    flat = block.reshape(-1, 3)
    keys = (flat[:, 0].astype(np.uint32) << 16) | (flat[:, 1].astype(np.uint32) << 8) | flat[:, 2]
    values, counts = np.unique(keys, return_counts=True)
    k = int(values[np.argmax(counts)])
    return np.array([k >> 16 & 255, k >> 8 & 255, k & 255], np.uint8)


def widget_box(frame: np.ndarray, x: int, y: int, max_fraction: float = MAX_WIDGET_FRACTION) -> Box | None:
    """The uniform-colour area around (x, y), or None when it is a speck or bigger than `max_fraction` of the
    screen (the background)."""
    h, w = frame.shape[:2]
    x0, y0, x1, y1 = max(0, x - 4), max(0, y - 4), min(w, x + 5), min(h, y + 5)
    mode = mode_colour(frame[y0:y1, x0:x1])
    seed = (x, y)
    if not np.array_equal(frame[y, x], mode):  # the click landed on a glyph: start beside it
        ys, xs = np.nonzero(np.all(frame[y0:y1, x0:x1] == mode, axis=2))
        i = int(np.argmin((xs + x0 - x) ** 2 + (ys + y0 - y) ** 2))
        seed = (int(xs[i]) + x0, int(ys[i]) + y0)
    mask = np.zeros((h + 2, w + 2), np.uint8)
    image = np.ascontiguousarray(frame) if frame.flags.writeable else frame.copy()  # OpenCV wants it writable (mask-only: untouched)
    # floodFill reports the filled area's bounding box itself: no scan of the whole mask for it
    _, _, _, (bx, by, bw, bh) = cv2.floodFill(image, mask, seed, (0, 0, 0), (0, 0, 0), (0, 0, 0),
                                              4 | cv2.FLOODFILL_MASK_ONLY | (255 << 8))
    if bw * bh > max_fraction * w * h or bw < 6 or bh < 6:
        return None
    return (int(bx), int(by), int(bw), int(bh))
