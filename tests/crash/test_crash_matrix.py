"""SPEC §5/§8/§10 crash matrix on the real demo app (Tk + SQLite on Xvnc): SIGKILL the replay at every journal point of
every one of its steps, and inside every checkpoint write; then `flow reconcile` + `flow resume` (+ `flow approve` exactly
where §9 requires an operator). The system of record ends with exactly one copy of the write, the recorded
transaction_outcome is the one §8 prescribes, and verified progress is never lost nor re-performed.

The points are not listed by hand: one uncrashed run of the bundle is journaled, and every (record type, step) it wrote is
a crash point, so a new record type is covered the day it is written. One desktop serves the whole module (each case has
its own amount, so its row is told apart); a case that leaves the app off its list screen restarts the app. The bundle is
the demo's with its effect's timeout_s cut from 5 s to 1 s (`Desktop.fast_bundle`): an uncertain save is re-read only
that long after its dispatch, and many cases wait for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.crash.crash_kit import kit  # noqa: F401  (the store-parametrized desk)
from tests.crash.crash_support import (  # noqa: F401  (desk, kit: the shared desktop fixtures)
    CONSEQUENTIAL,
    STEPS,
    Desktop,
    demo_invariants,
    desk,
    points_of,
    uncertain,
    verified,
)

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def demo_points(kit: Any) -> dict[str, list[str]]:
    return enumerate_points(kit)


def enumerate_points(kit: Any) -> dict[str, list[str]]:
    """Every crash point one uncrashed demo run passes, grouped by step ("run" for run-level records)."""
    root, amount = kit.case()
    env, run = kit.env(), kit.run_ref(root)
    r = kit.flow(kit.replay_args(run, amount, kit.fast_bundle()), root, env)
    assert r.returncode == 0, r.stderr + r.stdout
    records = kit.journal(run, env)
    groups: dict[str, list[str]] = {s: [] for s in ["run", *STEPS]}
    for p in points_of(records):
        step = p.partition("@")[2] or "run"
        groups[step].append(p)
    for step in STEPS:  # the checkpoint write of every verified step, around its rename
        groups[step] += [f"checkpoint:tmp_written@{step}", f"checkpoint:renamed@{step}"]
    return groups


def crash_and_recover(desk: Any, point: str, signal: str = "KILL") -> list[str]:
    """One case (Desktop or MemoryDesk); returns what went wrong (empty: every invariant held)."""
    root, amount = desk.case()
    env, run = desk.env(), desk.run_ref(root)
    flow, state, journal = desk.flow, desk.state, desk.journal
    r = flow(
        desk.replay_args(run, amount, desk.fast_bundle()),
        root,
        dict(env, FLOW_CRASH_AT=point, FLOW_CRASH_SIGNAL=signal),
    )
    if not r.killed:
        return [f"{point}: the replay was not killed at the point (exit {r.returncode}) {r.stderr[-300:]}"]
    cut = desk.cut_startup(run, root, env)
    if cut is not None:  # no run began: replay again, as an operator would, and the one row must follow
        r = flow(desk.replay_args(run, amount, desk.fast_bundle()), root, env)
        if r.returncode != 0 or desk.rows(amount) != 1:
            cut.append(f"{point}: the replay after a cut start-up ended {r.returncode} with {desk.rows(amount)} row(s)")
        return cut
    before = journal(run, env)
    landed = desk.rows(amount)
    save_uncertain = uncertain(before, CONSEQUENTIAL)
    problems: list[str] = []

    st = flow(["status", str(run), "--json"], root, env)
    if st.returncode != 0 or st.json()["state"] != "INTERRUPTED" or state(run)["state"] != "RUNNING":
        problems.append(
            f"{point}: status must show INTERRUPTED without writing it (exit {st.returncode}, {st.stdout[:200]})"
        )
    rc = flow([*desk.reconcile_args(root), "--json"], root, env)
    want = ("INTERRUPTED", "RECONCILIATION_REQUIRED" if save_uncertain else "HALTED_BEFORE_EFFECT")
    if before[-1]["type"] == "run_finished":  # the journal, the record of truth, already says how the run ended
        want = (before[-1]["data"]["state"], before[-1]["data"].get("transaction_outcome"))
    got = state(run)
    if rc.returncode != 0 or (got["state"], got.get("transaction_outcome")) != want:
        problems.append(
            f"{point}: reconcile gave {got['state']}/{got.get('transaction_outcome')}, SPEC §8 says {want[0]}/{want[1]} ({rc.stderr[-200:]})"
        )

    # §8/§9: an operator is needed exactly when the uncertain write's re-read is not CONFIRMED (here: it did not land)
    needs_operator = save_uncertain and landed == 0
    res = flow(["resume", str(run), "--json"], root, env)
    if needs_operator:
        paused = state(run)
        if res.returncode != 6 or (paused["state"], paused.get("paused_reason")) != ("PAUSED", "awaiting_approval"):
            problems.append(
                f"{point}: the save is uncertain and absent; resume must stop for an operator (exit {res.returncode}, {paused['state']})"
            )
        if desk.rows(amount) != 0:
            problems.append(f"{point}: the uncertain save was retried without a decision")
        ap = flow(["approve", str(run), "--decision", "continue", "--operator", "ops"], root, env)
        if ap.returncode != 0:
            return problems + [f"{point}: approve failed (exit {ap.returncode}): {ap.stderr[-300:]}"]
        res = flow(["resume", str(run), "--json"], root, env)
    if res.returncode != 0:
        why = state(run)
        return problems + [
            f"{point}: resume ended {why['state']}({why.get('paused_reason')}) exit {res.returncode}: "
            f"{(why.get('message') or res.stderr)[-300:]}"
        ]
    return problems + demo_invariants(desk, point, run, env, before, amount)


@pytest.mark.parametrize("kit", ["filesystem", "memory"], indirect=True)  # postgres: test_crash_matrix_pg.py
@pytest.mark.parametrize("step", ["run", *STEPS])
def test_sigkill_at_every_journal_point_of_every_demo_step(kit, demo_points, step):
    points = demo_points[step]
    if step != "run":  # the enumeration saw the whole lifecycle of the step (a guard against an empty matrix)
        assert {
            f"after:step_started@{step}",
            f"after:action_dispatched@{step}",
            f"after:action_sent@{step}",
            f"after:step_verified@{step}",
        } <= set(points), points
    else:
        assert {"after:run_started", "after:run_finished"} <= set(points), points
    problems = [p for point in points for p in crash_and_recover(kit, point)]
    assert not problems, f"{len(problems)} problem(s) over {len(points)} points:\n" + "\n".join(problems)


@pytest.mark.parametrize("kit", ["filesystem", "memory"], indirect=True)  # postgres: test_crash_matrix_pg.py
def test_sigterm_stops_at_a_safe_boundary_and_resumes(kit):
    sigterm_case(kit)


def sigterm_case(kit: Any) -> None:
    root, amount = kit.case()
    env, run = kit.env(), kit.run_ref(root)
    r = kit.flow(
        kit.replay_args(run, amount), root, dict(env, FLOW_CRASH_AT="after:action_sent@save", FLOW_CRASH_SIGNAL="TERM")
    )
    assert r.returncode == 5, r.stderr + r.stdout
    st = kit.state(run)
    # SIGTERM arrived between input and verification: the step was verified first (the next safe boundary)
    assert (st["state"], st["transaction_outcome"]) == ("INTERRUPTED", "HALTED_BEFORE_EFFECT")
    assert verified(kit.journal(run, env))[-1] == "save"
    res = kit.flow(["resume", str(run), "--json"], root, env)
    assert res.returncode == 0, res.stderr + res.stdout
    assert kit.rows(amount) == 1
    assert verified(kit.journal(run, env)).count("save") == 1


WORKFLOW = '''
from openadapt_flow import workflow


@workflow
def post_invoice(ctx, bundle: str, amount: float):
    out = ctx.replay(bundle, params={"vendor": "ACME Corp", "amount": amount})
    return out["state"]
'''


def workflow_case(desk: Any, point: str | None) -> tuple[list[str], list[dict]]:
    """`ctx.replay` of the demo bundle from a Python workflow, killed at `point` (None: uncrashed); recovered by resuming
    the workflow, and by an operator on the child run only where its uncertain save is absent. (problems, journals)"""
    root, amount = desk.case()
    (root / "wfdemo.py").write_text(WORKFLOW)
    env, run = desk.env(), desk.run_ref(root)
    flow, state, journal = desk.flow, desk.state, desk.journal
    args = [
        "run-py",
        "wfdemo:post_invoice",
        "--arg",
        f"bundle={desk.fast_bundle()}",
        "--arg",
        f"amount={amount}",
        "--url",
        desk.url,
        "--run-dir",
        str(run),
        *desk.store_args(),
        "--json",
    ]
    r = flow(args, root, dict(env, FLOW_CRASH_AT=point) if point else env)
    where = point or "uncrashed"
    if point and not r.killed:
        return [f"workflow {where}: not killed there (exit {r.returncode}) {r.stderr[-300:]}"], []
    cut = desk.cut_startup(run, root, env)
    if cut is not None:  # the workflow run never began (atomic start-up): start it again, and the one row must follow
        r = flow(args, root, env)
        if r.returncode != 0 or desk.rows(amount) != 1:
            cut.append(
                f"workflow {where}: the start after a cut start-up ended {r.returncode} with {desk.rows(amount)} row(s)"
            )
        return cut, []
    child = next(iter(desk.children(run)), None)
    before = journal(child, env) if child is not None and desk.has_journal(child) else []
    landed, problems = desk.rows(amount), []
    flow(desk.reconcile_args(root), root, env)
    for _ in range(4):
        res = flow(["resume", str(run), "--json"], root, env)
        st = state(run)
        if res.returncode == 0 and st["state"] == "COMPLETED":
            break
        child = next(iter(desk.children(run)), None)
        cst = state(child) if child is not None else {}
        if (st.get("paused_reason"), cst.get("state"), cst.get("paused_reason")) != (
            "awaiting_child",
            "PAUSED",
            "awaiting_approval",
        ):
            return problems + [
                f"workflow {where}: resume left {st['state']}({st.get('paused_reason')}), child "
                f"{cst.get('state')}({cst.get('paused_reason')}): {(st.get('message') or res.stderr)[-300:]}"
            ], []
        if not (uncertain(journal(child, env), CONSEQUENTIAL) and landed == 0):
            problems.append(
                f"workflow {where}: the child paused for an operator with nothing uncertain: {cst.get('message')}"
            )
        flow(["approve", str(child), "--decision", "continue", "--operator", "ops"], root, env)
    else:
        return problems + [f"workflow {where}: no COMPLETED after 4 resumes"], []
    child = desk.children(run)[0]
    problems += demo_invariants(desk, f"workflow {where}", child, env, before, amount)
    return problems, journal(run, env) + journal(child, env)


@pytest.mark.parametrize("kit", ["filesystem", "memory"], indirect=True)  # postgres: test_crash_matrix_pg.py
def test_sigkill_inside_a_workflow_replay_of_the_demo(kit):
    """ctx.replay's own points (the call, the child's start and end) and the consequential save's points inside it."""
    workflow_matrix(kit)


def workflow_matrix(kit: Any) -> None:
    problems, records = workflow_case(kit, None)
    assert not problems, problems
    points = [p for p in points_of(records) if "@" not in p or p.endswith(f"@{CONSEQUENTIAL}") or "@replay-" in p]
    assert {
        "after:child_started@replay-bundle-fast",
        f"after:action_dispatched@{CONSEQUENTIAL}",
        "after:workflow_returned",
    } <= set(points), points
    print(f"{len(points)} points: {points}")
    found = [p for point in points for p in workflow_case(kit, point)[0]]
    assert not found, f"{len(found)} problem(s) over {len(points)} points:\n" + "\n".join(found)
