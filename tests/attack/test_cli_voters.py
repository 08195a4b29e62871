"""`flow approve` run as people (issue 34, finding 5): the CLI's voter is an authenticated operator, never an
environment variable, and a vote never silently replaces another person's.

Every command here is the real CLI in a process of its own (forked from this one: its own environment and its own
PostgreSQL connections). A race opens a gate that N processes block on, so they really run at once.
"""

from __future__ import annotations

import os
import pwd
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from openadapt_flow.runtime.operate.operators import add_operator
from openadapt_flow.store import FilesystemStore, PostgresStore, RunDir, open_store
from tests.attack.attack_support import STEPS, RunFiles, Workspace, env_for, forked_flow, pg_workspace, workspace, ws  # noqa: F401
from tests.crash import crash_support
from tests.support.cli import flow_env

pytestmark = pytest.mark.timeout(900)

CONSEQUENTIAL = [dict(s, consequential=True) if s["id"] == "post" else s for s in STEPS]
RACERS = 3  # `flow approve` processes per race, each a different operator
ROUNDS = 20  # races per store
REFUSED = 6  # SPEC exit code: valid input not allowed now
REAL_USER = pwd.getpwuid(os.getuid()).pw_name  # who runs these tests, whatever the environment says


@pytest.fixture(params=["filesystem", "postgres"])
def cws(request, tmp_path, monkeypatch) -> Workspace:
    """The workspace on the stores a second process can share: run directories, and a PostgreSQL schema."""
    if request.param == "postgres":
        return pg_workspace(request, tmp_path, monkeypatch)
    return workspace(tmp_path, monkeypatch, "filesystem")


def _enrol(ws: Workspace, *names: str) -> dict[str, str]:
    """Enrol operators in the store the CLI authenticates against (the runs root holding the run, or --store's)."""
    store = open_store(ws.spec) if ws.store == "postgres" else FilesystemStore(ws.root)
    return {name: add_operator(store, name) for name in names}


def _env(ws: Workspace, **extra: str) -> dict[str, str]:
    env = flow_env(ws.root, **env_for(ws.root))  # the same keys and run ledger as this process
    env["PYTHONPATH"] = str(ws.root) + os.pathsep + env["PYTHONPATH"]  # the attack's tools, for a resume
    env.update(extra)
    return env


def _approve_args(
    ws: Workspace, run: Path, operator: str, decision: str = "continue", secret: bool = False
) -> list[str]:
    args = ["approve", str(run), "--decision", decision, "--operator", operator]
    if secret:
        args += ["--secret-env", "FLOW_TEST_SECRET"]
    return args + (["--store", str(ws.spec)] if ws.store == "postgres" else [])


def _flow(ws: Workspace, args: list[str], **extra: str) -> Any:
    return forked_flow(args, ws.root, _env(ws, **extra))


def _resume(ws: Workspace, run: Path) -> Any:
    return _flow(ws, ["resume", str(run)] + (["--store", str(ws.spec)] if ws.store == "postgres" else []))


def _as(name: str) -> dict[str, str]:
    """The environment a person would set to pass for `name` on one OS account."""
    return {"LOGNAME": name, "USER": name, "USERNAME": name}


def test_the_os_user_is_the_real_uid_never_logname_or_user(monkeypatch):
    from openadapt_flow.runtime.operate.votes import os_user

    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, "mallory")
    assert os_user() == REAL_USER != "mallory"


def test_one_person_under_two_environments_cannot_meet_a_quorum_of_two(ws):
    run = ws.start(CONSEQUENTIAL, quorum=2).run_dir
    first = _flow(ws, _approve_args(ws, run, "alice"), **_as("alice"))
    second = _flow(ws, _approve_args(ws, run, "bob"), **_as("bob"))
    # an OS account's vote never counts toward a quorum above 1, whatever LOGNAME, USER or --operator say
    assert (first.returncode, second.returncode) == (REFUSED, REFUSED), (first, second)
    assert "needs 2 distinct authenticated operators" in second.stderr
    assert not RunFiles(run).exists("approval.json")
    # the same person with their credential is one voter in any environment, and cannot vote as someone else
    cred = _enrol(ws, "alice", "bob")["alice"]
    assert (
        "1 of 2 votes"
        in _flow(ws, _approve_args(ws, run, "alice", secret=True), FLOW_TEST_SECRET=cred, **_as("alice")).stdout
    )
    again = _flow(ws, _approve_args(ws, run, "alice", secret=True), FLOW_TEST_SECRET=cred, **_as("bob"))
    assert again.returncode == 0 and "already recorded" in again.stdout, again
    posing = _flow(ws, _approve_args(ws, run, "bob", secret=True), FLOW_TEST_SECRET=cred, **_as("bob"))
    assert posing.returncode == REFUSED and "wrong credential" in posing.stderr, posing
    votes = RunFiles(run).json("approval.json")["votes"]
    assert [(v["operator"], v["os_user"], v.get("authenticated")) for v in votes] == [("alice", REAL_USER, True)]
    resumed = _resume(ws, run)
    assert resumed.returncode == REFUSED and "quorum not met: 1 of 2" in resumed.stdout + resumed.stderr, resumed
    assert ws.posts() == 0


def test_two_authenticated_operators_meet_a_quorum_of_two(cws):
    ws = cws
    run = ws.start(CONSEQUENTIAL, quorum=2).run_dir
    creds = _enrol(ws, "alice", "bob")
    a = _flow(ws, _approve_args(ws, run, "alice", secret=True), FLOW_TEST_SECRET=creds["alice"], **_as("svc"))
    b = _flow(ws, _approve_args(ws, run, "bob", secret=True), FLOW_TEST_SECRET=creds["bob"], **_as("svc"))
    assert a.returncode == 0 and "1 of 2 votes" in a.stdout, a
    assert b.returncode == 0 and "2 of 2 votes" in b.stdout, b  # one shared OS account, two enrolled people
    votes = RunFiles(run).json("approval.json")["votes"]
    assert [(v["operator"], v.get("authenticated")) for v in votes] == [("alice", True), ("bob", True)]
    # the resume takes the approval (its quorum met) and goes on to the tool's own rule: a consequential write that
    # failed is reconciled, never retried blindly (a one-voter run stops at "quorum not met", as above)
    resumed = _resume(ws, run)
    assert "quorum not met" not in resumed.stderr and "must reconcile it" in resumed.stderr, resumed
    assert ws.posts() == 0


def test_on_one_shared_account_a_second_operator_never_replaces_the_first(ws):
    run = ws.start().run_dir
    first = _flow(ws, _approve_args(ws, run, "alice", "continue"))
    assert first.returncode == 0 and "recorded: continue by alice" in first.stdout, first
    for decision in ("reject", "continue"):  # a different decision, or the same one under another name
        other = _flow(ws, _approve_args(ws, run, "bob", decision))
        assert other.returncode == REFUSED, other
        assert re.search(r"already decided by alice at \S+: continue", other.stderr), other.stderr
    approval = RunFiles(run).json("approval.json")
    assert (approval["decision"], [v["operator"] for v in approval["votes"]]) == ("continue", ["alice"])
    assert "superseded" not in approval


def _exit_code(pid: int, deadline: float) -> int:
    """A forked child's exit code, polled until `deadline` (then it is killed and the test fails)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError(f"process {pid} did not finish in time")
        time.sleep(0.01)  # polling a child's exit; waitpid has no timeout


def _race(
    ws: Workspace, calls: list[tuple[list[str], dict[str, str]]], timeout: float = 120
) -> list[crash_support.Result]:
    """Fork one `flow` process per (args, env); each blocks on a gate until all are forked, then they run at once."""
    gate_r, gate_w = os.pipe()
    kids = []
    for args, env in calls:
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(gate_w)
                os.read(gate_r, 1)  # EOF once the parent closes the gate: every racer is released together
            finally:
                crash_support._child(args, ws.root, env, out.fileno(), err.fileno())  # never returns: it exits
        kids.append((pid, args, out, err))
    os.close(gate_r)
    os.close(gate_w)
    results, deadline = [], time.monotonic() + timeout
    for pid, args, out, err in kids:
        code = _exit_code(pid, deadline)
        out.seek(0)
        err.seek(0)
        results.append(crash_support.Result(args, code, out.read().decode(), err.read().decode()))
        out.close()
        err.close()
    return results


def test_a_race_of_approvals_by_different_operators_has_one_winner_and_every_loser_is_told_who(cws):
    ws = cws
    names = [f"op{i}" for i in range(RACERS)]
    creds = _enrol(ws, *names)
    decisions = ["continue", "reject", "continue"]
    for round_ in range(ROUNDS):
        run = ws.start(run_dir=f"run{round_}").run_dir
        authenticated = (
            round_ % 2 == 1
        )  # odd rounds with credentials; even ones on one shared OS account, no credential
        calls = [
            (
                _approve_args(ws, run, name, decisions[i % len(decisions)], secret=authenticated),
                _env(ws, FLOW_TEST_SECRET=creds[name], **_as(name)),
            )
            for i, name in enumerate(names)
        ]
        results = _race(ws, calls)
        winners = [r for r in results if r.returncode == 0]
        assert len(winners) == 1, (round_, results)
        winner = winners[0]
        name = winner.args[winner.args.index("--operator") + 1]
        decision = winner.args[winner.args.index("--decision") + 1]
        assert f"recorded: {decision} by {name}" in winner.stdout, winner
        for loser in results:
            if loser is not winner:  # refused, naming the winner and what they decided
                assert loser.returncode == REFUSED, (round_, loser)
                assert re.search(rf"already decided by {name} at \S+: {decision}", loser.stderr), (round_, loser.stderr)
        files = RunFiles(run)
        if decision == "reject":  # the run ended BLOCKED on the winner's decision, used once
            assert files.json("incident.json")["operator"] == name
            assert [r["data"]["operator"] for r in RunFiles(run).records() if r["type"] == "decision"] == [name]
        else:  # the winner's vote waits for the resume, alone: no loser's vote replaced it or was added silently
            approval = files.json("approval.json")
            assert (approval["decision"], [v["operator"] for v in approval["votes"]]) == (decision, [name]), round_
            assert "superseded" not in approval
        assert ws.posts() == 0


def _cas_writer(ws: Workspace, run: Path, i: int) -> None:
    """In a forked child: its own handle on the run (its own PostgreSQL connection), one approval write that expects
    none; exit 0 written, 6 refused by the store's compare-and-set, 70 anything else."""
    code = 70
    try:  # everything inside: a forked child must never return into the test session
        handle = PostgresStore(str(ws.spec)).open_run(str(run)) if ws.store == "postgres" else RunDir(run)
        handle.write_approval({"pause_id": "p", "decision": "continue", "operator": f"op{i}"}, f"sig{i}", replaces=None)
        code = 0
    except BaseException as e:
        code = REFUSED if type(e).__name__ == "ApprovalChanged" else 70  # store/escalation.py's compare-and-set refusal
        if code != REFUSED:
            traceback.print_exc()
    finally:
        os._exit(code)


def test_the_stores_approval_write_lets_exactly_one_of_racing_writers_in(cws):
    """Below the run's lease (a writer whose lease was taken over, a store shared by hosts): N processes that all read
    "no approval" write at once; the store takes exactly one and refuses the rest — none overwrites another."""
    ws = cws
    run = ws.start(run_dir="cas").run_dir
    for round_ in range(ROUNDS // 2):
        if RunFiles(run).exists("approval.json"):
            RunFiles(run).delete("approval.json")
        gate_r, gate_w = os.pipe()
        pids = []
        for i in range(2 * RACERS):
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(gate_w)
                    os.read(gate_r, 1)
                finally:
                    _cas_writer(ws, run, i)  # never returns
            pids.append(pid)
        os.close(gate_r)
        os.close(gate_w)
        codes = [_exit_code(pid, time.monotonic() + 60) for pid in pids]
        assert sorted(codes) == [0] + [REFUSED] * (2 * RACERS - 1), (round_, codes)
        winner = codes.index(0)
        assert RunFiles(run).json("approval.json")["operator"] == f"op{winner}", round_
