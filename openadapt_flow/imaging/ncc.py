"""Normalised cross-correlation template matching in numpy: `cv2.matchTemplate(..., TM_CCOEFF_NORMED)` and
`cv2.minMaxLoc` without OpenCV.

The core install carries no OpenCV (its wheel is 180 MB; the demo venv must stay under 250 MB), and the
template rung needs only this one method, so it lives here: the numerator by FFT cross-correlation (or
directly, for small problems), the window sums and sums of squares from float64 integral images, and
OpenCV's own rules for flat windows and templates, so scores, peaks and thresholds carry over unchanged. Where
OpenCV is installed (the `fast` extra, imaging/accel.py) it computes them.
"""

from __future__ import annotations

from functools import lru_cache
from types import ModuleType

import numpy as np

from openadapt_flow.imaging.accel import cv2

# The numerator is summed directly, not by FFT, for templates of at most DIRECT_MAX_PIXELS pixels (one pass
# over the result per template pixel) or problems of at most DIRECT_MAX_WORK result x template pixels; both
# measured (numpy 2.4, 1280x800 frames down to 20x20 crops): past them the FFT wins.
DIRECT_MAX_PIXELS = 12
DIRECT_MAX_WORK = 20_000
_FLT_EPSILON = float(np.finfo(np.float32).eps)
_DBL_EPSILON = float(np.finfo(np.float64).eps)


def match_template(image: np.ndarray, templ: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Scores of `templ` at every position in `image`: `cv2.matchTemplate(image, templ, TM_CCOEFF_NORMED)`.

    Both 2-D, uint8 or float32; the result is float32, shape (H-h+1, W-w+1). As OpenCV: a flat template scores
    1 everywhere, a (near-)flat window 0. With `mask` (template's shape, nonzero = used) only masked pixels count;
    where OpenCV's masked score is NaN or infinite (a flat window or template under the mask) this returns 0.
    """
    if image.ndim != 2 or templ.ndim != 2:
        raise ValueError(f"match_template wants 2-D single-channel arrays, got {image.shape} and {templ.shape}")
    big_h, big_w = image.shape
    h, w = templ.shape
    if h > big_h or w > big_w or h == 0 or w == 0:
        raise ValueError(f"template {templ.shape} does not fit in image {image.shape}")
    if mask is not None and mask.shape != templ.shape:
        raise ValueError(f"mask {mask.shape} is not the template's shape {templ.shape}")
    if cv2 is not None:
        return _opencv(cv2, image, templ, mask)
    return _unmasked(image, templ) if mask is None else _masked(image, templ, mask != 0)


def _opencv(cv: ModuleType, image: np.ndarray, templ: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The same scores by OpenCV (the `fast` extra): both arrays of one type, uint8 or float32, as it wants them."""
    if image.dtype != np.uint8 or templ.dtype != np.uint8:
        image, templ = image.astype(np.float32, copy=False), templ.astype(np.float32, copy=False)
    if mask is None:
        res: np.ndarray = cv.matchTemplate(image, templ, cv.TM_CCOEFF_NORMED)
        return res
    res = cv.matchTemplate(image, templ, cv.TM_CCOEFF_NORMED, mask=(mask != 0).astype(np.uint8))
    finite: np.ndarray = np.nan_to_num(res, nan=0.0, posinf=0.0, neginf=0.0)
    return finite


def min_max_loc(scores: np.ndarray) -> tuple[float, float, tuple[int, int], tuple[int, int]]:
    """`cv2.minMaxLoc`: (min, max, (x, y) of the min, (x, y) of the max), the first of each in raster order."""
    flat = scores.reshape(-1)
    lo_i, hi_i = int(np.argmin(flat)), int(np.argmax(flat))
    w = scores.shape[1]
    return float(flat[lo_i]), float(flat[hi_i]), (lo_i % w, lo_i // w), (hi_i % w, hi_i // w)


def best(scores: np.ndarray) -> tuple[float, tuple[int, int]]:
    """The top score and its (x, y), the first in raster order, as `cv2.minMaxLoc`'s maxLoc."""
    flat = scores.reshape(-1)
    i = int(np.argmax(flat))
    return float(flat[i]), (i % scores.shape[1], i // scores.shape[1])


def _unmasked(image: np.ndarray, templ: np.ndarray) -> np.ndarray:
    """OpenCV's common_matchTemplate: num = sum(T' * I), over sqrt(window variance * n) * ||T'||."""
    h, w = templ.shape
    out_h, out_w = image.shape[0] - h + 1, image.shape[1] - w + 1
    t64 = templ.astype(np.float64)
    t_mean = float(t64.mean())
    t_centred = t64 - t_mean
    t_var = float((t_centred * t_centred).mean())
    if t_var < _DBL_EPSILON:
        return np.ones((out_h, out_w), np.float32)
    # Window sums and sums of squares from integral images, as OpenCV's float64 ones; exact for uint8 (int64).
    exact = image.dtype.kind in "ui"
    wide = image.astype(np.int64 if exact else np.float64)
    s1 = _window_sums(wide, h, w)
    s2 = _window_sums(wide * wide, h, w)
    inv_area = 1.0 / (h * w)
    # In place (fresh large arrays cost page faults): diff2 = s2 - s1^2/n, then t = sqrt(diff2) * ||T'||.
    diff2 = np.multiply(s1, s1, out=s1)
    diff2 *= -inv_area
    diff2 += s2
    s2 *= 10 * _FLT_EPSILON
    flat = diff2 <= np.minimum(s2, 0.5, out=s2)
    np.maximum(diff2, 0.0, out=diff2)
    t = np.sqrt(diff2, out=diff2)
    t *= np.sqrt(t_var) / np.sqrt(inv_area)
    t[flat] = 0.0
    # sum(T' * I) with T' = T - mean(T); centring the image too changes nothing (sum T' = 0) but shrinks FFT error.
    i64 = image.astype(np.float64)
    i64 -= float(i64.mean())
    num = _correlate(i64, t_centred)
    # |num| < t: num / t; below 1.125 t: +-1 (rounding); beyond, or t = 0 (a flat window): 0. OpenCV's rules.
    with np.errstate(divide="ignore", invalid="ignore"):
        res: np.ndarray = np.divide(num, t, out=t)
    off = ~(np.abs(res, out=num) < 1.125)  # NaN (0/0) too
    np.clip(res, -1.0, 1.0, out=res)
    res[off] = 0.0
    return res.astype(np.float32)


def _masked(image: np.ndarray, templ: np.ndarray, used: np.ndarray) -> np.ndarray:
    """OpenCV's masked TM_CCOEFF_NORMED: T' = M(T - mean_M T), I' = M(I - mean_M I) per window, R = <T',I'>/|T'||I'|."""
    out_h, out_w = image.shape[0] - templ.shape[0] + 1, image.shape[1] - templ.shape[1] + 1
    m = used.astype(np.float64)
    count = float(m.sum())
    if count == 0:
        return np.zeros((out_h, out_w), np.float32)
    t64 = templ.astype(np.float64)
    t_centred = m * (t64 - float((m * t64).sum()) / count)
    t_norm2 = float((t_centred**2).sum())
    if t_norm2 <= 10 * _FLT_EPSILON * float((m * t64 * t64).sum()):
        return np.zeros((out_h, out_w), np.float32)
    i64 = image.astype(np.float64)
    i64 = i64 - float(i64.mean())  # changes neither score nor variance; keeps the sums small
    num = _correlate(i64, t_centred)
    s1 = _correlate(i64, m)
    s2 = _correlate(i64 * i64, m)
    diff2 = s2 - s1 * s1 / count
    # A flat window under the mask (OpenCV: 0/0, NaN) scores 0: variance at FFT-noise level, relative to the
    # window's own sum of squares or to the whole image's scale.
    floor = 1e-12 * count * float(np.max(i64 * i64))
    live = diff2 > np.maximum(10 * _FLT_EPSILON * s2, floor)
    den = np.sqrt(np.maximum(diff2, 0.0) * t_norm2)
    res = np.zeros((out_h, out_w), np.float64)
    np.divide(num, den, out=res, where=live)
    return np.clip(res, -1.0, 1.0).astype(np.float32)


def _window_sums(a: np.ndarray, h: int, w: int) -> np.ndarray:
    """Sum of every h x w window of `a` (int64: exact; or float64), as float64, from an integral image."""
    big_h, big_w = a.shape
    table = np.zeros((big_h + 1, big_w + 1), a.dtype)  # the integral image
    np.cumsum(a, axis=0, out=table[1:, 1:])
    np.cumsum(table[1:, 1:], axis=1, out=table[1:, 1:])
    sums = table[h:, w:] - table[:-h, w:]
    sums -= table[h:, :-w]
    sums += table[:-h, :-w]
    return sums.astype(np.float64)


def _correlate(image: np.ndarray, templ: np.ndarray) -> np.ndarray:
    """Valid cross-correlation, float64: sum over the template of templ * image window, at every position."""
    big_h, big_w = image.shape
    h, w = templ.shape
    out_h, out_w = big_h - h + 1, big_w - w + 1
    if h * w <= DIRECT_MAX_PIXELS or out_h * out_w * h * w <= DIRECT_MAX_WORK:
        return _correlate_direct(image, templ)
    # Circular correlation of size >= the image wraps only into rows/columns past the valid part.
    fh, fw = _fast_len(big_h), _fast_len(big_w)
    prod = np.fft.rfft2(image, s=(fh, fw))
    # The template's rows are few: transform them along x, then the zero-padded columns along y.
    f_tpl = np.fft.rfft(templ, n=fw, axis=1)
    f_tpl = np.fft.fft(f_tpl, n=fh, axis=0)
    prod *= np.conj(f_tpl, out=f_tpl)
    del f_tpl
    return np.fft.irfft2(prod, s=(fh, fw))[:out_h, :out_w]


def _correlate_direct(image: np.ndarray, templ: np.ndarray) -> np.ndarray:
    """Valid cross-correlation summed pixel by pixel of the template (small templates) or window by window."""
    h, w = templ.shape
    out_h, out_w = image.shape[0] - h + 1, image.shape[1] - w + 1
    if h * w <= DIRECT_MAX_PIXELS:
        acc = np.zeros((out_h, out_w), np.float64)
        for dy in range(h):
            for dx in range(w):
                acc += templ[dy, dx] * image[dy : dy + out_h, dx : dx + out_w]
        return acc
    windows = np.lib.stride_tricks.sliding_window_view(image, (h, w))
    return np.tensordot(windows, templ, axes=([2, 3], [0, 1]))


@lru_cache(maxsize=512)
def _fast_len(n: int) -> int:
    """Smallest 2^a 3^b 5^c >= n (pocketfft is quick on those)."""
    best_len = 1 << (n - 1).bit_length()
    p5 = 1
    while p5 < best_len:
        p35 = p5
        while p35 < best_len:
            q = p35
            while q < n:
                q *= 2
            best_len = min(best_len, q)
            p35 *= 3
        p5 *= 5
    return best_len
