"""Reading back text typed at the caret of a document's page: the caret is where a click below the text put it,
lines above the click, so the typed line is looked for where the page changed, not only in the band around the
click."""

from __future__ import annotations

import pytest

from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.mask import field_band
from openadapt_flow.vision.ocr import OcrEngine
from tests.unit.record.test_mpad_blank_click import CLICK, editor

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def checks() -> ScreenChecks:
    return ScreenChecks(OcrEngine(), {})


def test_text_appended_on_the_last_line_of_a_page_is_read_back_where_it_went(checks: ScreenChecks) -> None:
    before, after = editor(["Shopping list"]), editor(["Shopping list", "Call the bank"])
    check = checks.readback(after, before, "Call the bank", field_band(CLICK), CLICK, append=True)
    assert check.ok, check.detail
    x, y, w, h = check.evidence["at"]
    assert y + h < CLICK[1] - 100  # found on the line above, far from the click


def test_a_page_that_did_not_change_reads_nothing_back_even_if_it_holds_the_text(checks: ScreenChecks) -> None:
    page = editor(["Shopping list", "Call the bank"])  # the value was there already; the typing went nowhere
    check = checks.readback(page, page.copy(), "Call the bank", field_band(CLICK), CLICK, append=True)
    assert not check.ok, check.detail
