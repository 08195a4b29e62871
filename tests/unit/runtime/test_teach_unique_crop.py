"""Teaching by a point on an ambiguous halt: the crop must tell the look-alikes apart, or the patch halts again."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from openadapt_flow.errors import UsageError
from openadapt_flow.runtime.operate.teach import LOOKALIKE, unique_crop_box
from tests.support.screens import Canvas


def matches(frame: np.ndarray, box: tuple[int, int, int, int]) -> int:
    """How many places on the frame match the crop at `box` at least as well as a look-alike would."""
    x, y, w, h = box
    gray = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    res = cv2.matchTemplate(gray, gray[y : y + h, x : x + w], cv2.TM_CCOEFF_NORMED)
    peaks = 0
    while res.max() >= LOOKALIKE:
        py, px = np.unravel_index(int(res.argmax()), res.shape)
        res[max(0, py - 4) : py + 5, max(0, px - 4) : px + 5] = -1.0
        peaks += 1
    return peaks


def test_a_point_on_one_of_two_identical_buttons_teaches_a_crop_that_holds_what_tells_them_apart():
    frame = (
        Canvas()
        .button(40, 90, "Save", w=120)
        .text(170, 98, "draft")
        .button(40, 290, "Save", w=120)
        .text(170, 298, "final")
        .array()
    )
    lower = (100, 310)
    box = unique_crop_box(frame, lower, (120, 40))
    x, y, w, h = box
    assert x <= lower[0] < x + w and y <= lower[1] < y + h
    assert (w, h) != (120, 40)  # the recorded size alone holds only the button, the same twice
    assert matches(frame, box) == 1
    assert matches(frame, (lower[0] - 60, lower[1] - 20, 120, 40)) == 2  # what the old cut taught


def test_a_unique_target_keeps_its_recorded_size():
    frame = Canvas().text(40, 40, "Ledger").button(300, 300, "Submit", w=140).array()
    assert unique_crop_box(frame, (370, 320), (140, 40)) == (300, 300, 140, 40)


def test_a_point_whose_crop_is_ambiguous_up_to_the_whole_frame_is_refused():
    tile = np.zeros((40, 40, 3), np.uint8)
    tile[10:30, 10:30] = 255
    frame = np.tile(tile, (6, 6, 1))  # a pattern that repeats everywhere
    frame = np.concatenate([frame, frame], axis=1)  # ...and the frame is itself two identical halves
    with pytest.raises(UsageError, match="no crop around it up to half the halt frame is unique"):
        unique_crop_box(frame, (20, 20), (40, 40))
