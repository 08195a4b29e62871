"""Template matching: normalised cross-correlation on grayscale or edge maps, multi-scale.

Two feature modes share one search: `gray` (plain luminance) and `edges` (Sobel
gradient magnitude), which survives a theme or colour change because
inverting luminance leaves gradient magnitude unchanged. Every search returns
the best candidate and the runner-up peak outside the best's footprint, so the
caller can refuse to pick between look-alikes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np

Box = tuple[int, int, int, int]  # x, y, w, h
Mode = Literal["gray", "edges"]

DEFAULT_SCALES: tuple[float, ...] = (1.0, 0.8, 0.9, 1.1, 1.25)
# Searches over more pixels than this go coarse-to-fine (a full 1080p
# correlation costs ~70 ms on two cores, a half-resolution one ~12 ms).
COARSE_ABOVE_PX = 600_000
COARSE_MIN_SIDE = 8  # the template's short side at coarse resolution
COARSE_PEAKS = 6
EDGE_CONTEXT = 2  # pixels of context the blur + Sobel kernels read
MIN_TEMPLATE_SIDE = 4
FLAT_STD = 2.0  # a variant with less contrast than this correlates with noise


def to_gray(rgb: np.ndarray) -> np.ndarray:
    """Luminance of an RGB (or already gray) uint8 image."""
    if rgb.ndim == 2:
        return rgb
    return cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)


def edge_map(gray: np.ndarray) -> np.ndarray:
    """Gradient magnitude (|Sobel x| + |Sobel y|, uint8), identical for an image and its negative."""
    blurred = cv2.GaussianBlur(gray, (3, 3), 0)
    sx = cv2.Sobel(blurred, cv2.CV_16S, 1, 0, ksize=3)
    sy = cv2.Sobel(blurred, cv2.CV_16S, 0, 1, ksize=3)
    return cv2.addWeighted(cv2.convertScaleAbs(sx), 0.5, cv2.convertScaleAbs(sy), 0.5, 0)


def clip_box(box: Box, width: int, height: int) -> Box | None:
    """The part of `box` inside a width x height image, or None if nothing is."""
    x, y, w, h = box
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(width, x + w), min(height, y + h)
    if x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


def intersect(a: Box, b: Box) -> Box | None:
    """The overlap of two boxes, or None."""
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    if x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


def pad_box(box: Box, pad: int, width: int, height: int) -> Box | None:
    """`box` grown by `pad` on every side, clipped to the image."""
    x, y, w, h = box
    return clip_box((x - pad, y - pad, w + 2 * pad, h + 2 * pad), width, height)


class TemplateImage:
    """One template crop with its gray/edge variants at each scale, computed once and cached."""

    def __init__(self, rgb: np.ndarray) -> None:
        if rgb.ndim not in (2, 3) or rgb.dtype != np.uint8:
            raise ValueError("a template must be a uint8 RGB or gray image")
        self.rgb = rgb
        self.height, self.width = int(rgb.shape[0]), int(rgb.shape[1])
        self._gray = to_gray(rgb)
        self._cache: dict[tuple[Mode, float], np.ndarray | None] = {}

    def variant(self, mode: Mode, scale: float) -> np.ndarray | None:
        """The template resized by `scale` in `mode`; None when too small or too flat to match."""
        key = (mode, round(scale, 4))
        if key not in self._cache:
            self._cache[key] = self._make(mode, scale)
        return self._cache[key]

    def _make(self, mode: Mode, scale: float) -> np.ndarray | None:
        w, h = round(self.width * scale), round(self.height * scale)
        if min(w, h) < MIN_TEMPLATE_SIDE:
            return None
        gray = self._gray
        if (w, h) != (self.width, self.height):
            interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
            gray = cv2.resize(gray, (w, h), interpolation=interp)
        feat = gray if mode == "gray" else edge_map(gray)
        if float(feat.std()) < FLAT_STD:
            return None
        return np.ascontiguousarray(feat)


class FrameFeatures:
    """Gray and edge maps of one frame, computed lazily: crops first, whole frame only when asked."""

    def __init__(self, rgb: np.ndarray) -> None:
        self.rgb = rgb
        self.height, self.width = int(rgb.shape[0]), int(rgb.shape[1])
        self._full: dict[Mode, np.ndarray] = {}
        self._coarse: dict[tuple[Mode, int], np.ndarray] = {}

    @property
    def frame_box(self) -> Box:
        return (0, 0, self.width, self.height)

    def feature(self, mode: Mode, box: Box | None = None) -> np.ndarray:
        """Feature map of `box` (default: whole frame); the same pixels whichever way it is cut."""
        box = box or self.frame_box
        x, y, w, h = box
        if mode in self._full or box == self.frame_box:
            return self._whole(mode)[y : y + h, x : x + w]
        if mode == "gray":
            return to_gray(self.rgb[y : y + h, x : x + w])
        # Edges of a crop read a few pixels beyond it, so cut with context and trim.
        c = EDGE_CONTEXT
        x0, y0 = max(0, x - c), max(0, y - c)
        x1, y1 = min(self.width, x + w + c), min(self.height, y + h + c)
        edges = edge_map(to_gray(self.rgb[y0:y1, x0:x1]))
        return edges[y - y0 : y - y0 + h, x - x0 : x - x0 + w]

    def _whole(self, mode: Mode) -> np.ndarray:
        if mode not in self._full:
            gray = self._full.get("gray")
            if gray is None:
                gray = self._full["gray"] = to_gray(self.rgb)
            if mode == "edges":
                self._full["edges"] = edge_map(gray)
        return self._full[mode]

    def coarse(self, mode: Mode, factor: int) -> np.ndarray:
        """Whole-frame feature map shrunk by an integer factor (area averaging)."""
        key = (mode, factor)
        if key not in self._coarse:
            full = self._whole(mode)
            size = (max(1, self.width // factor), max(1, self.height // factor))
            self._coarse[key] = cv2.resize(full, size, interpolation=cv2.INTER_AREA)
        return self._coarse[key]


@dataclass(frozen=True)
class Candidate:
    score: float
    box: Box  # where the (scaled) template sits, in frame pixels
    scale: float

    @property
    def centre(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return (x + w / 2, y + h / 2)

    def overlaps(self, other: "Candidate") -> bool:
        """True when `other` is the same peak: its centre lies within half this footprint."""
        (cx, cy), (ox, oy) = self.centre, other.centre
        return abs(cx - ox) < self.box[2] / 2 and abs(cy - oy) < self.box[3] / 2


@dataclass(frozen=True)
class MatchResult:
    best: Candidate | None
    runner_up: Candidate | None
    search: Box
    mode: Mode

    @property
    def score(self) -> float:
        return self.best.score if self.best else 0.0

    @property
    def runner_up_score(self) -> float:
        return self.runner_up.score if self.runner_up else 0.0

    @property
    def margin(self) -> float:
        return self.score - self.runner_up_score


def find_template(
    frame: FrameFeatures | np.ndarray,
    template: TemplateImage | np.ndarray,
    *,
    mode: Mode = "gray",
    box: Box | None = None,
    scales: tuple[float, ...] = DEFAULT_SCALES,
    confident: float = 0.85,
) -> MatchResult:
    """Best placement of `template` inside `box` and the runner-up peak outside its footprint.

    The first scale is tried alone; the others only if it scores below `confident`.
    """
    feats = frame if isinstance(frame, FrameFeatures) else FrameFeatures(frame)
    tmpl = template if isinstance(template, TemplateImage) else TemplateImage(template)
    search = clip_box(box, feats.width, feats.height) if box else feats.frame_box
    if search is None:
        return MatchResult(None, None, box or feats.frame_box, mode)
    found: list[Candidate] = []
    for i, scale in enumerate(scales):
        found.extend(_search_scale(feats, tmpl, mode, search, scale))
        if i == 0 and found and max(c.score for c in found) >= confident:
            break
    if not found:
        return MatchResult(None, None, search, mode)
    best = max(found, key=lambda c: c.score)
    others = [c for c in found if not best.overlaps(c) and not c.overlaps(best)]
    runner = max(others, key=lambda c: c.score) if others else None
    return MatchResult(best, runner, search, mode)


def score_at(
    frame: FrameFeatures | np.ndarray,
    template: TemplateImage | np.ndarray,
    box: Box,
    *,
    mode: Mode = "gray",
    scale: float = 1.0,
    slack: int = 4,
) -> float:
    """How well the template correlates when placed at `box` (x, y of its top-left), give or take `slack` px."""
    feats = frame if isinstance(frame, FrameFeatures) else FrameFeatures(frame)
    tmpl = template if isinstance(template, TemplateImage) else TemplateImage(template)
    x, y, _, _ = box
    t = tmpl.variant(mode, scale)
    if t is None:
        return 0.0
    th, tw = t.shape
    area = clip_box((x - slack, y - slack, tw + 2 * slack, th + 2 * slack), feats.width, feats.height)
    if area is None or area[2] < tw or area[3] < th:
        return 0.0
    res = cv2.matchTemplate(feats.feature(mode, area), t, cv2.TM_CCOEFF_NORMED)
    return float(np.nan_to_num(res).max())


def _search_scale(feats: FrameFeatures, tmpl: TemplateImage, mode: Mode, search: Box, scale: float) -> list[Candidate]:
    """Up to a few separated peaks of one scale inside `search`, strongest first."""
    t = tmpl.variant(mode, scale)
    if t is None:
        return []
    th, tw = t.shape
    sx, sy, sw, sh = search
    if sw < tw or sh < th:
        return []
    factor = 2 if sw * sh > COARSE_ABOVE_PX and min(tw, th) >= 2 * COARSE_MIN_SIDE else 1
    if factor == 1:
        res = cv2.matchTemplate(feats.feature(mode, search), t, cv2.TM_CCOEFF_NORMED)
        return [Candidate(s, (sx + px, sy + py, tw, th), scale) for s, px, py in _peaks(res, tw, th, 3)]
    return _coarse_to_fine(feats, tmpl, mode, search, scale, factor)


def _coarse_to_fine(
    feats: FrameFeatures, tmpl: TemplateImage, mode: Mode, search: Box, scale: float, factor: int
) -> list[Candidate]:
    # Peaks found at reduced resolution are re-scored at full resolution in a
    # small neighbourhood, so reported scores are always full-resolution ones.
    t = tmpl.variant(mode, scale)
    assert t is not None
    th, tw = t.shape
    small_t = cv2.resize(t, (tw // factor, th // factor), interpolation=cv2.INTER_AREA)
    if float(small_t.std()) < FLAT_STD:
        return []
    sx, sy, sw, sh = search
    coarse = feats.coarse(mode, factor)
    cx0, cy0 = sx // factor, sy // factor
    cx1, cy1 = (sx + sw) // factor, (sy + sh) // factor
    region = coarse[cy0:cy1, cx0:cx1]
    if region.shape[0] < small_t.shape[0] or region.shape[1] < small_t.shape[1]:
        return []
    res = cv2.matchTemplate(region, small_t, cv2.TM_CCOEFF_NORMED)
    out: list[Candidate] = []
    slack = 2 * factor
    for _, px, py in _peaks(res, small_t.shape[1], small_t.shape[0], COARSE_PEAKS):
        fx, fy = (cx0 + px) * factor, (cy0 + py) * factor
        area = intersect((fx - slack, fy - slack, tw + 2 * slack, th + 2 * slack), search)
        if area is None or area[2] < tw or area[3] < th:
            continue
        fine = cv2.matchTemplate(feats.feature(mode, area), t, cv2.TM_CCOEFF_NORMED)
        _, s, _, (bx, by) = cv2.minMaxLoc(np.nan_to_num(fine))
        cand = Candidate(float(s), (area[0] + bx, area[1] + by, tw, th), scale)
        if not any(c.overlaps(cand) for c in out):
            out.append(cand)
    out.sort(key=lambda c: -c.score)
    return out


def _peaks(res: np.ndarray, tw: int, th: int, k: int) -> list[tuple[float, int, int]]:
    """The k strongest peaks of a correlation map, each suppressing half a template around it."""
    res = np.nan_to_num(res, nan=-1.0, posinf=-1.0, neginf=-1.0)
    rw, rh = max(1, tw // 2), max(1, th // 2)
    out: list[tuple[float, int, int]] = []
    for _ in range(k):
        _, score, _, (px, py) = cv2.minMaxLoc(res)
        if score <= -1.0:
            break
        out.append((float(score), int(px), int(py)))
        res[max(0, py - rh) : py + rh + 1, max(0, px - rw) : px + rw + 1] = -1.0
    return out
