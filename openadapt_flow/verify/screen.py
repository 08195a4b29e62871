"""Screen facts judged on one frame: postconditions, the identity gate, typed-text readback.

Pure deciding: each function takes a frame and returns a verdict; waiting and
capturing are the runtime's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from openadapt_flow.bundle.models import Postcondition, Step
from openadapt_flow.bundle.params import Interpolator
from openadapt_flow.ladder.types import Box, Point
from openadapt_flow.vision.caret import without_caret
from openadapt_flow.vision.diff import changed_box, changed_fraction, changed_pixels
from openadapt_flow.vision.mask import union
from openadapt_flow.vision.ocr import OcrEngine
from openadapt_flow.vision.template import TemplateImage, find_template, pad_box

TEMPLATE_PRESENT_MIN = 0.8
REGION_CHANGED_MIN = 0.002
TEMPLATE_PAD = 80  # px around a template_present region: the template may drift as a target does
# Around a text fact's region. text_present's window is only the fast path (a miss there reads the
# whole frame), so it is tight; text_absent's window is all it looks at, so it is wide: a wider
# look can only make "absent" fail, never pass wrongly.
TEXT_PRESENT_PAD = 12
TEXT_ABSENT_PAD = 40
READBACK_PAD = 6  # px around what typing changed: the glyphs' faint edges and Tesseract's margin
# The fallback check of a step that declares nothing to verify: the screen changed where it acted, i.e.
# within ACTED_PAD px (scaled) of the matched target box and the point(s) it acted at. A handful of
# pixels is enough (a focus ring, a caret, a pressed checkbox); less is noise.
ACTED_PAD = 100
ACTED_MIN_PIXELS = 8
SCREEN_CHANGED = "screen_changed"


def verification_plan(step: Step) -> str:
    """What will verify a GUI step: `declared` (expect or effect), `readback` (the typed text read in the field it
    clicked), `weak` (nothing declared: only that the screen changed where it acted), `none` (a wait with nothing
    declared; it sends no input)."""
    if step.expect or step.effect is not None:
        return "declared"
    if step.action == "wait":
        return "none"
    if step.action == "type" and step.target is not None and step.text and not Interpolator.uses_secret(step.text):
        return "readback"
    return "weak"


@dataclass
class Check:
    """One fact and whether it held, with what was seen."""

    kind: str
    expected: str
    ok: bool
    detail: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "expected": self.expected, "ok": self.ok, "detail": self.detail, **self.evidence}


def clip_box(box: Box, width: int, height: int) -> Box | None:
    x, y, w, h = box
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(width, x + w), min(height, y + h)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


class ScreenChecks:
    """Judges screen facts with one OCR engine and the bundle's templates."""

    def __init__(self, ocr: OcrEngine, templates: Mapping[str, TemplateImage], scale: tuple[float, float] = (1.0, 1.0)):
        self.ocr = ocr
        self.templates = templates  # prepared once (gray, edges, scales) and shared with the ladder
        self.sx, self.sy = scale

    def scale_box(self, box: Box) -> Box:
        x, y, w, h = box
        return (round(x * self.sx), round(y * self.sy), round(w * self.sx), round(h * self.sy))

    def text(self, frame: np.ndarray, text: str, box: Box | None = None) -> Check:
        """Is `text` read by OCR in the frame (or inside `box`)?"""
        if box is not None:
            clipped = clip_box(box, frame.shape[1], frame.shape[0])
            if clipped is None:
                return Check("text_present", text, False, "search box lies outside the frame")
            box = clipped
        matches = self.ocr.find(frame, text, box=box)
        if not matches:
            return Check("text_present", text, False, "not read", {"box": box} if box else {})
        best = max(matches, key=lambda m: m.score)
        return Check("text_present", text, True, f"read {best.text!r}", {"score": round(best.score, 3), "at": list(best.box)})

    def window(self, region: Box, pad: int) -> Box:
        """A recorded region in this screen's pixels, padded by `pad` (callers clip it to the frame)."""
        x, y, w, h = self.scale_box(region)
        return (x - pad, y - pad, w + 2 * pad, h + 2 * pad)

    def fact_window(self, pc: Postcondition) -> Box | None:
        """Where a postcondition looks first, padded (None: the whole frame)."""
        if pc.region is None:
            return None
        pad = {"text_present": TEXT_PRESENT_PAD, "text_absent": TEXT_ABSENT_PAD}.get(pc.kind, TEMPLATE_PAD)
        return self.window(pc.region, pad)

    def postconditions(self, pcs: list[Postcondition], texts: list[str | None], frame: np.ndarray,
                       before: np.ndarray | None) -> list[Check]:
        """Judge several postconditions on one frame; every area they read is read in one pass first."""
        areas: list[Box | None] = [self.fact_window(pc) for pc in pcs if pc.kind in ("text_present", "text_absent")]
        self.ocr.read_many(frame, areas)
        return [self.postcondition(pc, frame, before, text) for pc, text in zip(pcs, texts)]

    def postcondition(self, pc: Postcondition, frame: np.ndarray, before: np.ndarray | None, text: str | None) -> Check:
        """Judge one postcondition; `text` is its interpolated text for text kinds.

        A text fact with a `region` is read there first (padded, see TEXT_PRESENT_PAD): `text_present`
        still holds if the text is read anywhere else on the frame (it moved, as a target
        may), `text_absent` then means absent from that region only.
        """
        kind = pc.kind
        window = self.fact_window(pc)
        if kind == "text_present":
            assert text is not None
            seen = self.text(frame, text, window) if window else None
            if seen is None or not seen.ok:
                seen = self.text(frame, text)
                if window and seen.ok:
                    seen.detail += " outside its region"
            return seen
        if kind == "text_absent":
            assert text is not None
            seen = self.text(frame, text, window)
            where = " in its region" if window else ""
            return Check("text_absent", text, not seen.ok, ("still shown" if seen.ok else "absent") + where, seen.evidence)
        if kind == "template_present":
            assert pc.template_present is not None
            templ = self.templates[pc.template_present]
            if window is not None:
                window = clip_box(window, frame.shape[1], frame.shape[0])
            found = find_template(frame, templ, box=window, confident=TEMPLATE_PRESENT_MIN)
            ok = found.score >= TEMPLATE_PRESENT_MIN and found.plausible(found.best)
            box = found.best.box if found.best else None
            return Check(kind, pc.template_present, ok, f"best score {found.score:.3f}", {"score": round(found.score, 3), "at": list(box) if box else None})
        assert pc.region_changed is not None
        region = self.scale_box(pc.region_changed)
        if before is None:
            return Check(kind, str(list(pc.region_changed)), False, "no before frame to compare")
        frac = changed_fraction(before, frame, region)
        return Check(kind, str(list(pc.region_changed)), frac >= REGION_CHANGED_MIN, f"{frac:.4f} of pixels changed", {"changed": round(frac, 4)})

    def acted_area(self, points: list[Point], target: Box | None) -> Box | None:
        """Where a step acted: its matched target box and the points it acted at, padded by ACTED_PAD (None: nowhere
        in particular, e.g. a key press, so the whole frame)."""
        boxes = [(x, y, 1, 1) for x, y in points] + ([target] if target is not None else [])
        if not boxes:
            return None
        x, y, w, h = boxes[0]
        for b in boxes[1:]:
            x, y, w, h = union((x, y, w, h), b)
        px, py = round(ACTED_PAD * self.sx), round(ACTED_PAD * self.sy)
        return (x - px, y - py, w + 2 * px, h + 2 * py)

    def changed_where_acted(self, frame: np.ndarray, before: np.ndarray, area: Box | None) -> Check:
        """Did the screen change inside `area` (None: anywhere) since `before`? A weak check: it proves the input
        landed somewhere that reacts, not what it did."""
        where = str(list(area)) if area is not None else "anywhere"
        n = changed_pixels(before, frame, area)
        ok = n >= ACTED_MIN_PIXELS
        return Check(SCREEN_CHANGED, where, ok, f"{n} pixels changed" + ("" if ok else f" (fewer than {ACTED_MIN_PIXELS})"),
                     {"changed_pixels": n, "weak": True})

    def readback(self, frame: np.ndarray, before: np.ndarray, typed: str, band: Box) -> Check:
        """Is the typed text read in the field? The part of `band` the typing changed is read first, then all of it.

        The changed part holds the new text (and whatever it replaced) but not
        the field's label beside it: a quarter of the band's read time. If
        neither reads it, the changed part is read once more with a trailing
        text cursor painted out (`vision.caret`): painting only removes ink,
        so it can rescue a glyph the cursor merged into, not invent one.
        """
        # a frame of another size has changed everywhere: no part of the band is singled out then
        changed = changed_box(before, frame, band) if before.shape == frame.shape else None
        area = pad_box(changed, READBACK_PAD, frame.shape[1], frame.shape[0]) if changed is not None else None
        got = self.text(frame, typed, area) if area is not None else None
        if got is None or not got.ok:
            got = self.text(frame, typed, band)
        if not got.ok and area is not None:
            got = self._without_caret(frame, typed, area) or got
        got.kind = "readback"
        return got

    def _without_caret(self, frame: np.ndarray, typed: str, area: Box) -> Check | None:
        """The typed area read again with a trailing text cursor painted out (it can merge into the last glyph)."""
        x, y, w, h = area
        masked = without_caret(frame[y : y + h, x : x + w])
        if masked is None:
            return None
        image, column = masked
        matches = self.ocr.find(image, typed)
        if not matches:
            return None
        best = max(matches, key=lambda m: m.score)
        bx, by, bw, bh = best.box
        return Check("readback", typed, True, f"read {best.text!r} with the text cursor at x={x + column} painted out",
                     {"score": round(best.score, 3), "at": [x + bx, y + by, bw, bh]})

    def identity(self, frame: np.ndarray, point: Point, near: tuple[int, int, int, int], text: str) -> Check:
        """The identity gate: `text` must be read inside `near` = [dx, dy, w, h] placed at the click point."""
        dx, dy, w, h = near
        box = (point[0] + round(dx * self.sx), point[1] + round(dy * self.sy), round(w * self.sx), round(h * self.sy))
        got = self.text(frame, text, box)
        return Check("identity", text, got.ok, got.detail, {**got.evidence, "box": list(box)})
