"""Durable step kinds: tool results checkpointed and never recomputed; ask_user / sleep / wait_signal pause with no process."""

from __future__ import annotations

import json
import time

import pytest
import yaml

from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.runtime.decide.config import DeployConfig
from openadapt_flow.runtime.operate.decisions import deliver
from openadapt_flow.runtime.act.engine import ReplayRequest, replay
from openadapt_flow.runtime.resume import resume
from openadapt_flow.demo.xvnc import wait_until

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
    {"id": "confirm", "action": "ask_user", "question": "Post total {steps.fetch.result.total}?", "choices": ["post", "hold"]},
    {"id": "nap", "action": "sleep", "seconds": 0.4},
    {"id": "go", "action": "wait_signal", "signal": "go"},
    {"id": "done", "action": "tool", "call": "flowtools_t:record", "args": {"answer": "{steps.confirm.answer}", "data": "{steps.go.data.x}"}},
]


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    monkeypatch.setenv("TOOL_LOG", str(tmp_path / "tool.log"))
    (tmp_path / "flowtools_t.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def bundle(ws, steps):
    root = ws / "b"
    root.mkdir(exist_ok=True)
    flow = {"schema": "openadapt-flow/bundle@1", "name": "report", "screen": {"width": 100, "height": 100},
            "params": {"quarter": {"required": True}}, "steps": steps}
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def start(ws, steps=STEPS):
    cfg = DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(ws / "runs")}})
    return replay(ReplayRequest(bundle=bundle(ws, steps), params={"quarter": "Q3"}, backend=None, config=cfg, run_dir=ws / "run"))


def state(run):
    return json.loads((run / "state.json").read_text())


def test_report_builder_story_pauses_hold_no_process_and_tools_run_once(ws):
    out = start(ws)
    run = out.run_dir
    assert (out.state, state(run)["paused_reason"]) == ("PAUSED", "awaiting_user")
    assert json.loads((run / "checkpoint.json").read_text())["results"]["fetch"]["result"]["total"] == 1250
    assert resume(run).exit_code == 3  # nothing delivered yet: still paused, nothing changed
    with pytest.raises(UsageError, match="not one of post, hold"):
        deliver(run, "answer", "ctl", value="maybe")
    with pytest.raises(RefusedError, match="not awaiting_signal"):
        deliver(run, "signal", "ctl", name="go")
    deliver(run, "answer", "ctl", value="post")
    out = resume(run)
    assert (out.state, state(run)["paused_reason"]) == ("PAUSED", "awaiting_timer")
    assert resume(run).exit_code == 3  # not due yet
    due = json.loads((run / "pending_escalation.json").read_text())["due_epoch"]
    wait_until(lambda: time.time() >= due, 5, "the timer to be due")
    out = resume(run)
    assert (out.state, state(run)["paused_reason"]) == ("PAUSED", "awaiting_signal")
    with pytest.raises(RefusedError, match="waits for signal 'go'"):
        deliver(run, "signal", "ctl", name="stop")
    deliver(run, "signal", "ctl", name="go", data={"x": 5})
    out = resume(run)
    assert out.state == "COMPLETED", out.message
    assert (ws / "tool.log").read_text().splitlines() == ["fetch", "record post 5"]
    recs = [json.loads(l) for l in (run / "journal.jsonl").read_text().splitlines()]
    assert [r["step"] for r in recs if r["type"] == "asked"] == ["confirm"]  # asked once


def test_a_tool_that_raises_halts_like_any_step(ws):
    out = start(ws, [{"id": "x", "action": "tool", "call": "flowtools_t:boom"}])
    assert out.state == "PAUSED"
    pending = json.loads((out.run_dir / "pending_escalation.json").read_text())
    assert pending["category"] == "tool" and "ledger API down" in pending["message"]


def test_bad_tool_reference_is_a_halt_not_a_traceback(ws):
    out = start(ws, [{"id": "x", "action": "tool", "call": "no_such_module_zz:f"}])
    assert out.state == "PAUSED" and "cannot import" in out.message


def test_flow_step_runs_a_linked_child_and_waits_for_it(ws):
    child = ws / "child"
    child.mkdir()
    (child / "flow.yaml").write_text(yaml.safe_dump({
        "schema": "openadapt-flow/bundle@1", "name": "child", "screen": {"width": 10, "height": 10},
        "params": {"q": {"required": True}},
        "steps": [{"id": "ok", "action": "ask_user", "question": "Approve {q}?", "choices": ["yes", "no"]}]}))
    steps = [STEPS[0], {"id": "sub", "action": "flow", "bundle": "../child", "params": {"q": "{quarter}"}},
             {"id": "done", "action": "tool", "call": "flowtools_t:record", "args": {"answer": "{steps.sub.state}", "data": "-"}}]
    out = start(ws, steps)
    run, kid = out.run_dir, out.run_dir.with_name("run.sub")
    assert (out.state, state(run)["paused_reason"]) == ("PAUSED", "awaiting_child")
    assert (state(kid)["state"], state(kid)["paused_reason"]) == ("PAUSED", "awaiting_user")
    assert json.loads((kid / "manifest.json").read_text())["parent_run"] == str(run)
    assert json.loads((run / "manifest.json").read_text())["child_runs"] == ["../run.sub"]
    assert resume(run).exit_code == 3  # the child is still paused
    deliver(kid, "answer", "ctl", value="yes")
    assert resume(kid).state == "COMPLETED"
    assert resume(run).state == "COMPLETED"
    assert (ws / "tool.log").read_text().splitlines() == ["fetch", "record COMPLETED -"]


def test_a_child_whose_parent_is_gone_is_suspended_orphan(ws):
    import shutil

    child = ws / "child"
    child.mkdir()
    (child / "flow.yaml").write_text(yaml.safe_dump({
        "schema": "openadapt-flow/bundle@1", "name": "child", "screen": {"width": 10, "height": 10},
        "steps": [{"id": "ok", "action": "ask_user", "question": "Go?"}]}))
    out = start(ws, [{"id": "sub", "action": "flow", "bundle": "../child"}])
    kid = out.run_dir.with_name("run.sub")
    shutil.rmtree(out.run_dir)
    deliver(kid, "answer", "ctl", value="anything")
    res = resume(kid)
    assert (res.state, state(kid)["paused_reason"]) == ("PAUSED", "suspended_orphan")
