"""A replay in a moved window: a fact marked `relative_to: target` is judged where the target was found, so a
correct click verifies and the checkpoint keeps where the fact held; an old absolute fact still halts there."""

import pytest

from openadapt_flow.backends.fake import FakeBackend
from tests.support.screens import Canvas
from tests.unit.runtime.test_engine import OK_BOX, home, key_env, make_bundle, records, run  # noqa: F401 - key_env is a fixture

pytestmark = pytest.mark.timeout(90)

DX, DY = 300, 200  # the window moved this far since the recording
BELOW = [100, 150, 140, 30]  # where "Posted" appeared, under the Post button, in the recorded frame


def moved(posted: bool = False):
    c = Canvas().text(20, 20, "Ledger").button(OK_BOX[0] + DX, OK_BOX[1] + DY, "Post")
    return (c.text(OK_BOX[0] + DX, 150 + DY, "Posted") if posted else c).array()


def react(after):
    return lambda fake, ev: fake.set_frame(after) if ev[0] in ("click", "press") else None


def step(**fact):
    return {
        "id": "post",
        "intent": "Post it",
        "action": "click",
        "timeout_s": 1,
        "target": {"template": "templates/post.png", "region": list(OK_BOX), "text": "Post"},
        "expect": [fact],
    }


def test_a_region_relative_to_the_target_verifies_a_correct_click_in_a_moved_window(tmp_path):
    bundle = make_bundle(tmp_path / "b", [step(region_changed=BELOW, relative_to="target")], frame=home())
    out = run(tmp_path, bundle, FakeBackend(moved(), react(moved(posted=True))))
    assert out.state == "COMPLETED", out.message


def test_the_same_region_without_the_marker_is_judged_where_it_was_recorded(tmp_path):
    bundle = make_bundle(tmp_path / "b", [step(region_changed=BELOW)], frame=home())
    out = run(tmp_path, bundle, FakeBackend(moved(), react(moved(posted=True))))
    assert (out.state, out.category) == ("FAILED", "postcondition"), out.message


def test_the_checkpointed_fact_is_where_the_target_was_found(tmp_path):
    bundle = make_bundle(
        tmp_path / "b", [step(text_present="Posted", region=BELOW, relative_to="target")], frame=home()
    )
    out = run(tmp_path, bundle, FakeBackend(moved(), react(moved(posted=True))))
    assert out.state == "COMPLETED", out.message
    (verified,) = [r["data"] for r in records(out.run_dir) if r["type"] == "step_verified"]
    (fact,) = verified["screen_facts"]
    assert fact["region"] == [BELOW[0] + DX, BELOW[1] + DY, BELOW[2], BELOW[3]] and "relative_to" not in fact
