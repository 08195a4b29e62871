"""One vocabulary of durable calls (runtime/act/durable/): a bundle's step kinds and a Python workflow's calls journal
the same records in the same shape, and their child runs live in the same place."""

from __future__ import annotations

import time

import pytest

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.demo.xvnc import wait_until
from openadapt_flow.runtime.act.durable.waiting import child_of
from openadapt_flow.runtime.operate.approval import deliver
from openadapt_flow.runtime.runs import replay, resume, start_workflow
from openadapt_flow.runtime.start.launch import ReplayRequest, WorkflowRequest
from openadapt_flow.runtime.start.runref import open_ref
from tests.unit.runtime.test_durable_kinds import bundle, start, ws  # noqa: F401  (ws: the workspace on each store)

pytestmark = pytest.mark.timeout(60)

WORKFLOW = '''
from openadapt_flow import tool, workflow
import flowtools_t


@tool
def fetch(quarter: str) -> dict:
    return flowtools_t.fetch(quarter)


@workflow
def kinds(ctx, quarter: str):
    ctx.tool(fetch, quarter)
    ctx.ask_user("Post?", choices=["post", "hold"])
    ctx.sleep(0.2)
    ctx.wait_signal("go")
    ctx.replay("b", params={"quarter": quarter})
    return "done"
'''
CHILD_STEP = {"id": "sub", "action": "tool", "call": "flowtools_t:fetch", "args": {"quarter": "{quarter}"}}
KINDS = ("asked", "waiting_signal", "timer_set", "action_dispatched", "child_started", "run_resumed", "decision")


def _drive(ws, run) -> list[dict]:
    """Resume the run to its end, answering, signalling and waiting as it asks; its journal."""
    for _ in range(8):
        st = open_ref(run).state()
        if st["state"] == "COMPLETED":
            return open_ref(run).read_records()
        reason = st.get("paused_reason")
        if reason == "awaiting_user":
            deliver(run, "answer", "ctl", value="post")
        elif reason == "awaiting_signal":
            deliver(run, "signal", "ctl", name="go", data={"x": 5})
        elif reason == "awaiting_timer":
            due = open_ref(run).read_pending()["due_epoch"]
            wait_until(lambda: time.time() >= due, 5, "the timer to be due")
        resume(run)
    raise AssertionError(f"{run}: not COMPLETED: {open_ref(run).state()}")


def _shapes(records: list[dict]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in records:
        if r["type"] in KINDS:
            out.setdefault(r["type"], set()).update(r["data"])
    return out


def test_a_bundles_steps_and_a_workflows_calls_journal_the_same_records_in_one_shape(ws):
    steps = [
        {"id": "fetch", "action": "tool", "call": "flowtools_t:fetch", "args": {"quarter": "{quarter}"}},
        {"id": "confirm", "action": "ask_user", "question": "Post?", "choices": ["post", "hold"]},
        {"id": "nap", "action": "sleep", "seconds": 0.2},
        {"id": "go", "action": "wait_signal", "signal": "go"},
        {"id": "sub", "action": "flow", "bundle": "../child", "params": {"quarter": "{quarter}"}},
    ]
    child = ws / "child"
    child.mkdir()
    bundle(ws, [CHILD_STEP]).rename(child)  # the child bundle ("b" becomes the parent's below)
    bundle_run = start(ws, steps).run_dir
    by_bundle = _shapes(_drive(ws, bundle_run))

    (ws / "wf_vocab.py").write_text(WORKFLOW)
    bundle(ws, [CHILD_STEP])  # what ctx.replay("b") runs
    ref = f"memory:{ws.name}-wf" if ws.store == "memory" else ws / "wf"
    wf_run = start_workflow(
        WorkflowRequest("wf_vocab:kinds", {"quarter": "Q3"}, None, _config(ws), run_dir=ref)
    ).run_dir
    by_workflow = _shapes(_drive(ws, wf_run))

    assert set(by_bundle) == set(by_workflow) == set(KINDS)
    assert (
        by_bundle == by_workflow
    )  # e.g. `waiting_signal` carries its call's index in both; `child_started` its run_dir
    for run, step in ((bundle_run, "sub"), (wf_run, "replay-b")):  # one layout: children/<call id>, linked both ways
        kid = open_ref(run).child(step)
        assert child_of(open_ref(run), step).ref == kid.ref and kid.state()["state"] == "COMPLETED"
        assert kid.manifest()["parent_run"] == open_ref(run).ref
        assert open_ref(run).manifest()["child_runs"] == [f"children/{step}"]


def test_a_bundle_child_of_earlier_code_is_found_beside_its_parent(ws):
    """Runs started before the one layout kept a `flow` step's child at `<run>.<step>`: resume still finds it there."""
    parent = open_ref(start(ws, [CHILD_STEP]).run_dir)
    assert child_of(parent, "old").ref == parent.child("old").ref  # no child yet: where a new one goes
    replay(
        ReplayRequest(
            bundle=ws / "b",
            params={"quarter": "Q3"},
            backend=None,
            config=_config(ws),
            run_dir=parent.sibling("old").ref,
        )
    )
    assert child_of(parent, "old").ref == parent.sibling("old").ref


def _config(ws) -> DeployConfig:
    runtime = {"runs_root": str(ws / "runs"), **({"store": "memory:"} if ws.store == "memory" else {})}
    return DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": runtime})
