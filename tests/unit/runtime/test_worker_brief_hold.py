"""A decision reaches its resume without waiting `retry_s`: the worker that finds the run held for a moment by
another command (a decision being recorded, a status read) resumes it as soon as that holder lets go — even when the
holder let go before the worker looked; a refusal for a real reason, or a holder that keeps the run past the bound,
still waits `retry_s`."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest

import openadapt_flow.runtime.worker as worker_mod
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import DecisionOptions, approve, deciding
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.runtime.worker import Worker
from tests.unit.runtime.test_durable import App, env, home, rows, start  # noqa: F401

pytestmark = pytest.mark.timeout(120)

RETRY_S = 3600.0  # a test that needed the retry would time out long before it


def _approved(tmp_path, env, quorum: int = 1):
    """A run paused on a refuted write, the app put back on its form, and an operator's `continue` recorded."""
    app = App(env, refute=True)
    config = DeployConfig.model_validate(
        {
            "schema": "openadapt-flow/config@1",
            "approvals": {"quorum": quorum},
            "runtime": {"runs_root": str(tmp_path), "settle_quiet_s": 0.01, "durable": True},
        }
    )
    out = start(tmp_path, app, config=config)
    assert out.state == "PAUSED"
    app.refute = False
    app.show(home())
    approve(
        out.run_dir, "continue", "alice", options=DecisionOptions(authenticated=True)
    )  # the console's or a credential's vote
    return open_ref(out.run_dir), app


@contextmanager
def _held(run, how: str):
    """The run held as a decision holds it (its lease, `deciding`) or as a status read does (the OS lock)."""
    if how == "decision":
        with deciding(run, run.manifest()):
            yield
        return
    unlock = run.try_lock()
    assert unlock is not None
    try:
        yield
    finally:
        unlock()


def _counting_resume(monkeypatch):
    """The worker's resume, recording each refusal (and signalling the first)."""
    refused: list[str] = []
    first = threading.Event()
    real = worker_mod.resume

    def counted(*a, **kw):
        try:
            return real(*a, **kw)
        except RefusedError as e:
            refused.append(str(e))
            first.set()
            raise

    monkeypatch.setattr(worker_mod, "resume", counted)
    return refused, first


class _Watched(threading.Event):
    """The worker's stop event, noting when the worker waits on it (it polls the held lock with it)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout=None):
        self.waiting.set()
        return super().wait(timeout)


@pytest.mark.parametrize("how", ["decision", "status read"])
@pytest.mark.parametrize("when", ["after the refusal", "while the worker waits"])
def test_a_resume_refused_while_another_command_holds_the_run_runs_when_it_lets_go(
    tmp_path, env, monkeypatch, how, when
):
    run, app = _approved(tmp_path, env)
    refused, first = _counting_resume(monkeypatch)
    worker = Worker(
        tmp_path, log=lambda line: None, backend_factory=lambda spec: app.connect(), retry_s=RETRY_S, hold_wait_s=60.0
    )
    worker.stop = _Watched()
    done: list = []
    with _held(run, how):
        t = threading.Thread(target=lambda: done.extend(worker.run_once()))
        t.start()
        assert first.wait(60), "the worker never tried the run while it was held"
        if when == "while the worker waits":
            assert worker.stop.waiting.wait(60), "the worker did not wait for the holder"
    t.join(60)
    assert len(refused) == 1 and "owned by a live process" in refused[0]  # it was refused once, for the hold
    assert [(r["run_dir"], r["state"]) for r in done] == [(run.ref, "COMPLETED")]  # then resumed in the same scan
    assert rows(env) == 1
    assert any(r["type"] == "run_resumed" for r in run.read_records())


def test_a_holder_that_keeps_the_run_past_the_bound_leaves_it_to_retry_s(tmp_path, env, monkeypatch):
    run, app = _approved(tmp_path, env)
    refused, _ = _counting_resume(monkeypatch)
    worker = Worker(
        tmp_path, log=lambda line: None, backend_factory=lambda spec: app.connect(), retry_s=RETRY_S, hold_wait_s=0.2
    )
    with _held(run, "decision"):
        t0 = time.monotonic()
        done = worker.run_once()
        waited = time.monotonic() - t0
    assert [(r["run_dir"], r["state"]) for r in done] == [(run.ref, "SKIPPED")]
    assert len(refused) == 1 and 0.2 <= waited < 30
    assert worker.run_once() == []  # not again before retry_s
    assert rows(env) == 0 and run.state()["state"] == "PAUSED"


def test_a_resume_refused_for_a_real_reason_waits_retry_s(tmp_path, env, monkeypatch):
    run, app = _approved(tmp_path, env, quorum=2)  # one vote of two: the resume is refused, the lock is free
    refused, _ = _counting_resume(monkeypatch)
    worker = Worker(
        tmp_path, log=lambda line: None, backend_factory=lambda spec: app.connect(), retry_s=RETRY_S, hold_wait_s=60.0
    )
    done = worker.run_once()
    assert [(r["run_dir"], r["state"]) for r in done] == [(run.ref, "SKIPPED")]
    # the lock was free when the worker looked: it tried once more at once (a holder may have let go in between),
    # and a second refusal with the lock free stands
    assert len(refused) == 2 and all("quorum not met" in e for e in refused)
    assert worker.run_once() == []  # it waits retry_s
    assert rows(env) == 0 and run.state()["state"] == "PAUSED"
