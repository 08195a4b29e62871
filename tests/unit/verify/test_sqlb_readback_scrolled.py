"""A Qt table cell's editor too narrow for the value typed into it scrolls to the end it was typed at: it shows
"erine Johnson" for "Katherine Johnson". The readback accepts the value's end when it shows most of it, and only then."""

from __future__ import annotations

import pytest

from openadapt_flow.verify.readback import shows

pytestmark = pytest.mark.timeout(10)


@pytest.mark.parametrize("read", ["rine johnson]", "erine Johnson", "|therine Johnson"])
def test_an_editor_scrolled_to_the_values_end_shows_it(read):
    assert shows("Katherine Johnson", read)


@pytest.mark.parametrize("read", [
    "Johnson",  # too little of the value: any Johnson
    "erine Jonson",  # not its end
    "rine Johnsen",
    "erine Johnson Jr",  # more than the value
])
def test_a_read_that_is_not_most_of_the_values_end_does_not(read):
    assert not shows("Katherine Johnson", read)


def test_a_short_value_is_never_matched_by_its_end():
    assert not shows("West", "est") and not shows("East", "ast")


def test_appending_keeps_its_own_rule():
    assert not shows("Katherine Johnson", "erine Johnson", append=True)
