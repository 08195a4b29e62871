"""The start state before a run's first input, and the reset that brings an app back to it (spec §22), on the
in-package fake backend (it records every input it receives) with real Tesseract."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime import approve, check_start_state, replay, reset_app, resume_run
from openadapt_flow.runtime.act.start_state import NOT_AT_START, START_STATE
from openadapt_flow.runtime.judge.fold import RunProgress
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store import load_journal
from openadapt_flow.store.keys import load_key
from tests.support.screens import Canvas, crop, font, save_png

pytestmark = pytest.mark.timeout(120)

NEW_BOX = (100, 100, 160, 40)
CANCEL_BOX = (300, 300, 120, 40)
FIELD = (200, 160, 300, 40)


def start() -> np.ndarray:
    """The invoice list: where the recording started."""
    return Canvas().text(20, 20, "Invoices").button(*NEW_BOX[:2], "New invoice", w=160).text(20, 420, "Ledger").array()


def form(vendor: str = "") -> np.ndarray:
    """The form a halted item left open, `vendor` typed into its field."""
    c = Canvas().text(20, 20, "Entry form").text(20, 170, "Vendor").button(*CANCEL_BOX[:2], "Cancel")
    x, y, w, h = FIELD
    c.draw.rectangle([x, y, x + w - 1, y + h - 1], fill=(255, 255, 255), outline=(112, 112, 112))
    if vendor:
        c.draw.text((x + 10, y + 9), vendor, fill=(0, 0, 0), font=font(20))
    return c.text(20, 420, "Ledger").array()


START = [
    {"text_present": "Invoices", "region": [20, 22, 95, 22]},
    {"text_present": "Ledger", "region": [20, 422, 80, 22]},
    {"text_absent": "Vendor", "region": [20, 172, 75, 22]},
]
OPEN = {
    "id": "open",
    "action": "click",
    "target": {"template": "templates/new.png", "region": list(NEW_BOX), "text": "New invoice"},
    "expect": [{"text_present": "Vendor"}],
}
CANCEL = {
    "id": "cancel",
    "action": "click",
    "target": {"template": "templates/cancel.png", "region": list(CANCEL_BOX)},
    "expect": [{"text_present": "Invoices"}],
}


def bundle(root: Path, **over: Any) -> Path:
    save_png(root / "templates/new.png", crop(start(), NEW_BOX))
    save_png(root / "templates/cancel.png", crop(form(), CANCEL_BOX))
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "invoice",
        "screen": {"width": 640, "height": 480},
        "params": {"vendor": {"type": "string", "required": True}},
        "start": START,
        "steps": [OPEN],
        **over,
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


@pytest.fixture(autouse=True)
def key_env(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def config(tmp_path) -> DeployConfig:
    return DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01}}
    )


def reopen(fake: FakeBackend):
    """A backend factory handing out the one fake desktop again (each run closes what it opened)."""

    def factory(_spec: BackendSpec) -> FakeBackend:
        fake.closed = False
        return fake

    return factory


def app(frame: np.ndarray) -> FakeBackend:
    """The fake app: New invoice opens the form, Cancel goes back to the list."""

    def on_event(fake: FakeBackend, ev: tuple) -> None:
        if (
            ev[0] == "click"
            and NEW_BOX[0] <= ev[1] < NEW_BOX[0] + NEW_BOX[2]
            and NEW_BOX[1] <= ev[2] < NEW_BOX[1] + NEW_BOX[3]
        ):
            fake.set_frame(form())
        elif ev[0] == "click" and CANCEL_BOX[0] <= ev[1] < CANCEL_BOX[0] + CANCEL_BOX[2]:
            fake.set_frame(start())

    return FakeBackend(frame, on_event)


def run(tmp_path: Path, root: Path, fake: FakeBackend, config: DeployConfig, durable: bool = False):
    req = ReplayRequest(
        bundle=root,
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=config,
        run_dir=tmp_path / "run",
        durable=durable,
    )
    return replay(req, backend_factory=reopen(fake))


def sent(fake: FakeBackend) -> list[tuple]:
    """What reached the app: every input but the pointer's park (a move that presses nothing, runtime/act/pointer.py)."""
    return [e for e in fake.events if e[0] != "move"]


def journal(run_dir: Path) -> list[dict[str, Any]]:
    return load_journal(run_dir / "journal.jsonl", load_key(create=False)).records


def test_a_dirty_app_halts_before_any_input_naming_what_differs(tmp_path, config):
    fake = app(form("ACME"))
    out = run(tmp_path, bundle(tmp_path / "b"), fake, config)
    assert (out.state, out.category) == ("FAILED", START_STATE), out.message
    assert out.message.startswith(NOT_AT_START) and "'Invoices'" in out.message and "'Vendor' is shown" in out.message
    assert sent(fake) == [] and [e[0] for e in fake.events] == ["move"]  # nothing but the pointer's park
    recs = journal(out.run_dir)
    types = [r["type"] for r in recs]
    assert "action_dispatched" not in types and types.index("start_checked") < types.index("halted")
    checked = next(r for r in recs if r["type"] == "start_checked")["data"]
    assert checked["ok"] is False and [c["ok"] for c in checked["checks"]] == [False, True, False]
    halted = next(r for r in recs if r["type"] == "halted")["data"]
    assert (halted["category"], halted["input_sent"]) == (START_STATE, False)


def test_the_recorded_start_passes_and_is_checked_before_the_first_input(tmp_path, config):
    fake = app(start())
    out = run(tmp_path, bundle(tmp_path / "b"), fake, config)
    assert out.state == "COMPLETED", out.message
    assert [e[0] for e in sent(fake)] == ["click"]
    types = [r["type"] for r in journal(out.run_dir)]
    assert types.count("start_checked") == 1 and types.index("start_checked") < types.index("action_dispatched")


def test_a_bundle_with_no_start_facts_is_not_checked(tmp_path, config):
    fake = app(start())
    root = bundle(tmp_path / "b")
    doc = yaml.safe_load((root / "flow.yaml").read_text())
    del doc["start"]
    (root / "flow.yaml").write_text(yaml.safe_dump(doc))
    out = run(tmp_path, root, fake, config)
    assert out.state == "COMPLETED" and "start_checked" not in [r["type"] for r in journal(out.run_dir)]


def test_a_durable_run_halted_at_the_start_pauses_and_every_resume_that_sent_nothing_checks_again(
    tmp_path, config, monkeypatch
):
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "decision.key"))
    fake = app(form("ACME"))
    out = run(tmp_path, bundle(tmp_path / "b"), fake, config, durable=True)
    assert (out.state, out.category) == ("PAUSED", START_STATE) and sent(fake) == []
    approve(out.run_dir, "continue", "alice")
    again = resume_run(out.run_dir, backend_factory=reopen(fake))  # still dirty: halts again, nothing sent
    assert (again.state, again.category) == ("PAUSED", START_STATE) and sent(fake) == []
    approve(out.run_dir, "continue", "alice")
    fake.set_frame(start())  # an operator closed the form
    done = resume_run(out.run_dir, backend_factory=reopen(fake))
    assert done.state == "COMPLETED", done.message
    assert [e[0] for e in sent(fake)] == ["click"]
    assert [r["data"]["ok"] for r in journal(out.run_dir) if r["type"] == "start_checked"] == [False, False, True]


def test_the_start_check_is_over_once_input_was_sent():
    """A resume checks the start state only while the journal holds no input: after one, the screen is the run's."""

    def rec(typ: str, step: str | None = None, **data: Any) -> Any:
        return {"type": typ, "step": step, "ts": "2025-01-01T00:00:00Z", "data": data}

    fold = RunProgress()
    fold.seed([rec("run_started"), rec("start_checked", ok=True, checks=[])])
    assert not fold.input_sent
    fold.note(rec("action_dispatched", "open", action="click", lease_generation=1))
    assert fold.input_sent
    fold.seed([rec("run_started")])
    assert not fold.input_sent
    fold.seed([rec("child_started", "sub", run_dir="children/x")])
    assert fold.input_sent


def test_check_start_state_outside_a_run_skips_facts_naming_a_param(tmp_path, config):
    root = bundle(tmp_path / "b", start=[*START, {"text_absent": "{vendor}"}])
    clean = check_start_state(root, app(start()), config)
    assert clean.ok and clean.reason == "" and clean.unjudged == ["text_absent '{vendor}'"]
    dirty = check_start_state(root, app(form("ACME")), config, params={"vendor": "ACME"})
    assert not dirty.ok and dirty.reason.startswith(NOT_AT_START) and "'ACME' is shown" in dirty.reason


# -- reset -------------------------------------------------------------------------------------------------------


def test_reset_by_steps_brings_a_half_filled_form_back_and_the_start_then_holds(tmp_path, config):
    fake = app(form("ACME"))
    root = bundle(tmp_path / "b", reset={"steps": [CANCEL]})
    got = reset_app(root, BackendSpec(kind="fake"), config, backend_factory=reopen(fake))
    assert got.ok, got.reason
    assert [e[0] for e in sent(fake)] == ["click"] and all(c.ok for c in got.checks)
    assert got.run_dir is not None and "step_verified" in [r["type"] for r in journal(got.run_dir)]
    assert run(tmp_path, root, fake, config).state == "COMPLETED"


def test_reset_steps_that_halt_fail_the_reset_with_why(tmp_path, config):
    fake = app(form("ACME"))
    broken = {**CANCEL, "target": {"text": "Discard"}}  # no such button: the step halts, nothing is clicked
    got = reset_app(
        bundle(tmp_path / "b", reset={"steps": [broken]}),
        BackendSpec(kind="fake"),
        config,
        backend_factory=reopen(fake),
    )
    assert not got.ok and got.reason.startswith("reset step(s) did not complete (FAILED)") and sent(fake) == []


class Restarting(FakeBackend):
    """A desktop whose app comes back at its start screen once the restart command has left its mark."""

    def __init__(self, frame: np.ndarray, mark: Path) -> None:
        super().__init__(frame)
        self.mark = mark

    def capture(self):
        if self.mark.exists() and not np.array_equal(self.frame, start()):
            self.set_frame(start())
        return super().capture()

    def wait_for_update(self, timeout: float) -> bool:
        return self.mark.exists() or super().wait_for_update(min(timeout, 0.05))


def command_reset(mark: Path, code: str = "", wait_for: str = "Invoices", timeout_s: float = 20) -> dict[str, Any]:
    script = f"import pathlib; pathlib.Path({str(mark)!r}).write_text('restarted')" if not code else code
    return {"command": [sys.executable, "-c", script], "wait_for": {"text_present": wait_for}, "timeout_s": timeout_s}


def test_reset_by_command_restarts_the_app_and_the_start_then_holds(tmp_path, config):
    mark = tmp_path / "restarted"
    fake = Restarting(form("ACME"), mark)
    got = reset_app(
        bundle(tmp_path / "b", reset=command_reset(mark)),
        BackendSpec(kind="fake"),
        config,
        backend_factory=reopen(fake),
    )
    assert got.ok, got.reason
    assert mark.read_text() == "restarted" and sent(fake) == [] and got.run_dir is None


def test_a_reset_whose_wait_for_never_holds_fails_within_its_timeout(tmp_path, config):
    mark = tmp_path / "restarted"
    fake = Restarting(form("ACME"), mark)
    t0 = time.monotonic()
    got = reset_app(
        bundle(tmp_path / "b", reset=command_reset(mark, wait_for="Welcome", timeout_s=2)),
        BackendSpec(kind="fake"),
        config,
        backend_factory=reopen(fake),
    )
    took = time.monotonic() - t0
    assert not got.ok and "wait_for text_present 'Welcome' did not hold within 2s (not read)" in got.reason, got.reason
    assert 2 <= took < 8, took


def test_a_reset_command_that_fails_says_how(tmp_path, config):
    fake = Restarting(form("ACME"), tmp_path / "never")
    code = "import sys; sys.stderr.write('no such app'); sys.exit(3)"
    got = reset_app(
        bundle(tmp_path / "b", reset=command_reset(tmp_path / "never", code=code)),
        BackendSpec(kind="fake"),
        config,
        backend_factory=reopen(fake),
    )
    assert not got.ok and got.reason == "reset command exited 3: no such app"


def test_a_reset_that_does_not_reach_the_start_is_reported(tmp_path, config):
    still = {**CANCEL, "expect": [{"text_present": "Ledger"}]}  # Cancel does nothing here: the form stays
    fake = FakeBackend(form("ACME"))
    got = reset_app(
        bundle(tmp_path / "b", reset={"steps": [still]}), BackendSpec(kind="fake"), config, backend_factory=reopen(fake)
    )
    assert not got.ok and got.reason.startswith("after the reset, " + NOT_AT_START), got.reason


def test_with_no_reset_declared_reset_app_only_checks(tmp_path, config):
    assert reset_app(bundle(tmp_path / "b"), BackendSpec(kind="fake"), config, backend_factory=reopen(app(start()))).ok
    got = reset_app(bundle(tmp_path / "b"), BackendSpec(kind="fake"), config, backend_factory=reopen(app(form())))
    assert not got.ok and got.reason.endswith("(the bundle declares no reset: to bring it back)")
