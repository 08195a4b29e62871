"""An icon kept as it was while a theme restyles what is around it (a light toolbar turned dark).

A recorded crop is split into its background (the colour on its border, as far as it reaches from the
border) and its foreground (the icon or label). When the live frame has another flat colour where the crop
had its background, the foreground alone is compared: its pixels did not change, while its outline's edges
did (they follow the contrast with the new background). Nowhere else is the background set aside, so a
look-alike on the recorded background is judged as before.
"""

from __future__ import annotations

import math

import numpy as np

from openadapt_flow.imaging import components

Box = tuple[int, int, int, int]  # x, y, w, h

BACKGROUND_TOLERANCE = 6  # gray levels from a crop's background colour that still count as background
BACKGROUND_CHANGED = 48  # how far a restyled background must be from the crop's own to be set aside
BACKGROUND_FLAT = 0.9  # share of a restyled background that must be one colour
RESTYLE_FOREGROUND = (0.2, 0.9)  # share of a crop its foreground must cover for the restyled search
RESTYLE_MAX_OLD_GROUND = 0.05  # share of a search window still in the recorded background colour above which
# the window is not restyled (an icon's white inside on a dark toolbar: ~1%)
MIN_FOREGROUND = 16  # foreground pixels a block needs before its foreground alone is compared


def foreground_mask(gray: np.ndarray) -> tuple[np.ndarray, int]:
    """Pixels of a gray crop that are not its background (True), and that background's value: the commonest
    value on the crop's border, as far as it reaches from the border (an icon's white inside is foreground)."""
    border = np.concatenate([gray[0], gray[-1], gray[:, 0], gray[:, -1]])
    bg = int(np.bincount(border, minlength=256).argmax())
    near_bg = (np.abs(gray.astype(np.int16) - bg) <= BACKGROUND_TOLERANCE).astype(np.uint8)
    _, labels = components.label(near_bg, connectivity=4)
    edge_labels = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    outside = np.isin(labels, edge_labels[edge_labels > 0])  # background reached from the border only
    return ~outside, bg


def restyled_ground(around: np.ndarray, bg: int) -> bool:
    """Whether pixels where the crop had its background `bg` are now one other flat colour."""
    if around.size == 0:
        return False
    ground = float(np.median(around))
    flat = float(np.mean(np.abs(around.astype(np.float64) - ground) <= BACKGROUND_TOLERANCE))
    return abs(ground - bg) >= BACKGROUND_CHANGED and flat >= BACKGROUND_FLAT


def foreground_correlation(tile: np.ndarray, gray: np.ndarray, fg: tuple[np.ndarray, int], block: Box) -> float:
    """Best |correlation| of a block's foreground pixels (those unlike the crop's background) over the
    tile's shifts: an icon kept as it was, its background restyled (light to dark), still matches."""
    bx, by, bw, bh = block
    mask, bg = fg[0][by : by + bh, bx : bx + bw], fg[1]
    n = int(mask.sum())
    if n < max(MIN_FOREGROUND, bw * bh // 4) or n == mask.size:
        return 0.0
    cy, cx = (tile.shape[0] - bh) // 2, (tile.shape[1] - bw) // 2
    if tile.shape[0] < bh or tile.shape[1] < bw or not restyled_ground(tile[cy : cy + bh, cx : cx + bw][~mask], bg):
        return 0.0  # the background in place is not restyled: nothing to set aside (and no cost)
    t = gray[by : by + bh, bx : bx + bw][mask].astype(np.float64)
    t -= t.mean()
    var_t = float((t * t).sum())
    if var_t <= 1e-6:
        return 0.0
    best = 0.0
    for dy in range(tile.shape[0] - bh + 1):
        for dx in range(tile.shape[1] - bw + 1):
            window = tile[dy : dy + bh, dx : dx + bw]
            if not restyled_ground(window[~mask], bg):
                continue  # only a background restyled to another flat colour is set aside
            w = window[mask].astype(np.float64)
            w -= w.mean()
            var_w = float((w * w).sum())
            if var_w > 1e-6:
                best = max(best, abs(float((t * w).sum())) / math.sqrt(var_t * var_w))
    return best
