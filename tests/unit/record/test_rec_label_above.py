"""A field whose label stands above it, not left of it (Poedit's "Translation" bar over its translation pane, GTK and
web forms), is found by that label (record/label.py): its target is the label and the field's top under it, not
the whole empty pane (at scale 1.25 the pane kept the window's width while its contents grew: no scale of the
whole pane fitted, a halt). A word that does not start where the field starts (a list's column header over the
field's middle) is no label."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.record.label import label_above
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(90)
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
PLAIN = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
PANE = (10, 250, 600, 120)  # x, y, w, h: the empty multi-line pane
CLICK = (300, 310)


def editor(typed: str = "", header_left: int = 320) -> np.ndarray:
    im = Image.new("RGB", (1024, 768), (246, 246, 246))
    d = ImageDraw.Draw(im)
    d.text((20, 20), "Source text", font=ImageFont.truetype(PLAIN, 14), fill=(16, 16, 16))
    d.text((header_left, 20), "Translation French", font=ImageFont.truetype(PLAIN, 14), fill=(16, 16, 16))
    d.text((20, 60), "Open patient file", font=ImageFont.truetype(PLAIN, 14), fill=(16, 16, 16))
    d.rectangle([10, 218, 610, 246], fill=(236, 236, 236), outline=(200, 200, 200))  # the pane's title bar
    d.text((16, 222), "Translation", font=ImageFont.truetype(BOLD, 17), fill=(40, 40, 40))
    x, y, w, h = PANE
    d.rectangle([x, y, x + w, y + h], fill=(255, 255, 255), outline=(180, 180, 180))
    if typed:
        d.text((x + 6, y + 6), typed, font=ImageFont.truetype(PLAIN, 14), fill=(16, 16, 16))
    return np.array(im)


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def test_a_pane_labelled_above_is_found_by_its_label_and_top(tmp_path: Path, ocr: OcrEngine) -> None:
    f0, f1 = editor(), editor("Ouvrir le dossier")
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[
            Batch(
                before=f0,
                lead=[Gesture("press", *CLICK, key="click"), Gesture("click", *CLICK)],
                edits=[Gesture("key", key=c, char=c) for c in "Ouvrir le dossier"],
                after=f1,
            ),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "po", ocr, examples={"translation": "Ouvrir le dossier"})
    target = out.steps[0]["target"]
    assert target.get("text") == "Translation", target  # on main: no text (the whole pane, "no text on it")
    x, y, w, h = target["region"]
    assert y < 224 and y + h < PANE[1] + PANE[3], target  # the label's bar and the pane's top, not its whole face
    assert (x + target["point"][0], y + target["point"][1]) == CLICK  # the click where it was


def _word_over_pane(x: int) -> np.ndarray:
    im = Image.new("RGB", (1024, 768), (246, 246, 246))
    d = ImageDraw.Draw(im)
    d.text((x, 224), "Comment", font=ImageFont.truetype(PLAIN, 18), fill=(16, 16, 16))
    px, py, pw, ph = PANE
    d.rectangle([px, py, px + pw, py + ph], fill=(255, 255, 255), outline=(180, 180, 180))
    return np.array(im)


def test_only_a_word_starting_where_the_field_starts_labels_it(ocr: OcrEngine) -> None:
    label = label_above(_word_over_pane(14), PANE, ocr)
    assert label is not None and label.text == "Comment"
    assert label_above(_word_over_pane(300), PANE, ocr) is None  # over the field's middle: a header, not its label


def test_the_cell_above_a_tables_cell_is_no_label(ocr: OcrEngine) -> None:
    """A new row's empty cell under another row's "Alan": that word is data, not the cell's label (DB Browser's
    NULL cells got "Alan NULL Turi" as their text before this rule, and lost their column header)."""
    im = Image.new("RGB", (1024, 768), (246, 246, 246))
    d = ImageDraw.Draw(im)
    for row, text in ((0, "Alan"), (1, "")):
        y = 200 + 32 * row
        d.rectangle([100, y, 300, y + 31], fill=(255, 255, 255), outline=(200, 200, 200))
        if text:
            d.text((106, y + 6), text, font=ImageFont.truetype(PLAIN, 18), fill=(16, 16, 16))
    frame = np.array(im)
    cell = (101, 233, 199, 30)
    assert label_above(frame, cell, ocr) is None


def test_a_menu_bar_over_a_field_is_no_label(ocr: OcrEngine) -> None:
    """galculator's display under its menu bar: File, Edit, View set apart name menus, not the display (the display's
    param was named `file_edit` and its target took in the menu bar before this rule)."""
    im = Image.new("RGB", (1024, 768), (246, 246, 246))
    d = ImageDraw.Draw(im)
    for x, word in ((14, "File"), (70, "Edit"), (126, "View"), (186, "Help")):
        d.text((x, 222), word, font=ImageFont.truetype(PLAIN, 18), fill=(16, 16, 16))
    px, py, pw, ph = PANE
    d.rectangle([px, py, px + pw, py + ph], fill=(255, 255, 255), outline=(180, 180, 180))
    assert label_above(np.array(im), PANE, ocr) is None
