"""A GUI step that declares nothing to verify it is verified by the screen changing where it acted, and says so.

On the fake backend with real Tesseract: the screen either reacts near the target as found on the live frame, far
from it, or not at all; key presses with no target count a change anywhere; waits send no input.
"""

import json

import pytest

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.report.render import write_reports
from openadapt_flow.store import RunDir
from tests.support.bundles import minimal_flow, write_bundle
from tests.support.cli import run_flow
from tests.support.screens import Canvas
from tests.unit.runtime.test_engine import OK_BOX, POST, done, home, key_env, make_bundle, records, run  # noqa: F401 - key_env is a fixture

pytestmark = pytest.mark.timeout(90)

BARE = {k: v for k, v in POST.items() if k != "expect"}  # a click that declares nothing to verify it


def moved():
    """The Post button 300 px right and 200 px down of where it was recorded."""
    return Canvas().text(20, 20, "Ledger").button(400, 300, "Post").array()


def react(after):
    return lambda fake, ev: fake.set_frame(after) if ev[0] in ("click", "press") else None


def verified(out, step):
    return next(r["data"] for r in records(out.run_dir) if r["type"] == "step_verified" and r["step"] == step)


def test_a_click_with_nothing_declared_halts_when_the_screen_does_not_change(tmp_path):
    fake = FakeBackend(home())  # the click lands on nothing that reacts
    out = run(tmp_path, make_bundle(tmp_path / "b", [dict(BARE, timeout_s=1)]), fake)
    assert (out.state, out.exit_code, out.category) == ("FAILED", 1, "postcondition"), out.message
    assert [e[0] for e in fake.events] == ["move", "click"]  # parked, acted, then could not tell that it did anything
    assert "declares nothing else to verify it" in out.message
    types = [r["type"] for r in records(out.run_dir) if r["step"] == "post"]
    assert "step_verified" not in types and "halted" in types


def test_a_change_far_from_the_target_does_not_verify_it(tmp_path):
    far = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").text(420, 420, "Clock 12:01").array()
    out = run(tmp_path, make_bundle(tmp_path / "b", [dict(BARE, timeout_s=1)]), FakeBackend(home(), react(far)))
    assert (out.state, out.category) == ("FAILED", "postcondition"), out.message


def test_a_change_where_the_target_was_found_verifies_it_weakly(tmp_path):
    near = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").text(100, 150, "Posted").array()
    out = run(tmp_path, make_bundle(tmp_path / "b", [BARE]), FakeBackend(home(), react(near)))
    assert out.state == "COMPLETED", out.message
    data = verified(out, "post")
    assert data["verification"] == "weak"
    check = next(r for r in records(out.run_dir) if r["type"] == "postconditions")["data"]["checks"]
    assert [c["kind"] for c in check] == ["screen_changed"] and check[0]["weak"] is True


def test_the_change_is_judged_where_the_target_was_found_not_where_it_was_recorded(tmp_path):
    bundle = make_bundle(tmp_path / "b", [dict(BARE, timeout_s=1)])  # recorded at OK_BOX = (100, 100)
    beside_found = Canvas().text(20, 20, "Ledger").button(400, 300, "Post").text(400, 350, "Posted").array()
    out = run(tmp_path, bundle, FakeBackend(moved(), react(beside_found)))
    assert out.state == "COMPLETED", out.message
    assert verified(out, "post")["verification"] == "weak"

    beside_recorded = Canvas().text(20, 20, "Ledger").button(400, 300, "Post").text(100, 150, "Posted").array()
    again = tmp_path / "again"
    again.mkdir()
    out = run(again, bundle, FakeBackend(moved(), react(beside_recorded)))
    assert (out.state, out.category) == ("FAILED", "postcondition"), out.message


def test_a_key_press_with_no_target_is_verified_by_a_change_anywhere(tmp_path):
    key = {"id": "close", "action": "key", "keys": ["escape"], "timeout_s": 1}
    far = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").text(420, 420, "Closed").array()
    out = run(tmp_path, make_bundle(tmp_path / "b", [key]), FakeBackend(home(), react(far)))
    assert out.state == "COMPLETED", out.message
    assert verified(out, "close")["verification"] == "weak"

    again = tmp_path / "again"
    again.mkdir()
    out = run(again, make_bundle(again / "b", [key]), FakeBackend(home()))
    assert (out.state, out.category) == ("FAILED", "postcondition"), out.message


def test_declared_checks_readback_and_waits_are_not_weak(tmp_path):
    field = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").array()
    typed = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").text(240, 108, "ACME").array()
    steps = [
        {"id": "pause", "action": "wait", "seconds": 0.05},
        {"id": "name", "action": "type", "text": "{vendor}", "target": POST["target"]},
        dict(POST, id="post"),
    ]

    def app(fake, ev):
        if ev[0] == "type":
            fake.set_frame(typed)
        elif ev[0] == "click" and ev[1:3] == (160, 120) and fake.events.count(ev) == 2:
            fake.set_frame(done())

    out = run(tmp_path, make_bundle(tmp_path / "b", steps, frame=field), FakeBackend(field, app))
    assert out.state == "COMPLETED", out.message
    assert [verified(out, s)["verification"] for s in ("pause", "name", "post")] == ["none", "strong", "strong"]


def test_the_report_shows_a_weakly_verified_step_as_weak(tmp_path):
    near = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").text(100, 150, "Posted").array()
    steps = [BARE, dict(POST, id="check", action="wait", seconds=0.01, target=None)]
    out = run(tmp_path, make_bundle(tmp_path / "b", steps), FakeBackend(home(), react(near)))
    assert out.state == "COMPLETED", out.message
    rep = write_reports(RunDir(out.run_dir))
    rows = {r["id"]: r for r in rep["steps"]}
    assert (rows["post"]["status"], rows["post"]["verification"]) == ("verified", "weak")
    assert rows["check"]["verification"] == "strong" and rep["weakly_verified"] == ["post"]
    assert json.loads((out.run_dir / "report.json").read_text())["weakly_verified"] == ["post"]
    md = (out.run_dir / "REPORT.md").read_text()
    assert "| `post` | click | verified (weak) |" in md and "| `check` | wait | verified |" in md
    assert "Weakly verified (1): post" in md
    html = (out.run_dir / "report.html").read_text()
    assert "<td>verified (weak)</td>" in html and "Weakly verified (1): post" in html


def test_validate_warns_about_steps_with_nothing_declared_to_verify(tmp_path):
    flow = minimal_flow(params={"pw": {"type": "string", "secret": True}})
    ok = flow["steps"][0]["target"]
    flow["steps"] = [
        dict(flow["steps"][0], id="bare"),
        {"id": "checked", "action": "click", "target": ok, "expect": [{"text_present": "Done"}]},
        {"id": "name", "action": "type", "text": "ACME", "target": ok},
        {"id": "pw", "action": "type", "text": "{secret:pw}", "target": ok},
        {"id": "tab", "action": "key", "keys": ["tab"]},
        {"id": "nap", "action": "wait", "seconds": 1},
    ]
    write_bundle(tmp_path / "bundle", flow)
    r = run_flow(["validate", "bundle", "--json"], tmp_path)
    assert r.returncode == 0, r.stderr
    warned = [w.split("'")[1] for w in json.loads(r.stdout)["warnings"]]
    assert warned == ["bare", "pw", "tab", "nap"]
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("ok: t")
    assert r.stderr.count("warning: ") == 4 and "add expect:" in r.stderr
