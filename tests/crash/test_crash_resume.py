"""Crash matrix of `flow resume` itself (SPEC §8, §9): a run is crashed (or paused), then the RESUME is SIGKILLed at every
one of its own journal points — run_resumed, rechecked, step_verified by `reconciled`, decision, escalation_opened,
paused… — and around the approval's consumption (moved to decisions/), then resumed again. The decision is neither lost
(the operator is not asked twice) nor used twice, and the system of record ends with exactly one row.

The resume's points come from an uncrashed resume of the same situation: every record it journals before it starts
executing steps (the steps' own points are the demo matrix's), the checkpoint writes among them, and the consumption
points wherever it journals a decision. The durable kinds' resumes (answers, signals, timers, children) are in
test_crash_kinds.py. The bundle is the demo's with its effect's timeout_s cut to 1 s: a resume re-reads an uncertain
write only once that timeout has passed since dispatch, and each case here waits for it up to three times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.crash.crash_kit import kit  # noqa: F401  (the store-parametrized desk)
from tests.crash.crash_support import (  # noqa: F401  (desk, kit: the shared desktop fixtures)
    CONSEQUENTIAL,
    demo_invariants,
    desk,
    points_of,
    uncertain,
)

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def fast_bundle(kit: Any) -> Path:
    return kit.fast_bundle()


# situation -> (where the replay is killed, the operator's decision before the resume under test, or None)
SITUATIONS = {
    "landed-save-reconciled": (
        "after:action_sent@save",
        None,
    ),  # re-read CONFIRMED: checkpointed as reconciled, no operator
    "absent-save-opens-a-pause": (
        "after:action_dispatched@save",
        None,
    ),  # re-read ABSENT: the resume pauses for an operator
    "absent-save-continued": (
        "after:action_dispatched@save",
        "continue",
    ),  # the operator's continue is consumed and used
}


def prepare(desk: Any, bundle: Path, situation: str) -> tuple[Any, Path, float, dict[str, str], list[dict]]:
    """Crash the replay, reconcile, and (for a decided situation) let the first resume pause and the operator decide."""
    first, decision = SITUATIONS[situation]
    root, amount = desk.case()
    env, run = desk.env(), desk.run_ref(root)
    flow, state = desk.flow, desk.state
    r = flow(desk.replay_args(run, amount, bundle), root, dict(env, FLOW_CRASH_AT=first))
    assert r.killed, (first, r.returncode, r.stderr[-500:])
    assert flow(desk.reconcile_args(root), root, env).returncode == 0
    if decision is not None:
        paused = flow(["resume", str(run), "--json"], root, env)
        assert paused.returncode == 6 and state(run)["paused_reason"] == "awaiting_approval", paused.stderr
        ap = flow(["approve", str(run), "--decision", decision, "--operator", "ops"], root, env)
        assert ap.returncode == 0, ap.stderr
    return run, root, amount, env, desk.journal(run, env)


def resume_points(records: list[dict]) -> list[str]:
    """The resume's own points: what it journals before the first step it executes, its checkpoint writes, its consumption."""
    own: list[dict] = []
    for r in records:
        if r["type"] == "step_started":
            break
        own.append(r)
    points = points_of(own)
    points += [
        f"checkpoint:{w}@{r['step']}" for r in own if r["type"] == "step_verified" for w in ("tmp_written", "renamed")
    ]
    if any(r["type"] == "decision" for r in own):
        points += ["approval:consuming", "approval:consumed"]
    return points


@pytest.fixture(scope="module")
def points(kit: Any, fast_bundle: Path) -> dict[str, list[str]]:
    """Each situation's resume points, enumerated on first use (by an uncrashed resume of it)."""
    return {}


def resume_points_of(desk: Any, bundle: Path, situation: str, cache: dict[str, list[str]]) -> list[str]:
    if situation not in cache:
        run, root, _amount, env, before = prepare(desk, bundle, situation)
        desk.flow(["resume", str(run), "--json"], root, env)
        cache[situation] = resume_points(desk.journal(run, env)[len(before) :])
        if desk.state(run)["state"] == "PAUSED":  # leave the app on its list screen for the next case
            desk.flow(["approve", str(run), "--decision", "continue", "--operator", "ops"], root, env)
            desk.flow(["resume", str(run)], root, env)
    return cache[situation]


def crash_resume(desk: Any, bundle: Path, situation: str, point: str) -> list[str]:
    run, root, amount, env, before = prepare(desk, bundle, situation)
    flow, state, journal = desk.flow, desk.state, desk.journal
    decided = desk.has_approval(run)
    r = flow(["resume", str(run), "--json"], root, dict(env, FLOW_CRASH_AT=point))
    if not r.killed:
        return [f"{situation} {point}: the resume was not killed there (exit {r.returncode}) {r.stderr[-300:]}"]
    landed = desk.rows(amount)
    problems: list[str] = []
    rc = flow(desk.reconcile_args(root), root, env)
    if rc.returncode != 0:
        problems.append(f"{situation} {point}: reconcile exited {rc.returncode}: {rc.stderr[-300:]}")
    asked = 0
    for _ in range(4):
        res = flow(["resume", str(run), "--json"], root, env)
        st = state(run)
        if res.returncode == 0:
            break
        if st["state"] != "PAUSED" or st.get("paused_reason") != "awaiting_approval":
            return problems + [
                f"{situation} {point}: stuck: resume exited {res.returncode} leaving {st['state']}"
                f"({st.get('paused_reason')}), which no decision can move: {(res.stderr or st.get('message') or '')[-300:]}"
            ]
        # §9: an operator is needed again only for a decision not yet made — never for one already given
        if decided:
            problems.append(
                f"{situation} {point}: the operator's decision was lost: asked again ({(res.stderr or st.get('message') or '')[-200:]})"
            )
        elif not (uncertain(journal(run, env), CONSEQUENTIAL) and landed == 0):
            problems.append(f"{situation} {point}: paused for an operator with nothing uncertain: {st.get('message')}")
        asked += 1
        ap = flow(["approve", str(run), "--decision", "continue", "--operator", "ops"], root, env)
        if ap.returncode != 0:
            return problems + [
                f"{situation} {point}: stuck: approve refused (exit {ap.returncode}): {ap.stderr[-300:]}"
            ]
        decided = True
    else:
        return problems + [f"{situation} {point}: no COMPLETED after 4 resumes"]
    problems += demo_invariants(desk, f"{situation} {point}", run, env, before, amount)
    pauses = {r["data"].get("pause_id") for r in journal(run, env) if r["type"] == "decision"}
    for pause in pauses:  # a decision is consumed exactly once: archived, and not left to be used again
        if not desk.consumed(run, pause):
            problems.append(f"{situation} {point}: the decision for {pause} was applied but never consumed")
    if desk.has_approval(run):
        problems.append(f"{situation} {point}: approval.json is left behind on a COMPLETED run (could be used again)")
    return problems


# PostgreSQL (time): the decided situation only — the resume that consumes an operator's decision, through the store's
# own approval consumption (run_resumed, rechecked, decision, approval:consuming/consumed); the demo matrix covers every
# point of the replay there
CASES = (
    [("filesystem", s) for s in SITUATIONS]
    + [("memory", s) for s in SITUATIONS]
    + [("postgres", "absent-save-continued")]
)


@pytest.mark.parametrize(("kit", "situation"), CASES, indirect=["kit"])
def test_sigkill_at_every_point_of_resume_loses_no_decision_and_uses_none_twice(kit, fast_bundle, points, situation):
    pts = resume_points_of(kit, fast_bundle, situation, points)
    assert "after:run_resumed" in pts and f"after:rechecked@{CONSEQUENTIAL}" in pts, pts
    if SITUATIONS[situation][1] is not None:
        assert {f"after:decision@{CONSEQUENTIAL}", "approval:consuming", "approval:consumed"} <= set(pts), pts
    problems = [p for point in pts for p in crash_resume(kit, fast_bundle, situation, point)]
    assert not problems, f"{len(problems)} problem(s) over {len(pts)} points:\n" + "\n".join(problems)
