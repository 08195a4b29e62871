"""Issue 35, finding 5: a decoration stroke under typed text (a spell-checker's red squiggle, a link's underline) is
painted out before the readback reads the text again, as a caret is, and what is read is held to the same exact rule.
Real Tesseract on rendered fields: "Kenji Sato" under a red squiggle read back as "Ken: | Sato|" and halted."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.decoration import without_decoration
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
FONTS = "/usr/share/fonts/truetype/dejavu/"
BAND = (90, 70, 400, 60)  # the readback band around the field
POINT = (200, 96)  # where the typing clicked


def field(text: str, size: int = 15, wave: tuple[int, int, int] = (3, 4, 2), caret: bool = True) -> np.ndarray:
    """An editor's field with `text` typed and each word underlined by a red wavy line a pixel under the baseline
    (`wave`: amplitude, period, stroke width), the caret after the text."""
    im = Image.new("RGB", (640, 240), (255, 255, 255))
    d = ImageDraw.Draw(im)
    d.rectangle([100, 80, 420, 112], fill=(255, 255, 255), outline=(140, 140, 140))
    if text:
        f = ImageFont.truetype(FONTS + "DejaVuSans.ttf", size)
        d.text((106, 87), text, font=f, fill=(20, 20, 20))
        base = 87 + f.getmetrics()[0]
        amp, period, width = wave
        at = 0
        for word in text.split():
            at = text.index(word, at)
            a = 106 + d.textlength(text[:at], font=f)
            xs = np.arange(a, a + d.textlength(word, font=f) + 1, period / 2)
            d.line([(x, base + 1 + amp * (k % 2)) for k, x in enumerate(xs)], fill=(230, 20, 20), width=width)
            at += len(word)
        if caret:
            x1 = d.textbbox((106, 87), text, font=f)[2]
            d.line([(x1 + 1, 84), (x1 + 1, 108)], fill=(0, 0, 0), width=1)
    return np.array(im)


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


@pytest.mark.parametrize("size,wave", [(15, (3, 4, 2)), (20, (2, 3, 1))])
def test_typed_text_under_a_spellcheck_squiggle_reads_back_exactly(checks: ScreenChecks, size: int, wave) -> None:
    got = checks.readback(field("Kenji Sato", size, wave), field(""), "Kenji Sato", BAND, POINT)
    assert got.ok, got.detail
    assert "under the text" in got.detail and "painted out" in got.detail, got.detail


@pytest.mark.parametrize("shown", ["Kenji Sako", "Kenja Sato"])
def test_a_wrong_text_under_a_squiggle_still_fails(checks: ScreenChecks, shown: str) -> None:
    got = checks.readback(field(shown), field(""), "Kenji Sato", BAND, POINT)
    assert not got.ok, got.detail


def test_painting_a_stroke_out_leaves_the_text_above_it_as_it_was() -> None:
    crop = field("Kenji Sato", caret=False)[75:118, 95:430]
    found = without_decoration(crop)
    assert found is not None
    painted, strokes = found
    assert len(strokes) == 2  # one under each flagged word
    top = min(y for _, y, _, _ in strokes)
    assert np.array_equal(painted[: top - 1], to_gray(crop)[: top - 1])  # only the strokes' rows were touched
    red = (crop[..., 0] > 150) & (crop[..., 1] < 120)
    assert (np.abs(painted.astype(int) - 255)[red] < 40).mean() > 0.9  # the squiggle is gone


def test_a_link_underline_is_a_decoration_too() -> None:
    im = Image.new("RGB", (400, 50), (255, 255, 255))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(FONTS + "DejaVuSans.ttf", 15)
    d.text((10, 10), "Harbor Pediatrics", font=f, fill=(20, 20, 200))
    x1 = d.textbbox((10, 10), "Harbor Pediatrics", font=f)[2]
    base = 10 + f.getmetrics()[0]
    d.line([(10, base + 2), (x1, base + 2)], fill=(20, 20, 200), width=1)
    found = without_decoration(np.array(im))
    assert found is not None and found[1][0][1] in (base + 1, base + 2)


@pytest.mark.parametrize(
    "font",
    [
        "DejaVuSans.ttf",
        "DejaVuSans-Bold.ttf",
        "DejaVuSerif.ttf",
        "DejaVuSerif-Bold.ttf",
        "DejaVuSansMono.ttf",
        "DejaVuSansCondensed-Bold.ttf",
    ],
)
def test_plain_text_has_no_decoration(font: str) -> None:
    """Glyphs' feet (serifs, 'ooooo', 'mmmm'), descenders and underscores between words are never taken for one."""
    for size in (11, 13, 15, 18, 24):
        for text in [
            "Patient: Maria Lopez",
            "mmmm wwww",
            "Harbor Pediatrics",
            "Kenji Sato",
            "Total 1,250.50",
            "ooooo eeeee",
            "rnrnrn_mm",
            "A__B",
            "Zürich Müller",
            "gggyyyjjj ppqq",
        ]:
            im = Image.new("RGB", (500, 50), (255, 255, 255))
            ImageDraw.Draw(im).text((10, 10), text, font=ImageFont.truetype(FONTS + font, size), fill=(20, 20, 20))
            assert without_decoration(np.array(im)) is None, (font, size, text)
