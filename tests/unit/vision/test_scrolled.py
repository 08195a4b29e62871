"""Is a field's text scrolled (`vision.scrolled`)? Entries drawn with a real TrueType font (DejaVu Sans, PIL): a GTK-like
entry clips its text at its padding, 8 px inside its border. Scrolled to the end of "Katherine Johnson", the K is
cut at the padding and the caret stands at the text area's right edge; "atherine Johnson" (the K lost) shows whole,
from the padding, with room to spare on the right. And the real entry: zenity's (GTK 3) at GDK_DPI_SCALE=1.25, cut
from the corpus's halt frame (tests/data/scrolled/gtk-zenity-entry-scale125.png; the entry's face at 85,10 160x26)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.vision.scrolled import scrolled
from tests.unit.vision.entries import PAD, SHORT, VALUE, cut_width, entry, font

pytestmark = pytest.mark.timeout(30)
GTK = Path(__file__).resolve().parents[2] / "data" / "scrolled" / "gtk-zenity-entry-scale125.png"
GTK_FACE = (85, 10, 160, 26)  # inside the entry's 2 px focus ring, as the readback reads it (FACE_INSET)


@pytest.mark.parametrize("px", [13, 15, 18, 22])
@pytest.mark.parametrize("caret", [True, False], ids=["caret", "caret-blinked-off"])
def test_a_value_scrolled_to_its_end_inside_the_padding_is_scrolled(px, caret):
    face = entry(VALUE, cut_width(px), px, caret)
    assert face[:, PAD].min() < 128, "the K is cut at the padding"  # the drawing is what the test says
    assert scrolled(face)
    assert scrolled(np.stack([255 - face] * 3, axis=-1)), "dark theme: light text on a dark face"


@pytest.mark.parametrize("px", [13, 15, 18, 22])
@pytest.mark.parametrize("caret", [True, False], ids=["caret", "caret-blinked-off"])
def test_a_value_typed_short_by_its_first_letter_shows_whole_with_room_to_spare(px, caret):
    face = entry(SHORT, cut_width(px), px, caret)
    assert face[:, PAD].min() > 128, "not cut: 'a' starts at the padding"
    assert not scrolled(face)


def test_a_value_shown_whole_in_a_wide_field_is_not_scrolled():
    assert not scrolled(entry(VALUE, 300))


@pytest.mark.parametrize("align", ["centre", "right"])
def test_a_value_centred_or_aligned_right_is_not_taken_for_a_scrolled_one(align):
    assert not scrolled(entry(SHORT, cut_width(15) + 60, align=align))


def test_a_whole_stem_at_the_padding_is_not_taken_for_a_cut():
    """A value that fills its field exactly, starting with an upright stem: a stem cut by the edge or not looks the
    same, so it is refused."""
    text = "hmed Khan-Johnson"
    face = entry(text, round(font(15).getlength(text)) + 3 + 2 * PAD)
    assert not scrolled(face)


def test_ink_at_the_faces_very_edge_is_a_cut_a_margin_is_not():
    """A field with no padding (a Qt table cell's editor) cuts its text at its face's edge."""
    face = np.full((18, 80, 3), 255, np.uint8)
    face[4:14, 3:9] = 20
    assert not scrolled(face)
    face[4:14, 0:2] = 20
    assert scrolled(face)


def test_a_fields_outline_at_the_faces_edge_is_not_a_cut():
    face = entry(VALUE, 300)
    face[:, 0] = 120  # the border's inner shade caught in the face
    assert not scrolled(face)


def test_the_gtk_entry_scrolled_at_scale_1_25_is_scrolled_and_not_once_its_cut_k_is_gone():
    x, y, w, h = GTK_FACE
    face = np.asarray(Image.open(GTK).convert("RGB"))[y : y + h, x : x + w].copy()
    assert scrolled(face)
    face[:, :12] = 255  # the K's remains painted out: 'atherine' starts 7 px further in than the caret's gap
    assert not scrolled(face)
