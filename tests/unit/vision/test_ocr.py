"""OCR: real Tesseract on rendered text, and the phrase search on hand-made word lists."""

from __future__ import annotations

import os

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.errors import FlowError
from openadapt_flow.vision.ocr import (
    OcrEngine,
    OcrError,
    OcrUnavailable,
    Word,
    find_text,
    local_contrast,
    median_background,
    normalise,
    phrases,
)

pytestmark = pytest.mark.timeout(60)

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def font(px: int = 15) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.truetype(DEJAVU, px) if os.path.exists(DEJAVU) else ImageFont.load_default(size=px)


def render(items: list[tuple[str, int, int]], size: tuple[int, int] = (800, 400), button: bool = False) -> np.ndarray:
    im = Image.new("RGB", size, (240, 240, 240))
    d = ImageDraw.Draw(im)
    for text, x, y in items:
        if button:
            w = d.textlength(text, font=font()) + 24
            d.rounded_rectangle([x - 12, y - 6, x - 12 + w, y + 24], radius=5, fill=(60, 120, 200))
        d.text((x, y), text, font=font(), fill=(255, 255, 255) if button else (20, 20, 20))
    return np.array(im)


def ink(text: str, x: int, y: int) -> tuple[int, int, int, int]:
    l, t, r, b = ImageDraw.Draw(Image.new("RGB", (1, 1))).textbbox((x, y), text, font=font())
    return (int(l), int(t), int(r - l), int(b - t))


@pytest.fixture(scope="module")
def engine() -> OcrEngine:
    return OcrEngine()


def close(a: tuple[int, int, int, int], b: tuple[int, int, int, int], tol: int = 3) -> bool:
    return all(abs(p - q) <= tol for p, q in zip(a, b))


def test_reads_sparse_ui_words_with_boxes(engine: OcrEngine) -> None:
    img = render([("Vendor", 40, 40), ("Amount", 400, 200), ("Invoices", 600, 350)])
    words = {w.text: w for w in engine.read(img)}
    assert {"Vendor", "Amount", "Invoices"} <= set(words)
    assert close(words["Amount"].box, ink("Amount", 400, 200))
    assert words["Vendor"].conf > 60


def test_boxes_of_a_sub_box_are_in_frame_coordinates(engine: OcrEngine) -> None:
    img = render([("Vendor", 40, 40), ("Amount", 400, 200)])
    words = engine.read(img, box=(350, 170, 200, 80))
    assert [w.text for w in words] == ["Amount"]
    assert close(words[0].box, ink("Amount", 400, 200))


def test_reads_white_text_on_a_coloured_button(engine: OcrEngine) -> None:
    img = render([("Save", 100, 100), ("Cancel", 300, 100)], button=True)
    found = engine.find(img, "Cancel")
    assert len(found) == 1 and close(found[0].box, ink("Cancel", 300, 100))
    assert engine.find(img, "Save")


def test_finds_a_multi_word_phrase(engine: OcrEngine) -> None:
    img = render([("New invoice", 100, 100), ("Old invoice", 100, 250)])
    found = engine.find(img, "new  INVOICE")
    assert len(found) == 1
    assert found[0].score == pytest.approx(100)
    assert close(found[0].box, ink("New invoice", 100, 100), tol=4)


def test_finds_every_occurrence(engine: OcrEngine) -> None:
    img = render([("Amount", 100, 100), ("Amount", 500, 300)])
    found = engine.find(img, "Amount")
    expected = [ink("Amount", 100, 100)[0], ink("Amount", 500, 300)[0]]
    assert sorted(m.box[0] for m in found) == pytest.approx(expected, abs=3)


def test_missing_binary_is_a_flow_error_with_install_hint() -> None:
    with pytest.raises(OcrUnavailable) as e:
        OcrEngine(cmd="/nonexistent/tesseract")
    assert isinstance(e.value, FlowError)
    assert "apt-get install tesseract-ocr" in str(e.value)


def test_local_contrast_makes_both_polarities_dark_on_white() -> None:
    img = np.full((40, 80), 110, np.uint8)
    img[10:30, 10:14] = 255  # light stroke on dark
    img[10:30, 50:54] = 0  # dark stroke on the same background
    out = local_contrast(img)
    assert out[20, 12] < 60 and out[20, 52] < 60 and out[5, 30] > 240


def w(text: str, x: int, y: int, width: int = 40, h: int = 12, conf: float = 90) -> Word:
    return Word(text, conf, (x, y, width, h))


def test_phrases_group_words_on_a_line_and_split_at_wide_gaps() -> None:
    words = [w("invoice", 150, 101), w("New", 100, 100), w("Delete", 400, 100), w("Total", 100, 200)]
    groups = [[x.text for x in g] for g in phrases(words)]
    assert ["New", "invoice"] in groups and ["Delete"] in groups and ["Total"] in groups


def test_find_text_joins_words_and_unions_boxes() -> None:
    found = find_text([w("New", 100, 100, 30), w("invoice", 136, 102, 50)], "New invoice")
    assert len(found) == 1 and found[0].box == (100, 100, 86, 14)


def test_find_text_ignores_case_and_edge_punctuation() -> None:
    assert normalise("  Vendor: ") == "vendor"
    assert find_text([w("VENDOR:", 0, 0)], "Vendor")


def test_short_words_need_an_exact_read() -> None:
    assert not find_text([w("Saved", 0, 0)], "Save")
    assert not find_text([w("Send", 0, 0)], "Save")
    assert find_text([w("Save", 0, 0)], "Save")


def test_longer_words_tolerate_one_ocr_slip() -> None:
    assert find_text([w("lnvoices", 0, 0)], "Invoices")
    assert not find_text([w("Involved", 0, 0)], "Invoices")


def test_find_text_returns_non_overlapping_spans_best_first() -> None:
    words = [w("Amount", 0, 0), w("Amount", 300, 0), w("Amount", 0, 100)]
    found = find_text(words, "Amount")
    assert len(found) == 3


def test_tesseract_merged_words_still_match() -> None:
    assert find_text([w("Newinvoice", 0, 0)], "New invoice")


@pytest.mark.parametrize("k", [3, 11, 21])
def test_median_background_equals_the_full_median_filter(k: int) -> None:
    rng = np.random.default_rng(k)
    img = np.full((200, 300), 240, np.uint8)
    img[20:60, 10:290] = rng.integers(0, 255, (40, 280), dtype=np.uint8)  # texture across a band
    img[120:125, 0:300] = 30  # a rule touching both edges
    img[150:190, 250:300] = 90  # a block in the corner
    img[0:3, 100:110] = 0  # marks on the top border
    assert np.array_equal(median_background(img, k), cv2.medianBlur(img, k))


def test_in_process_library_reads_exactly_what_the_command_reads() -> None:
    try:
        lib = OcrEngine(backend="library")
    except OcrUnavailable:
        pytest.skip("libtesseract is not loadable here")
    img = render([("Save invoice", 40, 40), ("Vendor", 40, 120), ("Amount due", 300, 120)])
    assert lib.backend == "library" and OcrEngine(backend="cli").backend == "cli"
    for box in (None, (20, 20, 300, 150)):
        assert lib.read(img, box) == OcrEngine(backend="cli").read(img, box)


def test_a_second_read_of_the_same_pixels_is_served_from_the_cache(engine: OcrEngine) -> None:
    img = render([("Save", 40, 40)])
    engine.clear_cache()
    calls = engine.calls
    first = engine.read(img)
    assert engine.read(img.copy()) == first and engine.calls == calls + 1  # same content, another array
    img[45, 45] = (0, 0, 0) if img[45, 45].sum() else (255, 255, 255)
    engine.read(img)
    assert engine.calls == calls + 2  # one changed pixel is another read


def test_read_many_answers_an_inner_box_from_the_outer_read(engine: OcrEngine) -> None:
    img = render([("Vendor", 40, 40), ("Amount", 400, 200), ("Invoices", 600, 350)])
    inner, outer = (380, 185, 120, 40), (300, 150, 450, 240)
    engine.clear_cache()
    calls = engine.calls
    engine.read_many(img, [inner, outer])
    assert engine.calls == calls + 1  # one Tesseract call for both areas
    assert [w.text for w in engine.read(img, inner)] == ["Amount"]  # only the words wholly inside
    assert {w.text for w in engine.read(img, outer)} == {"Amount", "Invoices"}
    assert engine.calls == calls + 1  # both answered from the cache
    engine.read_many(img, [None, inner])  # the whole image is read once and serves the box too
    assert engine.calls == calls + 2
    engine.clear_cache()
    alone = engine.read(img, inner)
    assert [w.text for w in alone] == ["Amount"]  # what a read of the box alone finds


def bold_title(text: str) -> np.ndarray:
    """A bold 26 px title, strokes wider than local_contrast's median window (they come out hollow)."""
    im = Image.new("RGB", (420, 120), (244, 244, 244))
    bold = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
    f = ImageFont.truetype(bold, 26) if os.path.exists(bold) else font(26)
    ImageDraw.Draw(im).text((30, 40), text, font=f, fill=(16, 16, 16))
    return np.array(im)


def test_a_hollow_bold_title_is_read_again_before_it_counts_as_missing(engine: OcrEngine) -> None:
    img = bold_title("Invoices")
    engine.clear_cache()
    first = [w.text for w in engine.read(img)]
    assert first != ["Invoices"]  # the hollow first reading this test is about
    found = engine.find(img, "Invoices")
    assert found and found[0].text == "Invoices"
    assert [w.text for w in engine.read_closely(img, like="Invoices")] == ["Invoices"]
    calls = engine.calls
    assert engine.find(img, "Invoices")  # the second look is remembered
    assert engine.calls == calls


def test_read_many_reads_overlapping_areas_once_and_far_ones_apart(engine: OcrEngine) -> None:
    img = render([("Vendor", 40, 40), ("Amount", 400, 200), ("Invoices", 600, 350)])
    engine.clear_cache()
    calls = engine.calls
    left, overlapping, far = (20, 20, 140, 60), (60, 25, 140, 60), (580, 330, 150, 60)
    engine.read_many(img, [left, overlapping, far])
    assert engine.calls == calls + 2  # left+overlapping as one union, far on its own
    assert [w.text for w in engine.read(img, left)] == ["Vendor"]
    assert [w.text for w in engine.read(img, far)] == ["Invoices"]
    assert [w.text for w in engine.read(img, overlapping)] == ["Vendor"]  # it reaches into it: it counts, whole
    assert engine.calls == calls + 2


def test_a_model_that_fails_to_load_in_the_background_leaves_the_command_to_read() -> None:
    """ "auto" loads the language model off the caller's path; when that fails (a language not installed), the
    engine falls back to the command, found at start, as it did when the model loaded up front."""
    engine = OcrEngine(lang="zzz-not-installed")
    assert engine.backend == "cli" and engine.cmd is not None
    with pytest.raises(OcrError):
        engine.read(render([("Save", 40, 40)]))


def test_a_read_waits_for_the_model_loading_in_the_background() -> None:
    engine = OcrEngine()  # returns before the model is in; the first read must still see every word
    img = render([("Save invoice", 40, 40)])
    assert [w.text for w in engine.read(img)] == ["Save", "invoice"]
    assert engine.backend == "library"
