"""The next step's target is resolved during the settle after the step before (runtime/act/ahead.py), on the frame
that settle returns, and the next step uses it only for that very frame: the same resolve, done while the engine
would only wait."""

from __future__ import annotations

import pytest

from openadapt_flow.backends.base import Frame
from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.ladder.ladder import Ladder
from tests.support.screens import Canvas
from tests.unit.runtime.test_engine import POST, home, make_bundle, records, run

pytestmark = pytest.mark.timeout(60)


def posted():
    return Canvas().text(20, 20, "Ledger").button(100, 100, "Post").text(100, 200, "Posted ACME").array()


class Mirror(FakeBackend):
    """Frames shared and read-only until the screen changes, as the VNC backend hands them out."""

    shot: tuple[int, Frame] | None = None

    def capture(self) -> Frame:
        frame = super().capture()
        if self.shot is None or self.shot[0] != self._version:
            frame.pixels.flags.writeable = False
            self.shot = (self._version, frame)
        return self.shot[1]


def _run_counting(tmp_path, monkeypatch, backend):
    calls: list[tuple[str, int]] = []  # (target text, records of step `again` journaled when the resolve ran)
    real = Ladder.resolve

    def counting(self, frame, target, **kw):
        journal = tmp_path / "run" / "journal.jsonl"
        seen = journal.read_text().count('"step":"again"') if journal.exists() else 0
        calls.append((str(target.template), seen))
        return real(self, frame, target, **kw)

    monkeypatch.setattr(Ladder, "resolve", counting)
    steps = [POST, dict(POST, id="again")]
    out = run(tmp_path, make_bundle(tmp_path / "b", steps), backend)
    return out, calls


def test_the_next_target_is_resolved_during_the_settle_and_used_once(tmp_path, monkeypatch):
    fake = Mirror(home(), lambda f, ev: f.set_frame(posted()) if ev[0] == "click" else None)
    out, calls = _run_counting(tmp_path, monkeypatch, fake)
    assert out.state == "COMPLETED", out.message
    assert len(calls) == 2  # step one's, then step two's during step one's settle: not resolved again
    assert calls[1][1] == 0  # before step two began (nothing of it journaled yet)
    again = [r for r in records(tmp_path / "run") if r["step"] == "again"]
    assert [r["type"] for r in again][:2] == ["step_started", "resolved"] and again[1]["data"]["ok"]


def test_a_frame_that_can_change_is_never_resolved_ahead(tmp_path, monkeypatch):
    fake = FakeBackend(home(), lambda f, ev: f.set_frame(posted()) if ev[0] == "click" else None)  # writable copies
    out, calls = _run_counting(tmp_path, monkeypatch, fake)
    assert out.state == "COMPLETED", out.message
    assert len(calls) == 2 and calls[1][1] >= 1  # resolved by step two itself, once it began
