"""A resume that can never pass (issue 34, finding 7): the pointer resting on the text a checkpoint's screen fact reads
(left there by a person, or by another run) hides it, so every re-proof of the checkpoint failed, `continue` paused
again and again, and `skip` was not offered. Resume parks the pointer off the screen's text before it reads the screen,
as a fresh run does before its first frame; and when a verified step's screen cannot be re-proved, the operator may
skip it (it is done: the journal says so) rather than loop. On the in-package fake backend."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.act.pointer import PARK_INSET
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.runref import open_ref
from tests.support.screens import Canvas
from tests.unit.runtime.test_engine import OK_BOX, POST, make_bundle

pytestmark = pytest.mark.timeout(120)

TEXT = (100, 196, 200, 32)  # where "Posted ACME" is drawn: the fact `Posted` is read there
CLOSE = {
    "id": "close",
    "action": "click",
    "target": {"text": "Archive"},
    "timeout_s": 0.5,
    "expect": [{"text_present": "Archived"}],
}


@pytest.fixture(autouse=True)
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "decision.key"))
    monkeypatch.chdir(tmp_path)


class Desk:
    """Post shows "Posted ACME"; an Archive button appears once `closable` (the first run halts looking for it) and
    shows "Archived". While the pointer rests on the posted text, its cursor and tooltip hide it; `smudged` hides it
    wherever the pointer is (a screen that cannot show the fact any more)."""

    def __init__(self) -> None:
        self.pointer, self.posted, self.closable, self.closed, self.smudged = (600, 400), False, False, False, False
        self.events: list[tuple] = []
        self.backend = self.connect()

    def connect(self) -> FakeBackend:
        self.backend = FakeBackend(self.look(), self.react)
        self.backend.events = self.events
        return self.backend

    def on_text(self) -> bool:
        x, y, w, h = TEXT
        return x <= self.pointer[0] < x + w and y <= self.pointer[1] < y + h

    def look(self) -> np.ndarray:
        c = Canvas().text(20, 20, "Ledger")
        if not self.posted:
            c.button(100, 100, "Post")
        else:
            c.text(100, 200, "Posted ACME")
        if self.closable:
            c.button(400, 100, "Archive")
        if self.closed:
            c.text(400, 300, "Archived")
        if self.posted and (self.on_text() or self.smudged):  # an I-beam and the field's tooltip over its text
            x, y = self.pointer if self.on_text() else (TEXT[0] + 30, TEXT[1] + 10)
            c.draw.rectangle([x - 40, y - 14, x + 90, y + 16], fill=(255, 255, 200), outline=(0, 0, 0))
            c.draw.rectangle([x - 2, y - 14, x + 2, y + 16], fill=(0, 0, 0))
        return c.array()

    def react(self, fake: FakeBackend, ev: tuple) -> None:
        if ev[0] in ("move", "click"):
            self.pointer = (ev[1], ev[2])
        if ev[0] == "click":
            ox, oy, ow, oh = OK_BOX
            self.posted = self.posted or (ox <= ev[1] < ox + ow and oy <= ev[2] < oy + oh)
            self.closed = self.closed or (self.closable and 400 <= ev[1] < 520 and 100 <= ev[2] < 140)
        self.refresh()

    def refresh(self) -> None:
        self.backend.set_frame(self.look())


def cfg(tmp_path) -> DeployConfig:
    return DeployConfig.model_validate(
        {
            "schema": "openadapt-flow/config@1",
            "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01, "durable": True},
        }
    )


def halted_after_post(tmp_path, desk: Desk):
    """The run posts, then halts looking for Archive (PAUSED); meanwhile the pointer came to rest on the posted text."""
    bundle = make_bundle(tmp_path / "b", [POST, CLOSE])
    out = replay(
        ReplayRequest(
            bundle=bundle,
            params={"vendor": "ACME"},
            backend=BackendSpec(kind="fake"),
            config=cfg(tmp_path),
            run_dir=tmp_path / "run",
        ),
        backend_factory=lambda spec: desk.connect(),
    )
    assert (out.state, out.category) == ("PAUSED", "resolution"), out.message
    desk.pointer, desk.closable = (TEXT[0] + 40, TEXT[1] + 16), True  # someone left the mouse on the text
    desk.refresh()
    return out.run_dir


def test_resume_parks_a_pointer_resting_on_the_checkpoints_text_before_re_proving_it(tmp_path):
    desk = Desk()
    run = halted_after_post(tmp_path, desk)
    approve(run, "continue", "alice")
    out = resume(run, backend_factory=lambda spec: desk.connect())
    assert out.state == "COMPLETED", out.message  # today: PAUSED (postcondition), and again after every `continue`
    assert desk.closed
    recs = open_ref(run).read_records()
    kinds = [r["type"] for r in recs]
    resumed = kinds.index("run_resumed")
    parked = [i for i, k in enumerate(kinds) if k == "pointer_parked" and i > resumed]
    assert parked and parked[0] < kinds.index("checkpoint_reproved")  # moved away before the screen was read
    assert recs[parked[0]]["data"]["at"] == [640 - 1 - PARK_INSET, 240]
    assert next(r for r in recs if r["type"] == "checkpoint_reproved")["data"]["ok"]


def test_a_verified_step_whose_screen_cannot_be_re_proved_may_be_skipped(tmp_path):
    desk = Desk()
    run = halted_after_post(tmp_path, desk)
    desk.smudged = True  # whatever the pointer does, the text stays hidden
    approve(run, "continue", "alice")
    out = resume(run, backend_factory=lambda spec: desk.connect())
    assert (out.state, out.category) == ("PAUSED", "postcondition"), out.message
    pending = open_ref(run).read_pending()
    assert pending is not None and pending["step"] == "post"
    assert "skip" in pending["allowed_decisions"], pending["allowed_decisions"]  # not only `continue`, which loops

    approve(run, "skip", "alice")
    out = resume(run, backend_factory=lambda spec: desk.connect())
    assert out.state == "COMPLETED", out.message
    recs = open_ref(run).read_records()
    assert [r["step"] for r in recs if r["type"] == "step_skipped"] == ["post"]
    assert [r["step"] for r in recs if r["type"] == "action_dispatched"].count("post") == 1  # never posted twice
