"""Is the field a `type` step typed into the one the step means (issue 33, item 2)?

The readback proves the text shows where it was typed; this proves *where* that is: the field's recorded relations
to text outside it — its landmarks (a table cell's column header) and a label beside it (`text_offset`) — hold
around the point typed at, by the ladder's own rule (`ladder.landmarks`: every one within its tolerance). A relation
whose text lies inside the crop a template hit matched is proven by that match and not read again. A field with no
recorded relation outside itself has nothing more to prove than its readback.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openadapt_flow.bundle.models import Landmark, Target
from openadapt_flow.ladder.landmarks import error, expected, fits, search_box
from openadapt_flow.ladder.types import Box, Point
from openadapt_flow.records.models import Check
from openadapt_flow.vision.ocr import OcrEngine, find_text

FIELD_IDENTITY = "field_identity"
TEMPLATE_RUNGS = ("template", "template-edges")


@dataclass(frozen=True)
class Relation:
    """Text that must sit at an offset from the point typed at: a landmark, or the field's label."""

    what: str  # "landmark" | "label"
    landmark: Landmark


def relations(target: Target, rung: str | None, matched: Box | None, point: Point, scale: float) -> list[Relation]:
    """The target's relations to text outside the field that this resolution did not already prove: all of them,
    but for those a template hit matched inside its crop (`matched`, live pixels)."""
    out = [Relation("landmark", lm) for lm in target.landmarks]
    if target.text is not None and target.text_offset is not None:  # the label the field is found by, beside it
        dx, dy = target.text_offset
        out.append(Relation("label", Landmark(text=target.text, dx=-dx, dy=-dy)))
    if rung in TEMPLATE_RUNGS and matched is not None:
        out = [r for r in out if not _inside(expected(point, r.landmark, scale), matched)]
    return out


def field_identity(ocr: OcrEngine, frame: np.ndarray, point: Point, rels: list[Relation], scale: float) -> Check:
    """Every relation holds around `point` on `frame` (read closely, then enlarged); else not verified, with where
    each one that fails was read instead."""
    seen, failed = [], []
    for r in rels:
        lm = r.landmark
        box = search_box(point, lm, scale)
        got = find_text(ocr.read(frame, box), lm.text)
        err = error(point, lm, got, scale)
        if not fits(err):  # a small header a 1x read misses
            got = got + find_text(ocr.read_enlarged(frame, box), lm.text)
            err = error(point, lm, got, scale)
        if fits(err):
            seen.append(f"{r.what} {lm.text!r}")
        else:
            where = f"read {err:.1f} tolerances from its place" if got else "not read near its place"
            failed.append(f"{r.what} {lm.text!r} {where}")
    expected_text = ", ".join(f"{r.what} {r.landmark.text!r}" for r in rels)
    if failed:
        return Check(
            FIELD_IDENTITY,
            expected_text,
            False,
            "typed into a field whose recorded relation does not hold: " + "; ".join(failed),
            {"point": list(point)},
        )
    return Check(FIELD_IDENTITY, expected_text, True, "where recorded: " + ", ".join(seen), {"point": list(point)})


def _inside(p: tuple[float, float], box: Box) -> bool:
    x, y, w, h = box
    return x <= p[0] < x + w and y <= p[1] < y + h
