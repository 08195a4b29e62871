"""The small image operations the package needs, on numpy and Pillow: luminance, resizing, 3x3 gradients,
square morphology, medians, integral images, differences, and painting pixels from their surroundings.

Each stands for an OpenCV call and says how close it comes (the tests hold it there); where OpenCV is installed
(the `fast` extra, imaging/accel.py) the hot ones hand it the work. Template matching is `imaging.ncc`; labels, flood
boxes and edges `imaging.components`; PNG `imaging.png`. Images are numpy arrays: RGB or gray uint8, H x W (x 3).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from PIL import Image, ImageFilter

from openadapt_flow.imaging.accel import cv2

Resample = Literal["area", "linear", "cubic"]


def _image(a: np.ndarray) -> Image.Image:
    """A Pillow image of a uint8 gray or RGB array."""
    if a.dtype != np.uint8 or not (a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3)):
        raise ValueError(f"image of shape {a.shape} and type {a.dtype}: expected gray or RGB uint8")
    return Image.fromarray(np.ascontiguousarray(a))


def to_gray(rgb: np.ndarray) -> np.ndarray:
    """Luminance (0.299 R + 0.587 G + 0.114 B, rounded) of an RGB uint8 image; a gray one is returned as it is.
    OpenCV's COLOR_RGB2GRAY rounds the same sum in 14-bit fixed point, Pillow in 16: they differ by at most 1."""
    if rgb.ndim == 2:
        return rgb
    if cv2 is not None:
        done: np.ndarray = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY)
        return done
    return np.asarray(_image(rgb).convert("L"))


def _taps(n_in: int, n_out: int, how: Resample) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights (n_out x taps) of one axis of a resize, as OpenCV's resize samples: "area" the
    share of each source pixel an output pixel covers (when shrinking), "linear" two taps and "cubic" four (a = -0.75)
    around the source point (i + 0.5) * n_in / n_out - 0.5, the edge pixel repeated beyond the image."""
    s = n_in / n_out
    i = np.arange(n_out, dtype=np.float64)
    if how == "area" and n_out <= n_in:
        lo, hi = i * s, (i + 1) * s
        first = np.floor(lo).astype(np.int64)
        span = int(np.ceil(s)) + 1
        src = first[:, None] + np.arange(span)[None, :]
        weights = np.clip(np.minimum(hi[:, None], src + 1) - np.maximum(lo[:, None], src), 0, None) / s
        return np.minimum(src, n_in - 1), weights
    at = (i + 0.5) * s - 0.5
    base = np.floor(at).astype(np.int64)
    t = (at - base)[:, None]
    if how == "cubic":
        src = base[:, None] + np.arange(-1, 3)[None, :]
        d = np.abs(np.arange(-1, 3)[None, :] - t)
        a = -0.75
        weights = np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1, ((a * d - 5 * a) * d + 8 * a) * d - 4 * a)
    else:
        src = base[:, None] + np.arange(2)[None, :]
        weights = np.hstack([1 - t, t])
    return np.clip(src, 0, n_in - 1), weights


def _resample(img: np.ndarray, n_out: int, axis: int, how: Resample) -> np.ndarray:
    src, weights = _taps(img.shape[axis], n_out, how)
    shape = [1] * img.ndim
    shape[axis] = n_out
    out = np.zeros(img.shape[:axis] + (n_out,) + img.shape[axis + 1 :], np.float32)
    for j in range(src.shape[1]):
        out += np.take(img, src[:, j], axis=axis) * weights[:, j].astype(np.float32).reshape(shape)
    return out


def resize(img: np.ndarray, size: tuple[int, int], how: Resample = "area") -> np.ndarray:
    """`img` resized to `size` (width, height), sampled as OpenCV's resize samples (its INTER_AREA, INTER_LINEAR,
    INTER_CUBIC; "area" enlarging interpolates linearly); uint8 results are rounded (within 1 of OpenCV's)."""
    w, h = size
    if (img.shape[1], img.shape[0]) == (w, h):
        return img
    if cv2 is not None and img.dtype in (np.uint8, np.float32):
        shrink = how == "area" and w <= img.shape[1] and h <= img.shape[0]
        interp = cv2.INTER_AREA if shrink else cv2.INTER_CUBIC if how == "cubic" else cv2.INTER_LINEAR
        done: np.ndarray = cv2.resize(img, (w, h), interpolation=interp)
        return done
    fy, fx = img.shape[0] // h, img.shape[1] // w
    if how == "area" and (img.shape[0], img.shape[1]) == (h * fy, w * fx):  # whole blocks: their means
        out = np.zeros((h, w, *img.shape[2:]), np.float32)
        for dy in range(fy):
            for dx in range(fx):
                out += img[dy::fy, dx::fx]
        out /= fy * fx
    else:
        out = _resample(_resample(img.astype(np.float32), h, 0, how), w, 1, how)
    result: np.ndarray = np.clip(np.rint(out), 0, 255).astype(np.uint8) if img.dtype == np.uint8 else out.astype(img.dtype)
    return result


def scale(img: np.ndarray, factor: float, how: Resample = "area") -> np.ndarray:
    """`img` resized by `factor` in both directions (rounded to whole pixels, at least one)."""
    h, w = img.shape[:2]
    return resize(img, (max(1, round(w * factor)), max(1, round(h * factor))), how)


def absdiff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| of two uint8 images, uint8."""
    if cv2 is not None:
        done: np.ndarray = cv2.absdiff(a, b)
        return done
    out: np.ndarray = np.maximum(a, b) - np.minimum(a, b)
    return out


def differs(a: np.ndarray, b: np.ndarray, tol: int) -> np.ndarray:
    """True where any channel of two same-shape uint8 images differs by more than `tol`."""
    d = absdiff(a, b)
    if d.ndim == 3 and cv2 is not None:  # over the threshold: 255 in that channel, so a nonzero grey
        _, over = cv2.threshold(d, tol, 255, cv2.THRESH_BINARY)
        grey: np.ndarray = cv2.cvtColor(over, cv2.COLOR_RGB2GRAY) > 0
        return grey
    if d.ndim == 3:
        d = np.maximum(np.maximum(d[..., 0], d[..., 1]), d[..., 2])
    out: np.ndarray = d > tol
    return out


def scale_abs(x: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> np.ndarray:
    """|x * alpha + beta|, rounded and held to 0..255, uint8 (OpenCV's convertScaleAbs)."""
    if cv2 is not None:
        done: np.ndarray = cv2.convertScaleAbs(x, alpha=alpha, beta=beta)
        return done
    return np.clip(np.rint(np.abs(x.astype(np.float64) * alpha + beta)), 0, 255).astype(np.uint8)


def _pad101(img: np.ndarray, r: int) -> np.ndarray:
    """`img` with `r` pixels mirrored around each edge, the edge pixel not repeated (OpenCV's default border)."""
    if min(img.shape[:2]) <= r:
        return np.pad(img, r, mode="edge")
    return np.pad(img, r, mode="reflect")


def blur3(gray: np.ndarray) -> np.ndarray:
    """3 x 3 Gaussian blur ([1 2 1] both ways, /16, rounded) of a uint8 gray image (GaussianBlur((3, 3), 0))."""
    if cv2 is not None:
        done: np.ndarray = cv2.GaussianBlur(gray, (3, 3), 0)
        return done
    p = _pad101(gray, 1).astype(np.uint16)
    rows = p[:, :-2] + 2 * p[:, 1:-1] + p[:, 2:]
    total = rows[:-2] + 2 * rows[1:-1] + rows[2:]
    out: np.ndarray = ((total + 8) >> 4).astype(np.uint8)
    return out


def sobel(gray: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """The 3 x 3 Sobel derivative (dx=1, dy=0: along x; dx=0, dy=1: along y) of a uint8 gray image, int16."""
    p = _pad101(gray, 1).astype(np.int16)
    if (dx, dy) not in ((1, 0), (0, 1)):
        raise ValueError(f"sobel(dx={dx}, dy={dy}): only first derivatives along x or y")
    if cv2 is not None:
        done: np.ndarray = cv2.Sobel(gray, cv2.CV_16S, dx, dy, ksize=3)
        return done
    if dx:
        diff = p[:, 2:] - p[:, :-2]
        out: np.ndarray = (diff[:-2] + 2 * diff[1:-1] + diff[2:]).astype(np.int16)
    else:
        diff = p[2:] - p[:-2]
        out = (diff[:, :-2] + 2 * diff[:, 1:-1] + diff[:, 2:]).astype(np.int16)
    return out


def _square(img: np.ndarray, k: int, pick: np.ufunc, fill: int) -> np.ndarray:
    """`pick` (maximum or minimum) over each pixel's k x k neighbourhood; outside the image counts as `fill`."""
    if k <= 1:
        return img.copy()
    if cv2 is not None:
        op = cv2.dilate if pick is np.maximum else cv2.erode
        done: np.ndarray = op(img.view(np.uint8) if img.dtype == np.bool_ else img, np.ones((k, k), np.uint8))
        return done.view(np.bool_) if img.dtype == np.bool_ else done
    lo = (k - 1) // 2
    hi = k - 1 - lo
    src = img.view(np.uint8) if img.dtype == np.bool_ else img
    out = np.pad(src, ((0, 0), (lo, hi)), constant_values=fill)
    acc = out[:, 0 : src.shape[1]].copy()
    for i in range(1, k):
        pick(acc, out[:, i : i + src.shape[1]], out=acc)
    col = np.pad(acc, ((lo, hi), (0, 0)), constant_values=fill)
    res = col[0 : src.shape[0]].copy()
    for i in range(1, k):
        pick(res, col[i : i + src.shape[0]], out=res)
    return res.view(np.bool_) if img.dtype == np.bool_ else res


def dilate(img: np.ndarray, k: int = 3) -> np.ndarray:
    """Each pixel the largest of its k x k neighbourhood (OpenCV's dilate with np.ones((k, k))), bool or uint8."""
    return _square(img, k, np.maximum, 0)


def erode(img: np.ndarray, k: int = 3) -> np.ndarray:
    """Each pixel the smallest of its k x k neighbourhood (OpenCV's erode with np.ones((k, k))), bool or uint8."""
    return _square(img, k, np.minimum, 1 if img.dtype == np.bool_ else 255)


def median(gray: np.ndarray, k: int) -> np.ndarray:
    """The k x k median of a uint8 gray image, edge pixels repeated outwards (OpenCV's medianBlur)."""
    if cv2 is not None:
        done: np.ndarray = cv2.medianBlur(np.ascontiguousarray(gray), k)
        return done
    return np.asarray(_image(gray).filter(ImageFilter.MedianFilter(k)))


def integral(x: np.ndarray) -> np.ndarray:
    """The (H+1) x (W+1) float64 table of sums above and left of each corner (OpenCV's integral)."""
    if cv2 is not None and x.dtype in (np.uint8, np.float32, np.float64):
        done: np.ndarray = cv2.integral(x, sdepth=cv2.CV_64F)
        return done
    out = np.zeros((x.shape[0] + 1, x.shape[1] + 1), np.float64)
    np.cumsum(np.cumsum(x, axis=0, dtype=np.float64), axis=1, out=out[1:, 1:])
    return out


def fill_from_surroundings(img: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`img` with the pixels under `mask` painted from those around them, ring by ring from the outside in: each
    masked pixel next to known ones takes their mean (a caret's or focus ring's few pixels, where OpenCV's inpaint
    would weigh the same neighbours by distance and direction). Pixels with no known pixel anywhere stay."""
    out = img.astype(np.float64)
    todo = mask.astype(bool).copy()
    h, w = todo.shape
    shifts = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0)]
    while todo.any():
        known = ~todo
        total = np.zeros(out.shape, np.float64)
        count = np.zeros((h, w), np.float64)
        for dy, dx in shifts:
            ys, yd = slice(max(0, dy), h + min(0, dy)), slice(max(0, -dy), h + min(0, -dy))
            xs, xd = slice(max(0, dx), w + min(0, dx)), slice(max(0, -dx), w + min(0, -dx))
            k = known[ys, xs]
            count[yd, xd] += k
            total[yd, xd] += out[ys, xs] * (k[..., None] if out.ndim == 3 else k)
        ring = todo & (count > 0)
        if not ring.any():
            break
        mean = total / np.maximum(count, 1)[..., None] if out.ndim == 3 else total / np.maximum(count, 1)
        out[ring] = mean[ring]
        todo &= ~ring
    return np.clip(np.rint(out), 0, 255).astype(img.dtype)
