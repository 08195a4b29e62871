"""Durable step kinds: tool results checkpointed and never recomputed; ask_user / sleep / wait_signal pause with no process."""

from __future__ import annotations

import time
from pathlib import PosixPath

import pytest
import yaml

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.demo.xvnc import wait_until
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.runtime.operate.approval import deliver
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.runref import open_ref, run_name

pytestmark = pytest.mark.timeout(60)

TOOLS = '''
import json, os
from pathlib import Path

def fetch(quarter):
    p = Path(os.environ["TOOL_LOG"])
    p.write_text(p.read_text() + "fetch\\n" if p.exists() else "fetch\\n")
    return {"quarter": quarter, "total": 1250}

def record(answer, data):
    p = Path(os.environ["TOOL_LOG"])
    p.write_text(p.read_text() + f"record {answer} {data}\\n")
    return "ok"

def boom():
    raise RuntimeError("ledger API down")
'''

STEPS = [
    {"id": "fetch", "action": "tool", "call": "flowtools_t:fetch", "args": {"quarter": "{quarter}"}},
    {
        "id": "confirm",
        "action": "ask_user",
        "question": "Post total {steps.fetch.result.total}?",
        "choices": ["post", "hold"],
    },
    {"id": "nap", "action": "sleep", "seconds": 0.4},
    {"id": "go", "action": "wait_signal", "signal": "go"},
    {
        "id": "done",
        "action": "tool",
        "call": "flowtools_t:record",
        "args": {"answer": "{steps.confirm.answer}", "data": "{steps.go.data.x}"},
    },
]


class Workspace(PosixPath):
    """The test's folder, and the run store its runs go to (`filesystem`, or this process's `memory:`)."""

    store = "filesystem"


@pytest.fixture(params=["filesystem", "memory"])
def ws(request, tmp_path, monkeypatch):
    """A workspace whose runs live in each store in turn (the tests read them only through the run handle)."""
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    monkeypatch.setenv("TOOL_LOG", str(tmp_path / "tool.log"))
    (tmp_path / "flowtools_t.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    ws = Workspace(tmp_path)
    ws.store = request.param
    return ws


def bundle(ws, steps):
    root = ws / "b"
    root.mkdir(exist_ok=True)
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "report",
        "screen": {"width": 100, "height": 100},
        "params": {"quarter": {"required": True}},
        "steps": steps,
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def start(ws, steps=STEPS):
    memory = ws.store == "memory"
    runtime = {"runs_root": str(ws / "runs"), **({"store": "memory:"} if memory else {})}
    cfg = DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": runtime})
    ref = f"memory:{ws.name}-run" if memory else ws / "run"
    return replay(
        ReplayRequest(bundle=bundle(ws, steps), params={"quarter": "Q3"}, backend=None, config=cfg, run_dir=ref)
    )


def state(run):
    return open_ref(run).state()


def test_report_builder_story_pauses_hold_no_process_and_tools_run_once(ws):
    out = start(ws)
    run = out.run_dir
    assert (out.state, state(run)["paused_reason"]) == ("PAUSED", "awaiting_user")
    assert open_ref(run).read_checkpoint()["results"]["fetch"]["result"]["total"] == 1250
    assert resume(run).exit_code == 3  # nothing delivered yet: still paused, nothing changed
    with pytest.raises(UsageError, match="not one of post, hold"):
        deliver(run, "answer", "ctl", value="maybe")
    with pytest.raises(RefusedError, match="not awaiting_signal"):
        deliver(run, "signal", "ctl", name="go")
    deliver(run, "answer", "ctl", value="post")
    out = resume(run)
    assert (out.state, state(run)["paused_reason"]) == ("PAUSED", "awaiting_timer")
    assert resume(run).exit_code == 3  # not due yet
    due = open_ref(run).read_pending()["due_epoch"]
    wait_until(lambda: time.time() >= due, 5, "the timer to be due")
    out = resume(run)
    assert (out.state, state(run)["paused_reason"]) == ("PAUSED", "awaiting_signal")
    with pytest.raises(RefusedError, match="waits for signal 'go'"):
        deliver(run, "signal", "ctl", name="stop")
    deliver(run, "signal", "ctl", name="go", data={"x": 5})
    out = resume(run)
    assert out.state == "COMPLETED", out.message
    assert (ws / "tool.log").read_text().splitlines() == ["fetch", "record post 5"]
    recs = open_ref(run).read_records()
    assert [r["step"] for r in recs if r["type"] == "asked"] == ["confirm"]  # asked once


def test_a_tool_that_raises_halts_like_any_step(ws):
    out = start(ws, [{"id": "x", "action": "tool", "call": "flowtools_t:boom"}])
    assert out.state == "PAUSED"
    pending = open_ref(out.run_dir).read_pending()
    assert pending["category"] == "tool" and "ledger API down" in pending["message"]


def test_bad_tool_reference_is_a_halt_not_a_traceback(ws):
    out = start(ws, [{"id": "x", "action": "tool", "call": "no_such_module_zz:f"}])
    assert out.state == "PAUSED" and "cannot import" in out.message


def test_flow_step_runs_a_linked_child_and_waits_for_it(ws):
    child = ws / "child"
    child.mkdir()
    (child / "flow.yaml").write_text(
        yaml.safe_dump(
            {
                "schema": "openadapt-flow/bundle@1",
                "name": "child",
                "screen": {"width": 10, "height": 10},
                "params": {"q": {"required": True}},
                "steps": [{"id": "ok", "action": "ask_user", "question": "Approve {q}?", "choices": ["yes", "no"]}],
            }
        )
    )
    steps = [
        STEPS[0],
        {"id": "sub", "action": "flow", "bundle": "../child", "params": {"q": "{quarter}"}},
        {
            "id": "done",
            "action": "tool",
            "call": "flowtools_t:record",
            "args": {"answer": "{steps.sub.state}", "data": "-"},
        },
    ]
    out = start(ws, steps)
    run, kid = open_ref(out.run_dir), open_ref(out.run_dir).child("sub")
    assert (out.state, state(run)["paused_reason"]) == ("PAUSED", "awaiting_child")
    assert (state(kid)["state"], state(kid)["paused_reason"]) == ("PAUSED", "awaiting_user")
    assert kid.manifest()["parent_run"] == run.ref
    assert run.manifest()["child_runs"] == [
        f"children/{run_name(kid)}"
    ]  # one layout: inside its parent, as a workflow's
    assert resume(run).exit_code == 3  # the child is still paused
    deliver(kid, "answer", "ctl", value="yes")
    assert resume(kid).state == "COMPLETED"
    assert resume(run).state == "COMPLETED"
    assert (ws / "tool.log").read_text().splitlines() == ["fetch", "record COMPLETED -"]


def test_a_child_whose_parent_is_blocked_is_suspended_orphan(ws):
    child = ws / "child"
    child.mkdir()
    (child / "flow.yaml").write_text(
        yaml.safe_dump(
            {
                "schema": "openadapt-flow/bundle@1",
                "name": "child",
                "screen": {"width": 10, "height": 10},
                "steps": [{"id": "ok", "action": "ask_user", "question": "Go?"}],
            }
        )
    )
    out = start(ws, [{"id": "sub", "action": "flow", "bundle": "../child"}])
    kid = open_ref(out.run_dir).child("sub")
    open_ref(out.run_dir).write_state("BLOCKED", message="rejected")  # the parent run was ended (its child lives in it)
    deliver(kid, "answer", "ctl", value="anything")
    res = resume(kid)
    assert (res.state, state(kid)["paused_reason"]) == ("PAUSED", "suspended_orphan")
