"""Durable pause, decisions and resume on the fake backend (real journal, checkpoint, signatures, SQLite)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.runtime.operate.approval import DecisionOptions, approve
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.runref import open_ref
from tests.unit.runtime.test_engine import POST, done, home, make_bundle

pytestmark = pytest.mark.timeout(120)

EFFECT = {
    "kind": "sql",
    "dsn_env": "LEDGER_DSN",
    "query": "select count(*) from posts where vendor = :vendor",
    "expect": {"increase_by": 1},
    "timeout_s": 0.3,
}
SAVE = dict(POST, consequential=True, effect=EFFECT, timeout_s=10)
AFTER = {"id": "finish", "action": "key", "keys": ["escape"]}


@pytest.fixture(autouse=True)
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "decision.key"))
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "ledger.db"
    c = sqlite3.connect(db)
    c.execute("create table posts(vendor text)")
    c.commit()
    c.close()
    monkeypatch.setenv("LEDGER_DSN", f"sqlite:///{db}")
    return db


def rows(db):
    c = sqlite3.connect(db)
    try:
        return c.execute("select count(*) from posts").fetchone()[0]
    finally:
        c.close()


class App:
    """The fake desktop: Post writes a row (unless refute) and shows 'Posted'."""

    def __init__(self, db, refute=False, write=True):
        self.db, self.refute, self.write = db, refute, write
        self.frame = home()
        self.events: list[tuple] = []
        self.backend = self.connect()

    def connect(self) -> FakeBackend:
        """A fresh connection to the same desktop (each run or resume builds its own backend)."""
        self.backend = FakeBackend(self.frame, self.on_event)
        self.backend.events = self.events
        return self.backend

    def show(self, frame):
        self.frame = frame
        self.backend.set_frame(frame)

    def on_event(self, fake, ev):
        if ev[0] == "click":
            if self.write and not self.refute:
                c = sqlite3.connect(self.db)
                c.execute("insert into posts values ('ACME')")
                c.commit()
                c.close()
            self.show(done())
        elif (
            ev[0] == "press"
        ):  # a key the app reacts to: a small mark in the corner toggles, so every press changes the screen
            frame = self.frame.copy()
            frame[466:476, 626:636] = 0 if frame[470, 630, 0] else 236
            self.show(frame)


@pytest.fixture(params=["filesystem", "memory"])
def store(request):
    """The run store a test that reads its run only through the run handle runs on (SPEC §18): each, in turn."""
    return request.param


def cfg(tmp_path, store="filesystem", **runtime):
    where = {"store": "memory:"} if store == "memory" else {}
    return DeployConfig.model_validate(
        {
            "schema": "openadapt-flow/config@1",
            "runtime": {
                "runs_root": str(tmp_path / "runs"),
                "settle_quiet_s": 0.01,
                "durable": True,
                **where,
                **runtime,
            },
        }
    )


def ref(tmp_path, store="filesystem", name="run"):
    """A new run's reference: a directory, or a name in this process's memory store unique to the test."""
    return tmp_path / name if store == "filesystem" else f"memory:{tmp_path.name}-{name}"


def start(tmp_path, app, steps=(SAVE, AFTER), config=None, store="filesystem"):
    bundle = tmp_path / "b"
    if not bundle.exists():
        make_bundle(bundle, list(steps))
    req = ReplayRequest(
        bundle=bundle,
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=config or cfg(tmp_path, store),
        run_dir=ref(tmp_path, store),
    )
    return replay(req, backend_factory=lambda spec: app.connect())


def go(run_dir, app, **kw):
    return resume(run_dir, backend_factory=lambda spec: app.connect(), **kw)


def state(run_dir):
    return open_ref(run_dir).state()


def pending_of(run_dir):
    return open_ref(run_dir).read_pending()


def journal_records(run_dir):
    return open_ref(run_dir).read_records()


def test_refuted_write_pauses_with_positive_absence_and_a_signed_task(tmp_path, env, store):
    out = start(tmp_path, App(env, refute=True), store=store)
    assert (out.state, out.exit_code) == ("PAUSED", 3)
    st = state(out.run_dir)
    assert (st["paused_reason"], st["transaction_outcome"]) == ("awaiting_approval", "HALTED_BEFORE_EFFECT")
    pending = pending_of(out.run_dir)
    assert pending["category"] == "effect" and pending["step"] == "post"
    assert set(pending["allowed_decisions"]) == {"continue", "reject", "escalate"}
    task = pending["task"]
    assert task["signature"] and task["run_id"] and task["checkpoint_digest"] == "sha256:none"
    assert "ACME" not in json.dumps(task)  # ids, digests and the question only


class LedgerGoneBeforeSave(App):
    """The system of record answers the preflight, then goes away before the writing step reads its baseline.
    (One missing from the start is refused before any input: tests/unit/runtime/test_typing_preflight.py.)"""

    def on_event(self, fake, ev):
        if ev[0] == "press" and self.db.exists():
            self.db.rename(self.db.with_suffix(".gone"))
        super().on_event(fake, ev)


def test_unreadable_baseline_halts_before_the_click(tmp_path, env, store):
    app = LedgerGoneBeforeSave(env)
    out = start(tmp_path, app, store=store, steps=(dict(AFTER, id="first"), SAVE))
    st = state(out.run_dir)
    assert (out.state, st["halt_category"], st["transaction_outcome"]) == ("PAUSED", "effect", "HALTED_BEFORE_EFFECT")
    assert [e for e in app.events if e[0] == "click"] == [] and rows(env.with_suffix(".gone")) == 0
    recs = journal_records(out.run_dir)
    assert not any(r["type"] == "action_dispatched" and r["step"] == "post" for r in recs)


class VanishingLedger(App):
    """The write lands, then the system of record becomes unreadable (moved away): the verifier is unavailable."""

    def on_event(self, fake, ev):
        super().on_event(fake, ev)
        if ev[0] == "click":
            self.db.rename(self.db.with_suffix(".moved"))


def test_unavailable_verifier_needs_reconciliation_and_resume_never_blind_retries(tmp_path, env, store, monkeypatch):
    app = VanishingLedger(env)
    out = start(tmp_path, app, store=store)
    assert state(out.run_dir)["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    assert "reconcile" in pending_of(out.run_dir)["allowed_decisions"]
    clicks = [e for e in app.events if e[0] == "click"]
    approve(out.run_dir, "continue", "alice")
    with pytest.raises(RefusedError, match="UNKNOWN on re-check"):
        go(out.run_dir, app)
    assert [e for e in app.events if e[0] == "click"] == clicks  # nothing sent
    assert open_ref(out.run_dir).has_approval()  # the approval stays unused
    assert state(out.run_dir)["state"] == "PAUSED"
    approve(out.run_dir, "reconcile", "alice", effect="landed")  # replaces the unused decision
    res = go(out.run_dir, app)
    assert res.state == "COMPLETED"
    assert [e for e in app.events if e[0] == "click"] == clicks
    cp = open_ref(out.run_dir).read_checkpoint()
    assert cp["step"] == "finish"
    recs = journal_records(out.run_dir)
    assert any(
        r["type"] == "step_verified" and r["step"] == "post" and r["data"]["verified_by"] == "operator" for r in recs
    )


def test_continue_after_a_positively_absent_write_performs_it_again(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store)
    app.refute = False
    app.show(home())  # the operator put the app back on its form
    approve(out.run_dir, "continue", "alice")
    res = go(out.run_dir, app)
    assert res.state == "COMPLETED", res.message
    assert rows(env) == 1


def test_reject_blocks_with_an_incident_and_resume_exits_4(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store)
    approve(out.run_dir, "reject", "bob", note="wrong vendor")
    st = state(out.run_dir)
    assert st["state"] == "BLOCKED"
    inc = open_ref(out.run_dir).read_incident()
    assert (inc["operator"], inc["rule"], inc["step"]) == ("bob", "operator_reject", "post")
    assert go(out.run_dir, app).exit_code == 4
    assert approve(out.run_dir, "reject", "bob")["noop"]  # repeating the same decision is a no-op


def test_a_decision_is_consumed_once_and_replays_are_refused(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store)
    approve(out.run_dir, "continue", "alice")
    run = open_ref(out.run_dir)
    saved = run.read_approval()
    res = go(out.run_dir, app)  # screen shows 'Posted', Post not found: pauses again
    assert res.state == "PAUSED"
    assert not run.has_approval() and run.decisions()
    run.write_approval(
        {k: v for k, v in saved.items() if k not in ("schema", "signature")}, saved["signature"]
    )  # replay the old approval against the new pause
    with pytest.raises(RefusedError, match="not the pending"):
        go(out.run_dir, app)


def tamper_case(tmp_path, env, how):
    app = App(env, refute=True)
    out = start(tmp_path, app)
    approve(out.run_dir, "continue", "alice")
    how(out.run_dir, tmp_path)
    with pytest.raises(RefusedError) as ei:
        go(out.run_dir, app)
    return str(ei.value)


def edit_json(path: Path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


TAMPER = {
    "forged approval": (
        lambda d, t: edit_json(d / "approval.json", lambda a: a.update(operator="mallory")),
        "signature does not verify",
    ),
    "approval for another pause": (
        lambda d, t: edit_json(d / "approval.json", lambda a: a.update(pause_id="pause-x")),
        "signature does not verify",
    ),
    "edited journal line": (
        lambda d, t: (d / "journal.jsonl").write_text(
            (d / "journal.jsonl").read_text().replace('"index":0', '"index":7', 1)
        ),
        "chain broken",
    ),
    "changed template in snapshot": (
        lambda d, t: (d / "bundle/templates/post.png").write_bytes(
            (d / "bundle/templates/post.png").read_bytes() + b"x"
        ),
        "digest",
    ),
    "edited pending task": (
        lambda d, t: edit_json(
            d / "pending_escalation.json", lambda p: p["task"].update(allowed_decisions=["continue", "skip"])
        ),
        "disagrees with the journal",
    ),
    "expired task": (None, "expired"),
}


@pytest.mark.parametrize("name", [k for k in TAMPER if TAMPER[k][0] is not None])
def test_tampered_run_dirs_are_refused(tmp_path, env, name):
    how, needle = TAMPER[name]
    assert needle in tamper_case(tmp_path, env, how)


def test_expired_decision_task_is_refused(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store, config=cfg(tmp_path, store, pause_ttl_s=0.001))
    with pytest.raises(RefusedError, match="expired"):
        approve(out.run_dir, "continue", "alice")


def test_edited_checkpoint_is_refused(tmp_path, env):
    app = App(env)
    steps = [AFTER, dict(AFTER, id="again"), dict(POST, id="post", consequential=True, effect=EFFECT, timeout_s=1)]
    app.refute = True
    out = start(tmp_path, app, steps=steps)
    assert out.state == "PAUSED"
    edit_json(out.run_dir / "checkpoint.json", lambda c: c.update(next_index=2, step="again-x"))
    approve_err = None
    try:
        approve(out.run_dir, "continue", "alice")
    except RefusedError as e:
        approve_err = e
    with pytest.raises(RefusedError, match="tampered|checkpoint changed"):
        go(out.run_dir, app)
    assert approve_err is None


def test_approval_from_another_run_is_refused(tmp_path, env):
    app = App(env, refute=True)
    out = start(tmp_path, app)
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    app2 = App(env, refute=True)
    req = ReplayRequest(
        bundle=tmp_path / "b",
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=cfg(tmp_path),
        run_dir=other_dir / "run",
    )
    out2 = replay(req, backend_factory=lambda s: app2.connect())
    approve(out2.run_dir, "continue", "alice")
    shutil.copyfile(out2.run_dir / "approval.json", out.run_dir / "approval.json")
    with pytest.raises(RefusedError, match="approval is for run"):
        go(out.run_dir, app)


def test_operators_list_is_enforced(tmp_path, env, store):
    config = DeployConfig.model_validate(
        {**cfg(tmp_path, store).model_dump(by_alias=True), "approvals": {"operators": ["alice"]}}
    )
    out = start(tmp_path, App(env, refute=True), store=store, config=config)
    with pytest.raises(RefusedError, match="not among approvals.operators"):
        approve(out.run_dir, "continue", "eve", os_user="eve")
    assert approve(out.run_dir, "continue", "Alice Smith", os_user="alice")["recorded"]


def test_decision_rules_bad_input(tmp_path, env, store):
    out = start(tmp_path, App(env, refute=True), store=store)
    with pytest.raises(RefusedError, match="not allowed for this pause"):
        approve(out.run_dir, "skip", "alice")
    with pytest.raises(UsageError, match="--effect"):
        approve(out.run_dir, "reconcile", "alice")
    with pytest.raises(UsageError, match="expected one of"):
        approve(out.run_dir, "yolo", "alice")


def test_require_approval_refuses_without_one(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store)
    with pytest.raises(RefusedError, match="awaiting an operator decision"):
        go(out.run_dir, app, require_approval=True)


def test_two_concurrent_resumes_exactly_one_proceeds(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store)
    app.refute = False
    app.show(home())
    approve(out.run_dir, "continue", "alice")
    entered, release = threading.Event(), threading.Event()

    def slow_connect(spec):
        fb = app.connect()
        real_capture = fb.capture

        def slow_capture():
            entered.set()
            release.wait(30)
            return real_capture()

        fb.capture = slow_capture
        return fb

    result = {}
    t = threading.Thread(target=lambda: result.setdefault("first", resume(out.run_dir, backend_factory=slow_connect)))
    t.start()
    assert entered.wait(30)
    with pytest.raises(RefusedError, match="owned by a live process"):
        resume(out.run_dir, backend_factory=lambda spec: FakeBackend(home()))
    release.set()
    t.join(60)
    assert result["first"].state == "COMPLETED" and rows(env) == 1


def test_approval_before_pauses_then_acts_once_approved(tmp_path, env, store):
    app = App(env)
    out = start(tmp_path, app, store=store, steps=(dict(SAVE, approval="before"), AFTER))
    assert (out.state, state(out.run_dir)["paused_reason"]) == ("PAUSED", "awaiting_approval")
    assert app.events == [] and rows(env) == 0
    approve(out.run_dir, "continue", "alice")
    assert go(out.run_dir, app).state == "COMPLETED"
    assert rows(env) == 1


def test_non_durable_runs_cannot_be_resumed(tmp_path, env, store):
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store, config=cfg(tmp_path, store, durable=False))
    assert out.state == "FAILED"
    with pytest.raises(RefusedError, match="non-durable"):
        go(out.run_dir, app)


def test_quorum_needs_distinct_authenticated_operators_for_consequential_steps(tmp_path, env, store):
    config = DeployConfig.model_validate({**cfg(tmp_path, store).model_dump(by_alias=True), "approvals": {"quorum": 2}})
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store, config=config)
    app.refute = False
    app.show(home())
    with pytest.raises(
        RefusedError, match="needs 2 distinct authenticated operators"
    ):  # an OS user's vote never counts
        approve(out.run_dir, "continue", "carol", os_user="carol")
    assert (
        approve(out.run_dir, "continue", "alice", os_user="svc", options=DecisionOptions(authenticated=True))[
            "complete"
        ]
        is False
    )
    assert approve(out.run_dir, "continue", "alice", os_user="other", options=DecisionOptions(authenticated=True))[
        "noop"
    ]  # one operator counts once
    with pytest.raises(RefusedError, match="quorum not met: 1 of 2"):
        go(out.run_dir, app)
    assert (
        approve(out.run_dir, "continue", "bob", os_user="svc", options=DecisionOptions(authenticated=True))["complete"]
        is True
    )
    assert go(out.run_dir, app).state == "COMPLETED"
    assert rows(env) == 1


def test_escalate_reissues_an_expired_task_at_the_next_level(tmp_path, env, store):
    config = DeployConfig.model_validate(
        {
            **cfg(tmp_path, store, pause_ttl_s=600).model_dump(by_alias=True),
            "approvals": {"levels": ["team-lead", "manager"]},
        }
    )
    app = App(env, refute=True)
    out = start(tmp_path, app, store=store, config=config)
    old = pending_of(out.run_dir)
    assert old["task"]["level"] == "team-lead"
    later = time.time() + 3600  # an hour on: the task has expired
    with pytest.raises(RefusedError, match="expired"):
        approve(out.run_dir, "continue", "alice", options=DecisionOptions(now=later))
    esc = approve(out.run_dir, "escalate", "alice", note="over to the manager", options=DecisionOptions(now=later))
    assert esc["level"] == "manager"
    new = pending_of(out.run_dir)
    assert new["pause_id"] != old["pause_id"] and new["escalated_from"] == old["pause_id"]
    app.refute = False
    app.show(home())
    approve(out.run_dir, "continue", "carol")
    assert go(out.run_dir, app).state == "COMPLETED"


def test_edited_manifest_is_refused(tmp_path, env):
    app = App(env, refute=True)
    out = start(tmp_path, app)
    edit_json(out.run_dir / "manifest.json", lambda m: m["config"]["policy"].update(max_steps=999))
    with pytest.raises(RefusedError, match="manifest changed"):
        approve(out.run_dir, "continue", "alice")
    with pytest.raises(RefusedError, match="manifest changed"):
        go(out.run_dir, app)


def test_teach_cuts_a_reviewable_patch_from_the_halt_frame_and_resolves_afresh(tmp_path, env):
    from openadapt_flow.runtime.operate.teach import apply_patches
    from openadapt_flow.store import RunDir
    from tests.support.screens import Canvas

    renamed = Canvas().text(20, 20, "Ledger").button(300, 300, "Submit", w=140).array()
    app = App(env)
    out = start(
        tmp_path,
        app,
        steps=(dict(SAVE, target={"template": "templates/post.png", "region": [100, 100, 120, 40]}), AFTER),
    )
    assert out.state == "COMPLETED"  # the recorded app; now the app changes its button
    app2 = App(env)
    app2.frame = renamed
    app2.connect()
    (tmp_path / "run2").mkdir()
    req = ReplayRequest(
        bundle=tmp_path / "b",
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=cfg(tmp_path),
        run_dir=tmp_path / "run2/run",
    )
    halted = replay(req, backend_factory=lambda s: app2.connect())
    assert halted.state == "PAUSED" and halted.category == "resolution"
    pending = json.loads((halted.run_dir / "pending_escalation.json").read_text())
    assert "teach" in pending["allowed_decisions"]
    with pytest.raises(UsageError, match="outside the halt frame"):
        approve(halted.run_dir, "teach", "alice", options=DecisionOptions(point=(5000, 5)))
    out = approve(halted.run_dir, "teach", "alice", options=DecisionOptions(point=(370, 320)))
    patch_dir = halted.run_dir / "patches" / pending["pause_id"]
    diff = (patch_dir / "flow.yaml.diff").read_text()
    assert "-    template: templates/post.png" in diff and "taught" in diff
    clicks_before = len([e for e in app2.events if e[0] == "click"])
    res = go(halted.run_dir, app2)
    assert res.state == "COMPLETED", res.message
    click = [e for e in app2.events if e[0] == "click"][clicks_before]
    assert (
        abs(click[1] - 370) <= 2 and abs(click[2] - 320) <= 2
    )  # resolved afresh on the live screen, not a blind click
    recs = [json.loads(l) for l in (halted.run_dir / "journal.jsonl").read_text().splitlines()]
    assert any(r["type"] == "patched" for r in recs)
    # the reviewed patch applies to the bundle on disk, once
    applied = apply_patches(RunDir.open(halted.run_dir), tmp_path / "b")
    assert applied == [pending["pause_id"]]
    assert "taught" in (tmp_path / "b/flow.yaml").read_text()
    assert apply_patches(RunDir.open(halted.run_dir), tmp_path / "b") == []
