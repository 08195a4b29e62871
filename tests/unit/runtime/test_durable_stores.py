"""The durable runtime on every run store (SPEC §18: one interface; issues 13 and 15): the same scenarios, in process,
against the filesystem store, the `memory:` store and the PostgreSQL store (a real server, one schema per test),
asserting only through the run handle.

A kill is simulated in process at the crash kit's own fault points (FLOW_CRASH_AT): the store's kill handler
(store/faults.py `kill_handler`) raises `Killed` there (a BaseException, like a death nothing in the runtime may catch).
On the memory store the store's contents are frozen at that instant and restored after (tests/support/memcrash.py's
crash model), so nothing the dying code writes while it unwinds survives; on the filesystem and PostgreSQL stores such
writes land, so these cases are a fast approximation there — tests/crash/ SIGKILLs real `flow` processes on the
filesystem and PostgreSQL stores (and kills in-process commands with this model on the memory store).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import openadapt_flow
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import approve, deliver
from openadapt_flow.runtime.runs import replay, resume, start_workflow
from openadapt_flow.runtime.start.launch import ReplayRequest, WorkflowRequest
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store import FilesystemStore, MemoryContents, MemoryRun, MemoryStore, PostgresRun, RunDir, faults
from openadapt_flow.store.select import open_store
from tests.support.pg import pg_server, store_spec  # noqa: F401 — pg_server is a session fixture (one server per worker)
from tests.unit.runtime.test_durable import AFTER, SAVE, App, VanishingLedger, env, home, rows  # noqa: F401 (env: a fixture)
from tests.unit.runtime.test_engine import make_bundle
from tests.unit.runtime.workflow_support import log, write_module

pytestmark = pytest.mark.timeout(120)
KEY_ENV = {"FLOW_KEY_FILE": "install.key", "FLOW_DECISION_KEY_FILE": "decision.key"}


HANDLES = {"filesystem": RunDir, "memory": MemoryRun, "postgres": PostgresRun}


@pytest.fixture(params=["filesystem", "memory", "postgres"])
def where(request, tmp_path, monkeypatch, env):
    """(config, run reference) of a new run in the store under test; `env` (test_durable) made the ledger database."""
    for var, name in KEY_ENV.items():
        monkeypatch.setenv(var, str(tmp_path / name))
    runtime = {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01, "durable": True}
    if request.param == "memory":
        runtime["store"] = "memory:"
        ref = f"memory:{tmp_path.name}"  # unique per test: the process's memory store outlives one test
    elif request.param == "postgres":  # a fresh schema per test on the session's server
        runtime["store"] = store_spec(
            request.getfixturevalue("pg_server"), f"d{abs(hash(request.node.nodeid)):x}", monkeypatch
        )
        ref = "pg:run"
    else:
        ref = str(tmp_path / "run")
    config = DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": runtime})
    return request.param, config, ref


def start(tmp_path, where, app, steps=(SAVE, AFTER)):
    _, config, ref = where
    bundle = tmp_path / "b"
    make_bundle(bundle, list(steps))
    req = ReplayRequest(
        bundle=bundle, params={"vendor": "ACME"}, backend=BackendSpec(kind="fake"), config=config, run_dir=ref
    )
    return replay(req, backend_factory=lambda spec: app.connect())


def go(run, app, **kw):
    return resume(run, backend_factory=lambda spec: app.connect(), **kw)


def kinds(run, type_):
    return [r for r in run.read_records() if r["type"] == type_]


def clicks(app):
    return [e for e in app.events if e[0] == "click"]


def test_each_store_holds_the_run_it_was_asked_for(tmp_path, where, env):
    kind, _, ref = where
    out = start(tmp_path, where, App(env, refute=True))
    run = open_ref(out.run_dir)
    assert isinstance(run, HANDLES[kind]) and run.ref == ref
    assert (tmp_path / "run" / "manifest.json").is_file() == (kind == "filesystem")
    assert not (tmp_path / "runs").exists()  # a given run reference, never the default root


def test_pause_approve_resume_completes_with_exactly_one_write(tmp_path, where, env):
    app = App(env, refute=True)
    out = start(tmp_path, where, app)
    run = open_ref(out.run_dir)
    assert (out.state, run.state()["paused_reason"], run.read_pending()["step"]) == (
        "PAUSED",
        "awaiting_approval",
        "post",
    )
    app.refute = False
    app.show(home())  # the operator put the app back on its form
    approve(run, "continue", "alice")
    res = go(run, app)
    assert res.state == "COMPLETED", res.message
    assert rows(env) == 1 and run.state()["state"] == "COMPLETED" and not run.has_pending() and not run.has_approval()
    assert [d["decision"] for d in run.decisions()] == ["continue"] and len(kinds(run, "decision")) == 1
    assert run.read_checkpoint()["step"] == "finish"
    assert go(run, app).message == "run is already terminal (COMPLETED); nothing to do" and rows(env) == 1


def test_a_decision_is_consumed_once_and_its_replay_is_refused(tmp_path, where, env):
    app = App(env, refute=True)
    run = open_ref(start(tmp_path, where, app).run_dir)
    approve(run, "continue", "alice")
    saved = run.read_approval()
    assert go(run, app).state == "PAUSED"  # the screen shows 'Posted', the row is not there: pauses again
    first = kinds(run, "decision")[0]["data"]["pause_id"]
    assert not run.has_approval() and run.has_decision(first) and run.ledger_consumed(first) is not None
    body = {k: v for k, v in saved.items() if k not in ("schema", "signature")}
    run.write_approval(body, saved["signature"])  # replay the old approval against the new pause
    with pytest.raises(RefusedError, match="not the pending"):
        go(run, app)
    assert len(kinds(run, "decision")) == 1 and rows(env) == 0


def test_an_uncertain_write_is_never_blindly_performed_again(tmp_path, where, env):
    app = VanishingLedger(env)
    run = open_ref(start(tmp_path, where, app).run_dir)
    assert run.state()["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    sent = clicks(app)
    approve(run, "continue", "alice")
    with pytest.raises(RefusedError, match="UNKNOWN on re-check"):
        go(run, app)
    assert (
        clicks(app) == sent and run.has_approval() and run.state()["state"] == "PAUSED"
    )  # nothing sent, nothing spent
    approve(run, "reconcile", "alice", effect="landed")
    assert go(run, app).state == "COMPLETED" and clicks(app) == sent
    post = [r for r in kinds(run, "step_verified") if r["step"] == "post"]
    assert [r["data"]["verified_by"] for r in post] == ["operator"]


class Killed(BaseException):
    """This process 'died' at a crash point."""


@contextmanager
def killed_at(where, monkeypatch, point: str) -> Iterator[None]:
    """The block dies at FLOW_CRASH_AT=`point`: the store's kill handler (store/faults.py) raises `Killed` there, and
    the block must die. On the memory store the store's contents are frozen at that instant and restored after
    (tests/support/memcrash.py's model): what the dying code writes while it unwinds is thrown away."""
    memory = open_store("memory:")
    assert isinstance(memory, MemoryStore)
    survivors: list[MemoryContents] = []

    def die(p: str) -> None:
        if where[0] == "memory" and not survivors:
            survivors.append(memory.freeze())
        raise Killed(p)

    monkeypatch.setenv(faults.ENV, point)
    try:
        with faults.kill_handler(die), pytest.raises(Killed):
            yield
    finally:
        monkeypatch.delenv(faults.ENV, raising=False)
        if survivors:
            memory.restore(survivors[0])


@pytest.mark.parametrize(
    "point, verified_by",
    [
        ("after:action_sent@post", "reconciled"),  # the input was sent, nothing verified: uncertain, re-checked, landed
        ("after:step_verified@post", "runtime"),  # verified and journaled, the checkpoint not yet written
    ],
)
def test_killed_after_a_write_was_sent_resume_never_sends_it_again(
    tmp_path, where, env, monkeypatch, point, verified_by
):
    app = App(env)
    with killed_at(where, monkeypatch, point):
        start(tmp_path, where, app)
    run = open_ref(where[2])
    assert run.state()["state"] == "RUNNING" and rows(env) == 1 and len(clicks(app)) == 1  # died between records
    res = go(run, app)
    assert res.state == "COMPLETED", res.message
    assert rows(env) == 1 and len(clicks(app)) == 1  # the write that landed is never sent again
    assert len(kinds(run, "interrupted")) == 1 and run.read_checkpoint()["step"] == "finish"
    assert [r["data"]["verified_by"] for r in kinds(run, "step_verified") if r["step"] == "post"] == [verified_by]


def test_killed_while_consuming_the_decision_resumes_once(tmp_path, where, env, monkeypatch):
    app = App(env, refute=True)
    run = open_ref(start(tmp_path, where, app).run_dir)
    app.refute = False
    app.show(home())
    approve(run, "continue", "alice")
    with killed_at(where, monkeypatch, "approval:consuming"):
        go(run, app)
    res = go(open_ref(where[2]), app)  # a new process's handle (on memory: the contents the kill left)
    assert res.state == "COMPLETED", res.message
    assert rows(env) == 1 and len(kinds(run, "decision")) == 1  # journaled once, applied once, never asked again


@pytest.fixture
def wf(tmp_path, monkeypatch):
    monkeypatch.setenv("WF_LOG", str(tmp_path / "wf.log"))
    monkeypatch.syspath_prepend(str(tmp_path))
    write_module(tmp_path)
    yield tmp_path
    write_module(tmp_path)


def test_a_workflow_and_its_child_run_pause_answer_and_resume_in_either_store(tmp_path, where, wf):
    kind, config, ref = where
    out = start_workflow(WorkflowRequest("wf_mod:parent", {"quarter": "Q3"}, None, config, run_dir=ref))
    run = open_ref(out.run_dir)
    [child] = run.children()
    assert (out.state, run.state()["paused_reason"], child.state()["paused_reason"]) == (
        "PAUSED",
        "awaiting_child",
        "awaiting_user",
    )
    assert resume(run).exit_code == 3  # the child still waits for its answer
    deliver(child, "answer", "ctl", value="post")
    assert resume(child).state == "COMPLETED"
    done = resume(run)
    assert done.state == "COMPLETED", done.message
    assert log(wf) == ["fetch P", "fetch Q3", "post 1250"]  # every call ran once
    assert openadapt_flow.wait(run.ref, timeout=5).result["child"] == {"answer": "post", "pair": [1, 2]}
    assert (tmp_path / "run" / "children").is_dir() == (kind == "filesystem")


def _replay_with_default_config(tmp_path, env, monkeypatch, run_dir=None):
    """The SAVE bundle replayed with a config that names only a runs root (no store)."""
    for var, name in KEY_ENV.items():
        monkeypatch.setenv(var, str(tmp_path / name))
    monkeypatch.chdir(tmp_path)
    config = DeployConfig.model_validate(
        {
            "schema": "openadapt-flow/config@1",
            "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01, "durable": True},
        }
    )
    bundle = tmp_path / "b"
    make_bundle(bundle, [SAVE, AFTER])
    app = App(env)
    return replay(
        ReplayRequest(
            bundle=bundle, params={"vendor": "ACME"}, backend=BackendSpec(kind="fake"), config=config, run_dir=run_dir
        ),
        backend_factory=lambda spec: app.connect(),
    )


def test_the_filesystem_store_is_the_default(tmp_path, env, monkeypatch):
    out = _replay_with_default_config(tmp_path, env, monkeypatch)
    assert out.state == "COMPLETED" and [r.ref for r in FilesystemStore(tmp_path / "runs").list_runs()] == [
        str(out.run_dir)
    ]


def test_a_memory_reference_names_its_store_whatever_the_config_says(tmp_path, env, monkeypatch):
    ref = f"memory:{tmp_path.name}-ref"
    out = _replay_with_default_config(tmp_path, env, monkeypatch, run_dir=ref)
    assert out.state == "COMPLETED" and isinstance(open_ref(out.run_dir), MemoryRun) and str(out.run_dir) == ref
    assert not (tmp_path / ref).exists() and not (tmp_path / "runs").exists()  # no directory named after it
