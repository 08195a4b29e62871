"""A kill at every point of `flow resume` itself, after a kill that left the save step uncertain: reconcile + resume
again must still finish with exactly one row, the save never dispatched twice, verified progress never lost. On every
store (`demo`: a `flow` process SIGKILLed — its runs in a run directory or a PostgreSQL schema — or an in-process
command on the memory store killed there)."""

from __future__ import annotations

import json

import pytest

from tests.attack.attack_support import DemoRuns, on_stores

pytestmark = pytest.mark.timeout(240)
RESUME_POINTS = [
    "after:run_resumed",
    "after:rechecked@save",
    "after:step_verified@save",
    "checkpoint:renamed@save",
    "after:step_started@back",
    "after:action_dispatched@back",
    "after:action_sent@back",
]


# on PostgreSQL (each case ~6 s): the resume's run_resumed, the uncertain save re-read and then verified, the next
# step's dispatch; every resume point is in test_crash_resume.py's PostgreSQL case
ON_POSTGRES = ["after:run_resumed", "after:rechecked@save", "after:step_verified@save", "after:action_dispatched@back"]


@pytest.mark.parametrize("demo,point", on_stores(RESUME_POINTS, ON_POSTGRES), indirect=["demo"])
def test_a_kill_inside_resume_is_itself_resumable(demo: DemoRuns, point):
    run_dir = demo.ref("run")
    r = demo.replay(run_dir, FLOW_CRASH_AT="after:action_sent@save")
    assert r.returncode == -9, r.stderr
    assert demo.flow(["reconcile", *demo.scan_args()]).returncode == 0
    before = [x["step"] for x in demo.records(run_dir) if x["type"] == "step_verified"]

    killed = demo.flow(["resume", run_dir], FLOW_CRASH_AT=point)
    assert killed.returncode == -9, killed.stdout + killed.stderr
    assert demo.flow(["reconcile", *demo.scan_args()]).returncode == 0
    res = demo.flow(["resume", run_dir, "--json"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert demo.rows() == [("ACME Corp", 1250.5)]
    recs = demo.records(run_dir)
    after = [x["step"] for x in recs if x["type"] == "step_verified"]
    assert after[: len(before)] == before and after.count("save") == 1 and after[-1] == "back"
    assert [x["step"] for x in recs if x["type"] == "action_dispatched"].count("save") == 1
