"""Frame differences for settle and region_changed."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.vision.diff import changed_box, changed_fraction, same

pytestmark = pytest.mark.timeout(60)


def frame() -> np.ndarray:
    return np.full((100, 200, 3), 200, np.uint8)


def test_identical_frames_have_not_changed() -> None:
    assert changed_fraction(frame(), frame()) == 0.0
    assert same(frame(), frame(), tol=0.0)
    assert changed_box(frame(), frame()) is None


def test_fraction_counts_pixels_changed_in_any_channel() -> None:
    a, b = frame(), frame()
    b[0:10, 0:20, 2] = 0  # only blue changes, on 200 pixels of 20000
    assert changed_fraction(a, b) == pytest.approx(0.01)
    assert changed_box(a, b) == (0, 0, 20, 10)


def test_small_noise_is_below_the_pixel_tolerance() -> None:
    a, b = frame(), frame()
    b[:, :, 0] += 10
    assert changed_fraction(a, b) == 0.0
    assert changed_fraction(a, b, pixel_tol=5) == 1.0


def test_box_restricts_the_comparison() -> None:
    a, b = frame(), frame()
    b[50:60, 150:160] = 0
    assert changed_fraction(a, b, (0, 0, 100, 100)) == 0.0
    assert changed_fraction(a, b, (150, 50, 10, 10)) == 1.0
    assert changed_fraction(a, b, (140, 40, 20, 20)) == pytest.approx(0.25)
    assert changed_box(a, b, (140, 40, 20, 20)) == (150, 50, 10, 10)
    assert changed_fraction(a, b, (500, 500, 10, 10)) == 0.0  # box off the frame


def test_same_tolerates_a_blinking_caret_but_not_a_dialog() -> None:
    a, b = np.full((1080, 1920, 3), 240, np.uint8), np.full((1080, 1920, 3), 240, np.uint8)
    b[500:518, 700:702] = 0
    assert same(a, b)
    b[300:600, 600:1200] = 30
    assert not same(a, b)


def test_different_sizes_count_as_changed() -> None:
    assert changed_fraction(frame(), np.zeros((50, 50, 3), np.uint8)) == 1.0
    assert not same(frame(), np.zeros((50, 50, 3), np.uint8))


def test_gray_frames_work_too() -> None:
    a = np.zeros((10, 10), np.uint8)
    b = a.copy()
    b[0, 0] = 255
    assert changed_fraction(a, b) == pytest.approx(0.01)
