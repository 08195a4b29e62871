"""A word is a fact of a step only where the word itself changed: a border line under it that moved away (the
spreadsheet's cell cursor leaving the cell below the header) makes OCR read the unchanged word differently ("name"
as "frame"), and that reading is no word that appeared."""

from __future__ import annotations

import numpy as np

from openadapt_flow.record.facts import screen_facts
from openadapt_flow.vision.ocr import Word


class Reads:
    """An OCR engine that reads what the test says it reads on each frame (the misreading is the case at hand)."""

    def __init__(self, reads: dict[int, list[Word]]) -> None:
        self.reads = reads

    def read_closely(self, frame: np.ndarray, box=None) -> list[Word]:
        return self.reads[id(frame)]


def test_a_word_read_again_only_because_a_line_under_it_went_is_no_fact() -> None:
    before = np.full((200, 300, 3), 255, np.uint8)
    before[54:62, 40:70] = 20  # the word's glyphs: "name"
    before[69:71, 30:130] = (20, 40, 160)  # the cell cursor's top edge, on the last row of the word's OCR box
    before[71:90, 30:32] = (20, 40, 160)
    after = before.copy()
    after[69:71, 30:130] = 255  # the cursor moved down: its edge went, the word's glyphs did not change
    after[71:90, 30:32] = 255
    after[150:160, 200:240] = 20  # and something else changed elsewhere (the row header's highlight)
    ocr = Reads({id(before): [], id(after): [Word("frame", 90.0, (36, 50, 39, 21))]})
    facts = screen_facts(before, after, ocr, [])  # type: ignore[arg-type]
    assert all(f.text != "frame" for f in facts), facts
    assert [f.kind for f in facts] == ["region_changed"], facts


def test_a_word_whose_glyphs_changed_is_still_a_fact() -> None:
    before = np.full((200, 300, 3), 255, np.uint8)
    after = before.copy()
    after[54:62, 40:70] = 20  # a word drawn where there was none
    ocr = Reads({id(before): [], id(after): [Word("Saved", 90.0, (36, 50, 39, 21))]})
    facts = screen_facts(before, after, ocr, [])  # type: ignore[arg-type]
    assert [(f.kind, f.text) for f in facts] == [("text_present", "Saved")], facts
