"""Screen facts judged on one frame: postconditions, the identity gate, typed-text readback.

Pure deciding: each function takes a frame and returns a verdict; waiting and
capturing are the runtime's job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np

from openadapt_flow.bundle.models import Postcondition, Step
from openadapt_flow.bundle.params import Interpolator
from openadapt_flow.fixture.widget import widget_box
from openadapt_flow.ladder.types import Box, Point
from openadapt_flow.records.models import Check
from openadapt_flow.verify.blank import blank_check
from openadapt_flow.verify.place import Anchor, Placement, drawn_anew
from openadapt_flow.verify.readback import find_typed, scrolled_note
from openadapt_flow.vision.caret import FAINT_CARET_INK, without_caret, without_caret_in_lines
from openadapt_flow.vision.decoration import without_decoration
from openadapt_flow.vision.diff import changed_box, changed_pixels, changed_share
from openadapt_flow.vision.mask import union
from openadapt_flow.vision.ocr import OcrEngine, find_text
from openadapt_flow.vision.outline import without_outline
from openadapt_flow.vision.scrolled import scrolled
from openadapt_flow.vision.template import TemplateImage, Thresholds, find_template, intersect, pad_box

TEMPLATE_PRESENT_MIN = 0.8
REGION_CHANGED_MIN = 0.002
TEMPLATE_PAD = 80  # px around a template_present region: the template may drift as a target does
# Around a text fact's region. text_present's window is only the fast path (a miss there reads the
# whole frame), so it is tight; text_absent's window is all it looks at, so it is wide: a wider
# look can only make "absent" fail, never pass wrongly.
TEXT_PRESENT_PAD = 12
TEXT_ABSENT_PAD = 40
READBACK_PAD = 6  # px around what typing changed: the glyphs' faint edges and Tesseract's margin
IDENTITY_SCALES = (0.8, 1.0, 1.25)  # an identity box with no scale known covers these (the template rung's range)
PAINTED_MARGIN = 10  # px of background around a crop read again with its caret painted out
FACE_INSET = 2  # px a field's face is read inside its edge: a cell border reads as a glyph
FACE_PROBES = (
    (0, 0),
    (0, -6),
    (0, 6),
    (0, -10),
    (0, 10),
)  # the point may lie on the typed glyphs' ink: look above/below
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


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


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

    def place(self, pc: Postcondition, anchor: Anchor | None) -> Box | None:
        """A fact's area in this frame: moved with the target when it is `relative_to: target` and the target was
        found (else, as for older bundles, at its recorded place scaled to this screen)."""
        box = pc.box
        if box is None:
            return None
        if pc.relative_to == "target" and anchor is not None:
            return anchor.place(box)
        return self.scale_box(box)

    def anchored(self, pc: Postcondition, anchor: Anchor | None) -> Postcondition:
        """The fact with its area at the absolute recorded-frame place it had in this frame (what a checkpoint keeps:
        resume re-proves it where the target was, with no target to resolve)."""
        if pc.relative_to != "target" or anchor is None or pc.box is None:
            return pc
        x, y, w, h = anchor.place(pc.box)
        box = (round(x / self.sx), round(y / self.sy), max(1, round(w / self.sx)), max(1, round(h / self.sy)))
        key = "region" if pc.region is not None else "region_changed" if pc.region_changed is not None else "blank"
        return pc.model_copy(update={key: box, "relative_to": None})

    def text(self, frame: np.ndarray, text: str, box: Box | None = None) -> Check:
        """Is `text` read by OCR in the frame (or inside `box`)?"""
        if box is not None:
            clipped = clip_box(box, frame.shape[1], frame.shape[0])
            if clipped is None:
                return Check("text_present", text, False, "search box lies outside the frame")
            box = clipped
        # fuzzy reading tolerates an edit per 6 characters in words; a number's digits are compared exactly
        # ("1234567" is not "1234568": a result off by one digit is a wrong result)
        matches = [m for m in self.ocr.find(frame, text, box=box) if _digits(m.text) == _digits(text)]
        if not matches:
            return Check("text_present", text, False, "not read", {"box": box} if box else {})
        best = max(matches, key=lambda m: m.score)
        return Check(
            "text_present", text, True, f"read {best.text!r}", {"score": round(best.score, 3), "at": list(best.box)}
        )

    def _drawn_text(self, frame: np.ndarray, before: np.ndarray | None, text: str, box: Box) -> Check | None:
        """`text` read inside `box` where the step drew it (the screen changed under the word since `before`)."""
        clipped = clip_box(box, frame.shape[1], frame.shape[0])
        if clipped is None:
            return None
        matches = [
            m
            for m in self.ocr.find(frame, text, box=clipped)
            if _digits(m.text) == _digits(text) and drawn_anew(before, frame, m.box)
        ]
        if not matches:
            return None
        best = max(matches, key=lambda m: m.score)
        return Check(
            "text_present",
            text,
            True,
            f"read {best.text!r} where the moved window shows its region",
            {"score": round(best.score, 3), "at": list(best.box)},
        )

    def window(self, region: Box, pad: int) -> Box:
        """A recorded region in this screen's pixels, padded by `pad` (callers clip it to the frame)."""
        x, y, w, h = self.scale_box(region)
        return (x - pad, y - pad, w + 2 * pad, h + 2 * pad)

    def fact_window(self, pc: Postcondition, anchor: Anchor | None = None) -> Box | None:
        """Where a postcondition looks first, padded (None: the whole frame)."""
        if pc.region is None:
            return None
        placed = self.place(pc, anchor)
        assert placed is not None
        return self._padded(pc, placed)

    def shifted_window(self, pc: Postcondition, anchor: Anchor | None, shift: Placement | None) -> Box | None:
        """Where a fact no target of its step places is, moved with the window (`shift`: the displacement the run's
        targets agree on), padded; None when a target places it, it has no area, or no displacement is known."""
        if shift is None or pc.region is None or (pc.relative_to == "target" and anchor is not None):
            return None
        return self._padded(pc, shift.box(pc.region))

    @staticmethod
    def _padded(pc: Postcondition, box: Box) -> Box:
        pad = {"text_present": TEXT_PRESENT_PAD, "text_absent": TEXT_ABSENT_PAD}.get(pc.kind, TEMPLATE_PAD)
        x, y, w, h = box
        return (x - pad, y - pad, w + 2 * pad, h + 2 * pad)

    def postconditions(
        self,
        pcs: list[Postcondition],
        texts: list[str | None],
        frame: np.ndarray,
        before: np.ndarray | None,
        anchor: Anchor | None = None,
        shift: Placement | None = None,
    ) -> list[Check]:
        """Judge several postconditions on one frame; every area they read is read in one pass first."""
        texts_at = [pc for pc in pcs if pc.kind in ("text_present", "text_absent")]
        areas: list[Box | None] = [self.fact_window(pc, anchor) for pc in texts_at]
        areas += [w for pc in texts_at if (w := self.shifted_window(pc, anchor, shift)) is not None]
        self.ocr.read_many(frame, areas)
        return [self.postcondition(pc, frame, before, text, anchor, shift) for pc, text in zip(pcs, texts)]

    def postcondition(
        self,
        pc: Postcondition,
        frame: np.ndarray,
        before: np.ndarray | None,
        text: str | None,
        anchor: Anchor | None = None,
        shift: Placement | None = None,
    ) -> Check:
        """Judge one postcondition; `text` is its interpolated text for text kinds.

        A text fact with a `region` is read there first (padded, see TEXT_PRESENT_PAD): `text_present`
        still holds if the text is read anywhere else on the frame (it moved, as a target
        may), `text_absent` then means absent from that region only.

        A fact no target of its step places (`shift`, see `verify.place`) is also looked for where the moved window
        shows its area: a text or template found there holds only when the step drew it (`drawn_anew`); a text that
        must be absent must be absent there too.
        """
        kind = pc.kind
        window = self.fact_window(pc, anchor)
        moved = self.shifted_window(pc, anchor, shift)
        if kind == "text_present":
            assert text is not None
            seen = self.text(frame, text, window) if window else None
            if (seen is None or not seen.ok) and moved is not None:
                seen = self._drawn_text(frame, before, text, moved) or seen
            if seen is None or not seen.ok:
                seen = self.text(frame, text)
                if window and seen.ok:
                    seen.detail = (seen.detail or "") + " outside its region"
            return seen
        if kind == "text_absent":
            assert text is not None
            seen = self.text(frame, text, window)
            if not seen.ok and moved is not None:
                seen = self.text(frame, text, moved)
            where = " in its region" if window else ""
            return Check(
                "text_absent", text, not seen.ok, ("still shown" if seen.ok else "absent") + where, seen.evidence
            )
        if kind == "template_present":
            assert pc.template_present is not None
            templ = self.templates[pc.template_present]
            if window is not None:
                window = clip_box(window, frame.shape[1], frame.shape[0])
            found = find_template(frame, templ, box=window, thresholds=Thresholds(confident=TEMPLATE_PRESENT_MIN))
            ok = found.score >= TEMPLATE_PRESENT_MIN and found.plausible(found.best)
            moved = clip_box(moved, frame.shape[1], frame.shape[0]) if moved is not None and not ok else None
            if moved is not None:
                there = find_template(frame, templ, box=moved, thresholds=Thresholds(confident=TEMPLATE_PRESENT_MIN))
                if there.score >= TEMPLATE_PRESENT_MIN and there.plausible(there.best) and there.best is not None:
                    found, ok = there, drawn_anew(before, frame, there.best.box)
            box = found.best.box if found.best else None
            return Check(
                kind,
                pc.template_present,
                ok,
                f"best score {found.score:.3f}",
                {"score": round(found.score, 3), "at": list(box) if box else None},
            )
        region = self.place(pc, anchor)
        if kind == "blank":
            assert pc.blank is not None and region is not None
            return blank_check(frame, region, list(pc.blank))
        assert pc.region_changed is not None and region is not None
        if before is None:
            return Check(kind, str(list(pc.region_changed)), False, "no before frame to compare")
        spread = anchor.spread(region, (self.sx, self.sy)) if pc.relative_to == "target" and anchor else (0, 0)
        frac = changed_share(before, frame, region, spread)
        least = pc.changed_min or REGION_CHANGED_MIN
        return Check(
            kind,
            str(list(pc.region_changed)),
            frac >= least,
            f"{frac:.4f} of pixels changed (at least {least:g})",
            {"changed": round(frac, 4)},
        )

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
        return Check(
            SCREEN_CHANGED,
            where,
            ok,
            f"{n} pixels changed" + ("" if ok else f" (fewer than {ACTED_MIN_PIXELS})"),
            {"changed_pixels": n, "weak": True},
        )

    def readback(
        self,
        frame: np.ndarray,
        before: np.ndarray,
        typed: str,
        band: Box,
        point: Point | None = None,
        append: bool = False,
    ) -> Check:
        """Is the typed text what the field shows (`verify.readback`: one rule for words and numbers)?

        Read first from the crop of the edited field itself (the uniform face under the point typing clicked: no
        row number, label or border beside it), then from the part of `band` the typing changed (of the whole text
        area clicked in, for typing appended where no field face is), then all of the band. If none shows it, the
        changed part, then the field, is read once more with a trailing text cursor painted out
        (`vision.caret`), then with the decoration strokes under the text painted out (`vision.decoration`: a
        spell-checker's squiggle): painting only removes ink, so it can rescue a glyph a mark merged into, not invent one.
        Last, the field and the changed part are read as one line of plain grey (`OcrEngine.read_line`): bold
        display digits (galculator's) are hollowed out by the screen reading's local contrast. Every reading is held
        to the same exact rule (`verify.readback`), so another way of reading cannot loosen what counts as shown.
        """
        face = self._field_face(frame, point)
        # Typing at the caret in a text area bigger than any field (a document's page) shows where the caret is,
        # which a click below the text put lines away from the click: what changed is looked for in the whole area.
        page = self._text_area(frame, point) if append and face is None else None
        # a frame of another size has changed everywhere: no part of the band is singled out then
        changed = changed_box(before, frame, page or band) if before.shape == frame.shape else None
        area = pad_box(changed, READBACK_PAD, frame.shape[1], frame.shape[0]) if changed is not None else None
        if area is not None and page is not None:
            area = intersect(area, page)  # the page's own border reads as a glyph
        # the field's own face shows its value scrolled to the end typed at (its first glyph cut at the left): then
        # a reading of it may be the value's end (`verify.readback.shows`)
        face_box = clip_box(face, frame.shape[1], frame.shape[0]) if face is not None else None
        fx, fy, fw, fh = face_box or (0, 0, 0, 0)
        cut = face_box is not None and scrolled(frame[fy : fy + fh, fx : fx + fw])  # `vision.scrolled`
        tried: list[str] = []
        for where, box in (("the field", face), ("what the typing changed", area), ("the band", band)):
            if box is None:
                continue
            clipped = clip_box(box, frame.shape[1], frame.shape[0])
            if clipped is None:
                continue
            words = self.ocr.read(frame, clipped)
            found = find_typed(words, typed, append, scrolled=where == "the field" and cut)
            if found is not None:
                return Check(
                    "readback",
                    typed,
                    True,
                    f"read {found.text!r} in {where}{scrolled_note(typed, found.text, append)}",
                    {"at": list(found.box), "conf": round(found.conf, 1)},
                )
            tried.append(f"{where}: {' '.join(w.text for w in words)[:60]!r}")
        # what the typing changed first; then the field's face: a multi-line view clicked under its first line
        # holds the typed line outside the band, where nothing changed (wxGTK's caret against the last 'l')
        for box in (area, face):
            got = self._without_caret(frame, typed, box, append, cut and box is face) if box is not None else None
            if got is not None:
                return got
        for where, box in (("the field", face), ("what the typing changed", area)):
            clipped = clip_box(box, frame.shape[1], frame.shape[0]) if box is not None else None
            words = self.ocr.read_line(frame, clipped) if clipped is not None else []
            found = find_typed(words, typed, append, scrolled=where == "the field" and cut)
            if found is not None:
                return Check(
                    "readback",
                    typed,
                    True,
                    f"read {found.text!r} in {where}, as one line of plain grey{scrolled_note(typed, found.text, append)}",
                    {"at": list(found.box), "conf": round(found.conf, 1)},
                )
            if clipped is not None:
                tried.append(f"{where} as one line: {' '.join(w.text for w in words)[:60]!r}")
        return Check("readback", typed, False, "not read (" + "; ".join(tried) + ")", {"box": list(band)})

    def _field_face(self, frame: np.ndarray, point: Point | None) -> Box | None:
        """The edited field's face, inset past its border (None: no uniform face under the point)."""
        if point is None or not (0 <= point[0] < frame.shape[1] and 0 <= point[1] < frame.shape[0]):
            return None
        face = None
        for dx, dy in FACE_PROBES:
            px, py = point[0] + dx, point[1] + dy
            if 0 <= py < frame.shape[0]:
                box = widget_box(frame, px, py)
                if box is not None and box[0] <= point[0] < box[0] + box[2] and box[1] <= point[1] < box[1] + box[3]:
                    face = box
                    break
        if face is None:
            return None
        x, y, w, h = face
        return (
            (x + FACE_INSET, y + FACE_INSET, w - 2 * FACE_INSET, h - 2 * FACE_INSET)
            if min(w, h) > 4 * FACE_INSET
            else face
        )

    @staticmethod
    def _text_area(frame: np.ndarray, point: Point | None) -> Box | None:
        """The uniform area under the point however big (a page), inset past its border; None off the frame."""
        if point is None or not (0 <= point[0] < frame.shape[1] and 0 <= point[1] < frame.shape[0]):
            return None
        area = widget_box(frame, point[0], point[1], max_fraction=1.0)
        if area is None or min(area[2:]) <= 4 * FACE_INSET:
            return area
        x, y, w, h = area
        return (x + FACE_INSET, y + FACE_INSET, w - 2 * FACE_INSET, h - 2 * FACE_INSET)

    def _without_caret(self, frame: np.ndarray, typed: str, area: Box, append: bool, cut: bool = False) -> Check | None:
        """The typed area read again with a trailing text cursor painted out (it can merge into the last glyph): a
        thin bar (`without_caret`), else a caret drawn as a block or an I-beam at the end of a line of text
        (`without_caret_in_lines`: Xaw's block, Motif's I-beam, Tk's 2 px bar); then with the decoration strokes
        under the text painted out (a spell-checker's squiggle, a link's underline), with and without a cursor."""
        x, y, w, h = area
        crop = frame[y : y + h, x : x + w]
        for image, what in _painted(crop):
            # read with a margin of the crop's own background: Tesseract misreads a line pressed against the edge of
            # a tight crop (a line above cut in half over it: "Pat: 'ient")
            margin = ((PAINTED_MARGIN, PAINTED_MARGIN),) * 2 + ((0, 0),) * (image.ndim - 2)
            image = np.pad(image, margin, constant_values=int(np.median(image)))
            best = find_typed(self.ocr.read(image), typed, append, cut)
            # and enlarged, once the caret is gone (a small, unsmoothed font loses a glyph at 1x: Swing's "K" at a
            # field's edge); never before: enlarged, a 'j' and a caret read ';', which the rule would strip
            best = best or find_typed(self.ocr.read_enlarged(image), typed, append, cut)
            if best is not None:
                break
        else:
            return None
        bx, by, bw, bh = best.box
        bx, by = bx - PAINTED_MARGIN, by - PAINTED_MARGIN
        return Check(
            "readback",
            typed,
            True,
            f"read {best.text!r} with {what(x, y)} painted out{scrolled_note(typed, best.text, append)}",
            {"at": [x + bx, y + by, bw, bh], "conf": round(best.conf, 1)},
        )

    def identity(
        self, frame: np.ndarray, point: Point, near: tuple[int, int, int, int], text: str, scale: float | None = None
    ) -> Check:
        """The identity gate: `text` must be read inside `near` = [dx, dy, w, h] placed at the click point, scaled by
        `scale` (the scale the target's template matched at, the screen's ratio included: an app drawn 25 % bigger
        spaces its fields 25 % wider); with no scale known (a target found by its text), the box covers where `near` falls at every scale a
        template is searched at (IDENTITY_SCALES, times the screen's size ratio)."""
        dx, dy, w, h = near
        scales = [(scale, scale)] if scale else [(f * self.sx, f * self.sy) for f in IDENTITY_SCALES]
        boxes = [
            (point[0] + round(dx * sx), point[1] + round(dy * sy), round(w * sx), round(h * sy)) for sx, sy in scales
        ]
        box = boxes[0]
        for other in boxes[1:]:
            box = union(box, other)
        got = self.text(frame, text, box)
        if not got.ok:  # a small, bold default font (Xaw's) misread at 1x: the box read enlarged, the same rule
            found = [m for m in find_text(self.ocr.read_enlarged(frame, box), text) if _digits(m.text) == _digits(text)]
            if found:
                got = Check("text_present", text, True, f"read {found[0].text!r}, enlarged", {"at": list(found[0].box)})
        return Check("identity", text, got.ok, got.detail, {**got.evidence, "box": list(box)})


Where = Callable[[int, int], str]  # what was painted out, said at the crop's origin on the frame


def _painted(crop: np.ndarray) -> Iterator[tuple[np.ndarray, Where]]:
    """The crop with what can merge into the typed text painted out, one way after another, each only when found: a
    trailing text cursor (a thin bar; a block, an I-beam; one drawn faintly: a black block on a dark theme), then
    a box drawn tight around the text (`vision.outline`: a text object being edited), then the decoration strokes
    under the text (`vision.decoration`: a spell-checker's squiggle, a link's underline), alone and then with a
    cursor painted out as well. Painting only removes ink."""
    carets: tuple[Callable[[np.ndarray], tuple[np.ndarray, int] | None], ...] = (
        without_caret,
        without_caret_in_lines,
        lambda c: without_caret_in_lines(c, FAINT_CARET_INK),
    )

    def cursor(column: int, also: str = "") -> Where:
        return lambda x, y: f"{also}the text cursor at x={x + column}"

    for find in carets:
        if (found := find(crop)) is not None:
            yield found[0], cursor(found[1])
    if (boxed := without_outline(crop)) is not None:
        bx, by, bw, bh = boxed[1]
        yield boxed[0], lambda x, y: f"the box drawn around the text ({[x + bx, y + by, bw, bh]})"
    decorated = without_decoration(crop)
    if decorated is None:
        return
    clean, strokes = decorated
    under = f"the stroke{'s' if len(strokes) > 1 else ''} under the text"
    yield clean, lambda x, y: f"{under} ({', '.join(str([x + sx, y + sy, sw, sh]) for sx, sy, sw, sh in strokes)})"
    for find in carets:
        if (found := find(clean)) is not None:
            yield found[0], cursor(found[1], f"{under} and ")
