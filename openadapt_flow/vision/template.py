"""Template matching: normalised cross-correlation on grayscale or edge maps, multi-scale.

Two feature modes share one search: `gray` (plain luminance) and `edges`
(Sobel gradient magnitude), which survives a theme or colour change because
inverting luminance leaves gradient magnitude unchanged.

Whole-crop correlation is dominated by a widget's shape: a "Save" crop scores
0.9+ on a "Send" or "Close" button of the same size. So every strong peak also
gets a *detail* score: the worst block-wise |correlation| over the crop's
textured blocks (text, icon strokes), which stays high only where the content
itself matches, in either polarity. Each candidate is ranked by shape and
content together (`Candidate.rank`); a search returns the best-ranked one
and the best-ranked other peak outside its footprint, so the caller can
refuse to pick between look-alikes by one margin on that rank.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from openadapt_flow.imaging import ncc, pixels
from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.vision.content import CONTENT_FULL, BlockSums, as_recorded, rescuable
from openadapt_flow.vision.restyle import (
    BACKGROUND_TOLERANCE,
    RESTYLE_FOREGROUND,
    RESTYLE_MAX_OLD_GROUND,
    foreground_correlation,
    foreground_mask,
    restyled_ground,
)

Box = tuple[int, int, int, int]  # x, y, w, h
Mode = Literal["gray", "edges"]

DEFAULT_SCALES: tuple[float, ...] = (1.0, 0.8, 0.9, 1.1, 1.25)
# Searches over more pixels than this go coarse-to-fine (a full 1080p
# correlation costs ~70 ms on two cores, a half-resolution one ~12 ms).
COARSE_ABOVE_PX = 600_000
COARSE_MIN_SIDE = 8  # the template's short side at coarse resolution
COARSE_FACTOR = 4  # shrink for templates big enough to stay COARSE_MIN_SIDE tall; else 2
COARSE_PEAKS = 40  # coarse peaks re-scored at full resolution (look-alike toolbars have many)
NEAR_PAD = 12  # px around the recorded place searched at full resolution first
NEAR_MIN_PHASE = 0.5  # templates that lose more than this at half resolution skip the near-first search
PHASE_SLACK = 0.1  # beyond what a template loses to itself at half resolution, what a rival may lose
RUNNERS_UP = 3
EDGE_INSET = 2  # border of an edge map that depends on pixels outside the crop
MIN_TEMPLATE_SIDE = 4
FLAT_STD = 2.0  # a variant with less contrast than this correlates with noise
BLOCK = 12  # detail block side at scale 1
BLOCK_STD = 15.0  # blocks flatter than this say nothing about content
MIN_BLOCK_SIDE = 4  # a block scaled smaller than this is dropped
DETAIL_MAX_CANDIDATES = 24


def edge_map(gray: np.ndarray) -> np.ndarray:
    """Gradient magnitude (|Sobel x| + |Sobel y|, uint8), identical for an image and its negative."""
    blurred = pixels.blur3(gray)
    sx, sy = pixels.scale_abs(pixels.sobel(blurred, 1, 0)), pixels.scale_abs(pixels.sobel(blurred, 0, 1))
    return pixels.scale_abs((sx.astype(np.float32) + sy) * 0.5)


def intersect(a: Box, b: Box) -> Box | None:
    """The overlap of two boxes, or None."""
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    if x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


def contains(outer: Box, inner: Box) -> bool:
    """Whether `inner` lies wholly inside `outer`."""
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


def clip_box(box: Box, width: int, height: int) -> Box | None:
    """The part of `box` inside a width x height image, or None if nothing is."""
    return intersect(box, (0, 0, width, height))


def pad_box(box: Box, pad: int, width: int, height: int) -> Box | None:
    """`box` grown by `pad` on every side, clipped to the image."""
    x, y, w, h = box
    return clip_box((x - pad, y - pad, w + 2 * pad, h + 2 * pad), width, height)


class TemplateImage:
    """One template crop with its gray/edge variants at each scale, computed once and cached."""

    def __init__(self, rgb: np.ndarray) -> None:
        if rgb.ndim not in (2, 3) or rgb.dtype != np.uint8 or min(rgb.shape[:2]) < 1:
            raise ValueError("a template must be a non-empty uint8 RGB or gray image")
        self.rgb = rgb
        self.height, self.width = int(rgb.shape[0]), int(rgb.shape[1])
        self._gray = to_gray(rgb)
        self._cache: dict[tuple[str, float], np.ndarray | None] = {}
        self._blocks: dict[float, list[Box]] = {}
        self._block_sums: dict[float, BlockSums] = {}
        self._phase: dict[tuple[str, str, float], float] = {}
        self._fg: dict[float, tuple[np.ndarray, int]] = {}

    def prepare(self) -> "TemplateImage":
        """Build what a healthy match needs (the gray variant and content blocks at scale 1) now,
        when the bundle loads, not inside the first step that uses it; other scales and edges stay lazy."""
        if self.variant("gray", 1.0) is not None and self.blocks(1.0):
            self.block_sums(1.0)
        return self

    def size(self, scale: float) -> tuple[int, int]:
        return (max(1, round(self.width * scale)), max(1, round(self.height * scale)))

    def gray(self, scale: float) -> np.ndarray | None:
        """The gray crop resized by `scale`; None when too small to match."""
        key = ("scaled", round(scale, 4))
        if key not in self._cache:
            w, h = self.size(scale)
            if min(w, h) < MIN_TEMPLATE_SIDE:
                self._cache[key] = None
            elif (w, h) == (self.width, self.height):
                self._cache[key] = self._gray
            else:
                self._cache[key] = pixels.resize(self._gray, (w, h), "area" if scale < 1 else "linear")
        return self._cache[key]

    def variant(self, mode: Mode, scale: float) -> np.ndarray | None:
        """The feature map matched in `mode` (edges are inset by EDGE_INSET); None if unusable."""
        key = (mode, round(scale, 4))
        if key not in self._cache:
            gray = self.gray(scale)
            feat: np.ndarray | None = None
            if gray is not None and mode == "gray":
                feat = gray
            elif gray is not None and min(gray.shape) > 2 * EDGE_INSET + MIN_TEMPLATE_SIDE:
                i = EDGE_INSET
                feat = np.ascontiguousarray(edge_map(gray)[i:-i, i:-i])
            if feat is not None and float(feat.std()) < FLAT_STD:
                feat = None
            self._cache[key] = feat
        return self._cache[key]

    def blocks(self, scale: float) -> list[Box]:
        """Textured blocks of the crop, chosen once at scale 1 and carried to each scale: every scale is judged
        on the same content (re-chosen per scale, a blurred outline drops out and a look-alike of the rest passes)."""
        key = round(scale, 4)
        if key not in self._blocks:
            out: list[Box] = []
            if key == 1.0:
                h, w = self._gray.shape
                for y in range(0, max(1, h - BLOCK // 2), BLOCK):
                    for x in range(0, max(1, w - BLOCK // 2), BLOCK):
                        tile = self._gray[y : y + BLOCK, x : x + BLOCK]
                        if float(tile.std()) >= BLOCK_STD:
                            out.append((x, y, tile.shape[1], tile.shape[0]))
            elif self.gray(scale) is not None:
                sw, sh = self.size(scale)
                for x, y, bw, bh in self.blocks(1.0):
                    x0, y0 = min(sw - 1, round(x * scale)), min(sh - 1, round(y * scale))
                    x1, y1 = min(sw, round((x + bw) * scale)), min(sh, round((y + bh) * scale))
                    if min(x1 - x0, y1 - y0) >= MIN_BLOCK_SIDE:
                        out.append((x0, y0, x1 - x0, y1 - y0))
            self._blocks[key] = out
        return self._blocks[key]

    def half_phase(self, mode: Mode, scale: float) -> float:
        """How well the variant still matches itself after a 2x downsample at the worst of the four grid
        phases (a twin an odd number of pixels off the grid loses that much at half resolution): 0..1."""
        key = ("phase", mode, round(scale, 4))
        if key not in self._phase:
            t = self.variant(mode, scale)
            worst = 0.0
            if t is not None and min(t.shape) >= 4:
                small = pixels.resize(t, (t.shape[1] // 2, t.shape[0] // 2))
                worst = 1.0
                for dx, dy in ((1, 0), (0, 1), (1, 1)):
                    moved = np.pad(t, ((dy, 2), (dx, 2)), mode="edge")
                    h, w = moved.shape[0] // 2 * 2, moved.shape[1] // 2 * 2
                    half = pixels.resize(moved[:h, :w], (w // 2, h // 2))
                    score = float(ncc.match_template(half, small).max())
                    worst = min(worst, score)
            self._phase[key] = worst
        return self._phase[key]

    def background_mask(self, scale: float) -> tuple[np.ndarray, int]:
        """Pixels of the scaled gray crop that are not its background (the commonest value on its border, as far
        as it reaches from the border: an icon's white inside is foreground): True; and that background value."""
        key = round(scale, 4)
        if key not in self._fg:
            gray = self.gray(scale)
            assert gray is not None
            self._fg[key] = foreground_mask(gray)
        return self._fg[key]

    def block_sums(self, scale: float) -> "BlockSums":
        """The textured blocks ready for `detail_score`'s in-place pass (the crop must have some)."""
        key = round(scale, 4)
        if key not in self._block_sums:
            gray = self.gray(scale)
            assert gray is not None and self.blocks(scale)
            self._block_sums[key] = BlockSums.of(gray, self.blocks(scale))
        return self._block_sums[key]


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
            if "gray" in self._full:
                return self._full["gray"][y : y + h, x : x + w]
            return to_gray(self.rgb[y : y + h, x : x + w])
        # Edges of a crop read a few pixels beyond it, so cut with context and trim.
        c = EDGE_INSET
        x0, y0 = max(0, x - c), max(0, y - c)
        x1, y1 = min(self.width, x + w + c), min(self.height, y + h + c)
        edges = edge_map(self.feature("gray", (x0, y0, x1 - x0, y1 - y0)))
        return edges[y - y0 : y - y0 + h, x - x0 : x - x0 + w]

    def _whole(self, mode: Mode) -> np.ndarray:
        if mode not in self._full:
            if "gray" not in self._full:
                self._full["gray"] = to_gray(self.rgb)
            if mode == "edges":
                self._full["edges"] = edge_map(self._full["gray"])
        return self._full[mode]

    def coarse(self, mode: Mode, factor: int) -> np.ndarray:
        """Whole-frame feature map shrunk by an integer factor (area averaging)."""
        key = (mode, factor)
        if key not in self._coarse:
            size = (max(1, self.width // factor), max(1, self.height // factor))
            self._coarse[key] = pixels.resize(self._whole(mode), size)
        return self._coarse[key]


@dataclass(frozen=True)
class Candidate:
    score: float  # whole-crop normalised correlation in the search mode
    box: Box  # where the (scaled) crop sits, in frame pixels
    scale: float
    detail: float | None = None  # worst block-wise |correlation|; None when not computed

    @property
    def rank(self) -> float:
        """Shape and content together, the score look-alikes are told apart by: the whole-crop score, scaled
        down as the content falls below CONTENT_FULL. Unchecked content counts as full (an upper bound), so
        an unchecked rival is never ranked too low."""
        if self.detail is None:
            return self.score
        return self.score * min(1.0, max(0.0, self.detail) / CONTENT_FULL)

    @property
    def centre(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return (x + w / 2, y + h / 2)

    def overlaps(self, other: "Candidate") -> bool:
        """True when one centre lies within half the other's footprint: the same peak."""
        (cx, cy), (ox, oy) = self.centre, other.centre
        half_w = max(self.box[2], other.box[2]) / 2
        half_h = max(self.box[3], other.box[3]) / 2
        return abs(cx - ox) < half_w and abs(cy - oy) < half_h


@dataclass(frozen=True)
class MatchResult:
    best: Candidate | None  # the best-ranked candidate (shape and content together)
    runner_up: Candidate | None  # the best-ranked other peak outside best's footprint, whatever it is
    search: Box
    mode: Mode
    detail_min: float

    def plausible(self, c: Candidate | None) -> bool:
        """The candidate's content matches, not only its shape."""
        return c is not None and c.detail is not None and c.detail >= self.detail_min

    @property
    def score(self) -> float:
        return self.best.score if self.best else 0.0

    @property
    def runner_up_score(self) -> float:
        return self.runner_up.score if self.runner_up else 0.0

    @property
    def runner_up_rank(self) -> float:
        return self.runner_up.rank if self.runner_up else 0.0


@dataclass(frozen=True)
class Thresholds:
    """When a match counts: a peak whose rank reaches `confident` (and whose content holds: detail at least
    `detail_min`) ends the search at the first scale; peaks scoring at least `consider` (default: confident - 0.1)
    get a detail score."""

    confident: float = 0.85
    detail_min: float = 0.6
    consider: float | None = None

    @property
    def floor(self) -> float:
        return self.confident - 0.1 if self.consider is None else self.consider


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class _Query:
    """One template sought in one frame, with the thresholds it is judged by."""

    feats: FrameFeatures
    tmpl: TemplateImage
    mode: Mode
    at: Thresholds

    def scored(self, found: list[Candidate]) -> list[Candidate]:
        return _with_detail(self.feats, self.tmpl, found, self.at.floor, self.at.detail_min, self.mode)

    def holds(self, c: Candidate | None) -> bool:
        """A confident peak whose content holds."""
        return c is not None and c.rank >= self.at.confident and (c.detail or 0) >= self.at.detail_min


def find_template(
    frame: FrameFeatures | np.ndarray,
    template: TemplateImage | np.ndarray,
    *,
    mode: Mode = "gray",
    box: Box | None = None,
    scales: tuple[float, ...] = DEFAULT_SCALES,
    near: Box | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> MatchResult:
    """Best placement of `template` inside `box` and the runner-up peak outside its footprint.

    The first scale is tried alone; the others only if it gives no peak that `thresholds` call confident. `near`
    (where the template was recorded, in live pixels) is searched first: see `_near_first`.
    """
    feats = frame if isinstance(frame, FrameFeatures) else FrameFeatures(frame)
    q = _Query(feats, template if isinstance(template, TemplateImage) else TemplateImage(template), mode, thresholds)
    detail_min = thresholds.detail_min
    search = clip_box(box, feats.width, feats.height) if box else feats.frame_box
    if search is None:
        return MatchResult(None, None, box or feats.frame_box, mode, detail_min)
    if near is not None and search[2] * search[3] <= COARSE_ABOVE_PX:  # a window; a whole frame goes coarse anyway
        quick = _near_first(q, search, near, scales[0])
        if quick is not None:
            return quick
    found: list[Candidate] = []
    for i, scale in enumerate(scales):
        found = _merge(found, q.scored(_search_scale(feats, q.tmpl, mode, search, scale, thresholds.floor)))
        if i == 0 and any(q.holds(c) for c in found):
            break
    if not found:
        return MatchResult(None, None, search, mode, detail_min)
    best, runner = ranked(found)
    return MatchResult(best, runner, search, mode, detail_min)


def ranked(found: list[Candidate]) -> tuple[Candidate, Candidate | None]:
    """The best-ranked candidate and the best-ranked one outside its footprint (strongest shape first on ties)."""
    best = max(found, key=lambda c: (c.rank, c.score))
    others = [c for c in found if not c.overlaps(best)]
    return best, max(others, key=lambda c: (c.rank, c.score), default=None)


def _near_first(q: _Query, search: Box, near: Box, scale: float) -> MatchResult | None:
    """The healthy case, cheaply: the template where it was recorded (± NEAR_PAD px, full resolution), and its
    rivals anywhere in `search` from a half-resolution pass; None when it is not confidently there (the caller
    then searches `search` at full resolution, as before).

    Every candidate that could decide anything is scored at full resolution: the best, and each coarse peak
    outside the best's footprint that could reach the floor at full resolution (allowing for what the
    template itself loses at half resolution off the 2x grid, `half_phase`). Only a runner-up far below
    keeps its half-resolution score, as evidence that nothing else came close.
    """
    feats, tmpl, mode, floor = q.feats, q.tmpl, q.mode, q.at.floor
    area = intersect(pad_box(near, NEAR_PAD, feats.width, feats.height) or near, search)
    t = tmpl.variant(mode, scale)
    if area is None or t is None or min(t.shape) < 2 * COARSE_MIN_SIDE:
        return None
    here = q.scored(_search_scale(feats, tmpl, mode, area, scale, floor))
    best = ranked(here)[0] if here else None
    if best is None or not q.holds(best):
        return None
    # A twin off the 2x grid scores lower at half resolution by up to (1 - phase): every peak that could be
    # one is re-scored at full resolution.
    phase = tmpl.half_phase(mode, scale)
    if phase < NEAR_MIN_PHASE:
        return None  # fine detail that half resolution loses: only the full search can see its twins
    found = _rivals(feats, t, mode, search, scale, floor - (1 - phase) - PHASE_SLACK, best)
    if found is None:
        return None  # the half-resolution pass cannot judge this template: the full search decides
    others = q.scored(sorted((c for c in found if not c.overlaps(best)), key=lambda c: -c.score))
    runner = max(others, key=lambda c: (c.rank, c.score), default=None)
    if runner is not None and runner.rank > best.rank:
        return None  # something in the window matches better than the recorded place: the full search decides
    return MatchResult(best, runner, search, mode, q.at.detail_min)


def _rivals(
    feats: FrameFeatures, t: np.ndarray, mode: Mode, search: Box, scale: float, rescore: float, best: Candidate
) -> list[Candidate] | None:
    """Peaks of a half-resolution search of `search` away from `best`: those scoring `rescore` or more there
    re-scored at full resolution, and the strongest of the rest with its coarse score; None when the
    half-resolution template is too flat to judge anything."""
    th, tw = t.shape
    inset = EDGE_INSET if mode == "edges" else 0
    sx, sy, sw, sh = search
    inner = (sx + inset, sy + inset, sw - 2 * inset, sh - 2 * inset)
    small_t = pixels.resize(t, (tw // 2, th // 2))
    region = pixels.resize(feats.feature(mode, inner), (inner[2] // 2, inner[3] // 2))
    if float(small_t.std()) < FLAT_STD:
        return None
    if region.shape[0] < small_t.shape[0] or region.shape[1] < small_t.shape[1]:
        return []  # no room for another placement: nothing to rival
    res = ncc.match_template(region, small_t)
    out: list[Candidate] = []
    for cs, px, py in _peaks(res, small_t.shape[1], small_t.shape[0], COARSE_PEAKS):
        fx, fy = inner[0] + px * 2, inner[1] + py * 2
        if best.overlaps(Candidate(cs, (fx - inset, fy - inset, tw + 2 * inset, th + 2 * inset), scale)):
            continue  # the best itself, already scored at full resolution
        if cs < rescore:
            if not any(
                c.overlaps(Candidate(cs, (fx - inset, fy - inset, tw + 2 * inset, th + 2 * inset), scale)) for c in out
            ):
                out.append(Candidate(float(cs), (fx - inset, fy - inset, tw + 2 * inset, th + 2 * inset), scale))
            if len(out) >= RUNNERS_UP:
                break
            continue
        fine = intersect((fx - 4, fy - 4, tw + 8, th + 8), inner)
        if fine is None or fine[2] < tw or fine[3] < th:
            continue
        s, (bx, by) = ncc.best(ncc.match_template(feats.feature(mode, fine), t))
        cand = Candidate(float(s), (fine[0] + bx - inset, fine[1] + by - inset, tw + 2 * inset, th + 2 * inset), scale)
        if not any(c.overlaps(cand) for c in out):
            out.append(cand)
    return out


def detail_score(
    feats: FrameFeatures,
    tmpl: TemplateImage,
    box: Box,
    scale: float,
    shift: int = 1,
    need: float | None = None,
    mode: Mode = "gray",
) -> float:
    """Worst |correlation| of the crop's textured blocks against the frame at `box`, each free to move `shift` px.
    In a session drawn bigger, a few blocks that fall short at full detail are judged at the crop's recorded
    resolution (`content.rescuable`, `content.as_recorded`).

    With `need`, only as exact as deciding `score >= need` and ranking the
    candidate (`Candidate.rank`) require: if every block already clears both
    `need` and CONTENT_FULL in place (one vectorised pass over integral
    images), that in-place worst, a lower bound, is the answer (the rank is
    then exact: full content); otherwise the blocks are searched one by one,
    and once the answer cannot clear `need` it is returned, an upper bound
    (never a hit; as a rival, ranked no lower than it is); else the exact worst.
    """
    gray = tmpl.gray(scale)
    blocks = tmpl.blocks(scale)
    if gray is None:
        return 0.0
    if not blocks:
        return 1.0  # nothing textured to compare: the whole-crop score must decide
    shift = max(1, round(shift * scale))
    x, y, w, h = box
    area = clip_box((x - shift, y - shift, w + 2 * shift, h + 2 * shift), feats.width, feats.height)
    if area is None:
        return 0.0
    patch = feats.feature("gray", area)
    ox, oy = x - area[0], y - area[1]  # crop origin inside the patch
    if need is not None:
        window = patch[oy : oy + gray.shape[0], ox : ox + gray.shape[1]]
        if window.shape == gray.shape:
            in_place = tmpl.block_sums(scale).correlation(window)
            if in_place >= max(need, CONTENT_FULL):
                return in_place
    allowed = rescuable(len(blocks), scale)
    got: list[float] = []
    for bx, by, bw, bh in blocks:
        one = _block_correlation(patch, gray, (bx, by, bw, bh), (ox, oy), shift)
        if mode == "edges" and one < CONTENT_FULL:
            tile = patch[max(0, oy + by - shift) : oy + by + bh + shift, max(0, ox + bx - shift) : ox + bx + bw + shift]
            one = max(one, foreground_correlation(tile, gray, tmpl.background_mask(scale), (bx, by, bw, bh)))
        got.append(one)
        if need is not None and min(got) < need and sum(g < CONTENT_FULL for g in got) > allowed:
            return min(got)  # past rescue: an upper bound that cannot clear `need`
    short = [i for i, g in enumerate(got) if g < CONTENT_FULL]
    if short and len(short) <= allowed:
        seen = as_recorded(patch, scale)
        for i in short:
            got[i] = max(got[i], _block_correlation(seen, gray, blocks[i], (ox, oy), shift))
    return min(got)


def _block_correlation(patch: np.ndarray, gray: np.ndarray, block: Box, origin: tuple[int, int], shift: int) -> float:
    """|correlation| of one block of the crop against `patch` around its place, free to move `shift` px."""
    (bx, by, bw, bh), (ox, oy) = block, origin
    tile = patch[max(0, oy + by - shift) : oy + by + bh + shift, max(0, ox + bx - shift) : ox + bx + bw + shift]
    if tile.shape[0] < bh or tile.shape[1] < bw:
        return 0.0
    res = ncc.match_template(tile, gray[by : by + bh, bx : bx + bw])
    lo, hi = float(res.min()), float(res.max())
    return max(-lo, hi) if math.isfinite(lo) and math.isfinite(hi) else 0.0


def _with_detail(
    feats: FrameFeatures,
    tmpl: TemplateImage,
    found: list[Candidate],
    floor: float,
    need: float,
    mode: Mode = "gray",
) -> list[Candidate]:
    out = []
    for i, c in enumerate(found):
        if c.detail is None and c.score >= floor and i < DETAIL_MAX_CANDIDATES:
            c = replace(c, detail=detail_score(feats, tmpl, c.box, c.scale, need=need, mode=mode))
        out.append(c)
    return out


def _merge(found: list[Candidate], new: list[Candidate]) -> list[Candidate]:
    """Candidates from all scales, one per location, strongest first: the best-scoring, or of two whose content
    was checked, the best-ranked. By shape alone, a key whose frame grew less than its label (a session drawn
    25 % bigger: the label at 1.25, the key's padding at 1.1) kept the scale that fits its frame and lost the
    one at which its label matches."""
    out: list[Candidate] = []
    for c in sorted(found + new, key=lambda c: -c.score):
        i = next((i for i, o in enumerate(out) if o.overlaps(c)), None)
        if i is None:
            out.append(c)
        elif c.detail is not None and out[i].detail is not None and c.rank > out[i].rank:
            out[i] = c
    return sorted(out, key=lambda c: -c.score)


def _search_scale(
    feats: FrameFeatures, tmpl: TemplateImage, mode: Mode, search: Box, scale: float, floor: float
) -> list[Candidate]:
    """Up to a few separated peaks of one scale inside `search`, strongest first."""
    t = tmpl.variant(mode, scale)
    if t is None:
        return []
    th, tw = t.shape
    inset = EDGE_INSET if mode == "edges" else 0
    w, h = tw + 2 * inset, th + 2 * inset
    sx, sy, sw, sh = search
    if sw < w or sh < h:
        return []
    if sw * sh > COARSE_ABOVE_PX and min(tw, th) >= 2 * COARSE_MIN_SIDE:
        factor = COARSE_FACTOR if min(tw, th) >= COARSE_FACTOR * COARSE_MIN_SIDE else 2
        return _coarse_to_fine(feats, t, mode, search, scale, inset, factor, floor - 0.15)
    inner = (sx + inset, sy + inset, sw - 2 * inset, sh - 2 * inset)
    res = ncc.match_template(feats.feature(mode, inner), t)
    found = [Candidate(s, (sx + px, sy + py, w, h), scale) for s, px, py in _peaks(res, tw, th, 3)]
    if mode == "edges" and sw * sh <= COARSE_ABOVE_PX:  # a window: a restyle is looked past near the recorded place
        found = sorted(found + _restyled_peaks(feats, tmpl, search, scale), key=lambda c: -c.score)
    return found


def _restyled_peaks(feats: FrameFeatures, tmpl: TemplateImage, search: Box, scale: float) -> list[Candidate]:
    """Peaks of the crop's foreground alone (its background left out) in gray, kept only where the frame
    around them is one flat colour far from the recorded background: an icon kept as it was while a theme
    restyled the toolbar (light to dark), whose outline edges change with the contrast but whose pixels don't."""
    gray = tmpl.gray(scale)
    if gray is None:
        return []
    fg, bg = tmpl.background_mask(scale)
    if not RESTYLE_FOREGROUND[0] <= float(fg.mean()) <= RESTYLE_FOREGROUND[1]:
        return []
    th, tw = gray.shape
    area = feats.feature("gray", search)
    if float(np.mean(np.abs(area.astype(np.int16) - bg) <= BACKGROUND_TOLERANCE)) > RESTYLE_MAX_OLD_GROUND:
        return []  # the recorded background colour is still common here: no restyle to see past
    res = ncc.match_template(area, gray, mask=fg)
    out = []
    for score, px, py in _peaks(res, tw, th, 3):
        window = feats.feature("gray", (search[0] + px, search[1] + py, tw, th))
        if restyled_ground(window[~fg], bg):
            out.append(Candidate(score, (search[0] + px, search[1] + py, tw, th), scale))
    return out


def _coarse_to_fine(
    feats: FrameFeatures, t: np.ndarray, mode: Mode, search: Box, scale: float, inset: int, factor: int, floor: float
) -> list[Candidate]:
    # Peaks found at reduced resolution are re-scored at full resolution in a
    # small neighbourhood, so every reported score is a full-resolution one.
    th, tw = t.shape
    small_t = pixels.resize(t, (tw // factor, th // factor))
    if float(small_t.std()) < FLAT_STD:
        return []
    sx, sy, sw, sh = search
    inner = (sx + inset, sy + inset, sw - 2 * inset, sh - 2 * inset)
    cx0, cy0 = -(-inner[0] // factor), -(-inner[1] // factor)
    cx1, cy1 = (inner[0] + inner[2]) // factor, (inner[1] + inner[3]) // factor
    region = feats.coarse(mode, factor)[cy0:cy1, cx0:cx1]
    if region.shape[0] < small_t.shape[0] or region.shape[1] < small_t.shape[1]:
        return []
    res = ncc.match_template(region, small_t)
    out: list[Candidate] = []
    slack = 2 * factor
    for cs, px, py in _peaks(res, small_t.shape[1], small_t.shape[0], COARSE_PEAKS):
        if out and cs < floor:
            break
        fx, fy = (cx0 + px) * factor, (cy0 + py) * factor
        area = intersect((fx - slack, fy - slack, tw + 2 * slack, th + 2 * slack), inner)
        if area is None or area[2] < tw or area[3] < th:
            continue
        s, (bx, by) = ncc.best(ncc.match_template(feats.feature(mode, area), t))
        box = (area[0] + bx - inset, area[1] + by - inset, tw + 2 * inset, th + 2 * inset)
        cand = Candidate(float(s), box, scale)
        if not any(c.overlaps(cand) for c in out):
            out.append(cand)
    out.sort(key=lambda c: -c.score)
    return out


def _peaks(res: np.ndarray, tw: int, th: int, k: int) -> Iterator[tuple[float, int, int]]:
    """Up to k strongest peaks of a correlation map, strongest first, each suppressing half a template
    around it; lazily, so a caller that has seen enough stops the search."""
    res = np.nan_to_num(res, nan=-1.0, posinf=-1.0, neginf=-1.0)
    rw, rh = max(1, tw // 2), max(1, th // 2)
    for _ in range(k):
        score, (px, py) = ncc.best(res)
        if score <= -1.0:
            return
        yield float(score), int(px), int(py)
        res[max(0, py - rh) : py + rh + 1, max(0, px - rw) : px + rw + 1] = -1.0
