"""Halt-frame annotation draws on a copy, where it was told to."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.vision.annotate import BEST, OTHER, POINT, SEARCH, annotate

pytestmark = pytest.mark.timeout(60)


def test_draws_search_best_point_on_a_copy() -> None:
    frame = np.full((200, 300, 3), 128, np.uint8)
    out = annotate(
        frame, search=(10, 10, 200, 150), best=(50, 60, 40, 20), point=(150, 120), others=[(120, 20, 30, 20)]
    )
    assert (frame == 128).all()  # the input is untouched
    assert out.shape == frame.shape and out.dtype == np.uint8
    assert tuple(out[10, 100]) == SEARCH  # top edge of the search box
    assert tuple(out[60, 70]) == BEST  # top edge of the best candidate
    assert tuple(out[20, 130]) == OTHER
    assert tuple(out[120, 150]) == POINT
    assert tuple(out[100, 100]) == (128, 128, 128)  # inside boxes stays as it was


def test_label_is_drawn_and_non_ascii_is_tolerated() -> None:
    frame = np.full((100, 400, 3), 255, np.uint8)
    out = annotate(frame, label="target \"Enregistrer\" ambiguous — 2 look-alikes")
    assert (out[2:15, 2:100] == 0).any()  # a dark label strip at the top-left


def test_gray_and_rgba_frames_give_rgb() -> None:
    assert annotate(np.zeros((20, 20), np.uint8), best=(1, 1, 5, 5)).shape == (20, 20, 3)
    assert annotate(np.zeros((20, 20, 4), np.uint8)).shape == (20, 20, 3)
