"""An identity gate for a consequential click that shows no typed value beside it (issue 35): a word of its own
surroundings, read where it stood relative to the click.

A dialog's Overwrite, Save or OK button found by its label (the OCR rung, when its template fails under a theme)
must be confirmed before the click writes. Its label cannot confirm it: that is what found it, and every dialog's OK
reads "OK". What tells this dialog from another is the words around the button: the dialog's message ("The file
exists"), read at the same offset from the click. The gate is such a word: read surely on the recorded screen, of
three letters or more, no typed value or param example, outside the target's own crop, the only one of its kind on
the screen (one dialog, not a word every window shows), and found again where the gate will look (the replay's own
reading). Only words above the target count (a dialog's message stands above its buttons; the Cancel beside an OK
is in every dialog, no message), the nearest first, a word of four letters or more before a shorter one.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

import numpy as np

from openadapt_flow.record.facts import repeats, shows_typed
from openadapt_flow.record.region import app_region, inside
from openadapt_flow.vision.ocr import OcrEngine, Word, normalise
from openadapt_flow.vision.template import Box, intersect, pad_box

GATE_REACH_X = 220  # px beside the click searched for a word of the target's surroundings ...
GATE_REACH_UP = 160  # ... and above it (a dialog's message stands above its buttons)
GATE_MIN_CONF = 85.0  # a gate word is read this surely at 1x on the recorded screen
GATE_MIN_LEN = 3  # letters
GATE_PAD = 12  # px around the word where the replay looks for it (layouts drift a little)
_EDGE = re.compile(r"^[^\w]+|[^\w]+$")


def context_gate(
    frame: np.ndarray, click: tuple[int, int], crop: Box, ocr: OcrEngine, avoid: Collection[str]
) -> dict[str, Any] | None:
    """`identity` for a click at `click` whose target was cut as `crop`: a word near it (not on it), as
    {text, near}; None when no word near the target is fit to confirm it."""
    h, w = frame.shape[:2]
    cx, cy = click
    area = pad_box((cx - GATE_REACH_X, cy - GATE_REACH_UP, 2 * GATE_REACH_X, GATE_REACH_UP), 0, w, h)
    if area is None:
        return None
    area = inside(area, app_region(frame, click))
    words = [wd for wd in ocr.read(frame, area) if _fit(frame, wd, crop, avoid)]
    above = [wd for wd in words if wd.box[1] + wd.box[3] <= crop[1]]
    for wd in sorted(above, key=lambda v: (len(normalise(v.text)) < 4, _distance(v, click))):  # "The" last
        text = _EDGE.sub("", wd.text)
        if len(ocr.find(frame, text)) != 1:  # the whole screen: a word shown twice tells no dialog from another
            continue
        box = pad_box(wd.box, GATE_PAD, w, h)
        if box is None or not ocr.find(frame, text, box):  # the replay reads it here, as here
            continue
        return {"text": text, "near": [box[0] - cx, box[1] - cy, box[2], box[3]]}
    return None


def _fit(frame: np.ndarray, wd: Word, crop: Box, avoid: Collection[str]) -> bool:
    n = normalise(wd.text)
    x, y, bw, bh = wd.box
    return (
        wd.conf >= GATE_MIN_CONF
        and len(n) >= GATE_MIN_LEN
        and n.isalpha()
        and not shows_typed(wd.text, avoid)
        and intersect(wd.box, crop) is None
        and not repeats(frame[y : y + bh, x : x + bw])
    )


def _distance(wd: Word, click: tuple[int, int]) -> float:
    x, y = wd.box[0] + wd.box[2] / 2, wd.box[1] + wd.box[3] / 2
    return ((x - click[0]) ** 2 + (y - click[1]) ** 2) ** 0.5
