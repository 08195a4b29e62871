"""What a recorded step can be checked by: targets cut so they are unique, and screen facts read by OCR.

A fact is chosen only when it will judge the same way at replay: a word read
with confidence, not a typed value (that would tie the fact to the recorded
params), not a number (ids and counters change per run), and not one the
engine's own matcher would find on the other screen (a "new" word it would
already have read before the input, a "gone" one it would still read after).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from openadapt_flow.vision.diff import changed_box
from openadapt_flow.vision.ocr import OcrEngine, Word, find_text, normalise
from openadapt_flow.vision.template import Box, find_template, intersect, pad_box

FACT_MIN_CONF = 85.0
FACT_MIN_LEN = 3
LABEL_REACH = 320  # px left of a field searched for its label
FIELD_PART = 60  # px of an (empty, alike) field kept beside its label in a template
GROW = 16  # px a template grows per try until it is unique on its screen
GROW_TRIES = 5
UNIQUE_MARGIN = 0.08  # the runner-up must score this much below the crop itself


@dataclass(frozen=True)
class Fact:
    kind: str  # text_present | text_absent | region_changed
    text: str | None
    region: Box


def readable(words: list[Word], typed: list[str]) -> list[Word]:
    """Words fit to be a fact: confident, long enough, not a number, not (part of) a typed value."""
    typed_norm = {normalise(t) for t in typed} | {w for t in typed for w in normalise(t).split()}
    out = []
    for w in words:
        n = normalise(w.text)
        if w.conf < FACT_MIN_CONF or len(n) < FACT_MIN_LEN or n in typed_norm or not re.search(r"[a-z]", n):
            continue
        out.append(w)
    return out


def screen_facts(before: np.ndarray, after: np.ndarray, ocr: OcrEngine, typed: list[str]) -> list[Fact]:
    """At most one word that appeared and one that vanished; else the changed area; [] if nothing changed."""
    box = changed_box(before, after)
    if box is None:
        return []
    was, now = ocr.read_closely(before), ocr.read_closely(after)  # bold titles read again, not dropped as doubtful
    facts = []
    new = [w for w in readable(now, typed) if not find_text(was, w.text)]
    gone = [w for w in readable(was, typed) if not find_text(now, w.text)]
    for kind, pool in (("text_present", new), ("text_absent", gone)):
        if pool:
            best = max(pool, key=lambda w: (len(normalise(w.text)), w.conf))
            facts.append(Fact(kind, best.text, best.box))
    if not facts:
        facts.append(Fact("region_changed", None, box))
    return facts


def field_label(frame: np.ndarray, field: Box, ocr: OcrEngine) -> Word | None:
    """The word nearest left of a field on its row: its label."""
    fx, fy, fw, fh = field
    row = (max(0, fx - LABEL_REACH), fy, min(fx, LABEL_REACH), fh)
    words = [w for w in ocr.read(frame, row) if w.box[0] + w.box[2] <= fx and len(normalise(w.text)) >= 2]
    return max(words, key=lambda w: w.box[0], default=None)


def target_crop(frame: np.ndarray, widget: Box, label: Word | None, click: tuple[int, int]) -> Box:
    """A button is its own face; a field is its label and its first few pixels (an empty field looks like every
    other), reaching at least past the click (the click point lies inside the crop)."""
    if label is None:
        return widget
    fx, fy, fw, fh = widget
    lx, ly, lw, lh = label.box
    x0, y0 = min(lx - 4, fx), min(ly - 4, fy)
    x1, y1 = min(fx + fw, max(fx + FIELD_PART, click[0] + 8)), max(ly + lh + 4, fy + fh)
    return pad_box((x0, y0, x1 - x0, y1 - y0), 0, frame.shape[1], frame.shape[0]) or widget


def unique_crop(frame: np.ndarray, box: Box) -> tuple[Box, bool]:
    """`box`, grown until its crop matches only itself on the frame (True), or the last try (False)."""
    h, w = frame.shape[:2]
    for _ in range(GROW_TRIES):
        x, y, bw, bh = box
        found = find_template(frame, np.ascontiguousarray(frame[y:y + bh, x:x + bw]), confident=0.9)
        mine = found.best is not None and intersect(found.best.box, box) is not None
        runner = found.runner_up.score if found.runner_up and found.plausible(found.runner_up) else 0.0
        if mine and runner < found.score - UNIQUE_MARGIN:
            return box, True
        grown = pad_box(box, GROW, w, h)
        if grown is None or grown == box:
            break
        box = grown
    return box, False
