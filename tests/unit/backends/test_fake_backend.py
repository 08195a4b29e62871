"""The in-package fake: records inputs, swaps screens, fails on demand."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.errors import BackendTimeout, ConnectionFailed, UsageError

pytestmark = pytest.mark.timeout(60)


def screen(value: int) -> np.ndarray:
    return np.full((20, 30, 3), value, np.uint8)


def test_is_a_backend_and_captures_a_copy() -> None:
    fake = FakeBackend(screen(1))
    assert isinstance(fake, Backend)
    frame = fake.capture()
    assert (frame.width, frame.height) == (30, 20)
    frame.pixels[:] = 9
    assert fake.capture().pixels.max() == 1


def test_records_every_input_as_a_tuple() -> None:
    fake = FakeBackend(screen(0))
    fake.click(1, 2)
    fake.click(3, 4, "right")
    fake.click(5, 6, count=2)
    fake.type_text("Café")
    fake.press(["ctrl", "a"])
    fake.scroll(7, 8, -3)
    fake.drag(1, 2, 3, 4)
    assert fake.events == [
        ("click", 1, 2, "left", 1),
        ("click", 3, 4, "right", 1),
        ("click", 5, 6, "left", 2),
        ("type", "Café"),
        ("press", ("ctrl", "a")),
        ("scroll", 7, 8, -3),
        ("drag", 1, 2, 3, 4),
    ]


def test_on_event_can_change_the_screen_and_wait_for_update_reports_it() -> None:
    def react(backend: FakeBackend, event: tuple) -> None:
        if event[0] == "click":
            backend.set_frame(screen(200))

    fake = FakeBackend(screen(0), on_event=react)
    fake.capture()
    assert fake.wait_for_update(5) is False
    fake.type_text("x")
    assert fake.wait_for_update(5) is False
    fake.click(1, 1)
    assert fake.wait_for_update(5) is True
    assert fake.wait_for_update(5) is False  # an update is reported once, as a live backend does
    assert fake.capture().pixels.max() == 200
    assert fake.wait_for_update(5) is False


def test_fail_next_raises_once() -> None:
    fake = FakeBackend(screen(0))
    fake.fail_next = ConnectionFailed("lost")
    with pytest.raises(ConnectionFailed, match="lost"):
        fake.click(1, 1)
    fake.click(1, 1)
    fake.fail_next = BackendTimeout("slow")
    with pytest.raises(BackendTimeout):
        fake.capture()
    assert fake.events == [("click", 1, 1, "left", 1)]


def test_bad_input_is_refused() -> None:
    fake = FakeBackend(screen(0))
    with pytest.raises(UsageError):
        fake.press(["hyper"])
    with pytest.raises(UsageError):
        fake.click(1, 1, "fourth")
    with pytest.raises(ValueError):
        FakeBackend(np.zeros((4, 4), np.uint8))
    assert fake.events == []


def test_closed_fake_raises_connection_failed() -> None:
    fake = FakeBackend(screen(0))
    fake.close()
    fake.close()
    with pytest.raises(ConnectionFailed):
        fake.capture()
