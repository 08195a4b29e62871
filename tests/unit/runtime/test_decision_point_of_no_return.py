"""The journaled `decision` record is the point of no return (SPEC §8, §9): a process killed after it — before the
decision took effect, while approval.json was being moved, or after — leaves a run whose next resume applies the
decision from the journal: the operator is never asked again, the decision is journaled once, and what it
authorises happens once.

A kill is simulated in-process: the named crash point raises (a BaseException nothing catches), leaving the run
directory exactly as the SIGKILL at that point would (tests/crash/ does the same with real kills on a real desktop).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PosixPath

import pytest
import yaml

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import approve, deliver
from openadapt_flow.runtime.operate.truth import journaled_decision
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store import escalation
from openadapt_flow.store import journal as journal_mod
from openadapt_flow.store.keys import load_key
from openadapt_flow.store.memory import store as memory

pytestmark = pytest.mark.timeout(60)

TOOLS = '''
import os
from pathlib import Path

def record(answer):
    p = Path(os.environ["TOOL_LOG"])
    p.write_text((p.read_text() if p.exists() else "") + f"record {answer}\\n")
    return "ok"
'''

ASK = [
    {"id": "confirm", "action": "ask_user", "question": "Post?", "choices": ["post", "hold"]},
    {"id": "done", "action": "tool", "call": "flowtools_pnr:record", "args": {"answer": "{steps.confirm.answer}"}},
]
SIGNAL = [
    {"id": "go", "action": "wait_signal", "signal": "go"},
    {"id": "done", "action": "tool", "call": "flowtools_pnr:record", "args": {"answer": "{steps.go.data.x}"}},
]


class Killed(BaseException):
    """The process died here."""


class Workspace(PosixPath):
    """The test's folder, and the run store its runs go to (`filesystem`, or this process's `memory:`)."""

    store = "filesystem"


@pytest.fixture(params=["filesystem", "memory"])
def ws(request, tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    monkeypatch.setenv("TOOL_LOG", str(tmp_path / "tool.log"))
    (tmp_path / "flowtools_pnr.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    ws = Workspace(tmp_path)
    ws.store = request.param
    return ws


def start(ws, steps):
    root = ws / "b"
    root.mkdir()
    flow = {"schema": "openadapt-flow/bundle@1", "name": "pnr", "screen": {"width": 100, "height": 100}, "steps": steps}
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    memory_store = ws.store == "memory"
    runtime = {"runs_root": str(ws / "runs"), **({"store": "memory:"} if memory_store else {})}
    cfg = DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": runtime})
    ref = f"memory:{ws.name}-run" if memory_store else ws / "run"
    out = replay(ReplayRequest(bundle=root, params={}, backend=None, config=cfg, run_dir=ref))
    assert out.state == "PAUSED", out
    return out.run_dir


def killed_at(monkeypatch, point: str, fn: Callable[[], object]) -> None:
    """Run `fn` and die at `point` (`name` or `name@step`, as FLOW_CRASH_AT names it)."""
    name, _, step = point.partition("@")

    def crash(n: str, s: str | None = None) -> None:
        if n == name and (not step or s == step):
            raise Killed(point)

    with monkeypatch.context() as m:
        for module in (journal_mod, escalation, memory):  # the filesystem's and the memory store's points
            m.setattr(module, "crash_point", crash)
        with pytest.raises(Killed):
            fn()


def records(run):
    return open_ref(run).load_journal(load_key(create=False)).records


def state(run):
    return open_ref(run).state()


@pytest.mark.parametrize("kind", ["answer", "signal"])
@pytest.mark.parametrize("point", ["after:decision", "approval:consuming", "approval:consumed"])
def test_a_delivery_journaled_before_a_kill_is_applied_once_from_the_journal(ws, monkeypatch, kind, point):
    run = start(ws, ASK if kind == "answer" else SIGNAL)
    pause = state(run)
    if kind == "answer":
        deliver(run, "answer", "ops", value="post")
    else:
        deliver(run, "signal", "ops", name="go", data={"x": "sig"})
    killed_at(monkeypatch, point, lambda: resume(run))
    with pytest.raises(RefusedError, match="already decided"):  # no second delivery for a pause the journal decided
        deliver(run, "answer", "ops2", value="hold") if kind == "answer" else deliver(
            run, "signal", "ops2", name="go", data={"x": 2}
        )

    out = resume(run)  # no operator command in between: the journal holds the answer / signal

    assert (out.state, out.exit_code) == ("COMPLETED", 0), (out, state(run))
    recs = records(run)
    assert not [r for r in recs if r["type"] in ("asked", "waiting_signal")][1:], "asked again after it was answered"
    decisions = [r for r in recs if r["type"] == "decision"]
    assert len(decisions) == 1, decisions
    assert decisions[0]["data"]["payload"] and decisions[0]["data"]["signature"], decisions[0]["data"]
    assert (ws / "tool.log").read_text() == ("record post\n" if kind == "answer" else "record sig\n")
    pause_id = decisions[0]["data"]["pause_id"]
    assert open_ref(run).has_decision(pause_id) and not open_ref(run).has_approval()
    assert pause["paused_reason"] in ("awaiting_user", "awaiting_signal")


def test_a_reject_journaled_before_a_kill_still_ends_the_run_blocked(ws, monkeypatch):
    run = start(ws, ASK)
    killed_at(monkeypatch, "after:decision", lambda: approve(run, "reject", "bob"))

    out = resume(run)

    assert out.state == "BLOCKED", (out, state(run))
    assert open_ref(run).read_incident()["operator"] == "bob"
    assert not (ws / "tool.log").exists(), "a rejected run went on"
    assert len([r for r in records(run) if r["type"] == "decision"]) == 1


def _rec(seq: int, type_: str, step: str | None = None, **data):
    return {"seq": seq, "type": type_, "step": step, "data": data, "hash": f"h{seq}"}


PAUSE = _rec(
    1,
    "escalation_opened",
    "save",
    pending={"pause_id": "pause-1", "run_id": "r", "step": "save", "paused_reason": "awaiting_approval"},
)
DECIDED = _rec(
    2,
    "decision",
    "save",
    pause_id="pause-1",
    decision="continue",
    effect=None,
    operator="ops",
    os_user="u",
    payload=None,
    approval_digest="sha256:x",
    signature="s",
)


def test_a_journaled_decision_is_in_force_until_its_first_effect():
    carried = journaled_decision([PAUSE, DECIDED, _rec(3, "run_resumed"), _rec(4, "rechecked", "save")])
    assert carried is not None and carried[1]["pause_id"] == "pause-1" and carried[2]["decision"] == "continue"
    for spent in (
        _rec(5, "action_dispatched", "save"),
        _rec(5, "step_verified", "save"),
        _rec(5, "escalation_opened", "save", pending={"pause_id": "pause-2"}),
        _rec(5, "run_finished"),
    ):
        assert journaled_decision([PAUSE, DECIDED, _rec(3, "run_resumed"), spent]) is None, spent["type"]
    assert journaled_decision([PAUSE]) is None
    keys_only = _rec(2, "decision", "save", pause_id="pause-1", decision="continue")  # an older run's record
    assert journaled_decision([PAUSE, keys_only]) is None
