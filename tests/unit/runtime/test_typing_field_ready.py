"""How a `type` step reaches its field: it waits for the click's reaction, delayed ones included, then opens a table
cell's editor (F2) and selects the field's text (End, Shift+Home) before typing (issue 12, finding 5)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from openadapt_flow.backends.base import Capabilities, Frame
from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.runtime.act.settle import settle
from tests.support.screens import Canvas, crop, save_png
from tests.unit.runtime.test_engine import OK_BOX, home, make_bundle, run

pytestmark = pytest.mark.timeout(30)

TYPE_POST = {
    "id": "vendor",
    "action": "type",
    "text": "{vendor}",
    "target": {"template": "templates/post.png", "region": list(OK_BOX)},
}


def typed_screen(fake: FakeBackend, ev: tuple) -> None:
    if ev[0] == "type":
        fake.set_frame(Canvas().text(20, 20, "Ledger").text(100, 100, ev[1]).array())


def test_type_opens_a_cell_editor_then_selects_the_field_then_types(tmp_path):
    """F2 first: in a Qt table that is not editing, End and Shift+Home move the current cell to the row's first
    column and the typed value lands there; F2 opens the clicked cell's editor, and a text field ignores it."""
    fake = FakeBackend(home(), typed_screen)
    out = run_in(tmp_path, fake, [TYPE_POST], {"vendor": "ACME"})
    assert out.state == "COMPLETED", out.message
    kinds = [e for e in fake.events if e[0] not in ("capture", "move")]  # the pointer parked first: no key of the step
    assert kinds[0][0] == "click"
    assert kinds[1:] == [("press", ("f2",)), ("press", ("end",)), ("press", ("shift", "home")), ("type", "ACME")]


def test_append_types_at_the_caret_with_no_selection_keys(tmp_path):
    fake = FakeBackend(home(), typed_screen)
    out = run_in(tmp_path, fake, [dict(TYPE_POST, append=True)], {"vendor": "ACME"})
    assert out.state == "COMPLETED", out.message
    assert [e[0] for e in fake.events if e[0] != "capture"] == ["move", "click", "type"]


def run_in(root, fake, steps, params):
    return run(root, make_bundle(root / "b", steps), fake, params=params)


class SlowApp:
    """A backend whose screen changes once, `after_s` after the first click (as Qt opens an already-selected cell's
    editor only once its double-click interval has passed); its waits block like a live VNC mirror's."""

    name = "slow"
    capabilities = Capabilities(event_driven_updates=True)

    def __init__(self, after_s: float) -> None:
        self.frame = np.zeros((20, 20, 3), np.uint8)
        self.version = self.seen = 0
        self.cond = threading.Condition()
        self.after_s = after_s

    def click(self) -> None:
        threading.Timer(self.after_s, self._change).start()

    def _change(self) -> None:
        with self.cond:
            self.frame = np.full((20, 20, 3), 255, np.uint8)
            self.version += 1
            self.cond.notify_all()

    def capture(self) -> Frame:
        with self.cond:
            self.seen = self.version
            return Frame(self.frame.copy())

    def wait_for_update(self, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.version != self.seen, timeout)


def test_a_reaction_the_toolkit_delays_is_waited_out_before_the_keys():
    app = SlowApp(after_s=0.3)
    app.click()
    t = time.monotonic()
    s = settle(app, 0.05, 5, hold_s=0.5)  # type: ignore[arg-type]
    assert s.settled and s.frame.pixels[0, 0, 0] == 255  # the editor that opened late is on the frame
    assert 0.45 <= time.monotonic() - t < 1.5


def test_without_the_hold_settle_returns_before_the_delayed_reaction():
    app = SlowApp(after_s=0.3)
    app.click()
    s = settle(app, 0.05, 5)  # type: ignore[arg-type]
    assert s.frame.pixels[0, 0, 0] == 0  # what a type step used to send its keys into


def test_a_backend_that_never_blocks_pays_nothing_for_the_hold():
    fake = FakeBackend(home())
    t = time.monotonic()
    settle(fake, 0.05, 5, hold_s=0.5)
    assert time.monotonic() - t < 0.1
