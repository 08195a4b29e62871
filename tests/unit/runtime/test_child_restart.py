"""A bundle's `flow` step whose child run was cut during start-up (SPEC §6, docs/durable.md): the parent journaled
`child_started`, then died before the child's manifest.json made it a run (or before its directory existed). Nothing
was sent there, so the parent's resume starts the child afresh; a child that did start is continued, never restarted."""

from __future__ import annotations

from pathlib import PosixPath

import pytest
import yaml

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.act import assemble
from openadapt_flow.runtime.operate.reconciler import reconcile_root
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start import lifecycle
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.runref import open_ref, run_name
from openadapt_flow.store import journal as journal_mod
from openadapt_flow.store.select import open_store

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
    {
        "id": "done",
        "action": "tool",
        "call": "restart_tools:record",
        "args": {"state": "{steps.sub.state}"},
        "consequential": True,
    },
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


class Workspace(PosixPath):
    """The test's folder, and the run store its runs go to (`filesystem`, or this process's `memory:`)."""

    store = "filesystem"

    def config(self) -> DeployConfig:
        runtime = {"runs_root": str(self / "runs"), **({"store": "memory:"} if self.store == "memory" else {})}
        return DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": runtime})

    def refs(self) -> tuple[str, str]:
        """The parent run's reference and its `flow` child's."""
        run = str(self / "runs" / "run") if self.store == "filesystem" else f"memory:{self.name}-run"
        return run, run + "/children/sub"  # a child lives inside its parent (runtime/act/durable/child.py)

    def sweep(self) -> None:
        """`flow reconcile` over this workspace's runs (of the memory store: only this test's)."""
        if self.store == "filesystem":
            reconcile_root(self / "runs")
        else:
            reconcile_root(Mine(self.refs()[0]))


class Mine:
    """This test's runs of the process's memory store (others' runs are not this test's to finalise)."""

    def __init__(self, prefix: str) -> None:
        self.store, self.prefix = open_store("memory:"), prefix

    def list_runs(self):
        return [r for r in self.store.list_runs() if r.ref.startswith(self.prefix)]

    def unstarted(self):
        return [r for r in self.store.unstarted() if r.ref.startswith(self.prefix)]


@pytest.fixture(params=["filesystem", "memory"])
def ws(request, tmp_path, monkeypatch):
    (tmp_path / "restart_tools.py").write_text(TOOLS)
    workspace_env(monkeypatch, tmp_path)
    for name, params, steps in (
        ("b", {"quarter": {"required": True}}, PARENT),
        ("child", {"q": {"required": True}}, CHILD),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "flow.yaml").write_text(
            yaml.safe_dump(
                {
                    "schema": "openadapt-flow/bundle@1",
                    "name": name,
                    "screen": {"width": 10, "height": 10},
                    "params": params,
                    "steps": steps,
                }
            )
        )
    ws = Workspace(tmp_path)
    ws.store = request.param
    return ws


def kill_at(monkeypatch, point: str, occurrence: int) -> None:
    """Die at the `occurrence`-th time `point` is reached (the parent's own start-up reaches each start point first)."""
    seen = {"n": 0}

    def crash(name: str, step: str | None = None) -> None:
        if (name if step is None else f"{name}@{step}") == point:
            seen["n"] += 1
            if seen["n"] == occurrence:
                raise Killed(point)

    for module in (journal_mod, assemble, lifecycle):
        monkeypatch.setattr(module, "crash_point", crash)


@pytest.mark.parametrize(
    "point, occurrence",
    [
        ("after:child_started@sub", 1),  # the child's directory was never made
        ("start:dir_created", 2),
        ("start:lease_acquired", 2),
        ("start:bundle_copied", 2),  # the child's start-up, cut
        ("after:run_started", 2),
        ("start:state_written", 2),
        ("start:manifest_written", 2),  # the child is a run (RUNNING, its owner dead): continued, not restarted
    ],
)
def test_a_child_whose_start_up_was_cut_is_started_afresh_by_the_parents_resume(ws, monkeypatch, point, occurrence):
    kill_at(monkeypatch, point, occurrence)
    with pytest.raises(Killed):
        replay(
            ReplayRequest(
                bundle=ws / "b", params={"quarter": "Q3"}, backend=None, config=ws.config(), run_dir=ws.refs()[0]
            )
        )
    monkeypatch.undo()  # the process "died": the operator's commands run in a clean one
    workspace_env(monkeypatch, ws)
    ws.sweep()
    out = resume(ws.refs()[0])
    assert out.state == "COMPLETED", out.message
    run, kid = open_ref(ws.refs()[0]), open_ref(ws.refs()[1])
    assert (ws / "tool.log").read_text().splitlines() == ["fetch Q3", "child_tool sub-Q3", "record COMPLETED"]
    assert kid.state()["state"] == "COMPLETED"
    assert run.manifest()["child_runs"] == [f"children/{run_name(kid)}"]
    starts = [r["type"] for r in kid.read_records()].count("run_started")
    assert starts == 1  # one run in the child's directory: a cut start-up left nothing behind to mix with it


def test_a_parent_waiting_on_a_child_whose_resume_died_continues_the_child(ws, monkeypatch):
    """The child paused (a question), was answered, and its resume died mid-way (state RESUMING, no owner): the
    parent's resume must not tell the operator to resume a child that nobody is running — it continues it."""
    from openadapt_flow.runtime.operate.approval import deliver

    (ws / "child" / "flow.yaml").write_text(
        yaml.safe_dump(
            {
                "schema": "openadapt-flow/bundle@1",
                "name": "child",
                "screen": {"width": 10, "height": 10},
                "params": {"q": {"required": True}},
                "steps": [{"id": "ok", "action": "ask_user", "question": "Go on?", "choices": ["yes", "no"]}, *CHILD],
            }
        )
    )
    run, kid = ws.refs()
    first = replay(
        ReplayRequest(bundle=ws / "b", params={"quarter": "Q3"}, backend=None, config=ws.config(), run_dir=run)
    )
    assert (first.state, open_ref(kid).state()["paused_reason"]) == ("PAUSED", "awaiting_user")
    deliver(kid, "answer", "ops", value="yes")
    kill_at(monkeypatch, "after:decision@ok", 1)
    with pytest.raises(Killed):
        resume(kid)
    monkeypatch.undo()  # the process "died": the operator's commands run in a clean one
    workspace_env(monkeypatch, ws)
    assert open_ref(kid).state()["state"] in ("RESUMING", "RUNNING")  # and nobody runs it
    out = resume(run)
    assert out.state == "COMPLETED", out.message
    assert (ws / "tool.log").read_text().splitlines() == ["fetch Q3", "child_tool sub-Q3", "record COMPLETED"]
