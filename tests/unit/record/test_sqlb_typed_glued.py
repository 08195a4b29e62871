"""OCR glues a table cell's text to its neighbours (row 3's "Grace ..." reads `3i\\Grace`): the compiler must still
see the typed value in it, or the next cell's target is found by the recorded patient's name."""

from __future__ import annotations

import pytest

from openadapt_flow.record.facts import shows_typed

pytestmark = pytest.mark.timeout(10)
TYPED = {"grace hopper", "grace", "hopper", "east"}


@pytest.mark.parametrize("read", ["3i\\Grace", "Grace", "(Hopper", "3Grace", "GRACE...", "Eastside"])
def test_a_typed_word_glued_to_noise_is_still_the_typed_value(read):
    assert shows_typed(read, TYPED)


@pytest.mark.parametrize("read", ["(NULL", "clinic", "Gra", "North"])
def test_other_words_are_not(read):
    assert not shows_typed(read, TYPED)


def test_a_short_typed_value_counts_only_as_a_whole_word():
    assert shows_typed("12", {"12"}) and not shows_typed("123", {"12"}) and not shows_typed("abc", {"ab"})
