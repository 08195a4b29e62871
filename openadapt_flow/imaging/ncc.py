"""Normalised cross-correlation template matching: OpenCV's `matchTemplate(..., TM_CCOEFF_NORMED)` and the peak of
its scores. A flat template scores 1 everywhere, a (near-)flat window 0; under a mask, OpenCV's NaN or infinite
scores (a flat window or template under the mask) are 0, so a peak is never a NaN.
"""

from __future__ import annotations

import cv2
import numpy as np


def match_template(image: np.ndarray, templ: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Scores of `templ` at every position in `image`, float32, shape (H-h+1, W-w+1).

    Both 2-D, uint8 or float32 (mixed or other types are matched as float32). With `mask` (the template's shape,
    nonzero = used) only masked pixels count.
    """
    if image.ndim != 2 or templ.ndim != 2:
        raise ValueError(f"match_template wants 2-D single-channel arrays, got {image.shape} and {templ.shape}")
    big_h, big_w = image.shape
    h, w = templ.shape
    if h > big_h or w > big_w or h == 0 or w == 0:
        raise ValueError(f"template {templ.shape} does not fit in image {image.shape}")
    if mask is not None and mask.shape != templ.shape:
        raise ValueError(f"mask {mask.shape} is not the template's shape {templ.shape}")
    if image.dtype != np.uint8 or templ.dtype != np.uint8:
        image, templ = image.astype(np.float32, copy=False), templ.astype(np.float32, copy=False)
    if mask is None:
        res: np.ndarray = cv2.matchTemplate(image, templ, cv2.TM_CCOEFF_NORMED)
        return res
    res = cv2.matchTemplate(image, templ, cv2.TM_CCOEFF_NORMED, mask=(mask != 0).astype(np.uint8))
    finite: np.ndarray = np.nan_to_num(res, nan=0.0, posinf=0.0, neginf=0.0)
    return finite


def best(scores: np.ndarray) -> tuple[float, tuple[int, int]]:
    """The top score and its (x, y), the first in raster order (as OpenCV's minMaxLoc; any array layout)."""
    flat = scores.reshape(-1)
    i = int(np.argmax(flat))
    return float(flat[i]), (i % scores.shape[1], i // scores.shape[1])
