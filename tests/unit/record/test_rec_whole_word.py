"""A fact is a whole word: a reading that dropped a glyph ('ile' of xedit's bold 'File', 'saved' of 'Saved') has the
dropped glyph's ink right beside its box, and reads otherwise in another font (xedit at scale 1.25 swaps its 7x13
bitmap font for 9x15 and reads 'File': the save step's fact 'ile' never held again). Real frame: xedit's status pane
after a save (tests/data/xedit/saved-status.png, the top left 300x90 of the recorded frame)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from openadapt_flow.record.facts import result_fact, screen_facts, whole_word
from openadapt_flow.vision.ocr import Word

SAVED = Path(__file__).resolve().parents[2] / "data" / "xedit" / "saved-status.png"


def frame() -> np.ndarray:
    return np.array(Image.open(SAVED).convert("RGB"))


class Reads:
    """An OCR engine that reads what the test says it reads on each frame (Tesseract's own reading of this frame)."""

    def __init__(self, reads: dict[int, list[Word]]) -> None:
        self.reads = reads

    def read_closely(self, image: np.ndarray, box=None) -> list[Word]:
        return self.reads[id(image)]


def test_a_reading_with_a_dropped_glyph_beside_it_is_no_whole_word() -> None:
    after = frame()
    assert not whole_word(after, (10, 43, 20, 9))  # 'ile': the 'F' ends one column before the box
    assert not whole_word(after, (10, 57, 27, 9))  # 'saved': the 'S' of 'Saved' beside it
    assert whole_word(after, (45, 57, 33, 10))  # 'file:' stands apart from its neighbours
    assert whole_word(after, (3, 43, 27, 9))  # 'File' whole, ...
    assert whole_word(after, (1, 43, 29, 9))  # ... also with the pane's border line inside its gap


def test_a_fragment_is_never_chosen_as_a_steps_fact() -> None:
    after = frame()
    before = after.copy()
    before[40:70, 1:299] = 255  # the status pane was empty before the save
    # 'saved' is the longest word read (the fact a compiler likes best), but the 'S' beside it says it is a fragment
    reads = [
        Word("ile", 92.0, (10, 43, 20, 9)),
        Word("saved", 92.0, (10, 57, 27, 9)),
        Word("file:", 90.0, (45, 57, 33, 10)),
    ]
    facts = screen_facts(before, after, Reads({id(before): [], id(after): reads}), [])  # type: ignore[arg-type]
    assert [(f.kind, f.text) for f in facts] == [("text_present", "file:")], facts


def test_a_fragment_is_never_a_steps_result() -> None:
    """The save is the demonstration's last, consequential step: its result is looked for as well, by the same rule
    (a recording checked 'ile' as the save's result beside the whole 'file:')."""
    after = frame()
    before = after.copy()
    before[40:70, 1:299] = 255
    reads = [Word("ile", 92.0, (10, 43, 20, 9)), Word("saved", 92.0, (10, 57, 27, 9))]
    ocr = Reads({id(before): [], id(after): reads})
    assert result_fact(before, after, ocr, {}, set(), set()) is None  # type: ignore[arg-type]
