"""Connected components, a flood fill's box and edges, each an OpenCV call: labels (`connectedComponents`), labels
with per-component stats (`connectedComponentsWithStats`), the box a mask-only `floodFill` fills, Canny edges.
"""

from __future__ import annotations

import cv2
import numpy as np

# columns of label_stats' stats
LEFT, TOP, WIDTH, HEIGHT, AREA = (
    cv2.CC_STAT_LEFT,
    cv2.CC_STAT_TOP,
    cv2.CC_STAT_WIDTH,
    cv2.CC_STAT_HEIGHT,
    cv2.CC_STAT_AREA,
)


def _as_u8(mask: np.ndarray) -> np.ndarray:
    """A 2-D mask as OpenCV takes it: uint8, nonzero where set."""
    if mask.ndim != 2:
        raise ValueError(f"mask must be 2-D, got shape {mask.shape}")
    return mask.view(np.uint8) if mask.dtype == np.bool_ else (mask != 0).view(np.uint8)


def label(mask: np.ndarray, connectivity: int = 8) -> tuple[int, np.ndarray]:
    """Label the nonzero pixels of a 2-D mask: (n, labels int32) with n counting the background label 0."""
    found, labels = cv2.connectedComponents(_as_u8(mask), connectivity=connectivity, ltype=cv2.CV_32S)
    return int(found), labels


def label_stats(mask: np.ndarray, connectivity: int = 8) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """`label` plus stats (n, 5) int32 (LEFT, TOP, WIDTH, HEIGHT, AREA) and centroids (n, 2) float64 (x, y)."""
    found, labels, stats, centroids = cv2.connectedComponentsWithStats(
        _as_u8(mask), connectivity=connectivity, ltype=cv2.CV_32S
    )
    return int(found), labels, stats, centroids


def flood_box(image: np.ndarray, seed: tuple[int, int], step: int = 0) -> tuple[int, int, int, int]:
    """Box (x, y, w, h) of the 4-connected area a floating-range flood fill from `seed` (x, y) fills: a pixel joins
    when every channel differs by at most `step` from a filled neighbour. The image is not written."""
    h, w = image.shape[:2]
    img = np.ascontiguousarray(image) if image.flags.writeable else image.copy()  # OpenCV wants it writable
    flags = 4 | cv2.FLOODFILL_MASK_ONLY | (255 << 8)
    rect = cv2.floodFill(img, np.zeros((h + 2, w + 2), np.uint8), seed, (0,) * 3, (step,) * 3, (step,) * 3, flags)[3]
    return int(rect[0]), int(rect[1]), int(rect[2]), int(rect[3])


def canny(gray: np.ndarray, low: float, high: float) -> np.ndarray:
    """Bool edge map of a uint8 gray image (Canny, aperture 3, L1 gradient; hysteresis between `low` and `high`)."""
    edges: np.ndarray = cv2.Canny(np.ascontiguousarray(gray), low, high) > 0
    return edges
