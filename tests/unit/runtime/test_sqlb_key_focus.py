"""A key step (Enter after a click) has no target of its own: its `relative_to: target` areas are placed from where
the step before it found its target, so in a moved window a correct Enter verifies and a wrong place halts."""

import pytest

from openadapt_flow.backends.fake import FakeBackend
from tests.support.screens import Canvas
from tests.unit.runtime.test_engine import OK_BOX, home, key_env, make_bundle, run  # noqa: F401 - key_env is a fixture

pytestmark = pytest.mark.timeout(90)

DX, DY = 300, 200  # the window moved this far since the recording
BELOW = [100, 150, 140, 30]  # where Enter showed "Posted", under the Post button, in the recorded frame


def moved(pressed: bool = False, posted_at: tuple[int, int] | None = None):
    c = Canvas().text(20, 20, "Ledger").button(OK_BOX[0] + DX, OK_BOX[1] + DY, "Post")
    if pressed:
        c = c.text(20, 60, "Ready")
    return (c.text(posted_at[0], posted_at[1], "Posted") if posted_at else c).array()


def steps(**fact):
    return [
        {
            "id": "post",
            "intent": "Post it",
            "action": "click",
            "timeout_s": 1,
            "target": {"template": "templates/post.png", "region": list(OK_BOX), "text": "Post"},
            "expect": [{"text_present": "Ready"}],
        },
        {"id": "enter", "intent": "Press enter", "action": "key", "keys": ["enter"], "timeout_s": 1, "expect": [fact]},
    ]


def react(posted_at):
    def on(fake, ev):
        if ev[0] in ("click",):
            fake.set_frame(moved(pressed=True))
        elif ev[0] in ("key", "press"):
            fake.set_frame(moved(pressed=True, posted_at=posted_at))

    return on


def test_a_key_steps_area_moves_with_the_target_of_the_step_before_it(tmp_path):
    bundle = make_bundle(tmp_path / "b", steps(region_changed=BELOW, relative_to="target"), frame=home())
    out = run(tmp_path, bundle, FakeBackend(moved(), react((OK_BOX[0] + DX, 150 + DY))))
    assert out.state == "COMPLETED", out.message


def test_a_key_step_whose_change_is_elsewhere_halts(tmp_path):
    bundle = make_bundle(tmp_path / "b", steps(region_changed=BELOW, relative_to="target"), frame=home())
    out = run(tmp_path, bundle, FakeBackend(moved(), react((20, 300))))  # it changed the screen, not at the field
    assert (out.state, out.category) == ("FAILED", "postcondition"), out.message
