"""The wait after a `type` step's click ends early on a quiet screen once the field shows it has the keys."""

from __future__ import annotations

import time

import pytest

from openadapt_flow.runtime.act.settle import settle
from tests.unit.runtime.test_typing_field_ready import SlowApp

pytestmark = pytest.mark.timeout(30)


def test_a_ready_field_ends_the_hold_once_the_screen_is_quiet():
    app = SlowApp(after_s=0.05)  # the caret shows at once
    app.click()
    t = time.monotonic()
    s = settle(app, 0.05, 5, hold_s=2.0, ready=lambda f: f.pixels[0, 0, 0] == 255)  # type: ignore[arg-type]
    assert s.settled and s.frame.pixels[0, 0, 0] == 255
    assert time.monotonic() - t < 1.0  # not the 2 s hold


def test_a_field_not_ready_keeps_the_whole_hold_and_sees_the_delayed_reaction():
    app = SlowApp(after_s=0.3)  # a Qt cell's editor, opened once the double-click interval has passed
    app.click()
    t = time.monotonic()
    s = settle(app, 0.05, 5, hold_s=0.5, ready=lambda f: False)  # type: ignore[arg-type]
    assert s.settled and s.frame.pixels[0, 0, 0] == 255
    assert time.monotonic() - t >= 0.45
