"""How a candidate's content is compared with a template's: its textured blocks, each at full detail, and in a
session drawn bigger a few of them at the template's recorded resolution.

A template enlarged to 1.25 (a session whose fonts and icons are drawn 25 % bigger) holds no more detail than it
was recorded with: interpolation smears its strokes, while the app draws the label or icon anew, crisp, often
from another source picture (Qt takes a bigger icon and shrinks it). Compared pixel for pixel, the right icon's
top border scored 0.65, as low as a look-alike's (sqlitebrowser's New Record vs Delete Record, which differ in
their badge). `as_recorded` brings live pixels to the template's resolution the same way (down by the scale,
back up by interpolation), so both sides carry the same detail.

Seen that coarsely, a small glyph is a blob like any other (galculator's "*" against the "9" key: 0.63 at full
detail, 0.79 coarse). So the coarse look is never the whole verdict: it may only rescue a few blocks of a crop
whose other blocks match at full detail (`rescuable`): the crop is the same picture, a part of it drawn anew. A
one- or two-block label is judged at full detail only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from openadapt_flow.imaging import pixels

Box = tuple[int, int, int, int]  # x, y, w, h

SMEARED_FROM = 1.2  # enlargements from this on smear a recorded stroke over more than the block search's one-pixel
# shift absorbs; below it (1.1) a coarse look only blurs away the difference between a label and its look-alike
# (measured: galculator at 1.25 with its "3" erased, the "9" key compared at 1.1 rose from content 0.68 to 0.75)
RESCUE_SHARE = 4  # at most one block in this many may be judged coarsely; the rest must hold at full detail
CONTENT_FULL = 0.8  # content this close counts in full towards a candidate's rank (a twin with one block spoilt
# by a neighbour's edge still ties); below it the rank falls in proportion


def rescuable(blocks: int, scale: float) -> int:
    """How many of a crop's `blocks` that fall short of CONTENT_FULL at full detail may be judged again at the
    recorded resolution: none below SMEARED_FROM, else one in RESCUE_SHARE (none for a crop of fewer blocks)."""
    return blocks // RESCUE_SHARE if scale >= SMEARED_FROM else 0


def as_recorded(patch: np.ndarray, scale: float) -> np.ndarray:
    """`patch` seen at the resolution of a template recorded 1/`scale` its size and enlarged to it: shrunk by
    `scale` (area averaging) and enlarged back (linear, as the template was); at a scale of 1 or below, as it is."""
    if scale <= 1.0:
        return patch
    h, w = patch.shape[:2]
    small = pixels.resize(patch, (max(1, round(w / scale)), max(1, round(h / scale))), "area")
    return pixels.resize(small, (w, h), "linear")


@dataclass(frozen=True)
class BlockSums:
    """A template's textured blocks as integral-image corners, with the template's own sums per block."""

    t: np.ndarray  # the scaled gray template, float64
    y0: np.ndarray
    y1: np.ndarray
    x0: np.ndarray
    x1: np.ndarray
    n: np.ndarray  # pixels per block
    st: np.ndarray  # the template's sum per block
    var_t: np.ndarray  # n times the template's variance per block

    @classmethod
    def of(cls, gray: np.ndarray, blocks: list[Box]) -> "BlockSums":
        b = np.array(blocks, dtype=np.int64)
        g64 = gray.astype(np.float64)
        it, it2 = pixels.integral(g64), pixels.integral(g64 * g64)
        sums = cls(
            gray.astype(np.float64),
            b[:, 1],
            b[:, 1] + b[:, 3],
            b[:, 0],
            b[:, 0] + b[:, 2],
            (b[:, 2] * b[:, 3]).astype(np.float64),
            np.zeros(0),
            np.zeros(0),
        )
        st = sums.at(it)
        return replace(sums, st=st, var_t=sums.at(it2) - st * st / sums.n)

    def at(self, integral: np.ndarray) -> np.ndarray:
        """Per-block sums out of an integral image of something the template's size."""
        sums: np.ndarray = (
            integral[self.y1, self.x1]
            - integral[self.y0, self.x1]
            - integral[self.y1, self.x0]
            + integral[self.y0, self.x0]
        )
        return sums

    def correlation(self, window: np.ndarray) -> float:
        """Worst block-wise |TM_CCOEFF_NORMED| of the template against a same-size gray window, in place."""
        w64 = window.astype(np.float64)
        sw, sww = self.at(pixels.integral(w64)), self.at(pixels.integral(w64 * w64))
        stw = self.at(pixels.integral(w64 * self.t))
        var_w = sww - sw * sw / self.n
        cov = stw - self.st * sw / self.n
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = np.where(var_w > 1e-6 * self.n, np.abs(cov) / np.sqrt(self.var_t * var_w), 0.0)
        return float(corr.min())
