"""A kill after a later step's input landed (or was about to): resume re-checks that step first and re-proves the
checkpoint's screen facts only where the screen can still show them. The run must finish with exactly one row. On
every store (`demo`: a `flow` process SIGKILLed — its runs in a run directory or a PostgreSQL schema — or an
in-process command on the memory store killed there)."""

from __future__ import annotations

import json

import pytest

from tests.attack.attack_support import DemoRuns

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize("point", ["after:action_sent@back", "after:action_dispatched@back"])
def test_kill_after_the_step_after_the_checkpoint_still_finishes(demo: DemoRuns, point):
    run_dir = demo.ref("run")
    r = demo.replay(run_dir, FLOW_CRASH_AT=point)
    assert r.returncode == -9, (r.returncode, r.stderr)
    assert [x["step"] for x in demo.records(run_dir) if x["type"] == "step_verified"][-1] == "save"
    assert len(demo.rows()) == 1

    rc = demo.flow(["reconcile", *demo.scan_args(), "--json"])
    assert rc.returncode == 0, rc.stderr
    res = demo.flow(["resume", run_dir, "--json"])
    assert res.returncode == 0, res.stderr + res.stdout
    assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert demo.rows() == [("ACME Corp", 1250.5)]
    recs = demo.records(run_dir)
    rechecked = [x for x in recs if x["type"] == "rechecked"]
    assert [x["step"] for x in rechecked] == ["back"]
    reproved = [x for x in recs if x["type"] == "checkpoint_reproved"]
    if point == "after:action_sent@back":  # the click landed: `back`'s own facts stand in for "Saved"
        assert rechecked[0]["data"]["verdict"] == "CONFIRMED" and reproved == []
        assert [x["step"] for x in recs if x["type"] == "action_dispatched"].count("back") == 1
    else:  # nothing reached the app: the checkpoint's facts still show, and `back` is performed again
        assert rechecked[0]["data"]["verdict"] == "RETRYABLE" and reproved and reproved[0]["data"]["ok"]
    assert [x["step"] for x in recs if x["type"] == "step_verified"].count("save") == 1
