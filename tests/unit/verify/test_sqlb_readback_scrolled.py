"""A Qt table cell's editor too narrow for the value typed into it scrolls to the end it was typed at: it shows
"erine Johnson" for "Katherine Johnson". The readback accepts the value's end when it shows most of it, and only then."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.verify.readback import shows

pytestmark = pytest.mark.timeout(10)


@pytest.mark.parametrize("read", ["rine johnson]", "erine Johnson", "|therine Johnson", "prine Johnson"])
def test_an_editor_scrolled_to_the_values_end_shows_it(read):
    assert shows("Katherine Johnson", read, scrolled=True)


@pytest.mark.parametrize("read", ["erine Johnson", "atherine Johnson"])
def test_a_field_showing_its_text_whole_must_show_all_of_the_value(read):
    # not cut at its left edge: the start is missing from the field itself (a key lost), not scrolled out of view
    assert not shows("Katherine Johnson", read)


def test_a_misread_first_letter_of_a_value_shown_whole_is_not_a_cut_glyph():
    assert not shows("Carol Nguyen", "2arol Nguyen]", scrolled=True)


@pytest.mark.parametrize(
    "read",
    [
        "Johnson",  # too little of the value: any Johnson
        "erine Jonson",  # not its end
        "rine Johnsen",
        "erine Johnson Jr",  # more than the value
    ],
)
def test_a_read_that_is_not_most_of_the_values_end_does_not(read):
    assert not shows("Katherine Johnson", read, scrolled=True)


def test_a_short_value_is_never_matched_by_its_end():
    assert not shows("West", "est", scrolled=True) and not shows("East", "ast", scrolled=True)


def test_appending_keeps_its_own_rule():
    assert not shows("Katherine Johnson", "erine Johnson", append=True, scrolled=True)


def test_a_glyph_cut_by_the_fields_left_edge_is_told_from_a_margin():
    from openadapt_flow.vision.scrolled import scrolled

    face = np.full((18, 80, 3), 255, np.uint8)
    face[4:14, 3:9] = 20  # a glyph after the field's margin
    assert not scrolled(face)
    face[4:14, 0:2] = 20  # the remains of one the edge cut
    assert scrolled(face)
