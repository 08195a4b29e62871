"""A bundle's `flow` step whose child run was cut during start-up (SPEC §6, docs/durable.md): the parent journaled
`child_started`, then died before the child's manifest.json made it a run (or before its directory existed). Nothing
was sent there, so the parent's resume starts the child afresh; a child that did start is continued, never restarted."""

from __future__ import annotations

import json

import pytest
import yaml

from openadapt_flow.runtime.act import engine
from openadapt_flow.runtime.act import lifecycle
from openadapt_flow.runtime.decide.config import DeployConfig
from openadapt_flow.runtime.act.engine import ReplayRequest, replay
from openadapt_flow.runtime.operate.reconciler import reconcile_root
from openadapt_flow.runtime.resume import resume
from openadapt_flow.store import journal as journal_mod

pytestmark = pytest.mark.timeout(60)

TOOLS = '''
import os
from pathlib import Path


def note(what):
    with Path(os.environ["TOOL_LOG"]).open("a") as f:
        f.write(what + "\\n")


def fetch(q):
    note("fetch " + q)
    return {"total": 7}


def child_tool(q):
    note("child_tool " + q)
    return q


def record(state):
    note("record " + state)
    return "ok"
'''

PARENT = [
    {"id": "fetch", "action": "tool", "call": "restart_tools:fetch", "args": {"q": "{quarter}"}},
    {"id": "sub", "action": "flow", "bundle": "../child", "params": {"q": "{quarter}"}},
    {"id": "done", "action": "tool", "call": "restart_tools:record", "args": {"state": "{steps.sub.state}"}, "consequential": True},
]
CHILD = [{"id": "child-tool", "action": "tool", "call": "restart_tools:child_tool", "args": {"q": "sub-{q}"}}]


class Killed(BaseException):
    """The process died here (a SIGKILL, without the kill: the test goes on as the operator)."""


def workspace_env(monkeypatch: pytest.MonkeyPatch, ws) -> None:
    """The keys, the tool log and the tools module of one workspace, as every command of the test sees them."""
    monkeypatch.setenv("FLOW_KEY_FILE", str(ws / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(ws / "dk"))
    monkeypatch.setenv("TOOL_LOG", str(ws / "tool.log"))
    monkeypatch.syspath_prepend(str(ws))
    monkeypatch.chdir(ws)


@pytest.fixture
def ws(tmp_path, monkeypatch):
    (tmp_path / "restart_tools.py").write_text(TOOLS)
    workspace_env(monkeypatch, tmp_path)
    for name, params, steps in (("b", {"quarter": {"required": True}}, PARENT), ("child", {"q": {"required": True}}, CHILD)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "flow.yaml").write_text(yaml.safe_dump({
            "schema": "openadapt-flow/bundle@1", "name": name, "screen": {"width": 10, "height": 10}, "params": params, "steps": steps}))
    return tmp_path


def kill_at(monkeypatch, point: str, occurrence: int) -> None:
    """Die at the `occurrence`-th time `point` is reached (the parent's own start-up reaches each start point first)."""
    seen = {"n": 0}

    def crash(name: str, step: str | None = None) -> None:
        if (name if step is None else f"{name}@{step}") == point:
            seen["n"] += 1
            if seen["n"] == occurrence:
                raise Killed(point)

    for module in (journal_mod, engine, lifecycle):
        monkeypatch.setattr(module, "crash_point", crash)


@pytest.mark.parametrize("point, occurrence", [
    ("after:child_started@sub", 1),  # the child's directory was never made
    ("start:dir_created", 2), ("start:lease_acquired", 2), ("start:bundle_copied", 2),  # the child's start-up, cut
    ("after:run_started", 2), ("start:state_written", 2),
    ("start:manifest_written", 2),  # the child is a run (RUNNING, its owner dead): continued, not restarted
])
def test_a_child_whose_start_up_was_cut_is_started_afresh_by_the_parents_resume(ws, monkeypatch, point, occurrence):
    cfg = DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(ws / "runs")}})
    kill_at(monkeypatch, point, occurrence)
    with pytest.raises(Killed):
        replay(ReplayRequest(bundle=ws / "b", params={"quarter": "Q3"}, backend=None, config=cfg, run_dir=ws / "runs" / "run"))
    monkeypatch.undo()  # the process "died": the operator's commands run in a clean one
    workspace_env(monkeypatch, ws)
    reconcile_root(ws / "runs")
    run, kid = ws / "runs" / "run", ws / "runs" / "run.sub"
    out = resume(run)
    assert out.state == "COMPLETED", out.message
    assert (ws / "tool.log").read_text().splitlines() == ["fetch Q3", "child_tool sub-Q3", "record COMPLETED"]
    assert json.loads((kid / "state.json").read_text())["state"] == "COMPLETED"
    assert json.loads((run / "manifest.json").read_text())["child_runs"] == ["../run.sub"]
    starts = [json.loads(line)["type"] for line in (kid / "journal.jsonl").read_text().splitlines()].count("run_started")
    assert starts == 1  # one run in the child's directory: a cut start-up left nothing behind to mix with it


def test_a_parent_waiting_on_a_child_whose_resume_died_continues_the_child(ws, monkeypatch):
    """The child paused (a question), was answered, and its resume died mid-way (state RESUMING, no owner): the
    parent's resume must not tell the operator to resume a child that nobody is running — it continues it."""
    from openadapt_flow.runtime.operate.decisions import deliver

    (ws / "child" / "flow.yaml").write_text(yaml.safe_dump({
        "schema": "openadapt-flow/bundle@1", "name": "child", "screen": {"width": 10, "height": 10},
        "params": {"q": {"required": True}},
        "steps": [{"id": "ok", "action": "ask_user", "question": "Go on?", "choices": ["yes", "no"]}, *CHILD]}))
    cfg = DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(ws / "runs")}})
    run, kid = ws / "runs" / "run", ws / "runs" / "run.sub"
    first = replay(ReplayRequest(bundle=ws / "b", params={"quarter": "Q3"}, backend=None, config=cfg, run_dir=run))
    assert (first.state, json.loads((kid / "state.json").read_text())["paused_reason"]) == ("PAUSED", "awaiting_user")
    deliver(kid, "answer", "ops", value="yes")
    kill_at(monkeypatch, "after:decision@ok", 1)
    with pytest.raises(Killed):
        resume(kid)
    monkeypatch.undo()  # the process "died": the operator's commands run in a clean one
    workspace_env(monkeypatch, ws)
    assert json.loads((kid / "state.json").read_text())["state"] in ("RESUMING", "RUNNING")  # and nobody runs it
    out = resume(run)
    assert out.state == "COMPLETED", out.message
    assert (ws / "tool.log").read_text().splitlines() == ["fetch Q3", "child_tool sub-Q3", "record COMPLETED"]
