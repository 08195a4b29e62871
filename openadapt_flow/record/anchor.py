"""A click on a featureless area (the blank page below a document's text): where its target is cut, and whether
typing after it went into a multi-line text area.

A crop around such a click is flat, and no rung can search for a flat crop (the template matcher judges content
by textured blocks, OCR needs words). So the crop grows toward the nearest detail instead: the frame's textured
blocks, by the matcher's own measure, within a ring around the click that widens until the crop is unique on its
screen. The click keeps its offset inside the crop, so the replay clicks the same place relative to that detail:
below a document's text the caret lands on the last line, as it did in the demonstration. A growth that would
take in a typed value is not made (a template holding the recorded value halts every other value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.widget import widget_box
from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.record.facts import is_unique, repeats, unique_crop
from openadapt_flow.vision.template import BLOCK, BLOCK_STD, Box, TemplateImage, intersect

RING = 24  # px the ring around the click widens per try
RING_TRIES = 12
MAX_SHARE = 0.6  # a crop wider or taller than this share of the screen anchors nothing: it is the screen
AREA_INSET = 3  # px: the area's own border is left out
PAD = BLOCK // 2  # px kept around the detail (a grid block cuts glyphs)
MULTILINE_MIN_H = 60  # px: a uniform area this tall is a text area (entries, table cells, spin boxes are 20-40 px)

FACE_MIN = 12  # px: a smaller "face" is a glyph's ink (a bold "4"), and a template of it matches any other "4"
GRADIENT_STEP = 6  # levels per channel a gradient face changes by from one pixel to the next (a border changes by more)
FACE_PROBES = [(0, 0)] + [(dx, dy) for r in (6, 12) for dx, dy in ((0, -r), (0, r), (-r, 0), (r, 0))]


def featureless(frame: np.ndarray, box: Box) -> bool:
    """Does the crop hold nothing the template matcher can judge content by (no textured block)?"""
    x, y, w, h = box
    tmpl = TemplateImage(np.ascontiguousarray(frame[y : y + h, x : x + w]))
    return tmpl.variant("gray", 1.0) is None or not tmpl.blocks(1.0)


def cut_target(
    frame: np.ndarray,
    click: tuple[int, int],
    base: Box,
    fits: Callable[[Box], bool],
    blank: bool,
    crop_of: Callable[[Box], np.ndarray] | None = None,
    within: Box | None = None,
) -> tuple[Box, bool, str | None]:
    """The crop a target is cut to, whether it is unique on its screen, and a note for the compiler's warnings:
    `base` grown until unique, a featureless (`blank`) one toward the nearest detail (`anchored_crop`). Uniqueness
    is judged on the template as `crop_of` cuts it (at rest: `transient.RestLook`). Every crop stays inside
    `within` (the app's region, `record.region`): the desktop around a window is no part of its target."""
    if not blank:
        return (*unique_crop(frame, base, fits, crop_of, within), None)
    anchored = anchored_crop(frame, click, base, fits, lambda box: is_unique(frame, box, crop_of), within)
    if anchored is None:
        return (
            *unique_crop(frame, base, fits, crop_of, within),
            "a click on a featureless area with no detail near enough to anchor "
            "it; no rung can search for its target: give it landmarks by hand",
        )
    return (
        anchored,
        True,
        "a click on a featureless area; its target takes in the nearest detail, the click kept at "
        "its recorded offset from it",
    )


def anchored_crop(
    frame: np.ndarray,
    click: tuple[int, int],
    base: Box,
    fits: Callable[[Box], bool],
    unique: Callable[[Box], bool],
    within: Box | None = None,
) -> Box | None:
    """`base` (around the click) joined with the textured blocks nearest the click, the ring widening until the
    crop is `unique`; None when a growth does not `fits` (it would hold a typed value) or the crop grows past
    MAX_SHARE of the screen first.

    The detail inside the uniform area clicked in (a page's text) comes first, the crop kept inside that area:
    the area's border against its surroundings changes look with a theme (a white page's edge against a dark
    desktop is white-grey-black, a dark page's dark-grey-black), and the matcher judges content by its worst
    block. Only an area with nothing in it is anchored to its surroundings."""
    blocks = _textured_blocks(frame)
    if within is not None:  # the app's own detail only
        blocks = blocks[
            (blocks[:, 0] >= within[0])
            & (blocks[:, 1] >= within[1])
            & (blocks[:, 0] + BLOCK <= within[0] + within[2])
            & (blocks[:, 1] + BLOCK <= within[1] + within[3])
        ]
    area = widget_box(frame, click[0], click[1], max_fraction=1.0)
    if area is not None:
        inner = (area[0] + AREA_INSET, area[1] + AREA_INSET, area[2] - 2 * AREA_INSET, area[3] - 2 * AREA_INSET)
        inner = intersect(inner, within) or inner if within is not None else inner
        own = blocks[
            (blocks[:, 0] >= inner[0])
            & (blocks[:, 1] >= inner[1])
            & (blocks[:, 0] + BLOCK <= inner[0] + inner[2])
            & (blocks[:, 1] + BLOCK <= inner[1] + inner[3])
        ]
        box = _grow(frame, click, base, own, fits, unique, inner)
        if box is not None:
            return box
    return _grow(frame, click, base, blocks, fits, unique, within)


def _grow(
    frame: np.ndarray,
    click: tuple[int, int],
    base: Box,
    blocks: np.ndarray,
    fits: Callable[[Box], bool],
    unique: Callable[[Box], bool],
    inside: Box | None,
) -> Box | None:
    if not len(blocks):
        return None
    cx, cy = click
    x0, y0, x1, y1 = blocks[:, 0], blocks[:, 1], blocks[:, 0] + BLOCK, blocks[:, 1] + BLOCK
    dist = np.hypot(np.maximum(0, np.maximum(x0 - cx, cx - x1)), np.maximum(0, np.maximum(y0 - cy, cy - y1)))
    radius = float(dist.min())
    h, w = frame.shape[:2]
    lo_x, lo_y, hi_x, hi_y = (
        (0, 0, w, h) if inside is None else (inside[0], inside[1], inside[0] + inside[2], inside[1] + inside[3])
    )
    for _ in range(RING_TRIES):
        near = dist <= radius
        bx0 = max(lo_x, min(base[0], int(x0[near].min()) - PAD))
        by0 = max(lo_y, min(base[1], int(y0[near].min()) - PAD))
        bx1 = min(hi_x, max(base[0] + base[2], int(x1[near].max()) + PAD))
        by1 = min(hi_y, max(base[1] + base[3], int(y1[near].max()) + PAD))
        box = (bx0, by0, bx1 - bx0, by1 - by0)
        if box[2] > MAX_SHARE * w or box[3] > MAX_SHARE * h or not fits(box):
            return None
        if unique(box):
            return box
        radius += RING
    return None


def _textured_blocks(frame: np.ndarray) -> np.ndarray:
    """Top-left corners (x, y) of the frame's BLOCK-sized grid cells as textured as a template's content blocks, and
    not repeating themselves a few pixels on (a scrollbar's stipple, a border line): such a detail looks the same
    wherever it is slid along itself, and a blank area anchored on it matches at every height (xedit's page)."""
    gray = to_gray(frame).astype(np.float32)
    hb, wb = gray.shape[0] // BLOCK, gray.shape[1] // BLOCK
    cells = gray[: hb * BLOCK, : wb * BLOCK].reshape(hb, BLOCK, wb, BLOCK)
    ys, xs = np.nonzero(cells.std(axis=(1, 3)) >= BLOCK_STD)
    keep = [not repeats(cells[y, :, x, :]) for y, x in zip(ys, xs)]
    ys, xs = ys[keep], xs[keep]
    return np.stack([xs * BLOCK, ys * BLOCK], axis=1) if len(xs) else np.zeros((0, 2), int)


def text_area(frame: np.ndarray, x: int, y: int) -> Box | None:
    """The uniform area under a click when it is tall enough to be a multi-line text area (a document's page);
    None for a single-line field, a cell or a button."""
    box = widget_box(frame, x, y, max_fraction=1.0)
    return box if box is not None and box[3] >= MULTILINE_MIN_H else None


def typed_at_caret(edits: Sequence[Gesture]) -> str | None:
    """The text the edits put in at the caret when they only typed it (characters, and BackSpace over what they
    typed themselves); None when they selected, moved or deleted what was there."""
    text = ""
    for g in edits:
        if g.char is not None:
            text += g.char
        elif g.key == "backspace" and text:
            text = text[:-1]
        else:
            return None
    return text


def face_at(frame: np.ndarray, x: int, y: int) -> Box | None:
    """The widget face under (x, y): the uniform area at the click itself; else (a click on a label's glyphs, or on
    a face drawn as a gradient: Fusion's, Adwaita's, Metal's buttons) the smallest area holding the click found a
    little around it, of one colour or followed step by step through a gradient. The smallest: a probe beside a
    gradient button lands on the window around it, whose plain background also holds the click, and the template
    would be the whole window."""
    own = widget_box(frame, x, y)
    if own is not None and min(own[2:]) >= FACE_MIN and _holds(own, x, y):
        return own
    h, w = frame.shape[:2]
    found: list[Box] = []
    for dx, dy in FACE_PROBES:
        px, py = min(max(0, x + dx), w - 1), min(max(0, y + dy), h - 1)
        for step in (0, GRADIENT_STEP):
            box = widget_box(frame, px, py, step=step)
            if box is not None and _holds(box, x, y) and min(box[2:]) >= FACE_MIN:
                found.append(box)
    return min(found, key=lambda b: b[2] * b[3], default=None)


def _holds(box: Box, x: int, y: int) -> bool:
    return box[0] <= x < box[0] + box[2] and box[1] <= y < box[1] + box[3]
