"""vision.mask: the band text typed at a point shows in, and painting boxes over (idempotent, clipped, OCR-proof)."""

import numpy as np
import pytest

from openadapt_flow.vision.mask import WHOLE_FRAME, field_band, paint_over
from openadapt_flow.vision.ocr import OcrEngine
from tests.support.screens import Canvas

pytestmark = pytest.mark.timeout(60)


def test_field_band_is_generous_to_the_right_scales_and_holds_the_target_box():
    assert field_band((300, 100)) == (100, 70, 600, 60)
    assert field_band((300, 100), scale=(2.0, 2.0)) == (-100, 40, 1200, 120)
    x, y, w, h = field_band((300, 100), target=(250, 20, 100, 200))
    assert (x, y) == (100, 14) and x + w == 700 and y + h == 226


def test_painted_text_is_not_read_and_the_rest_of_the_frame_is_untouched():
    frame = Canvas().text(20, 20, "Ledger").text(100, 200, "Zanzibar Quokka").array()
    ocr = OcrEngine()
    assert ocr.find(frame, "Zanzibar Quokka")
    box = field_band((150, 212))
    out = paint_over(frame, [box])
    assert not ocr.find(out, "Zanzibar Quokka") and ocr.find(out, "Ledger")
    assert np.array_equal(out[:60], frame[:60])  # outside the box: the same pixels
    assert np.array_equal(paint_over(out, [box]), out)  # idempotent
    assert np.array_equal(frame, Canvas().text(20, 20, "Ledger").text(100, 200, "Zanzibar Quokka").array())  # a copy


def test_whole_frame_and_boxes_outside_the_frame():
    frame = Canvas(64, 48).text(2, 2, "x").array()
    assert np.array_equal(paint_over(frame, [(500, 500, 10, 10)]), frame)
    whole = paint_over(frame, [WHOLE_FRAME])
    assert whole.shape == frame.shape and len(np.unique(whole.reshape(-1, 3), axis=0)) == 1
