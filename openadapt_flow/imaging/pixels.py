"""The small image operations the package needs, each an OpenCV call: luminance, resizing, 3x3 gradients, square
morphology, medians, integral images, differences, and inpainting. Template matching is `imaging.ncc`; labels, flood
boxes and edges `imaging.components`; PNG `imaging.png`. Images are numpy arrays: RGB or gray uint8, H x W (x 3).
"""

from __future__ import annotations

from typing import Literal

import cv2
import numpy as np

Resample = Literal["area", "linear", "cubic"]
INPAINT_RADIUS = 3  # px around a painted-over pixel that inpainting weighs


def opencv_version() -> str:
    """The OpenCV that does the package's image work (a run's manifest records it)."""
    return str(cv2.__version__)


def to_gray(rgb: np.ndarray) -> np.ndarray:
    """Luminance (0.299 R + 0.587 G + 0.114 B, rounded) of an RGB uint8 image; a gray one is returned as it is."""
    if rgb.ndim == 2:
        return rgb
    done: np.ndarray = cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2GRAY)
    return done


def resize(img: np.ndarray, size: tuple[int, int], how: Resample = "area") -> np.ndarray:
    """`img` resized to `size` (width, height): "area" averages when shrinking (interpolates linearly when enlarging),
    "linear" and "cubic" interpolate. uint8 and float32 keep their type; other types are resized as float32."""
    w, h = size
    if (img.shape[1], img.shape[0]) == (w, h):
        return img
    src = img if img.dtype in (np.uint8, np.float32) else img.astype(np.float32)
    shrink = how == "area" and w <= img.shape[1] and h <= img.shape[0]
    interp = cv2.INTER_AREA if shrink else cv2.INTER_CUBIC if how == "cubic" else cv2.INTER_LINEAR
    done: np.ndarray = cv2.resize(src, (w, h), interpolation=interp)
    return done if src is img else done.astype(img.dtype)


def scale(img: np.ndarray, factor: float, how: Resample = "area") -> np.ndarray:
    """`img` resized by `factor` in both directions (rounded to whole pixels, at least one)."""
    h, w = img.shape[:2]
    return resize(img, (max(1, round(w * factor)), max(1, round(h * factor))), how)


def absdiff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| of two uint8 images, uint8."""
    done: np.ndarray = cv2.absdiff(a, b)
    return done


def differs(a: np.ndarray, b: np.ndarray, tol: int) -> np.ndarray:
    """True where any channel of two same-shape uint8 images differs by more than `tol`."""
    d = absdiff(a, b)
    if d.ndim == 3:  # over the threshold: 255 in that channel, so a nonzero grey
        d = cv2.cvtColor(cv2.threshold(d, tol, 255, cv2.THRESH_BINARY)[1], cv2.COLOR_RGB2GRAY)
        tol = 0
    out: np.ndarray = d > tol
    return out


def scale_abs(x: np.ndarray, alpha: float = 1.0, beta: float = 0.0) -> np.ndarray:
    """|x * alpha + beta|, rounded and held to 0..255, uint8 (OpenCV's convertScaleAbs)."""
    done: np.ndarray = cv2.convertScaleAbs(x, alpha=alpha, beta=beta)
    return done


def blur3(gray: np.ndarray) -> np.ndarray:
    """3 x 3 Gaussian blur ([1 2 1] both ways, /16, rounded) of a uint8 gray image."""
    done: np.ndarray = cv2.GaussianBlur(gray, (3, 3), 0)
    return done


def sobel(gray: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """The 3 x 3 Sobel derivative (dx=1, dy=0: along x; dx=0, dy=1: along y) of a uint8 gray image, int16."""
    if (dx, dy) not in ((1, 0), (0, 1)):
        raise ValueError(f"sobel(dx={dx}, dy={dy}): only first derivatives along x or y")
    done: np.ndarray = cv2.Sobel(gray, cv2.CV_16S, dx, dy, ksize=3)
    return done


def _square(img: np.ndarray, k: int, op: str) -> np.ndarray:
    """OpenCV's dilate or erode with a k x k square of ones, on a bool or uint8 image (outside the image is ignored)."""
    if k <= 1:
        return img.copy()
    src = img.view(np.uint8) if img.dtype == np.bool_ else img
    done: np.ndarray = getattr(cv2, op)(src, np.ones((k, k), np.uint8))
    return done.view(np.bool_) if img.dtype == np.bool_ else done


def dilate(img: np.ndarray, k: int = 3) -> np.ndarray:
    """Each pixel the largest of its k x k neighbourhood, bool or uint8."""
    return _square(img, k, "dilate")


def erode(img: np.ndarray, k: int = 3) -> np.ndarray:
    """Each pixel the smallest of its k x k neighbourhood, bool or uint8."""
    return _square(img, k, "erode")


def median(gray: np.ndarray, k: int) -> np.ndarray:
    """The k x k median of a uint8 gray image, edge pixels repeated outwards."""
    done: np.ndarray = cv2.medianBlur(np.ascontiguousarray(gray), k)
    return done


def integral(x: np.ndarray) -> np.ndarray:
    """The (H+1) x (W+1) float64 table of sums above and left of each corner."""
    src = x if x.dtype in (np.uint8, np.float32, np.float64) else x.astype(np.float64)
    done: np.ndarray = cv2.integral(src, sdepth=cv2.CV_64F)
    return done


def inpaint(img: np.ndarray, mask: np.ndarray, radius: int = INPAINT_RADIUS) -> np.ndarray:
    """`img` with the pixels under `mask` painted from those around them: a caret's or a focus ring's few pixels, so
    that a crop shows the widget as it looks at rest. OpenCV's Navier-Stokes method: it restores a flat field exactly
    (Telea's leaves +-2 grey levels in one), and a widget's face around a caret is mostly flat."""
    if not mask.any():
        return img.copy()
    done: np.ndarray = cv2.inpaint(np.ascontiguousarray(img), mask.astype(np.uint8), radius, cv2.INPAINT_NS)
    return done


def box_not_of(img: np.ndarray, colour: tuple[int, int, int]) -> tuple[int, int, int, int] | None:
    """The box (x, y, w, h) of every pixel of an RGB uint8 image that is not `colour`; None when every pixel is."""
    flat = np.array(colour, np.uint8)
    x, y, w, h = cv2.boundingRect(cv2.bitwise_not(cv2.inRange(np.ascontiguousarray(img), flat, flat)))
    return None if w == 0 or h == 0 else (int(x), int(y), int(w), int(h))
