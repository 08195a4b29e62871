"""The memory store's crash model itself (tests/support/memcrash.py): what a killed in-process command leaves is what
a SIGKILLed process leaves on disk — the records as they were at the crash point, nothing the dead command (or a
handle it still holds) writes afterwards, and an owner lock that the next command finds free (SPEC §5/§10: a dead
owner's lease is judged dead; a live owner's still refuses a second writer)."""

from __future__ import annotations

import pytest

from tests.support import memcrash
from tests.support.memcrash import MemoryDesk

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def crashed(tmp_path, monkeypatch):
    """A demo replay on the memory store killed after its save was sent: (desk, root, run, env)."""
    desk = MemoryDesk(tmp_path, monkeypatch)
    root, amount = desk.case()
    env, run = desk.env(), desk.run_ref(root)
    r = desk.flow(
        desk.replay_args(run, amount, desk.fast_bundle()), root, dict(env, FLOW_CRASH_AT="after:action_sent@save")
    )
    assert r.killed, r.stderr
    return desk, root, run, env


def test_a_dead_commands_handles_write_only_into_what_the_crash_discarded(crashed):
    desk, root, run, env = crashed
    stale = memcrash.run_of(run)  # opened by the command that is about to die
    seen = len(desk.journal(run, env))
    r = desk.flow(["resume", run, "--json"], root, dict(env, FLOW_CRASH_AT="after:run_resumed"))
    assert r.killed
    after = desk.journal(run, env)
    # the dead owner's interruption, then the crash point's record, and nothing after it
    assert [x["type"] for x in after[seen:]] == ["interrupted", "run_resumed"]
    stale.write_incident({"message": "written by a dead process"})
    stale.put_artifact("late.txt", b"late")
    stale.recs.journal += b"not a record\n"
    live = memcrash.run_of(run)
    assert live.read_incident() is None and live.get_artifact("late.txt") is None
    assert desk.journal(run, env) == after  # the chain still verifies: the dead handle's bytes are not there
    assert desk.state(run)["state"] == "INTERRUPTED"  # the finalisation before the crash point; nothing after it


def test_a_dead_owners_lease_is_free_and_a_live_owners_refuses_a_second_writer(crashed):
    desk, root, run, env = crashed
    handle = memcrash.run_of(run)
    assert handle.lease_info() is not None  # the dead owner is still named, as lease.json names a dead pid
    unlock = handle.try_lock()
    assert unlock is not None  # its lock died with it
    unlock()
    lease = handle.lease().acquire()  # a live owner
    try:
        st = desk.flow(["status", run, "--json"], root, env)
        assert st.json()["state"] == "RUNNING", st.stdout  # not shown INTERRUPTED while its owner lives
        res = desk.flow(["resume", run], root, env)
        assert res.returncode == 6 and "owned by a live process" in res.stderr, res.stderr
        rc = desk.flow(["reconcile", "--store", "memory:", "--json"], root, env)
        assert next(x for x in rc.json() if x["run_dir"] == run)["reason"] == "owner alive"
    finally:
        lease.release()
    assert desk.flow(["status", run, "--json"], root, env).json()["state"] == "INTERRUPTED"
    rc = desk.flow(["reconcile", "--store", "memory:", "--json"], root, env)
    mine = next(x for x in rc.json() if x["run_dir"] == run)
    assert (mine["action"], mine["reason"]) == ("finalized", "owner process died")
    assert desk.flow(["resume", run, "--json"], root, env).json()["state"] == "COMPLETED"
    assert desk.rows(1250.5) == 1
