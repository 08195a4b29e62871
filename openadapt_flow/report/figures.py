"""The report's pictures: frame thumbnails with what the engine saw drawn over them (inline SVG on a thumbnail copy
of a saved, already masked frame; the saved frames are never changed), and the time-per-step chart.

Everything is inline SVG and data URIs: the page opens offline, from a file:// URL, with no script.
"""

from __future__ import annotations

import base64
import html
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from openadapt_flow.imaging.pixels import box_not_of, resize
from openadapt_flow.imaging.png import decode_rgb, encode_png, known_pixels, when_remembered

THUMB_W = 240  # px: the embedded copy of a step's frame (shown smaller; the link opens the saved frame at full size)
STEP_W = 128  # px: a step's frame as shown
HALT_W = 640  # px: the halt frame as shown, and its embedded copy
BOX = "#0a7cff"
CLICK = "#e0007a"
SEARCH = "#d9a400"
CANDIDATE = "#ff7a00"
STATUS_COLOURS = {"verified": "#2e9d4a", "weak": "#d9a400", "halted": "#d22", "skipped": "#888", "started": "#888"}


def png_size(png: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG's header (no decoding)."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        return None
    w, h = struct.unpack(">II", png[16:24])
    return (int(w), int(h)) if w and h else None


Box = tuple[int, int, int, int]  # x, y, w, h in frame pixels

APP_PAD = 8  # px of the desktop kept around the app's region
APP_MAX_SHARE = 0.85  # a region covering more of the frame than this is the frame: nothing is cut
EDGE_SHARE = 0.5  # the flat colour cut away holds at least this much of the frame's edge


@lru_cache(maxsize=8)
def _decoded(png: bytes) -> np.ndarray | None:
    """The frame's pixels (RGB), decoded once for its region and its thumbnail (not at all when this process saved the
    frame lately: its pixels are still known); None if it cannot be decoded."""
    known = known_pixels(png)
    return known if known is not None else decode_rgb(png)


@lru_cache(maxsize=32)
def app_region(png: bytes) -> Box | None:
    """The part of a frame that holds anything: the box of every pixel that differs from the colour most of the
    frame's edge shows, padded, where that colour holds at least EDGE_SHARE of the edge (the bare desktop of an X or
    VNC session around the app — also around an app placed at the screen's corner, whose own pixels are then part of
    the edge — or an app's own empty margin). Everything outside the box is that one colour, so the cut hides nothing
    that was drawn. None where no colour holds the edge (a wallpaper, a taskbar, an app's frame all around) or the box
    covers nearly all of the frame: it is shown whole. RFB and RDP carry pixels, never windows: the frame is the one
    source of the app's place that every backend has."""
    img = _decoded(png)
    if img is None or min(img.shape[:2]) < 4 * APP_PAD:
        return None
    edge = np.concatenate([img[0], img[-1], img[:, 0], img[:, -1]]).astype(np.uint32)
    packed = (edge[:, 0] << 16) | (edge[:, 1] << 8) | edge[:, 2]  # one number per colour: a fast unique
    colours, counts = np.unique(packed, return_counts=True)
    if counts.max() < EDGE_SHARE * len(edge):
        return None
    c = int(colours[counts.argmax()])
    drawn = box_not_of(img, (c >> 16, (c >> 8) & 255, c & 255))
    if drawn is None:
        return None
    bx, by, bw, bh = drawn
    h, w = img.shape[:2]
    x0, y0 = max(0, bx - APP_PAD), max(0, by - APP_PAD)
    x1, y1 = min(w, bx + bw + APP_PAD), min(h, by + bh + APP_PAD)
    if (x1 - x0) * (y1 - y0) > APP_MAX_SHARE * w * h:
        return None
    return x0, y0, x1 - x0, y1 - y0


def shown_region(png: bytes, size: tuple[int, int], marks: Marks) -> Box:
    """The part of a frame a figure shows: the app's region (`app_region`) grown to hold every mark, so a candidate
    the ladder weighed outside the app is never cut away; the whole frame where the app's region is not known."""
    w, h = size
    app = app_region(png)
    if app is None:
        return 0, 0, w, h
    x0, y0, x1, y1 = app[0], app[1], app[0] + app[2], app[1] + app[3]
    for box in (
        [b for b, _ in marks.boxes + marks.dashed]
        + [b for b, _, _ in marks.labels]
        + [[*p, 0, 0] for p in marks.points]
    ):
        bx, by, bw, bh = (int(v) for v in box[:4])
        x0, y0 = min(x0, bx - APP_PAD), min(y0, by - APP_PAD)
        x1, y1 = max(x1, bx + bw + APP_PAD), max(y1, by + bh + APP_PAD)
    x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w, x1), min(h, y1)
    return x0, y0, x1 - x0, y1 - y0


@lru_cache(maxsize=32)  # a step's after-frame is often the next one's before-frame, byte for byte
def thumbnail(png: bytes, width: int, region: Box | None = None) -> bytes | None:
    """A smaller PNG copy of `png`, or of its `region` (the same bytes when that is the whole frame and already that
    small); None if it cannot be decoded."""
    size = png_size(png)
    if size is None:
        return None
    whole = region is None or region == (0, 0, *size)
    if whole and size[0] <= width:
        return png
    img = _decoded(png)
    if img is None:
        return None
    if not whole and region is not None:
        x, y, rw, rh = region
        img = img[y : y + rh, x : x + rw]
    ih, iw = img.shape[:2]
    if iw > width:
        img = resize(img, (width, max(1, round(ih * width / iw))), "area")
    return encode_png(img)


def _prepare(png: bytes) -> None:
    """A saved frame's region and embedded copy as a figure with no marks outside the app shows it, computed as the
    frame is saved (on the frame writer's thread, while the run waits on the app), not at the run's stop."""
    size = png_size(png)
    if size is not None:
        thumbnail(png, THUMB_W, shown_region(png, size, Marks()))


when_remembered(_prepare)


@dataclass
class Marks:
    """What to draw on a frame, in the frame's own pixels."""

    boxes: list[tuple[list[int], str]] = field(default_factory=list)  # box, colour
    points: list[list[int]] = field(default_factory=list)
    labels: list[tuple[list[int], str, str]] = field(default_factory=list)  # box, text, colour
    dashed: list[tuple[list[int], str]] = field(default_factory=list)


def _n(v: float) -> str:
    return f"{v:.0f}" if abs(v - round(v)) < 0.05 else f"{v:.1f}"


def _rect(box: list[int], colour: str, width: float, extra: str = "") -> str:
    x, y, w, h = box
    return (
        f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" fill="none" stroke="{colour}" '
        f'stroke-width="{_n(width)}"{extra}/>'
    )


def overlay(marks: Marks, px: float, cls: str) -> str:
    """SVG elements drawing `marks` in frame pixels; `px` is how many frame pixels one screen pixel covers, so the
    marks keep their on-screen size however small the thumbnail."""
    out = [
        f'<g class="{cls}-dashed">'
        + _rect(box, colour, 2 * px, f' stroke-dasharray="{_n(6 * px)} {_n(4 * px)}"')
        + "</g>"
        for box, colour in marks.dashed
    ]
    out += [f'<g class="{cls}-box">' + _rect(box, colour, 2 * px) + "</g>" for box, colour in marks.boxes]
    r = 3.5 * px
    for x, y in marks.points:
        out.append(
            f'<g class="{cls}-click" stroke="{CLICK}" stroke-width="{_n(1.5 * px)}" fill="none">'
            f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}"/>'
            f'<path d="M{_n(x)} {_n(y - 1.8 * r)}V{_n(y + 1.8 * r)}M{_n(x - 1.8 * r)} {_n(y)}H{_n(x + 1.8 * r)}"/></g>'
        )
    font = 12 * px
    taken = [tuple(float(v) for v in box) for box, _ in marks.dashed + marks.boxes]
    for box, text, colour in marks.labels:
        tw, th = font * 0.6 * len(text) + font * 0.6, font * 1.35
        lx, ly = _place(box, tw, th, 4 * px, taken)
        taken.append((lx, ly, tw, th))
        out.append(
            f'<g class="{cls}-label"><rect x="{_n(lx)}" y="{_n(ly)}" width="{_n(tw)}" height="{_n(th)}" '
            f'fill="{colour}"/><text x="{_n(lx + font * 0.3)}" y="{_n(ly + font * 1.05)}" font-size="{_n(font)}" '
            f'font-family="monospace" font-weight="bold" fill="#fff">{html.escape(text)}</text></g>'
        )
    return "".join(out)


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _place(box: list[int], w: float, h: float, gap: float, taken: list[tuple[float, ...]]) -> tuple[float, float]:
    """A label's corner beside `box`: to its right, else above, else below, else inside — the first spot that covers
    no other mark (look-alikes often sit in a row or a column, a label must not hide a neighbour)."""
    x, y, bw, bh = (float(v) for v in box)
    spots = [(x + bw + gap, y + (bh - h) / 2), (x, y - h - gap), (x, y + bh + gap), (x + gap, y + gap)]
    own = (x, y, bw, bh)
    for sx, sy in spots:
        if not any(_overlaps((sx, sy, w, h), t) for t in taken if t != own):
            return sx, sy
    return spots[0]


def framed(png: bytes | None, rel: str, marks: Marks, *, width: int, cls: str, alt: str, embed: int = THUMB_W) -> str:
    """The frame at `rel` shown `width` px wide (an embedded copy at most `embed` px wide) with `marks` drawn over it,
    linking to the saved frame at full size. Where the app's region is known (`shown_region`) the figure shows that
    region, cut from the frame; the marks stay in the frame's own pixels (the SVG's viewBox is the region)."""
    if png is None:
        return ""
    size = png_size(png)
    if size is None:
        return ""
    x, y, w, h = shown_region(png, size, marks)
    small = thumbnail(png, max(width, embed), (x, y, w, h))
    if small is None:
        return ""
    shown = min(width, w)
    data = base64.b64encode(small).decode()
    return (
        f'<a class="frame {cls}" href="{html.escape(rel)}" title="open {html.escape(rel)} full size">'
        f'<svg role="img" aria-label="{html.escape(alt)}" viewBox="{x} {y} {w} {h}" width="{shown}" '
        f'height="{round(h * shown / w)}"><image x="{x}" y="{y}" width="{w}" height="{h}" '
        f'href="data:image/png;base64,{data}"/>{overlay(marks, w / shown, cls)}</svg></a>'
    )


def step_chart(steps: list[dict[str, Any]], width: int = 720, height: int = 120) -> str:
    """Time per step as an inline SVG bar chart, coloured by outcome; each bar's title names its step and time."""
    timed = [s for s in steps if s.get("ms") is not None]
    if not timed:
        return '<p class="muted">no step timings recorded</p>'
    top = max(float(s["ms"]) for s in timed) or 1.0
    n = len(steps)
    gap = 2 if n < 60 else 0
    bar_w = min(40.0, max(1.0, (width - 40) / n - gap))
    bars = []
    for i, s in enumerate(steps):
        ms = s.get("ms")
        colour = (
            STATUS_COLOURS["weak" if s.get("weak") else str(s.get("status"))]
            if s.get("status") in STATUS_COLOURS
            else "#888"
        )
        bh = 0.0 if ms is None else max(1.0, (height - 24) * float(ms) / top)
        x = 36 + i * (bar_w + gap)
        label = f"{i + 1}. {s['id']}: {'—' if ms is None else f'{ms:.0f} ms'} ({s.get('status')})"
        bars.append(
            f'<rect class="bar" x="{x:.1f}" y="{height - 14 - bh:.1f}" width="{bar_w:.1f}" height="{bh:.1f}" '
            f'fill="{colour}"><title>{html.escape(label)}</title></rect>'
        )
    axis = (
        f'<text x="0" y="12" font-size="11">{top:.0f} ms</text><text x="0" y="{height - 16}" font-size="11">0</text>'
        f'<line x1="34" y1="{height - 14}" x2="{width}" y2="{height - 14}" stroke="#999"/>'
        f'<text x="36" y="{height - 2}" font-size="11">step 1</text>'
        f'<text x="{width}" y="{height - 2}" font-size="11" text-anchor="end">step {n}</text>'
    )
    return (
        f'<svg class="chart" role="img" aria-label="time per step" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}">{axis}{"".join(bars)}</svg>'
    )
