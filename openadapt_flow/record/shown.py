"""What the recording's first screen showed before anything was typed: the app's own words (labels, headers).

The typed-text filter keeps a recorded value out of what a replay looks for: no fact, template, target text or
name may hold a word the demonstration typed or a param's value (a replay with another value would not find it).
A landmark is different. A field's label or a column's header that the first screen already showed, at the same
place, before any key was typed, is the app's text, not the value, even when a typed value shares a word with it
("Westside Clinic" typed into the field labelled "Clinic"): dropping it leaves the field a bare box that looks like
every other, and the replay halts as ambiguous there. Words of the store's rows before the demonstration (data)
and words inside a field the demonstration typed into are never the app's own: the exemption is not theirs.
"""

from __future__ import annotations

from openadapt_flow.fixture.recorder import Recording
from openadapt_flow.record.anchor import face_at
from openadapt_flow.vision.ocr import OcrEngine, Word, find_text, normalise
from openadapt_flow.vision.template import Box, intersect

SAME_PLACE = 6  # px a word may sit from where the first screen showed it and still be the same word


class ShownFirst:
    """Asks whether a word read on a recorded frame is one the first screen showed at its place (read lazily: one
    whole-screen read of the first frame, only when a typed-text filter would drop a word)."""

    def __init__(self, rec: Recording, ocr: OcrEngine) -> None:
        self._rec, self._ocr = rec, ocr
        self._words: list[Word] | None = None
        self._data = {p for v in rec.data_values for p in (normalise(v), *normalise(v).split()) if p}
        self._fields: list[Box] | None = None

    def holds(self, w: Word) -> bool:
        """Did the first screen show `w` at its place, outside data and outside every field typed into?"""
        n = normalise(w.text)
        if not n or n in self._data or any(p in self._data for p in n.split()):
            return False
        if any(intersect(w.box, f) for f in self.fields()):
            return False
        if self._words is None:
            self._words = self._ocr.read_closely(self._rec.initial)
        x, y, bw, bh = w.box
        around = (x - SAME_PLACE, y - SAME_PLACE, bw + 2 * SAME_PLACE, bh + 2 * SAME_PLACE)
        return bool(find_text([v for v in self._words if intersect(v.box, around)], w.text))

    def fields(self) -> list[Box]:
        """The widget faces the demonstration clicked and then typed into (what they show is a value, not a label)."""
        if self._fields is None:
            self._fields = []
            for b in self._rec.batches:
                acted = b.acted
                if b.edits and acted is not None and acted.kind != "key":
                    face = face_at(b.before, acted.x, acted.y)
                    self._fields.append(face if face is not None else (acted.x - 1, acted.y - 1, 3, 3))
        return self._fields
