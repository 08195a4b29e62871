"""Connected components in numpy: labelling, per-component stats, a flood-fill's box and Canny edges.

The core install carries no OpenCV (its wheel is 180 MB); these give the same answers as
`cv2.connectedComponents`, `cv2.connectedComponentsWithStats`, the rect of a mask-only `cv2.floodFill`
and, closely, `cv2.Canny`. One core does the work: horizontal runs of joined pixels, the joins between
runs of adjacent rows, then a vectorised union-find over run ids.
"""

from __future__ import annotations

import numpy as np

LEFT, TOP, WIDTH, HEIGHT, AREA = 0, 1, 2, 3, 4  # columns of label_stats' stats, as cv2.CC_STAT_*

_INT32_MAX = 2147483647
_TG22 = 13573  # tan(22.5 deg) << 15, rounded, as in cv2.Canny


def label(mask: np.ndarray, connectivity: int = 8) -> tuple[int, np.ndarray]:
    """Label the nonzero pixels of a 2-D mask: (n, labels) with n counting the background label 0.

    Labels are int32, numbered as cv2 numbers them: with connectivity 4 in raster order of each
    component's first pixel; with 8 in raster order of the first 2x2 block (rows 2i..2i+1, columns
    2j..2j+1) a component touches, the order of cv2's block-based scan.
    """
    n, labels, _, _ = _label(mask, connectivity)
    return n, labels


def label_stats(mask: np.ndarray, connectivity: int = 8) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """`label` plus stats (n, 5) int32 (LEFT, TOP, WIDTH, HEIGHT, AREA) and centroids (n, 2) float64 (x, y).

    Row 0 describes the background pixels; with none, it is cv2's (-1, INT32_MAX, 0, 0, 0) and centroid NaN.
    """
    n, labels, lut, runs = _label(mask, connectivity)
    fg = labels > 0
    h, w = fg.shape
    starts, ends = runs
    y, x0, x1 = starts // w, starts % w, ends % w
    lab = lut[1:]  # component label of each run
    length = (x1 - x0 + 1).astype(np.float64)
    stats = np.zeros((n, 5), np.int64)
    centroids = np.zeros((n, 2), np.float64)
    left = np.full(n, w, np.int64)
    top = np.full(n, h, np.int64)
    right = np.full(n, -1, np.int64)
    bottom = np.full(n, -1, np.int64)
    np.minimum.at(left, lab, x0)
    np.minimum.at(top, lab, y)
    np.maximum.at(right, lab, x1)
    np.maximum.at(bottom, lab, y)
    area = np.bincount(lab, length, n)
    sum_x = np.bincount(lab, length * (x0 + x1) / 2.0, n)
    sum_y = np.bincount(lab, length * y, n)
    bg = ~fg
    area[0] = float(bg.sum())
    if area[0]:
        cols, rows = np.flatnonzero(bg.any(0)), np.flatnonzero(bg.any(1))
        left[0], right[0], top[0], bottom[0] = cols[0], cols[-1], rows[0], rows[-1]
        sum_x[0] = float(bg.sum(0) @ np.arange(w, dtype=np.float64))
        sum_y[0] = float(bg.sum(1) @ np.arange(h, dtype=np.float64))
    stats[:, LEFT], stats[:, TOP] = left, top
    stats[:, WIDTH], stats[:, HEIGHT], stats[:, AREA] = right - left + 1, bottom - top + 1, area
    with np.errstate(invalid="ignore", divide="ignore"):
        centroids[:, 0], centroids[:, 1] = sum_x / area, sum_y / area
    if not area[0]:
        stats[0] = (-1, _INT32_MAX, 0, 0, 0)
    return n, labels, stats.astype(np.int32), centroids


def flood_box(image: np.ndarray, seed: tuple[int, int], step: int = 0) -> tuple[int, int, int, int]:
    """Box (x, y, w, h) that a 4-connected, floating-range `cv2.floodFill` from `seed` (x, y) would fill.

    A pixel joins when every channel differs by at most `step` from a filled 4-neighbour.
    """
    img = image.astype(np.int16)
    if img.ndim == 2:
        img = img[:, :, None]
    h, w = img.shape[:2]
    right = np.all(np.abs(img[:, 1:] - img[:, :-1]) <= step, axis=-1)
    down = np.all(np.abs(img[1:] - img[:-1]) <= step, axis=-1)
    runs, parent, starts, ends = _components(np.ones((h, w), bool), right, down, eight=False)
    sx, sy = seed
    mine = parent[1:] == parent[runs[sy, sx]]
    s, e = starts[mine], ends[mine]
    top, bottom = int(s[0] // w), int(s[-1] // w)
    left, right_x = int((s % w).min()), int((e % w).max())
    return left, top, right_x - left + 1, bottom - top + 1


def canny(gray: np.ndarray, low: float, high: float) -> np.ndarray:
    """Bool edge map of a uint8 gray image, after `cv2.Canny(gray, low, high)` (aperture 3, L1 gradient).

    Sobel gradients (edges replicated), non-maximum suppression in 4 directions with cv2's tie rules,
    then hysteresis: pixels above `low` kept when 8-connected to one above `high`.
    """
    lo, hi = sorted((int(np.floor(low)), int(np.floor(high))))
    p = np.pad(gray.astype(np.int64), 1, mode="edge")
    gx = p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:] - p[:-2, :-2] - 2 * p[1:-1, :-2] - p[2:, :-2]
    gy = p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:] - p[:-2, :-2] - 2 * p[:-2, 1:-1] - p[:-2, 2:]
    ax, ay = np.abs(gx), np.abs(gy)
    m = np.pad(ax + ay, 1)  # zero outside the image
    c = m[1:-1, 1:-1]
    tg22 = ax * _TG22
    horizontal = (ay << 15) < tg22
    vertical = ~horizontal & ((ay << 15) > tg22 + (ax << 16))
    diagonal = ~horizontal & ~vertical
    opposite = (gx ^ gy) < 0  # gradient signs differ: compare up-right and down-left
    peak = (
        (horizontal & (c > m[1:-1, :-2]) & (c >= m[1:-1, 2:]))
        | (vertical & (c > m[:-2, 1:-1]) & (c >= m[2:, 1:-1]))
        | (diagonal & opposite & (c > m[:-2, 2:]) & (c > m[2:, :-2]))
        | (diagonal & ~opposite & (c > m[:-2, :-2]) & (c > m[2:, 2:]))
    )
    weak = peak & (c > lo)
    runs, parent, _, _ = _components(weak, eight=True)
    strong_root = np.zeros(parent.size, bool)
    strong_root[parent[runs[weak & (c > hi)]]] = True
    strong_root[0] = False
    edges: np.ndarray = strong_root[parent[runs]]
    return edges


def _label(mask: np.ndarray, connectivity: int) -> tuple[int, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """(n, labels, label of each run id, (run starts, run ends) as flat indices): `label`'s work, kept for stats."""
    if mask.ndim != 2:
        raise ValueError(f"mask must be 2-D, got shape {mask.shape}")
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity must be 4 or 8, got {connectivity}")
    fg = mask != 0
    w = fg.shape[1]
    runs, parent, starts, ends = _components(fg, eight=connectivity == 8)
    ids = np.arange(parent.size)
    is_root = parent == ids
    is_root[0] = False
    if connectivity == 4:  # a root is its component's first run in raster order
        order = ids[is_root]
    else:  # cv2 numbers by first 2x2 block touched
        key = (starts // w // 2) * ((w + 1) // 2) + (starts % w) // 2
        first = np.full(parent.size, np.iinfo(np.int64).max)
        np.minimum.at(first, parent[1:], key)
        roots = ids[is_root]
        order = roots[np.argsort(first[roots], kind="stable")]
    lut = np.zeros(parent.size, np.int32)
    lut[order] = np.arange(1, order.size + 1, dtype=np.int32)
    lut = lut[parent]
    return order.size + 1, lut[runs], lut, (starts, ends)


def _components(
    fg: np.ndarray, right: np.ndarray | None = None, down: np.ndarray | None = None, *, eight: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Union-find over horizontal runs of the pixels in `fg`.

    `right` (h, w-1) says a pixel joins its right neighbour, `down` (h-1, w) the one below (default: both
    in `fg`); `eight` adds diagonal joins between `fg` pixels. Returns the run id of each pixel (0 off `fg`),
    the root run id of each run id (index 0 is a placeholder), and each run's first and last flat index.
    """
    h, w = fg.shape
    if right is None:
        right = fg[:, 1:] & fg[:, :-1]
    if down is None:
        down = fg[1:] & fg[:-1]
    start = fg.copy()
    start[:, 1:] &= ~right
    end = fg.copy()
    end[:, :-1] &= ~right
    runs = np.cumsum(start.ravel(), dtype=np.int32).reshape(h, w)
    runs[~fg] = 0
    starts, ends = np.flatnonzero(start), np.flatnonzero(end)
    # a vertical join repeats the one to its left when both rows continue the same runs
    new = down.copy()
    new[:, 1:] &= ~(down[:, :-1] & right[:-1] & right[1:])
    a, b = [runs[:-1][new]], [runs[1:][new]]
    if eight:  # diagonal joins matter only where neither pixel between them is set
        dr = fg[:-1, :-1] & fg[1:, 1:] & ~fg[:-1, 1:] & ~fg[1:, :-1]
        dl = fg[:-1, 1:] & fg[1:, :-1] & ~fg[:-1, :-1] & ~fg[1:, 1:]
        a += [runs[:-1, :-1][dr], runs[:-1, 1:][dl]]
        b += [runs[1:, 1:][dr], runs[1:, :-1][dl]]
    return runs, _roots(np.concatenate(a), np.concatenate(b), starts.size), starts, ends


def _roots(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Root (smallest run id) of each of run ids 0..n, given the joined pairs (a[i], b[i])."""
    parent = np.arange(n + 1, dtype=np.int32)
    while a.size:
        ra, rb = parent[a], parent[b]
        apart = ra != rb
        if not apart.any():
            break
        a, b, ra, rb = a[apart], b[apart], ra[apart], rb[apart]
        np.minimum.at(parent, np.maximum(ra, rb), np.minimum(ra, rb))  # hook the larger root to the smaller
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped
    return parent
