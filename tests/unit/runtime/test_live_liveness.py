"""Liveness (SPEC §5 invariant 7, §10): fencing stops a stale owner before its next input; a fresh heartbeat from
another host keeps a run untouched while a stale one lets it be finalised; a reused pid is not mistaken for the
owner; and `flow worker` resumes INTERRUPTED runs (or runs whose owner died) that have nothing uncertain."""

from __future__ import annotations

import json
import multiprocessing
import os
import time

import pytest

from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.reconciler import reconcile_one
from openadapt_flow.runtime.runs import resume
from openadapt_flow.runtime.start.lifecycle import effective_state
from openadapt_flow.runtime.worker import Worker
from openadapt_flow.store import RunDir
from openadapt_flow.store.fs.lease import try_lock, unlock
from openadapt_flow.store.lease import LEASE, LeaseLost, boot_id, process_start_time
from tests.unit.runtime.test_durable import App, env, rows, start  # noqa: F401
from tests.unit.runtime.test_engine import done, records

pytestmark = pytest.mark.timeout(120)


def _killed_run(tmp_path, env, point: str):
    """A run whose process SIGKILLed itself at `point` (a forked child running the real engine)."""

    def child() -> None:
        os.environ["FLOW_CRASH_AT"] = point
        start(tmp_path, App(env))
        os._exit(0)  # not reached when the crash point fires

    p = multiprocessing.get_context("fork").Process(target=child)
    p.start()
    p.join(60)
    assert p.exitcode == -9, p.exitcode
    run_dir = tmp_path / "run"
    assert json.loads((run_dir / "state.json").read_text())["state"] == "RUNNING"
    return run_dir


def _desktop_after_post(env):
    """The fake desktop as the killed run left it: the post landed, the app shows 'Posted'."""
    app = App(env)
    app.frame = done()
    return app.connect()


def _edit_lease(run_dir, **fields):
    lease = json.loads((run_dir / LEASE).read_text())
    lease.update(fields)
    (run_dir / LEASE).write_text(json.dumps(lease))


def test_a_stale_owner_is_fenced_before_its_next_input(tmp_path, env):
    app = App(env)
    real = app.on_event

    def taken_over(fake, ev):  # while the post step runs, another process takes the run over (a new generation)
        real(fake, ev)
        if ev[0] == "move":  # the pointer's park before the first step: not yet
            return
        lease = json.loads((tmp_path / "run" / LEASE).read_text())
        _edit_lease(tmp_path / "run", generation=lease["generation"] + 1)

    app.on_event = taken_over
    with pytest.raises(LeaseLost):
        start(tmp_path, app)
    recs = records(tmp_path / "run")
    assert [r["step"] for r in recs if r["type"] == "action_dispatched"] == ["post"]  # `finish` never dispatched
    assert not any(e[0] == "press" for e in app.events)  # and no key was sent
    assert LeaseLost.exit_code == 6


def test_a_fresh_heartbeat_on_another_host_keeps_the_run_untouched_a_stale_one_does_not(tmp_path, env):
    run_dir = _killed_run(tmp_path, env, "after:step_verified@post")
    _edit_lease(run_dir, host="another-host", boot_id="other-boot", heartbeat_epoch=time.time())
    assert reconcile_one(run_dir)["action"] == "none"
    assert effective_state(RunDir(run_dir))["state"] == "RUNNING"
    with pytest.raises(RefusedError, match="another-host"):
        resume(run_dir, backend_factory=lambda spec: _desktop_after_post(env))
    assert json.loads((run_dir / "state.json").read_text())["state"] == "RUNNING"

    _edit_lease(run_dir, heartbeat_epoch=time.time() - 3600)  # that host stopped heartbeating an hour ago
    assert effective_state(RunDir(run_dir))["state"] == "INTERRUPTED"
    out = reconcile_one(run_dir)
    assert (out["action"], out["state"]) == ("finalized", "INTERRUPTED")
    res = resume(run_dir, backend_factory=lambda spec: _desktop_after_post(env))
    assert res.state == "COMPLETED" and rows(env) == 1


def test_a_reused_pid_is_not_the_owner(tmp_path, env):
    run_dir = _killed_run(tmp_path, env, "after:step_verified@post")
    me = os.getpid()  # a live process holding the run's lock (an inherited descriptor), its pid reused by another
    _edit_lease(run_dir, pid=me, boot_id=boot_id(), heartbeat_epoch=time.time(), start_time="1")
    fd = try_lock(run_dir)
    assert fd is not None
    try:
        assert effective_state(RunDir(run_dir))["state"] == "INTERRUPTED"
        _edit_lease(run_dir, start_time=process_start_time(me))  # the same pid *and* start time: the owner lives
        assert reconcile_one(run_dir)["action"] == "none"
        _edit_lease(run_dir, start_time="1")
        assert reconcile_one(run_dir)["action"] == "finalized"
    finally:
        unlock(fd)
    assert json.loads((run_dir / "state.json").read_text())["state"] == "INTERRUPTED"


def test_two_reconcilers_that_both_read_the_run_live_finalise_it_once(tmp_path, env):
    """Two fleet workers' reconcile passes at once: both read RUNNING, the first to take the lock finalises, and the
    second, locking after it, must see the run is no longer live (found under load: two `interrupted` records)."""
    run_dir = _killed_run(tmp_path, env, "after:step_verified@post")
    late = RunDir(run_dir)
    lock = late.try_lock

    def the_other_finalises_first():
        assert reconcile_one(run_dir)["action"] == "finalized"  # between this one's read of the state and its lock
        return lock()

    late.try_lock = the_other_finalises_first
    assert reconcile_one(late)["action"] == "none"
    assert [r["type"] for r in records(run_dir)].count("interrupted") == 1
    assert json.loads((run_dir / "state.json").read_text())["state"] == "INTERRUPTED"


@pytest.mark.parametrize("reconciled", [True, False])
def test_the_worker_resumes_an_interrupted_run_with_nothing_uncertain(tmp_path, env, reconciled):
    run_dir = _killed_run(tmp_path, env, "after:step_verified@post")
    if reconciled:
        reconcile_one(run_dir)
    worker = Worker(run_dir.parent, log=lambda line: None, backend_factory=lambda spec: _desktop_after_post(env))
    done = worker.run_once()
    assert [(r["run_dir"], r["state"]) for r in done] == [(str(run_dir), "COMPLETED")]
    assert rows(env) == 1


def test_the_worker_leaves_an_uncertain_run_to_an_operator(tmp_path, env):
    run_dir = _killed_run(tmp_path, env, "after:action_dispatched@post")
    reconcile_one(run_dir)
    worker = Worker(run_dir.parent, log=lambda line: None, backend_factory=lambda spec: _desktop_after_post(env))
    assert worker.run_once() == []
    assert json.loads((run_dir / "state.json").read_text())["state"] == "INTERRUPTED" and rows(env) == 0
