"""A random-SIGKILL soak of a durable run with a consequential write, on a real desktop (scripts/soak.py, smaller).

The demo bundle's replay and the resumes after it are SIGKILLed from outside at random instants; after each kill the
run is reconciled and resumed, and an operator who is asked decides from what the database really holds. Every run
must end COMPLETED with exactly one row: none stuck, none doubled, none COMPLETED without its row. The seed is printed
(FLOW_SOAK_SEED reproduces a run's delays); `scripts/soak.py --kills 30` is the full figure.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys

import pytest

from tests.support import memcrash
from tests.support.cli import REPO
from tests.support.memcrash import MemoryDesk

SEED = int(os.environ.get("FLOW_SOAK_SEED", "20261201"))
KILLS = 8


def load_soak():
    """scripts/soak.py as a module (registered first: its dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location("flow_soak", REPO / "scripts" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["flow_soak"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(240)
def test_random_sigkills_leave_no_run_stuck_and_no_row_doubled(tmp_path):
    soak = load_soak()
    print(f"soak seed {SEED} (FLOW_SOAK_SEED={SEED} reproduces the delays)")
    fig = soak.run_soak(kills=KILLS, seed=SEED, root=tmp_path)
    print(fig.line())
    assert fig.kills >= KILLS
    assert (fig.stuck, fig.double, fig.completed_without_row) == (0, 0, 0), (
        fig.line() + "\n" + "\n".join(map(str, fig.stuck_runs))
    )
    assert fig.completed_one_row == fig.runs


MEMORY_RUNS = 5


def _points(desk: MemoryDesk) -> list[str]:
    """Every crash point of an uncrashed demo run, its checkpoint writes, and those only a resume passes."""
    root, amount = desk.case()
    env, run = desk.env(), desk.run_ref(root)
    assert desk.flow(desk.replay_args(run, amount, desk.fast_bundle()), root, env).returncode == 0
    seen = [f"after:{r['type']}" + (f"@{r['step']}" if r.get("step") else "") for r in desk.journal(run, env)]
    seen += [
        f"checkpoint:{w}@{r['step']}"
        for r in desk.journal(run, env)
        if r["type"] == "step_verified"
        for w in ("tmp_written", "renamed")
    ]
    return sorted(set(seen)) + [
        "after:interrupted",
        "after:run_resumed",
        "after:rechecked@save",
        "after:decision@save",
        "after:escalation_opened@save",
        "after:paused@save",
        "approval:consuming",
        "approval:consumed",
    ]


def _drive(desk: MemoryDesk, rng: random.Random, points: list[str]) -> tuple[str, int, int]:
    """One soak run: a replay killed at a random crash point, then reconcile + resumes (each killed at a random point
    half the time) and an operator telling the truth, until COMPLETED. (how it ended, kills, rows)"""
    root, amount = desk.case()
    env, run = desk.env(), desk.run_ref(root)
    args = desk.replay_args(run, amount, desk.fast_bundle())
    kills = int(desk.flow(args, root, dict(env, FLOW_CRASH_AT=rng.choice(points))).killed)
    if desk.cut_startup(run, root, env) is not None:  # no run began: replayed, as an operator would
        desk.flow(args, root, env)
    for _ in range(12):
        st = desk.state(run)
        if st["state"] == "COMPLETED":
            return "COMPLETED", kills, desk.rows(amount)
        if (
            st["state"] == "PAUSED"
            and st.get("paused_reason") == "awaiting_approval"
            and not memcrash.run_of(run).has_approval()
        ):
            allowed = (memcrash.run_of(run).read_pending() or {}).get("allowed_decisions", [])
            truth = ["--decision", "reconcile", "--effect", "landed" if desk.rows(amount) else "absent"]
            decision = truth if "reconcile" in allowed else ["--decision", "continue"]
            desk.flow(["approve", run, *decision, "--operator", "ops"], root, env)
        desk.flow(["reconcile", "--store", "memory:"], root, env)
        crash = {"FLOW_CRASH_AT": rng.choice(points)} if rng.random() < 0.5 else {}
        kills += int(desk.flow(["resume", run, "--json"], root, dict(env, **crash)).killed)
    return f"stuck {desk.state(run)['state']}({desk.state(run).get('paused_reason')})", kills, desk.rows(amount)


@pytest.mark.timeout(240)
def test_random_kills_on_the_memory_store_leave_no_run_stuck_and_no_row_doubled(tmp_path, monkeypatch):
    """The same soak on the memory store, in process: a command there can only die at a crash point (memcrash), so
    each kill lands on a point drawn at random — in the replay and in half the resumes after it, chained."""
    rng = random.Random(SEED)
    desk = MemoryDesk(tmp_path, monkeypatch)
    points = _points(desk)
    ends = [_drive(desk, rng, points) for _ in range(MEMORY_RUNS)]
    print(f"soak seed {SEED}: {ends}")
    assert sum(k for _, k, _ in ends) >= MEMORY_RUNS  # every replay was killed, some resumes too
    assert [(end, rows) for end, _, rows in ends] == [("COMPLETED", 1)] * MEMORY_RUNS, ends
