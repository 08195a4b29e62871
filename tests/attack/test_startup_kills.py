"""A kill at every point of a run's start-up (SPEC §7, begin_run): either no run exists yet (nothing was sent, and
a fresh replay finishes) or the run is whole and reconcile + resume finish it. Never a run that can't be resumed.
On every store (`demo`: a `flow` process SIGKILLed — its runs in a run directory or a PostgreSQL schema — or an
in-process command on the memory store killed there)."""

from __future__ import annotations

import json

import pytest

from tests.attack.attack_support import DemoRuns, RunFiles

pytestmark = pytest.mark.timeout(240)
BEFORE_THE_RUN = [
    "start:dir_created",
    "start:lease_acquired",
    "start:bundle_copied",
    "after:run_started",
    "start:state_written",
]
RUN_IS_WHOLE = ["start:manifest_written"]


@pytest.mark.parametrize("point", BEFORE_THE_RUN + RUN_IS_WHOLE)
def test_a_kill_during_start_up_never_strands_a_run(demo: DemoRuns, point):
    run_dir = demo.ref("run")
    r = demo.replay(run_dir, FLOW_CRASH_AT=point)
    assert r.returncode == -9, (r.returncode, r.stderr)
    assert demo.rows() == []

    st = demo.flow(["status", run_dir, "--json"])
    rc = demo.flow(["reconcile", *demo.scan_args(), "--json"])
    assert rc.returncode == 0, rc.stderr
    rows = {x["run_dir"]: x for x in json.loads(rc.stdout)}
    if point in BEFORE_THE_RUN:  # no manifest yet: not a run; nothing was sent, so the job is simply replayed
        # on PostgreSQL a run row with no journal yet is no run at all: not found, as a name it never held
        empty_row = demo.store == "postgres" and not RunFiles(run_dir).exists("journal.jsonl")
        not_a_run = (
            "no run with this id or name"
            if empty_row
            else "not a run directory"
            if demo.store == "filesystem"
            else "not a run"
        )
        assert st.returncode == 2 and not_a_run in st.stdout + st.stderr
        if RunFiles(run_dir).exists("journal.jsonl"):
            assert rows[str(run_dir)]["action"] == "unstarted" and "no input was sent" in rows[str(run_dir)]["reason"]
        res = demo.flow(["resume", run_dir])
        assert res.returncode == 2, res.stderr
        again = demo.replay(demo.ref("again"))
        assert again.returncode == 0, again.stderr + again.stdout
    else:  # the run is whole: shown INTERRUPTED, finalised by reconcile, finished by resume from its first step
        assert st.returncode == 0 and json.loads(st.stdout)["state"] == "INTERRUPTED", st.stdout + st.stderr
        mine = rows[str(run_dir)]
        assert mine["action"] == "finalized" and mine["transaction_outcome"] == "HALTED_BEFORE_EFFECT"
        res = demo.flow(["resume", run_dir, "--json"])
        assert res.returncode == 0, res.stderr + res.stdout
        assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert demo.rows() == [("ACME Corp", 1250.5)]  # exactly one row
