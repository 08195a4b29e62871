"""Commands started at the same instant on one run (separate processes released by one barrier; on the memory store,
threads of this process — its commands share one store): decisions are serialised under the run's lease — the second of two different decisions is refused naming the first, quorum votes
of distinct operators accumulate — and of any mix of resumes and approvals exactly one write happens and the
decision is used exactly once.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import threading
from pathlib import Path
from typing import Any

import pytest

from openadapt_flow.errors import FlowError
from openadapt_flow.runtime.operate.approval import DecisionOptions, approve
from openadapt_flow.runtime.runs import resume
from openadapt_flow.store import select
from tests.attack.attack_support import STEPS, RunFiles, Workspace, records, wss  # noqa: F401

pytestmark = pytest.mark.timeout(180)
ROUNDS = 4


def _approve(run: str, decision: str, operator: str) -> dict[str, Any]:
    """`operator`'s decision, authenticated (as the console's, or `flow approve` with a credential), from OS user svc."""
    return approve(Path(run), decision, operator, os_user="svc", options=DecisionOptions(authenticated=True))


def _resume(run: str) -> dict[str, Any]:
    out = resume(Path(run))
    return {"state": out.state}


_INHERITED: list[Any] = []


def _worker(barrier: Any, results: Any, name: str, fn: Any, args: tuple, spec: str | None = None) -> None:
    if spec is not None:  # a forked process opens its own PostgreSQL store (the parent's socket stays the parent's)
        _INHERITED.extend(
            select._POSTGRES.values()
        )  # kept referenced: never closed (a close would end the parent's session)
        select._POSTGRES.clear()
        select.open_store(spec)
    barrier.wait(30)
    try:
        results.put((name, "ok", fn(*args)))
    except FlowError as e:
        results.put((name, "refused" if e.exit_code == 6 else f"exit {e.exit_code}", str(e)))


def at_once(ws: Workspace, *calls: tuple[str, Any, tuple]) -> dict[str, tuple[str, Any]]:
    """Run each (name, fn, args) in its own process (a thread, on the memory store; on PostgreSQL, each process with its
    own connections), released together;
    {name: (status, result or message)}."""
    if ws.store == "memory":
        return _threads_at_once(*calls)
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(len(calls)), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(barrier, results, name, fn, args, ws.spec)) for name, fn, args in calls]
    for p in procs:
        p.start()
    out = {}
    for _ in procs:
        name, status, value = results.get(timeout=120)
        out[name] = (status, value)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    return out


def _threads_at_once(*calls: tuple[str, Any, tuple]) -> dict[str, tuple[str, Any]]:
    barrier, results = threading.Barrier(len(calls)), queue.Queue()  # type: ignore[var-annotated]
    threads = [threading.Thread(target=_worker, args=(barrier, results, name, fn, args)) for name, fn, args in calls]
    for t in threads:
        t.start()
    out = {}
    for _ in threads:
        name, status, value = results.get(timeout=120)
        out[name] = (status, value)
    for t in threads:
        t.join(30)
        assert not t.is_alive()
    return out


def _state(run: Path) -> dict:
    return RunFiles(run).json("state.json")


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_two_different_decisions_at_once_one_wins_and_the_other_is_refused_naming_it(wss, round_):
    ws = wss
    run = ws.start(run_dir=f"run{round_}").run_dir
    res = at_once(
        ws, ("alice", _approve, (str(run), "continue", "alice")), ("bob", _approve, (str(run), "reject", "bob"))
    )
    statuses = sorted(s for s, _ in res.values())
    assert statuses == ["ok", "refused"], res
    winner = next(n for n, (s, _) in res.items() if s == "ok")
    loser_msg = next(v for s, v in res.values() if s == "refused")
    if winner == "alice":  # continue is recorded and waits for resume; bob is told what alice decided
        assert "already decided by alice at" in loser_msg and loser_msg.count(": continue;") == 1
        assert RunFiles(run).json("approval.json")["operator"] == "alice"
        assert _state(run)["state"] == "PAUSED"
    else:  # reject ended the run; alice is told by whom
        assert "BLOCKED (rejected by bob)" in loser_msg and "already decided by bob at" in loser_msg
        assert RunFiles(run).json("incident.json")["operator"] == "bob"
    assert [r["data"]["operator"] for r in records(run) if r["type"] == "decision"] == (
        [] if winner == "alice" else ["bob"]
    )
    assert ws.posts() == 0


def test_quorum_votes_of_distinct_operators_started_at_once_both_count(wss):
    steps = [dict(s, consequential=True) if s["id"] == "post" else s for s in STEPS]
    ws = wss
    run = ws.start(steps, quorum=2).run_dir
    res = at_once(
        ws, ("alice", _approve, (str(run), "continue", "alice")), ("bob", _approve, (str(run), "continue", "bob"))
    )
    assert all(s == "ok" and v["recorded"] for s, v in res.values()), res
    approval = RunFiles(run).json("approval.json")
    assert sorted(v["operator"] for v in approval["votes"]) == ["alice", "bob"]  # no vote lost
    assert max(v["votes"] for _, v in res.values()) == 2


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_two_resumes_at_once_write_once(wss, round_):
    ws = wss
    run = ws.start(run_dir=f"run{round_}").run_dir
    approve(run, "continue", "alice")
    res = at_once(ws, ("a", _resume, (str(run),)), ("b", _resume, (str(run),)))
    assert ws.posts() == 1, res
    assert sum(1 for s, v in res.values() if s == "ok" and v["state"] == "COMPLETED") >= 1
    assert all(s == "ok" or "owned by a live process" in v for s, v in res.values()), res
    assert [r["type"] for r in records(run)].count("decision") == 1
    assert len(RunFiles(run).decisions()) == 1


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_approve_and_resume_at_once_lose_no_decision_and_write_once(wss, round_):
    ws = wss
    run = ws.start(run_dir=f"run{round_}").run_dir
    res = at_once(ws, ("approve", _approve, (str(run), "continue", "alice")), ("resume", _resume, (str(run),)))
    assert res["approve"][0] == "ok" and res["approve"][1]["recorded"], res  # the decision is never lost
    if res["resume"][0] == "refused":  # it came first (no decision yet) or met approve's hold on the run
        assert "awaiting an operator decision" in res["resume"][1] or "owned by a live process" in res["resume"][1]
        assert ws.posts() == 0
        assert resume(run).state == "COMPLETED"
    assert ws.posts() == 1 and _state(run)["state"] == "COMPLETED"
    assert [r["type"] for r in records(run)].count("decision") == 1


def test_two_identical_approvals_at_once_by_one_operator_record_one_vote(wss):
    ws = wss
    run = ws.start().run_dir
    res = at_once(
        ws, ("one", _approve, (str(run), "continue", "alice")), ("two", _approve, (str(run), "continue", "alice"))
    )
    assert sorted(bool(v.get("noop")) for _, v in res.values()) == [False, True], res  # a repeat is a no-op, exit 0
    assert len(RunFiles(run).json("approval.json")["votes"]) == 1
