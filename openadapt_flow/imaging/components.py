"""Connected components in numpy: labelling, per-component stats, a flood-fill's box and Canny edges.

The core install carries no OpenCV (its wheel is 180 MB); these give the same answers as
`cv2.connectedComponents`, `cv2.connectedComponentsWithStats`, the rect of a mask-only `cv2.floodFill`
and, closely, `cv2.Canny`. One core does the work: horizontal runs of joined pixels, pairs of runs that
touch across adjacent rows, then a vectorised union-find over the runs. Where OpenCV is installed (the `fast`
extra, imaging/accel.py) labels and flood boxes are its own.
"""

from __future__ import annotations

import numpy as np

from openadapt_flow.imaging.accel import cv2

LEFT, TOP, WIDTH, HEIGHT, AREA = 0, 1, 2, 3, 4  # columns of label_stats' stats, as cv2.CC_STAT_*

_INT32_MAX = 2147483647
_TG22 = 13573  # tan(22.5 deg) << 15, rounded, as in cv2.Canny


def label(mask: np.ndarray, connectivity: int = 8) -> tuple[int, np.ndarray]:
    """Label the nonzero pixels of a 2-D mask: (n, labels) with n counting the background label 0.

    Labels are int32, numbered as cv2 numbers them: with connectivity 4 in raster order of each
    component's first pixel; with 8 in raster order of the first 2x2 block (rows 2i..2i+1, columns
    2j..2j+1) a component touches, the order of cv2's block-based scan.
    """
    if cv2 is not None:
        found, labels = cv2.connectedComponents(_as_u8(mask), connectivity=connectivity, ltype=cv2.CV_32S)
        return int(found), labels
    n, lab, (row, x0, x1) = _label(mask, connectivity)
    return n, _paint(lab, row, x0, x1, mask.shape[1], mask.size).reshape(mask.shape)


def label_stats(mask: np.ndarray, connectivity: int = 8) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """`label` plus stats (n, 5) int32 (LEFT, TOP, WIDTH, HEIGHT, AREA) and centroids (n, 2) float64 (x, y).

    Row 0 describes the background pixels; with none, it is cv2's (-1, INT32_MAX, 0, 0, 0) and centroid NaN.
    """
    if cv2 is not None:
        found, labels, stats, centroids = cv2.connectedComponentsWithStats(_as_u8(mask), connectivity=connectivity,
                                                                           ltype=cv2.CV_32S)
        return int(found), labels, stats, centroids
    n, lab, (row, x0, x1) = _label(mask, connectivity)
    h, w = mask.shape
    length = x1 - x0 + 1
    bbox = np.empty((4, n), np.int64)  # left, top, right, bottom
    bbox[:2], bbox[2:] = [[w], [h]], -1
    for side, at, where in ((0, np.minimum.at, x0), (1, np.minimum.at, row), (2, np.maximum.at, x1), (3, np.maximum.at, row)):
        at(bbox[side], lab, where)
    sums = np.stack([np.bincount(lab, weights, n) for weights in (length, length * (x0 + x1) / 2.0, length * row)])
    # the background, from what the runs leave uncovered in each row and column
    in_row = np.bincount(row, length, h) < w
    cover = np.zeros(w + 1, np.int64)
    np.add.at(cover, x0, 1)
    np.add.at(cover, x1 + 1, -1)
    in_col = np.cumsum(cover[:w]) < h
    sums[:, 0] = (h * w, h * w * (w - 1) / 2.0, h * w * (h - 1) / 2.0) - sums[:, 1:].sum(1)
    if sums[0, 0]:
        cols, rows = np.flatnonzero(in_col), np.flatnonzero(in_row)
        bbox[:, 0] = cols[0], rows[0], cols[-1], rows[-1]
    stats = np.empty((n, 5), np.int32)
    stats[:, LEFT], stats[:, TOP] = bbox[0], bbox[1]
    stats[:, WIDTH], stats[:, HEIGHT], stats[:, AREA] = bbox[2] - bbox[0] + 1, bbox[3] - bbox[1] + 1, sums[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        centroids = (sums[1:] / sums[0]).T.copy()
    if not sums[0, 0]:
        stats[0] = (-1, _INT32_MAX, 0, 0, 0)
    return n, _paint(lab, row, x0, x1, w, mask.size).reshape(h, w), stats, centroids


def _as_u8(mask: np.ndarray) -> np.ndarray:
    """The mask as OpenCV takes it: uint8, nonzero where set."""
    return mask.view(np.uint8) if mask.dtype == np.bool_ else (mask != 0).view(np.uint8)


FLOOD_FIRST_WINDOW = 128  # px each way around the seed; tripled while the filled area reaches the window's edge


def flood_box(image: np.ndarray, seed: tuple[int, int], step: int = 0) -> tuple[int, int, int, int]:
    """Box (x, y, w, h) that a 4-connected, floating-range `cv2.floodFill` from `seed` (x, y) would fill.

    A pixel joins when every channel differs by at most `step` from a filled 4-neighbour. Filled first in a window
    around the seed, grown while the area reaches an edge of the window inside the image: an area that stays off
    those edges is closed, so the box is the whole frame's (a widget's face costs its window, not the screen).
    """
    h, w = image.shape[:2]
    if cv2 is not None:  # mask-only: the image is not written, but OpenCV wants it writable and contiguous
        img = np.ascontiguousarray(image) if image.flags.writeable else image.copy()
        rect = cv2.floodFill(img, np.zeros((h + 2, w + 2), np.uint8), seed, (0,) * 3, (step,) * 3, (step,) * 3,
                             4 | cv2.FLOODFILL_MASK_ONLY | (255 << 8))[3]
        return int(rect[0]), int(rect[1]), int(rect[2]), int(rect[3])
    x, y = seed
    reach = FLOOD_FIRST_WINDOW
    while True:
        x0, y0, x1, y1 = max(0, x - reach), max(0, y - reach), min(w, x + reach + 1), min(h, y + reach + 1)
        bx, by, bw, bh = _flood_box(image[y0:y1, x0:x1], (x - x0, y - y0), step)
        whole = (x0, y0, x1, y1) == (0, 0, w, h)
        open_edge = (x0 > 0 and bx == 0) or (y0 > 0 and by == 0) or (x1 < w and bx + bw == x1 - x0) or \
            (y1 < h and by + bh == y1 - y0)
        if whole or not open_edge:
            return bx + x0, by + y0, bw, bh
        reach *= 3


def _flood_box(image: np.ndarray, seed: tuple[int, int], step: int) -> tuple[int, int, int, int]:
    img = image.astype(np.int16)
    if img.ndim == 2:
        img = img[:, :, None]
    h, w = img.shape[:2]
    right, down = np.ones((h, w - 1), bool), np.ones((h - 1, w), bool)
    for ch in range(img.shape[2]):  # a channel's |difference| <= step, as one unsigned compare
        plane = img[:, :, ch]
        right &= (plane[:, 1:] - plane[:, :-1] + step).view(np.uint16) <= 2 * step
        down &= (plane[1:] - plane[:-1] + step).view(np.uint16) <= 2 * step
    cut = np.ones((h, w), bool)  # a run starts where a pixel does not join its left neighbour
    cut[:, 1:] = ~right
    starts = np.flatnonzero(cut)
    # a vertical join repeats the one to its left when both rows continue the same runs there
    new = down.copy()
    new[:, 1:] &= ~(down[:, :-1] & right[:-1] & right[1:])
    at = np.flatnonzero(new)
    a, b = np.searchsorted(starts, at, "right") - 1, np.searchsorted(starts, at + w, "right") - 1
    parent = _roots(a, b, starts.size)
    seed_run = np.searchsorted(starts, seed[1] * w + seed[0], "right") - 1
    mine = np.flatnonzero(parent == parent[seed_run])
    first, last = starts[mine], np.append(starts[1:], h * w)[mine] - 1
    left, top = int((first % w).min()), int(first[0] // w)
    return left, top, int((last % w).max()) - left + 1, int(first[-1] // w) - top + 1


def canny(gray: np.ndarray, low: float, high: float) -> np.ndarray:
    """Bool edge map of a uint8 gray image, after `cv2.Canny(gray, low, high)` (aperture 3, L1 gradient).

    Sobel gradients (edges replicated), non-maximum suppression in 4 directions with cv2's tie rules,
    then hysteresis: pixels above `low` kept when 8-connected to one above `high`.
    """
    lo, hi = sorted((int(np.floor(low)), int(np.floor(high))))
    p = np.pad(gray.astype(np.int16), 1, mode="edge")
    across, along = p[:-2] + 2 * p[1:-1] + p[2:], p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:]  # Sobel, separably
    gx, gy = across[:, 2:] - across[:, :-2], along[2:] - along[:-2]
    ax, ay = np.abs(gx).astype(np.int32), np.abs(gy).astype(np.int32)
    m = np.zeros((gray.shape[0] + 2, gray.shape[1] + 2), np.int16)  # zero outside the image
    m[1:-1, 1:-1] = ax + ay
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
    h, w = weak.shape
    row, x0, x1 = _runs(weak)
    parent = _roots(*_touching(row, x0, x1, w, 1), row.size)
    strong = np.flatnonzero(weak & (c > hi))
    kept = np.zeros(row.size, np.int32)
    kept[parent[np.searchsorted(row * w + x0, strong, "right") - 1]] = 1
    edges: np.ndarray = _paint(kept[parent], row, x0, x1, w, weak.size).reshape(h, w) > 0
    return edges


def _label(mask: np.ndarray, connectivity: int) -> tuple[int, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(n, label of each run, the runs (row, first x, last x)): the work `label` and `label_stats` share."""
    if mask.ndim != 2:
        raise ValueError(f"mask must be 2-D, got shape {mask.shape}")
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity must be 4 or 8, got {connectivity}")
    w = mask.shape[1]
    row, x0, x1 = _runs(mask != 0)
    parent = _roots(*_touching(row, x0, x1, w, connectivity == 8), row.size)
    roots = np.flatnonzero(parent == np.arange(row.size))
    if connectivity == 8:  # cv2 numbers by the first 2x2 block touched; a root is the first run in raster order
        first = np.full(row.size, np.iinfo(np.int64).max)
        np.minimum.at(first, parent, (row // 2) * ((w + 1) // 2) + x0 // 2)
        roots = roots[np.argsort(first[roots], kind="stable")]
    lab = np.zeros(row.size, np.int32)
    lab[roots] = np.arange(1, roots.size + 1, dtype=np.int32)
    return roots.size + 1, lab[parent], (row, x0, x1)


def _runs(fg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Horizontal runs of set pixels in raster order: (row, first x, last x)."""
    h, w = fg.shape
    padded = np.zeros((h, w + 2), np.int8)
    padded[:, 1:-1] = fg
    flips = np.flatnonzero(np.diff(padded.ravel()))
    first, last = flips[0::2] + 1, flips[1::2]
    row = first // (w + 2)
    return row, first - row * (w + 2) - 1, last - row * (w + 2) - 1


def _touching(row: np.ndarray, x0: np.ndarray, x1: np.ndarray, w: int, reach: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (above, below) of runs in adjacent rows whose columns overlap; `reach` 1 adds diagonal touches."""
    stride = w + 2  # keeps a row's reach clear of the rows beyond
    first, last = row * stride + x0, row * stride + x1
    lo = np.searchsorted(last, first - stride - reach, "left")
    count = np.searchsorted(first, last - stride + reach, "right") - lo
    below = np.repeat(np.arange(row.size), count)
    above = np.repeat(lo - np.cumsum(count) + count, count) + np.arange(below.size)
    return above, below


def _roots(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Root (smallest index) of each of runs 0..n-1, given the joined pairs (a[i], b[i])."""
    parent = np.arange(n, dtype=np.int64)
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


def _paint(value: np.ndarray, row: np.ndarray, x0: np.ndarray, x1: np.ndarray, w: int, size: int) -> np.ndarray:
    """Flat int32 image (`size` pixels, rows of `w`) holding each run's value on its pixels, 0 elsewhere."""
    out = np.zeros(size + 1, np.int32)
    out[row * w + x0] = value[: row.size]
    out[row * w + x1 + 1] -= value[: row.size]
    return np.cumsum(out, dtype=np.int32, out=out)[:-1]
