"""Python workflows (SPEC §14) in-process: recorded results never recomputed, async, @agent, divergence, children."""

from __future__ import annotations

import json
import time
from pathlib import PosixPath

import pytest

import openadapt_flow
from openadapt_flow.demo.xvnc import wait_until
from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import approve, deliver
from openadapt_flow.runtime.operate.reconciler import reconcile_root
from openadapt_flow.runtime.runs import resume, start_workflow
from openadapt_flow.runtime.start.launch import WorkflowRequest
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.runtime.worker import Worker
from openadapt_flow.store import RunDir
from tests.unit.runtime.workflow_support import SOURCE, config, journal, log, state, write_module

pytestmark = pytest.mark.timeout(60)


class Workspace(PosixPath):
    """The test's folder, and the run store its runs go to (`filesystem`, or this process's `memory:`)."""

    store = "filesystem"


def workspace(tmp_path, monkeypatch, store):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    monkeypatch.setenv("WF_LOG", str(tmp_path / "wf.log"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    write_module(tmp_path)
    ws = Workspace(tmp_path)
    ws.store = store
    return ws


@pytest.fixture(params=["filesystem", "memory"])
def ws(request, tmp_path, monkeypatch):
    """A workspace whose runs live in each store in turn (the tests read them only through the run handle)."""
    yield workspace(tmp_path, monkeypatch, request.param)
    write_module(tmp_path)  # leave no edited copy imported for the next test


@pytest.fixture
def fs_ws(tmp_path, monkeypatch):
    """A workspace on the filesystem store: for tests that scan a runs root or write a run's files themselves."""
    yield workspace(tmp_path, monkeypatch, "filesystem")
    write_module(tmp_path)


def start(ws, entry, name="run", **args):
    cfg = config(ws)
    if ws.store == "memory":
        cfg = cfg.model_copy(update={"runtime": cfg.runtime.model_copy(update={"store": "memory:"})})
        ref = f"memory:{ws.name}-{name}"
    else:
        ref = ws / name
    return start_workflow(WorkflowRequest(f"wf_mod:{entry}", args, None, cfg, run_dir=ref))


def test_recorded_results_return_without_running_again(ws):
    out = start(ws, "report", quarter="Q3")
    run = out.run_dir
    assert (out.state, out.exit_code, state(run)["paused_reason"]) == ("PAUSED", 3, "awaiting_user")
    assert log(ws) == ["fetch Q3"]  # the pause was not swallowed by the workflow's `except Exception`
    assert resume(run).exit_code == 3  # nothing answered yet: still paused, nothing ran
    deliver(run, "answer", "ctl", value="post")
    out = resume(run)
    assert out.state == "COMPLETED", out.message
    assert log(ws) == ["fetch Q3", "post 1250"]  # fetch ran once; its result came from the journal
    assert openadapt_flow.wait(run, timeout=5).result == {"answer": "post", "pair": [1, 2]}
    recs = journal(run)
    assert [r["step"] for r in recs if r["type"] == "asked"] == ["ask-user"]
    assert [r["step"] for r in recs if r["type"] == "step_verified"] == ["fetch", "ask-user", "post"]
    assert resume(run).state == "COMPLETED"  # terminal: nothing to do, nothing runs
    assert log(ws) == ["fetch Q3", "post 1250"]


def test_first_run_sees_what_a_resume_would_see(ws):
    """A tuple result is recorded as a list; the first run already gets the list, so both runs agree."""
    out = start(ws, "report", quarter="Q3")
    deliver(out.run_dir, "answer", "ctl", value="hold")
    assert resume(out.run_dir).state == "COMPLETED"
    assert openadapt_flow.wait(out.run_dir).result == {"answer": "hold", "pair": [1, 2]}


def test_async_workflow_awaits_its_calls_and_async_tools(ws):
    out = start(ws, "areport", quarter="Q1")
    assert state(out.run_dir)["paused_reason"] == "awaiting_user"
    with pytest.raises(Exception, match="not a valid boolean"):
        deliver(out.run_dir, "answer", "ctl", value="perhaps")
    deliver(out.run_dir, "answer", "ctl", value="yes")
    assert resume(out.run_dir).state == "COMPLETED"
    assert log(ws) == ["afetch Q1", "fetch Q1"]
    assert openadapt_flow.wait(out.run_dir).result == {"a": {"q": "Q1"}, "total": 1250, "ok": True}


def test_agent_tool_methods_are_durable_steps_inside_its_workflows(ws):
    out = start(ws, "Ledger.onboard", vendor="ACME")
    assert state(out.run_dir)["paused_reason"] == "awaiting_signal"
    with pytest.raises(RefusedError, match="waits for signal 'go'"):
        deliver(out.run_dir, "signal", "ctl", name="stop")
    deliver(out.run_dir, "signal", "ctl", name="go", data={"x": 1})
    assert resume(out.run_dir).state == "COMPLETED"
    assert log(ws) == ["lookup ACME", "lookup ACME"]  # two calls, each once: the first was not re-run on resume
    steps = [r["step"] for r in journal(out.run_dir) if r["type"] == "step_verified"]
    assert steps == ["ledger-lookup", "signal-go", "ledger-lookup-2"]
    from wf_mod import Ledger  # outside a workflow the method is a plain call

    assert Ledger().lookup("X") == {"vendor": "X", "id": 7}


def test_async_agent_workflow(ws):
    out = start(ws, "Ledger.aonboard", vendor="Initech")
    assert out.state == "COMPLETED", out.message
    assert openadapt_flow.wait(out.run_dir).result == 7


def test_changed_code_is_refused_naming_the_first_mismatching_call(ws):
    out = start(ws, "report", quarter="Q3")
    deliver(out.run_dir, "answer", "ctl", value="post")
    write_module(
        ws, SOURCE.replace('data = ctx.tool(fetch, quarter)', 'data = {"total": 1, "pair": []}\n    ctx.tool(post, 0)')
    )
    with pytest.raises(RefusedError) as e:
        resume(out.run_dir)
    assert e.value.exit_code == 6
    assert "call #0" in str(e.value) and "tool 'fetch'" in str(e.value) and "tool 'post'" in str(e.value)
    assert log(ws) == ["fetch Q3"]  # nothing of the new code ran
    assert state(out.run_dir)["halt_category"] == "divergence"
    write_module(ws)  # redeploy the version that started it; an operator lets it go on
    approve(out.run_dir, "continue", "alice")
    assert resume(out.run_dir).state == "COMPLETED"
    assert log(ws) == ["fetch Q3", "post 1250"]


def test_a_recorded_result_is_never_returned_to_a_call_with_other_arguments(ws):
    out = start(ws, "report", quarter="Q3")  # fetch("Q3") recorded; paused on the question
    deliver(out.run_dir, "answer", "ctl", value="hold")
    write_module(ws, SOURCE.replace('data = ctx.tool(fetch, quarter)', 'data = ctx.tool(fetch, quarter + "-restated")'))
    with pytest.raises(
        RefusedError, match=r"call #0: tool 'fetch' is called with other arguments than the journal recorded"
    ) as e:
        resume(out.run_dir)
    assert e.value.exit_code == 6
    assert log(ws) == ["fetch Q3"]  # neither returned Q3's result for the new arguments nor ran fetch again
    assert state(out.run_dir)["halt_category"] == "divergence"
    started = next(r for r in journal(out.run_dir) if r["type"] == "step_started" and r["data"].get("name") == "fetch")
    assert len(started["data"]["inputs"]) == 64 and "Q3" not in json.dumps(
        started["data"]
    )  # a keyed digest, not the arguments
    write_module(ws)  # the version that started it: same arguments, the recorded result comes back
    approve(out.run_dir, "continue", "alice")
    assert resume(out.run_dir).state == "COMPLETED"
    assert log(ws) == ["fetch Q3"]


def test_arguments_compare_by_what_they_mean_whatever_their_type(ws):
    import datetime
    import decimal
    import enum
    import json
    import uuid
    from dataclasses import dataclass

    from openadapt_flow.runtime.workflow.ctx import _canonical

    @dataclass
    class Invoice:
        vendor: str
        amount: float

    class Handle:  # a connection-like object: its repr carries a memory address
        pass

    class Colour(enum.Enum):
        RED = 1
        BLUE = 2

    def same(a, b) -> bool:
        return json.dumps(_canonical(a)) == json.dumps(_canonical(b))

    assert same({1: "a", "b": 2}, {"b": 2, 1: "a"}) and same({(1, 2): 3}, {(1, 2): 3})  # any keys, any order
    assert not same({1: "a"}, {"1": "a"})
    assert not same(datetime.date(2024, 1, 1), datetime.date(2025, 6, 30))  # a clock in the arguments is seen
    assert not same(decimal.Decimal("1.10"), decimal.Decimal("1.20"))
    assert not same(uuid.UUID(int=1), uuid.UUID(int=2)) and not same(Colour.RED, Colour.BLUE)
    assert same(Invoice("ACME", 12.5), Invoice("ACME", 12.5)) and not same(Invoice("ACME", 12.5), Invoice("ACME", 13))
    assert same(Handle(), Handle())  # a handle compares by its type alone
    assert same({3, 1, 2}, {2, 3, 1}) and not same(b"a", b"b")


def test_code_that_stops_making_recorded_calls_is_a_divergence_too(ws):
    out = start(ws, "report", quarter="Q3")
    deliver(out.run_dir, "answer", "ctl", value="hold")
    write_module(
        ws,
        SOURCE.replace('    data = ctx.tool(fetch, quarter)\n', '    return {}\n    data = ctx.tool(fetch, quarter)\n'),
    )
    with pytest.raises(
        RefusedError, match=r"call #0: the journal recorded tool 'fetch', the code now returns without making it"
    ):
        resume(out.run_dir)


def test_a_raising_tool_pauses_and_continue_runs_it_again_but_a_write_needs_reconcile(ws):
    (ws / "wf.log.fail").write_text("")
    out = start(ws, "approve_post", total=9)
    assert (state(out.run_dir)["paused_reason"], state(out.run_dir)["halt_category"]) == (
        "awaiting_approval",
        "approval",
    )
    assert log(ws) == []  # a domain action waits for approval before each call
    approve(out.run_dir, "continue", "alice")
    out = resume(out.run_dir)
    assert (out.state, out.category) == ("PAUSED", "tool") and "ledger API down" in out.message
    assert state(out.run_dir)["transaction_outcome"] == "RECONCILIATION_REQUIRED"
    approve(out.run_dir, "continue", "alice")
    with pytest.raises(RefusedError, match="uncertain; continue would re-run it blindly"):
        resume(out.run_dir)
    (ws / "wf.log.fail").unlink()
    approve(out.run_dir, "reconcile", "alice", effect="absent")
    assert resume(out.run_dir).state == "COMPLETED"
    assert log(ws) == ["post 9", "post 9"]  # retried only after the operator established it had not landed


def test_reconcile_landed_counts_the_write_as_done_without_running_it(ws):
    (ws / "wf.log.fail").write_text("")
    out = start(ws, "approve_post")
    approve(out.run_dir, "continue", "alice")
    resume(out.run_dir)
    approve(out.run_dir, "reconcile", "alice", effect="landed")
    assert resume(out.run_dir).state == "COMPLETED"
    assert log(ws) == ["post 5"]
    verified = [r for r in journal(out.run_dir) if r["type"] == "step_verified"]
    assert verified[-1]["data"]["verified_by"] == "operator"


def test_reject_on_a_domain_approval_blocks_the_run(ws):
    out = start(ws, "approve_post")
    approve(out.run_dir, "reject", "alice", note="not this quarter")
    assert openadapt_flow.wait(out.run_dir, timeout=5).exit_code == 4
    assert log(ws) == []


def test_child_workflow_pauses_the_parent_until_the_child_can_go_on(ws):
    out = start(ws, "parent")
    child = open_ref(out.run_dir).child("child-report")
    assert (out.state, state(out.run_dir)["paused_reason"]) == ("PAUSED", "awaiting_child")
    assert state(child)["paused_reason"] == "awaiting_user"
    again = resume(out.run_dir)
    assert again.state == "PAUSED" and "flow answer" in again.message  # nothing changed, nothing ran
    deliver(child, "answer", "ctl", value="post")
    assert resume(out.run_dir).state == "COMPLETED"
    assert log(ws) == ["fetch P", "fetch Q4", "post 1250"]
    assert openadapt_flow.wait(out.run_dir).result == {"first": 1250, "child": {"answer": "post", "pair": [1, 2]}}
    assert state(child)["state"] == "COMPLETED"


def test_durable_calls_cannot_nest(ws):
    out = start(ws, "nested")
    assert (out.state, out.category) == ("PAUSED", "input") and "cannot nest" in out.message


def test_an_exception_in_the_workflow_pauses_and_continue_reruns_the_code_not_the_tools(ws):
    out = start(ws, "broken")
    assert (out.state, out.category) == ("PAUSED", "workflow") and "ValueError: bug in the workflow" in out.message
    write_module(ws, SOURCE.replace('raise ValueError("bug in the workflow")', 'return "fixed"'))
    approve(out.run_dir, "continue", "alice")
    assert resume(out.run_dir).state == "COMPLETED"
    assert log(ws) == ["fetch B"]


def test_the_worker_resumes_a_workflow_whose_timer_is_due(fs_ws):
    ws = fs_ws
    out = start(ws, "nap", name="runs/nap")
    assert state(out.run_dir)["paused_reason"] == "awaiting_timer"
    worker = Worker(ws / "runs", log=lambda line: None)
    assert worker.run_once() == []  # not due yet
    due = json.loads((out.run_dir / "pending_escalation.json").read_text())["due_epoch"]
    wait_until(lambda: time.time() >= due, 5, "the timer to be due")
    assert [row["state"] for row in worker.run_once()] == ["COMPLETED"]
    assert openadapt_flow.wait(out.run_dir).result == 1250 and log(ws) == ["fetch N"]


def test_a_run_that_died_while_pausing_is_finalised_then_pauses_again_without_asking_twice(fs_ws):
    ws = fs_ws
    out = start(ws, "report", name="runs/r", quarter="Q3")
    RunDir(out.run_dir).write_state("RUNNING")  # as if the process died after the pending file, before state PAUSED
    assert [r["action"] for r in reconcile_root(ws / "runs")] == ["finalized"]
    assert openadapt_flow.wait(out.run_dir, timeout=5).state == "INTERRUPTED"
    again = resume(out.run_dir)
    assert (again.state, state(out.run_dir)["paused_reason"]) == ("PAUSED", "awaiting_user")
    recs = journal(out.run_dir)
    assert [r["type"] for r in recs].count("asked") == 1 and [r["type"] for r in recs].count("escalation_dropped") == 1
    assert log(ws) == ["fetch Q3"]
