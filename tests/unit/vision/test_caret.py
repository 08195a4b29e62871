"""The trailing text cursor: found by shape, painted out, never a glyph."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.vision.caret import without_caret
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def field(text: str, caret: bool, gap: int = 1) -> tuple[np.ndarray, int]:
    """A crop of a window: an outlined white entry with `text`, and a 2 px caret spanning the line `gap` px
    after it; the caret's x in the crop."""
    im = Image.new("RGB", (300, 64), (244, 244, 244))
    d = ImageDraw.Draw(im)
    font = ImageFont.truetype(DEJAVU, 20)
    d.rectangle([10, 10, 289, 53], fill=(255, 255, 255), outline=(112, 112, 112))
    d.text((20, 20), text, font=font, fill=(16, 16, 16))
    x = 20 + round(d.textlength(text, font=font)) + gap
    if caret:
        d.rectangle([x, 18, x + 1, 44], fill=(16, 16, 16))  # ascent to descent of a 20 px line
    return np.array(im), x


def test_a_caret_after_the_text_is_painted_out_and_the_text_reads_alone() -> None:
    img, x = field("ACME 8", caret=True)
    found = without_caret(img)
    assert found is not None
    painted, column = found
    assert column == x
    assert painted.shape == img.shape[:2]  # gray
    words = [w.text for w in OcrEngine().read(painted)]
    assert words == ["ACME", "8"]


@pytest.mark.parametrize("text", ["ACME 1", "Wayne Ltd", "Kappa (UK)", "Jig"])
def test_no_caret_means_no_painting_even_after_thin_or_tall_glyphs(text: str) -> None:
    img, _ = field(text, caret=False)
    assert without_caret(img) is None


@pytest.mark.parametrize("text", ["Kappa (UK)", "Jig", "total 7"])
def test_the_caret_is_found_after_descenders_and_brackets_too(text: str) -> None:
    img, x = field(text, caret=True, gap=2)
    found = without_caret(img)
    assert found is not None and found[1] == x


def test_a_field_without_text_has_nothing_to_paint() -> None:
    img, _ = field("", caret=True)
    assert without_caret(img) is None


@pytest.mark.parametrize("shown", ["Acmel", "AcmeI", "Carmel", "acmej", "annaj"])
@pytest.mark.parametrize("caret", [False, True])
def test_a_real_trailing_l_or_i_is_never_painted_so_readback_never_passes_on_it(shown: str, caret: bool) -> None:
    from openadapt_flow.verify.screen import ScreenChecks

    typed = shown[:-1]
    before, _ = field("", caret=False)
    after, _ = field(shown, caret=caret)
    check = ScreenChecks(OcrEngine(), {}).readback(after, before, typed, (0, 0, 300, 64))
    assert not check.ok, check.detail  # the field holds one letter more than was typed
    img, _ = field(shown, caret=False)
    assert without_caret(img) is None  # an l or I stands on the baseline, a j's dot stands apart: no caret there
