"""Screen facts judged on one frame: postconditions, the identity gate, typed-text readback.

Pure deciding: each function takes a frame and returns a verdict; waiting and
capturing are the runtime's job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from openadapt_flow.bundle.models import Postcondition
from openadapt_flow.ladder.types import Box, Point
from openadapt_flow.vision.diff import changed_fraction
from openadapt_flow.vision.ocr import OcrEngine
from openadapt_flow.vision.template import TemplateImage, find_template

TEMPLATE_PRESENT_MIN = 0.8
REGION_CHANGED_MIN = 0.002


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

    def postcondition(self, pc: Postcondition, frame: np.ndarray, before: np.ndarray | None, text: str | None) -> Check:
        """Judge one postcondition; `text` is its interpolated text for text kinds."""
        kind = pc.kind
        if kind == "text_present":
            assert text is not None
            return self.text(frame, text)
        if kind == "text_absent":
            assert text is not None
            seen = self.text(frame, text)
            return Check("text_absent", text, not seen.ok, "still shown" if seen.ok else "absent", seen.evidence)
        if kind == "template_present":
            assert pc.template_present is not None
            templ = self.templates[pc.template_present]
            window = self.scale_box(pc.region) if pc.region else None
            if window is not None:
                x, y, w, h = window
                pad = 80
                window = clip_box((x - pad, y - pad, w + 2 * pad, h + 2 * pad), frame.shape[1], frame.shape[0])
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

    def identity(self, frame: np.ndarray, point: Point, near: tuple[int, int, int, int], text: str) -> Check:
        """The identity gate: `text` must be read inside `near` = [dx, dy, w, h] placed at the click point."""
        dx, dy, w, h = near
        box = (point[0] + round(dx * self.sx), point[1] + round(dy * self.sy), round(w * self.sx), round(h * self.sy))
        got = self.text(frame, text, box)
        return Check("identity", text, got.ok, got.detail, {**got.evidence, "box": list(box)})
