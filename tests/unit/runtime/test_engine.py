"""The step lifecycle and its journal invariants, on the in-package fake backend with real Tesseract."""

import json
import sqlite3
from pathlib import Path

import pytest
import yaml

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.errors import ConnectionFailed
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store import RunDir, load_journal
from openadapt_flow.store.keys import load_key
from tests.support.screens import Canvas, crop, save_png

pytestmark = pytest.mark.timeout(90)

OK_BOX = (100, 100, 120, 40)


def home():
    return Canvas().text(20, 20, "Ledger").button(100, 100, "Post").array()


def done():
    return Canvas().text(20, 20, "Ledger").text(100, 200, "Posted ACME").array()


def make_bundle(root: Path, steps, params=None, frame=None):
    frame = home() if frame is None else frame
    save_png(root / "templates/post.png", crop(frame, OK_BOX))
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "post",
        "screen": {"width": 640, "height": 480},
        "params": params or {"vendor": {"type": "string", "required": True}},
        "steps": steps,
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


POST = {
    "id": "post",
    "intent": "Post it",
    "action": "click",
    "target": {"template": "templates/post.png", "region": list(OK_BOX), "text": "Post"},
    "expect": [{"text_present": "Posted"}],
}


@pytest.fixture(autouse=True)
def key_env(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    monkeypatch.chdir(tmp_path)


def run(tmp_path, bundle, backend, params=None, config=None):
    cfg = config or DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01}}
    )
    req = ReplayRequest(
        bundle=bundle,
        params={"vendor": "ACME"} if params is None else params,
        backend=BackendSpec(kind="fake"),
        config=cfg,
        run_dir=tmp_path / "run",
    )
    return replay(req, backend_factory=lambda spec: backend)


def records(run_dir):
    return load_journal(run_dir / "journal.jsonl", load_key(create=False)).records


def types_for(recs, step):
    return [r["type"] for r in recs if r["step"] == step]


def test_healthy_step_dispatch_is_durable_before_the_input(tmp_path):
    seen_on_disk = []

    def on_event(fake, ev):
        if ev[0] == "click":
            lines = (tmp_path / "run/journal.jsonl").read_text().splitlines()
            seen_on_disk.append(json.loads(lines[-1])["type"])
            fake.set_frame(done())

    fake = FakeBackend(home(), on_event)
    out = run(tmp_path, make_bundle(tmp_path / "b", [POST]), fake)
    assert (out.state, out.exit_code) == ("COMPLETED", 0), out.message
    assert seen_on_disk == ["action_dispatched"]
    assert fake.events[0][0] == "move" and fake.events[1][:3] == (
        "click",
        160,
        120,
    )  # the pointer parked, then the click
    t = types_for(records(out.run_dir), "post")
    assert (
        t.index("step_started")
        < t.index("resolved")
        < t.index("action_dispatched")
        < t.index("action_sent")
        < t.index("step_verified")
    )
    resolved = next(r for r in records(out.run_dir) if r["type"] == "resolved")
    assert resolved["data"]["rung"] == "template" and resolved["data"]["evidence"][0]["score"] > 0.95
    state = json.loads((out.run_dir / "state.json").read_text())
    assert state["state"] == "COMPLETED" and state["schema"] == "openadapt-flow/state@1"
    assert (out.run_dir / "bundle/flow.yaml").is_file() and (out.run_dir / "bundle/templates/post.png").is_file()
    assert (out.run_dir / "frames/000-post-before.png").is_file() and (
        out.run_dir / "frames/000-post-after.png"
    ).is_file()


def test_two_identical_targets_halt_ambiguous_with_no_input(tmp_path):
    twin = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").button(100, 150, "Post").array()
    bundle = make_bundle(tmp_path / "b", [POST])
    fake = FakeBackend(twin)
    out = run(tmp_path, bundle, fake)
    assert (out.state, out.exit_code, out.category) == ("FAILED", 1, "ambiguous"), out.message
    assert [e for e in fake.events if e[0] != "move"] == []  # nothing but the journaled pointer park
    recs = records(out.run_dir)
    assert "action_dispatched" not in types_for(recs, "post")
    assert (out.run_dir / "frames/halt-post.png").is_file()
    state = json.loads((out.run_dir / "state.json").read_text())
    assert state["transaction_outcome"] == "HALTED_BEFORE_EFFECT"


def test_identity_gate_mismatch_halts_before_input(tmp_path):
    frame = Canvas().text(20, 20, "Vendor: GLOBEX").button(100, 100, "Post").array()
    step = dict(POST, identity={"text": "{vendor}", "near": [-100, -100, 400, 60]})
    fake = FakeBackend(frame)
    out = run(tmp_path, make_bundle(tmp_path / "b", [step], frame=frame), fake)
    assert out.category == "identity" and out.exit_code == 1
    assert [e for e in fake.events if e[0] != "move"] == []  # nothing but the journaled pointer park
    assert "action_dispatched" not in types_for(records(out.run_dir), "post")


def test_identity_gate_passes_when_the_text_is_there(tmp_path):
    frame = Canvas().text(20, 20, "Vendor: ACME").button(100, 100, "Post").array()
    step = dict(POST, identity={"text": "{vendor}", "near": [-100, -100, 400, 60]})
    fake = FakeBackend(frame, lambda f, ev: f.set_frame(done()) if ev[0] == "click" else None)
    out = run(tmp_path, make_bundle(tmp_path / "b", [step], frame=frame), fake)
    assert out.state == "COMPLETED", out.message


def test_failed_postcondition_halts_after_input_and_needs_reconciliation(tmp_path):
    step = dict(POST, consequential=True, timeout_s=1)
    fake = FakeBackend(home())  # the click changes nothing
    out = run(tmp_path, make_bundle(tmp_path / "b", [step]), fake)
    assert out.category == "postcondition" and out.exit_code == 1
    assert [e[0] for e in fake.events] == ["move", "click"]
    state = json.loads((out.run_dir / "state.json").read_text())
    assert state["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    rep = json.loads((out.run_dir / "report.json").read_text()) if (out.run_dir / "report.json").exists() else None
    assert rep is None  # the engine alone writes no report; the CLI passes the reporter


def make_db(tmp_path):
    db = tmp_path / "ledger.db"
    c = sqlite3.connect(db)
    c.execute("create table posts(vendor text)")
    c.commit()
    c.close()
    return db


EFFECT = {
    "kind": "sql",
    "dsn_env": "LEDGER_DSN",
    "query": "select count(*) from posts where vendor = :vendor",
    "expect": {"increase_by": 1},
    "timeout_s": 0.5,
}


def test_effect_confirmed_in_the_system_of_record(tmp_path, monkeypatch):
    db = make_db(tmp_path)
    monkeypatch.setenv("LEDGER_DSN", f"sqlite:///{db}")

    def on_event(fake, ev):
        if ev[0] == "move":  # the pointer parked: the app does not react
            return
        c = sqlite3.connect(db)
        c.execute("insert into posts values ('ACME')")
        c.commit()
        c.close()
        fake.set_frame(done())

    out = run(tmp_path, make_bundle(tmp_path / "b", [dict(POST, effect=EFFECT)]), FakeBackend(home(), on_event))
    assert out.state == "COMPLETED", out.message
    eff = next(r for r in records(out.run_dir) if r["type"] == "effect_verified")
    assert eff["data"]["verdict"] == "CONFIRMED"
    base = next(r for r in records(out.run_dir) if r["type"] == "effect_baseline")
    assert base["seq"] < next(r["seq"] for r in records(out.run_dir) if r["type"] == "action_dispatched")


def test_refuted_write_halts_with_positive_absence(tmp_path, monkeypatch):
    db = make_db(tmp_path)
    monkeypatch.setenv("LEDGER_DSN", f"sqlite:///{db}")
    fake = FakeBackend(
        home(), lambda f, ev: f.set_frame(done()) if ev[0] != "move" else None
    )  # shows success, writes nothing
    out = run(tmp_path, make_bundle(tmp_path / "b", [dict(POST, effect=EFFECT)]), fake)
    assert out.category == "effect" and out.exit_code == 1
    state = json.loads((out.run_dir / "state.json").read_text())
    assert state["transaction_outcome"] == "HALTED_BEFORE_EFFECT"
    assert not any(r["type"] == "step_verified" for r in records(out.run_dir))


def test_lost_connection_mid_step_is_a_backend_halt(tmp_path):
    fake = FakeBackend(home())
    fake.fail_next = None

    def on_event(f, ev):
        if ev[0] != "move":  # lost with the step's own input, not the pointer's park
            f.fail_next = ConnectionFailed("connection to vnc://x lost")

    fake.on_event = on_event
    out = run(tmp_path, make_bundle(tmp_path / "b", [dict(POST, consequential=True)]), fake)
    assert out.category == "backend" and "lost" in out.message
    assert json.loads((out.run_dir / "state.json").read_text())["transaction_outcome"] == "RECONCILIATION_REQUIRED"


def test_secret_typing_never_reaches_the_run_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_SECRET_PW", "hunter2-sekrit")
    steps = [{"id": "pw", "action": "type", "text": "{secret:pw}"}]
    fake = FakeBackend(
        home(),
        lambda f, ev: (
            f.set_frame(Canvas().text(20, 20, "Ledger").text(100, 200, "********").array()) if ev[0] == "type" else None
        ),
    )
    out = run(
        tmp_path, make_bundle(tmp_path / "b", steps, params={"pw": {"secret": True, "required": True}}), fake, params={}
    )
    assert out.state == "COMPLETED", out.message
    assert "hunter2-sekrit" in fake.typed
    for p in out.run_dir.rglob("*"):
        if p.is_file():
            assert b"hunter2-sekrit" not in p.read_bytes(), p
    assert not list((out.run_dir / "frames").glob("*pw*")) if (out.run_dir / "frames").exists() else True
    manifest = json.loads((out.run_dir / "manifest.json").read_text())
    assert manifest["params"]["pw"] == {"secret_env": "FLOW_SECRET_PW"}


def test_stop_request_interrupts_at_a_step_boundary(tmp_path):
    fake = FakeBackend(
        home(), lambda f, ev: f.set_frame(done()) if ev[0] != "move" else None
    )  # the key press changes the screen (its only check)
    steps = [{"id": "a", "action": "key", "keys": ["tab"]}, {"id": "b", "action": "key", "keys": ["tab"]}]
    bundle = make_bundle(tmp_path / "b", steps)
    import openadapt_flow.runtime.act.engine as engine

    real = engine.run_gui_step

    def stop_after_first(ctx, i, step):
        rec = real(ctx, i, step)
        ctx.stop.set()
        return rec

    engine.run_gui_step = stop_after_first
    try:
        out = run(tmp_path, bundle, fake)
    finally:
        engine.run_gui_step = real
    assert (out.state, out.exit_code) == ("INTERRUPTED", 5)
    assert fake.events == [("press", ("tab",))]


def test_an_effect_the_config_cannot_supply_is_refused_before_any_run_exists(tmp_path):
    from openadapt_flow.errors import ConfigError

    bundle = make_bundle(tmp_path / "b", [dict(POST, effect={"use": "ledger"})])
    with pytest.raises(
        ConfigError, match="effect uses 'ledger', which the config's effects: section does not define"
    ) as e:
        run(tmp_path, bundle, backend=None)
    assert e.value.exit_code == 2
    assert not (tmp_path / "run").exists()


def test_a_halt_after_the_write_landed_is_not_a_plain_failure(tmp_path, monkeypatch):
    """Issue 23 finding 3: the row landed, a later step halts. A non-durable run must not end a plain FAILED (exit 1),
    which a retry loop re-runs and writes twice: FAILED_AFTER_EFFECT (exit 7), the report saying the write landed
    and offering no re-run command."""
    db = make_db(tmp_path)
    monkeypatch.setenv("LEDGER_DSN", f"sqlite:///{db}")

    def on_event(fake, ev):
        if ev[0] == "move":  # the pointer parked: the app does not react
            return
        c = sqlite3.connect(db)
        c.execute("insert into posts values ('ACME')")
        c.commit()
        c.close()
        fake.set_frame(done())

    close = {
        "id": "close",
        "intent": "Close the ledger",
        "action": "click",
        "target": {"template": "templates/post.png", "region": list(OK_BOX), "text": "Post"},
    }
    out = run(tmp_path, make_bundle(tmp_path / "b", [dict(POST, effect=EFFECT), close]), FakeBackend(home(), on_event))
    assert (out.state, out.exit_code) == ("FAILED_AFTER_EFFECT", 7), out.message
    assert "landed" in out.message and "do not re-run" in out.message
    state = json.loads((out.run_dir / "state.json").read_text())
    assert state["state"] == "FAILED_AFTER_EFFECT"
    stop = next(r for r in records(out.run_dir) if r["type"] == "run_finished")
    assert stop["data"]["landed"] == ["post"]
    report = write_reports(RunDir.open(str(out.run_dir)))
    assert report["landed"] == ["post"] and report["next_commands"] == []
    assert "The write landed (step post); do not re-run" in (out.run_dir / "REPORT.md").read_text()


def test_a_halt_before_any_write_landed_stays_failed(tmp_path, monkeypatch):
    """The other side: nothing landed, FAILED (exit 1) as before. The save's input was sent, so no re-run is offered
    (issue 33 item 6, spec §8 "Advice"): the report says nothing was written and to check the screen first."""
    db = make_db(tmp_path)
    monkeypatch.setenv("LEDGER_DSN", f"sqlite:///{db}")
    fake = FakeBackend(
        home(), lambda f, ev: f.set_frame(done()) if ev[0] != "move" else None
    )  # shows success, writes nothing
    out = run(tmp_path, make_bundle(tmp_path / "b", [dict(POST, effect=EFFECT)]), fake)
    assert (out.state, out.exit_code) == ("FAILED", 1)
    report = write_reports(RunDir.open(str(out.run_dir)))
    assert report["landed"] == [] and report["transaction_outcome"] == "HALTED_BEFORE_EFFECT"
    assert report["next_commands"] == []
    assert any("nothing was written" in a for a in report["advice"])
