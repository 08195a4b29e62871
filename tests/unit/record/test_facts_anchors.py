"""What a compiled target may be found by and named after: never a value typed in the recording (another run
types another one), and never a word OCR read doubtfully."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.record.facts import name_of
from openadapt_flow.vision.ocr import OcrEngine, Word, normalise
from openadapt_flow.vision.template import Box, intersect

pytestmark = pytest.mark.timeout(120)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def table(name: str = "", clinic: str = "") -> np.ndarray:
    """One row of a patients table: a row-number column, then Name and Clinic cells."""
    im = Image.new("RGB", (640, 400), (244, 244, 244))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 16)
    d.text((60, 30), "Name", font=f, fill=(16, 16, 16))
    d.text((260, 30), "Clinic", font=f, fill=(16, 16, 16))
    d.rectangle([10, 60, 40, 96], fill=(225, 225, 225), outline=(140, 140, 140))
    d.text((20, 68), "1", font=f, fill=(16, 16, 16))
    for x0, text in ((40, name), (240, clinic)):
        d.rectangle([x0, 60, x0 + 200, 96], fill=(255, 255, 255), outline=(140, 140, 140))
        if text:
            d.text((x0 + 8, 68), text, font=f, fill=(16, 16, 16))
    return np.array(im)


def typed(s: str) -> list[Gesture]:
    return [Gesture("key", key=c, char=c) for c in s]


def click(x: int, y: int) -> list[Gesture]:
    return [Gesture("press", x, y, key="click"), Gesture("click", x, y)]


def test_a_cell_is_not_found_by_the_typed_value_beside_it(tmp_path, ocr: OcrEngine) -> None:
    f0, f1, f2 = table(), table("Nguyen"), table("Nguyen", "Cardiology")
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[
            Batch(before=f0, lead=click(140, 78), edits=typed("Nguyen"), after=f1),
            Batch(before=f1, lead=click(340, 78), edits=typed("Cardiology"), after=f2),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "clinic", ocr)
    clinic = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"][1]
    target = clinic["target"]
    crop = np.array(Image.open(tmp_path / "b" / target["template"]).convert("RGB"))
    read = " ".join(w.text for w in ocr.read(crop)).casefold()
    assert "nguyen" not in read, f"the clinic cell's template shows the recorded surname: {read!r}"
    assert "nguyen" not in normalise(target.get("text", ""))
    assert "nguyen" not in clinic["text"] and "nguyen" not in clinic["id"]
    assert all("nguyen" not in p for p in out.params)


class NoisyOcr(OcrEngine):
    """Tesseract as it reads a small toolbar button: a doubtful word beside a sure one."""

    def __init__(self, noise: list[Word], where: Box) -> None:
        super().__init__()
        self.noise, self.where = noise, where

    def read_closely(self, image: np.ndarray, box: Box | None = None, like: str | None = None) -> list[Word]:
        if box is not None and intersect(box, self.where) is not None and box[2] * box[3] < 20000:
            return list(self.noise)
        return super().read_closely(image, box, like)


def test_a_step_is_not_named_from_a_word_read_doubtfully(tmp_path) -> None:
    def screen(done: bool) -> np.ndarray:
        im = Image.new("RGB", (640, 400), (244, 244, 244))
        d = ImageDraw.Draw(im)
        d.rectangle([40, 40, 200, 80], fill=(220, 220, 220), outline=(112, 112, 112))
        d.text((52, 50), "Browse Data", font=ImageFont.truetype(DEJAVU, 18), fill=(16, 16, 16))
        if done:
            d.text((300, 200), "Records", font=ImageFont.truetype(DEJAVU, 18), fill=(16, 16, 16))
        return np.array(im)

    noise = [Word("browsg", 54.0, (52, 50, 70, 20)), Word("Data", 91.0, (130, 50, 44, 20))]
    ocr = NoisyOcr(noise, (40, 40, 160, 40))
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=screen(False),
        batches=[Batch(before=screen(False), lead=click(120, 60), after=screen(True))],
    )
    (step,) = compile_bundle(rec, tmp_path / "b", "browse", ocr).steps
    assert "browsg" not in step["id"] and "browsg" not in step["intent"]
    assert step["id"] == "data"


@pytest.mark.parametrize(
    "words,name",
    [
        ([Word("als", 40.0, (0, 0, 1, 1))], None),  # doubtful
        ([Word("Views", 92.0, (0, 0, 1, 1)), Word("0", 95.0, (0, 0, 1, 1))], "views"),  # a digit names nothing
        ([Word("brwsg", 93.0, (0, 0, 1, 1))], None),  # no vowel: not a word
        ([Word("Patient", 93.0, (0, 0, 1, 1)), Word("name", 90.0, (0, 0, 1, 1))], "patient name"),
        ([Word("Nguyen", 95.0, (0, 0, 1, 1))], None),  # a typed value
    ],
)
def test_names_come_only_from_sure_real_words(words: list[Word], name: str | None) -> None:
    assert name_of(words, {"nguyen"}) == name
