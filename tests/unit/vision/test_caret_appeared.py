"""A caret new in a clicked field (the field took the keys) is told from what else a click repaints."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.vision.caret import caret_appeared

pytestmark = pytest.mark.timeout(30)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
BOX = (0, 0, 300, 64)


def window(
    text: str = "",
    *,
    caret_at: int | None = None,
    ring: bool = False,
    fill=(255, 255, 255),
    ink=(16, 16, 16),
    serifs: bool = False,
) -> np.ndarray:
    """An outlined entry holding `text`; a 2 px caret (or an I-beam pointer with serifs) at x=`caret_at`; a
    focus ring around the entry."""
    im = Image.new("RGB", (300, 64), (244, 244, 244))
    d = ImageDraw.Draw(im)
    d.rectangle(
        [10, 10, 289, 53], fill=fill, outline=(40, 90, 200) if ring else (112, 112, 112), width=2 if ring else 1
    )
    d.text((20, 20), text, font=ImageFont.truetype(DEJAVU, 20), fill=ink)
    if caret_at is not None:
        d.rectangle([caret_at, 18, caret_at + 1, 44], fill=(16, 16, 16))
        if serifs:
            d.rectangle([caret_at - 3, 18, caret_at + 4, 19], fill=(16, 16, 16))
            d.rectangle([caret_at - 3, 43, caret_at + 4, 44], fill=(16, 16, 16))
    return np.array(im)


def test_a_caret_that_appears_in_an_empty_field_is_seen() -> None:
    assert caret_appeared(window(), window(caret_at=22), BOX)


def test_a_caret_that_appears_with_a_focus_ring_is_seen() -> None:
    assert caret_appeared(window(), window(caret_at=22, ring=True), BOX)


def test_a_caret_after_text_is_seen() -> None:
    assert caret_appeared(window("ACME"), window("ACME", caret_at=90), BOX)


def test_nothing_changed_is_not_a_caret() -> None:
    assert not caret_appeared(window("ACME"), window("ACME"), BOX)


def test_a_caret_already_there_is_not_new() -> None:
    assert not caret_appeared(window(caret_at=22), window(caret_at=22), BOX)


def test_a_new_word_is_not_a_caret_though_its_ls_are_bars() -> None:
    assert not caret_appeared(window(), window("all ill"), BOX)


def test_a_selection_recolouring_the_text_is_not_a_caret() -> None:
    before = window("Ill", fill=(255, 255, 255), ink=(16, 16, 16))
    after = window("Ill", fill=(40, 90, 200), ink=(255, 255, 255))
    assert not caret_appeared(before, after, BOX)


def test_a_focus_ring_alone_is_not_a_caret() -> None:
    assert not caret_appeared(window("ACME"), window("ACME", ring=True), BOX)


def test_an_i_beam_pointer_is_not_a_caret() -> None:
    assert not caret_appeared(window(), window(caret_at=40, serifs=True), BOX)


def test_a_bar_cut_by_the_box_edge_is_not_taken_for_a_caret() -> None:
    assert not caret_appeared(window(), window(caret_at=22), (0, 30, 300, 34))


def test_frames_of_different_sizes_are_no_evidence() -> None:
    assert not caret_appeared(window(), window(caret_at=22)[:, :200], BOX)
