"""`ctx.replay` on the in-package fake backend: a bundle's GUI steps as a child run, its pauses surfacing in the parent."""

from __future__ import annotations

import pytest

import openadapt_flow
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import resume, start_workflow
from openadapt_flow.runtime.start.launch import WorkflowRequest
from openadapt_flow.runtime.start.runref import open_ref
from tests.unit.runtime.test_durable import AFTER, SAVE, App, env, rows, store  # noqa: F401 - env, store are fixtures
from tests.unit.runtime.test_engine import make_bundle
from tests.unit.runtime.workflow_support import SOURCE, config, log, state, write_module

pytestmark = pytest.mark.timeout(120)

GUI = (
    SOURCE
    + '''

@workflow
def post_gui(ctx, vendor: str = "ACME"):
    data = ctx.tool(fetch, "Q")
    child = ctx.replay(os.environ["WF_BUNDLE"], params={"vendor": vendor})
    return [data["total"], child["state"], child["run_dir"]]
'''
)


@pytest.fixture
def ws(tmp_path, monkeypatch, env):  # noqa: F811 - the ledger fixture from test_durable
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    monkeypatch.setenv("WF_LOG", str(tmp_path / "wf.log"))
    monkeypatch.setenv("WF_BUNDLE", str(tmp_path / "b"))
    monkeypatch.syspath_prepend(str(tmp_path))
    write_module(tmp_path, GUI)
    yield tmp_path
    write_module(tmp_path)


def start(ws, app, backend=True, store="filesystem"):
    where = {"store": "memory:"} if store == "memory" else {}
    cfg = config(ws, runtime={"runs_root": str(ws / "runs"), "settle_quiet_s": 0.01, **where})
    ref = f"memory:{ws.name}-run" if store == "memory" else ws / "run"
    req = WorkflowRequest("wf_mod:post_gui", {}, BackendSpec(kind="fake") if backend else None, cfg, run_dir=ref)
    return start_workflow(req, backend_factory=lambda spec: app.connect())


def test_a_child_pause_pauses_the_parent_and_both_go_on_after_the_decision(ws, env, store):  # noqa: F811
    make_bundle(ws / "b", [dict(SAVE, approval="before"), AFTER])
    app = App(env)
    out = start(ws, app, store=store)
    child = open_ref(out.run_dir).child("replay-b")
    assert (out.state, state(out.run_dir)["paused_reason"]) == ("PAUSED", "awaiting_child")
    assert state(child)["paused_reason"] == "awaiting_approval" and rows(env) == 0
    assert "flow approve" in out.message
    again = resume(out.run_dir, backend_factory=lambda spec: app.connect())
    assert again.state == "PAUSED" and rows(env) == 0  # the child has no decision yet: nothing moves
    approve(child, "continue", "alice")
    done = resume(out.run_dir, backend_factory=lambda spec: app.connect())
    assert done.state == "COMPLETED", done.message
    assert rows(env) == 1 and log(ws) == ["fetch Q"]
    assert openadapt_flow.wait(out.run_dir).result == [1250, "COMPLETED", "children/replay-b"]
    assert state(child)["state"] == "COMPLETED"


def test_replay_without_a_backend_pauses_and_a_resume_can_supply_one(ws, env, store):  # noqa: F811
    make_bundle(ws / "b", [SAVE, AFTER])
    app = App(env)
    out = start(ws, app, backend=False, store=store)
    assert (out.state, out.category) == ("PAUSED", "input") and "no backend" in out.message
    approve(out.run_dir, "continue", "alice")
    done = resume(out.run_dir, backend=BackendSpec(kind="fake"), backend_factory=lambda spec: app.connect())
    assert done.state == "COMPLETED", done.message
    assert rows(env) == 1 and log(ws) == ["fetch Q"]


def test_the_worker_resumes_a_parent_once_its_nested_childs_decision_is_recorded(ws, env):  # noqa: F811
    from openadapt_flow.runtime.worker import Worker

    make_bundle(ws / "b", [dict(SAVE, approval="before"), AFTER])
    app = App(env)
    cfg = config(ws, runtime={"runs_root": str(ws / "runs"), "settle_quiet_s": 0.01})
    out = start_workflow(
        WorkflowRequest("wf_mod:post_gui", {}, BackendSpec(kind="fake"), cfg, run_dir=ws / "runs" / "wf"),
        backend_factory=lambda spec: app.connect(),
    )
    child = out.run_dir / "children" / "replay-b"
    assert (out.state, state(child)["paused_reason"]) == ("PAUSED", "awaiting_approval")
    worker = Worker(ws / "runs", log=lambda line: None, backend_factory=lambda spec: app.connect())
    assert worker.run_once() == []  # no decision on the child yet: nothing is due
    approve(child, "continue", "alice")
    done = worker.run_once()
    assert [(r["run_dir"], r["state"]) for r in done] == [(str(out.run_dir), "COMPLETED")]
    assert rows(env) == 1 and state(child)["state"] == "COMPLETED"
    assert worker.run_once() == []
