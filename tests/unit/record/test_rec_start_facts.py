"""The recorder keeps the screen a demonstration started from as `start:` facts (record/start.py), on drawn screens
with real Tesseract: the start screen's stable words, the words shown only mid-item as text_absent, an empty page
typed into at the caret as blank; never a typed value or a row of the system of record."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(90)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def draw(words: list[tuple[str, int, int]], boxes: list[tuple[int, int, int, int]] = ()) -> np.ndarray:
    im = Image.new("RGB", (640, 400), (244, 244, 244))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 18)
    for x, y, w, h in boxes:
        d.rectangle([x, y, x + w, y + h], fill=(255, 255, 255), outline=(112, 112, 112))
    for text, x, y in words:
        d.text((x, y), text, font=f, fill=(16, 16, 16))
    return np.array(im)


def clicks(x: int, y: int) -> list[Gesture]:
    return [Gesture("press", x, y, key="click"), Gesture("click", x, y)]


def typed(s: str) -> list[Gesture]:
    return [Gesture("key", key=c, char=c) for c in s]


FIELD = (140, 52, 300, 36)


def listing(*rows: str) -> np.ndarray:
    return draw(
        [("Invoices", 40, 20), ("Create", 60, 330), ("Overview", 460, 20)]
        + [(r, 40, 120 + 30 * i) for i, r in enumerate(rows)]
    )


def form(value: str = "") -> np.ndarray:
    return draw(
        [("Vendor", 40, 60), ("Receipt", 40, 140), ("Submit", 60, 200)] + ([(value, 150, 60)] if value else []), [FIELD]
    )


def test_the_start_is_its_stable_words_and_what_only_an_unfinished_item_shows(tmp_path, ocr):
    start, end = listing("Globex"), listing("Globex", "Initech")
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=start,
        sor_kind="sqlite",
        data_values=["Globex"],
        batches=[
            Batch(before=start, lead=clicks(90, 340), after=form()),
            Batch(before=form(), lead=clicks(300, 70), edits=typed("Initech"), after=form("Initech")),
            Batch(
                before=form("Initech"), lead=clicks(100, 210), after=end, writes=[("invoices", {"vendor": "Initech"})]
            ),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "invoice", ocr)
    start_facts = yaml.safe_load((tmp_path / "b/flow.yaml").read_text())["start"]
    present = {f["text_present"] for f in start_facts if "text_present" in f}
    absent = {f["text_absent"] for f in start_facts if "text_absent" in f}
    assert present == {"Invoices", "Create", "Overview"}  # not Globex: a row of the system of record
    assert absent and absent <= {"Vendor", "Receipt", "Submit"}  # what a form left open shows; never the typed Initech
    assert all("region" in f for f in start_facts)
    model = load_bundle(out.path).model
    assert [pc.kind for pc in model.start][:3] == ["text_present"] * 3
    assert not any("start" in w for w in out.warnings), out.warnings


def test_a_demonstration_that_ends_elsewhere_is_warned_about_batches(tmp_path, ocr):
    start = listing()
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=start,
        batches=[
            Batch(before=start, lead=clicks(90, 340), after=form()),
            Batch(before=form(), lead=clicks(300, 70), edits=typed("Initech"), after=form("Initech")),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "invoice", ocr)
    assert any("reset_before_each" in w for w in out.warnings), out.warnings


def test_an_empty_page_typed_into_at_the_caret_must_be_empty_at_the_start(tmp_path, ocr):
    def page(text: str = "") -> np.ndarray:
        return draw(
            [("Notes", 20, 10), ("Document", 520, 10)] + ([(text, 40, 60)] if text else []), [(20, 50, 600, 320)]
        )

    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=page(),
        batches=[Batch(before=page(), lead=clicks(300, 200), edits=typed("Dear Ada"), after=page("Dear Ada"))],
    )
    out = compile_bundle(rec, tmp_path / "b", "note", ocr)
    (step,) = out.steps
    assert step.get("append") is True
    blank = [f["blank"] for f in yaml.safe_load((tmp_path / "b/flow.yaml").read_text())["start"] if "blank" in f]
    assert len(blank) == 1 and blank[0][0] >= 20 and blank[0][2] <= 600, blank
    # the page the item wrote is not empty: a second item would append to it, so a batch must reset before each
    assert any("reset_before_each" in w for w in out.warnings), out.warnings


class _Blind(OcrEngine):
    """Tesseract as it was on flpsed's FLTK menu bar: the same unchanged pixels of 'Overview' read on the screens
    between, not read on the start and end screens (each whole-screen read is read afresh)."""

    def __init__(self, blind: list[np.ndarray], word: str) -> None:
        super().__init__()
        self.blind, self.word = blind, word

    def _drop(self, image: np.ndarray, words: list):
        return [w for w in words if w.text != self.word] if any(image is f for f in self.blind) else words

    def read(self, image, box=None):
        return self._drop(image, super().read(image, box))

    def read_closely(self, image, box=None, like=None):
        return self._drop(image, super().read_closely(image, box, like))


def test_a_word_drawn_the_same_at_the_start_is_no_word_shown_only_mid_item(tmp_path):
    """A word whose pixels never changed is on the screen all along, however a reading went: were it a text_absent
    start fact, every replay that reads it (another theme, the window moved) halts at the start check."""
    start, end = listing("Globex"), listing("Globex", "Initech")
    header = [("Overview", 460, 20)]  # the same header, the same pixels, on the form too

    def form_(value: str = "") -> np.ndarray:
        return draw(
            header
            + [("Vendor", 40, 60), ("Receipt", 40, 140), ("Submit", 60, 200)]
            + ([(value, 150, 60)] if value else []),
            [FIELD],
        )

    assert (start[15:45, 455:560] == form_()[15:45, 455:560]).all()
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=start,
        sor_kind="sqlite",
        data_values=["Globex"],
        batches=[
            Batch(before=start, lead=clicks(90, 340), after=form_()),
            Batch(before=form_(), lead=clicks(300, 70), edits=typed("Initech"), after=form_("Initech")),
            Batch(
                before=form_("Initech"), lead=clicks(100, 210), after=end, writes=[("invoices", {"vendor": "Initech"})]
            ),
        ],
    )
    compile_bundle(rec, tmp_path / "b", "invoice", _Blind([start, end], "Overview"))
    start_facts = yaml.safe_load((tmp_path / "b/flow.yaml").read_text())["start"]
    absent = {f["text_absent"] for f in start_facts if "text_absent" in f}
    assert "Overview" not in absent, start_facts
    assert absent and absent <= {"Vendor", "Receipt", "Submit"}  # what a form left open does show is still kept
