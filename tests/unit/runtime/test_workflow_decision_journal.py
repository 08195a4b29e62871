"""A workflow's answer, signal or decision is the point of no return once journaled (SPEC §8, §14, docs/durable.md):
a resume killed at any point after the operator delivered it applies it — from the journal when it is there — and
never asks again, never applies it twice, and leaves no stale approval behind to refuse a later pause."""

from __future__ import annotations

from pathlib import PosixPath

import pytest

import openadapt_flow
from openadapt_flow.runtime.operate.approval import deliver
from openadapt_flow.runtime.operate.reconciler import reconcile_one, reconcile_root
from openadapt_flow.runtime.runs import resume, start_workflow
from openadapt_flow.runtime.start.launch import WorkflowRequest
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store import escalation as escalation_mod
from openadapt_flow.store import journal as journal_mod
from openadapt_flow.store.memory import store as memory_mod
from tests.unit.runtime.workflow_support import config, journal, log, state, write_module

pytestmark = pytest.mark.timeout(60)

SOURCE = '''
import os
from pathlib import Path
from openadapt_flow import tool, workflow


def note(what):
    with Path(os.environ["WF_LOG"]).open("a") as f:
        f.write(what + "\\n")


@tool(consequential=True)
def post(what):
    note(f"post {what}")
    return "posted"


@workflow
def two_questions(ctx):
    first = ctx.ask_user("Post it?", choices=["post", "hold"])
    sig = ctx.wait_signal("go")
    second = ctx.ask_user("Really?", choices=["yes", "no"])
    ctx.tool(post, [first, sig, second])
    return [first, sig, second]
'''


class Killed(BaseException):
    """The process died here (a SIGKILL, without the kill: the test process goes on as the operator)."""


class Workspace(PosixPath):
    """The test's folder, and the run store its runs go to (`filesystem`, or this process's `memory:`)."""

    store = "filesystem"


@pytest.fixture(params=["filesystem", "memory"])
def ws(request, tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    monkeypatch.setenv("WF_LOG", str(tmp_path / "wf.log"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    write_module(tmp_path, SOURCE)
    ws = Workspace(tmp_path)
    ws.store = request.param
    yield ws
    write_module(tmp_path)


def kill_at(monkeypatch, point: str) -> None:
    def crash(name: str, step: str | None = None) -> None:
        if f"{name}@{step}" == point:
            raise Killed(point)

    for module in (journal_mod, escalation_mod, memory_mod):  # the filesystem's and the memory store's points
        monkeypatch.setattr(module, "crash_point", crash)


def resume_killed_at(ws, monkeypatch, run, point: str) -> None:
    kill_at(monkeypatch, point.removesuffix("+RESUMING"))
    with pytest.raises(Killed):
        resume(run)
    if point.endswith("+RESUMING"):  # died a moment later: after the state said RESUMING, before the decision
        open_ref(run).write_state("RESUMING")
    monkeypatch.undo()  # the operator's own process: no crash point, same environment
    monkeypatch.setenv("FLOW_KEY_FILE", str(ws / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(ws / "dk"))
    monkeypatch.setenv("WF_LOG", str(ws / "wf.log"))
    monkeypatch.syspath_prepend(str(ws))
    monkeypatch.chdir(ws)
    # `flow reconcile` (a resume killed before it wrote RESUMING left the run PAUSED: nothing to finalise); in the
    # process's memory store, of this test's run only
    reconcile_root(ws / "runs") if ws.store == "filesystem" else reconcile_one(run)


def drive_to_end(run, deliveries: list[tuple[str, str]]) -> list[str]:
    """Resume as an operator would: deliver only what the run is asking for; return what it asked for."""
    asked = []
    for _ in range(6):
        out = resume(run)
        if out.state != "PAUSED":
            assert out.state == "COMPLETED", out.message
            return asked
        reason = state(run)["paused_reason"]
        asked.append(reason)
        kind, value = deliveries.pop(0)
        assert reason == {"answer": "awaiting_user", "signal": "awaiting_signal"}[kind], (reason, kind)
        deliver(run, kind, "ctl", value=value) if kind == "answer" else deliver(
            run, "signal", "ctl", name="go", data=value
        )
    raise AssertionError("the run never completed")


@pytest.mark.parametrize(
    "point",
    [
        "after:run_resumed@None",
        "after:run_resumed@None+RESUMING",
        "after:decision@ask-user",
        "after:step_verified@ask-user",
        "approval:consuming@None",
        "after:decision@signal-go",
        "after:step_verified@signal-go",
    ],
)
def test_a_resume_killed_after_the_operator_delivered_never_asks_again(ws, monkeypatch, point):
    cfg = config(ws, runtime={"runs_root": str(ws / "runs"), **({"store": "memory:"} if ws.store == "memory" else {})})
    ref = f"memory:{ws.name}-r" if ws.store == "memory" else ws / "runs" / "r"
    out = start_workflow(WorkflowRequest("wf_mod:two_questions", {}, None, cfg, run_dir=ref))
    run = out.run_dir
    deliver(run, "answer", "ctl", value="post")
    deliveries = [("signal", "s1"), ("answer", "yes")]
    if "signal" in point:  # get to the signal's pause first, uncrashed
        assert resume(run).state == "PAUSED" and state(run)["paused_reason"] == "awaiting_signal"
        deliver(run, "signal", "ctl", name="go", data="s1")
        deliveries = [("answer", "yes")]
    resume_killed_at(ws, monkeypatch, run, point)
    asked = drive_to_end(run, deliveries)
    assert len(asked) == (1 if "signal" in point else 2), asked  # the delivered one was never asked for again
    assert openadapt_flow.wait(run, timeout=5).result == ["post", "s1", "yes"]
    assert log(ws) == ["post ['post', 's1', 'yes']"]
    recs = journal(run)
    verified = [r["step"] for r in recs if r["type"] == "step_verified"]
    assert verified == ["ask-user", "signal-go", "ask-user-2", "post"]  # each applied exactly once
    assert not open_ref(run).has_approval()
