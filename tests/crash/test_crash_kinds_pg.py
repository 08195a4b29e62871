"""The step-kinds crash matrix (test_crash_kinds.py) on the PostgreSQL store: real forked `flow` processes, their runs
(`pg:<case>-run`, its children and siblings) in a schema of the session's server, SIGKILLed at their point and
recovered by the same operator, under the same invariants (COMPLETED, every tool ran once, every question answered
once, every step verified once and in order, nothing verified dispatched again, no uncertain write blindly retried,
the chain holds). In a file of its own so that `--dist loadfile` runs it beside the other matrices.

Which points: a Python workflow's calls at every one of their points (the whole cross product of that scenario); of the
bundle's step kinds, every crash point of the consequential writes (`post`: where a lost or doubled write would show)
and, over the other steps, every kind of point once and every step at least once (`cover`). A point is a journal record, a
checkpoint write or an approval's consumption: what the store does there is the same SQL whatever the step, and each
step kind's own runtime code is the filesystem and memory matrices' (they run the whole cross product).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.crash.pgcrash_support import PgRuns
from tests.crash.test_crash_kinds import CONSEQUENTIAL, Scenario, crash_matrix, enumerate_scenarios, every_case

pytestmark = pytest.mark.timeout(240)


class PostgresRuns(PgRuns):
    """The scenario's runs in a schema of the session's PostgreSQL server (`pg:<root>-run`, its children and siblings),
    driven by forked `flow` processes SIGKILLed at their point, as on the filesystem (pgcrash_support.PgRuns)."""

    @staticmethod
    def ref(root: Path) -> Any:
        return f"pg:{root.name}-run"

    def reconcile_args(self, root: Path) -> list[str]:
        return ["reconcile", *self.store_args()]

    def start(self, sc: Scenario, root: Path) -> list[str]:
        args = list(sc.start)
        args[args.index("--run-dir") + 1] = self.ref(root)
        return [*args, *self.store_args()]

    def runs(self, root: Path) -> list[Any]:
        """The scenario's run and every child run it started (bundle children beside it, workflow children inside it)."""
        return ["pg:" + n for n in self.names(self.ref(root).removeprefix("pg:"))]

    def doc(self, run: str, what: str) -> dict:
        handle = self.run(run)
        return (handle.read_pending() if what == "pending" else handle.read_approval()) or {}

    def child(self, run: str, step: str) -> Any:
        inside = f"{run}/children/{step}"
        return inside if self.run(inside).has_journal() else f"{run}.{step}"

    @staticmethod
    def name(run: str) -> str:
        return run.rsplit("/", 1)[-1]


def cover(cases: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Every point of a consequential step; of the rest, the first case of each kind of point (`after:asked`,
    `checkpoint:renamed`, `approval:consumed`…) and the first of each step not yet covered."""
    kinds: set[str] = set()
    steps: set[str] = set()
    chosen = []
    for phase, point in cases:
        kind, _, step = point.partition("@")
        if step in CONSEQUENTIAL or kind not in kinds or (step and step not in steps):
            chosen.append((phase, point))
            kinds.add(kind)
            steps.add(step)
    return chosen


@pytest.fixture(scope="module")
def pg_kinds(request: pytest.FixtureRequest) -> Iterator[PostgresRuns]:
    mp = pytest.MonkeyPatch()
    try:
        yield PostgresRuns(request.getfixturevalue("pg_server"), f"kinds_{uuid.uuid4().hex[:12]}", mp)
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def pg_enumerated(
    tmp_path_factory: pytest.TempPathFactory, pg_kinds: PostgresRuns
) -> dict[str, tuple[list[list[str]], Counter]]:
    return enumerate_scenarios(tmp_path_factory, pg_kinds)


def test_cover_takes_every_consequential_point_and_every_kind_and_step_once():
    cases = [
        (0, "after:run_started"),
        (0, "after:step_started@fetch"),
        (0, "after:step_verified@fetch"),
        (0, "after:step_started@post"),
        (0, "after:action_dispatched@post"),
        (1, "after:run_resumed"),
        (1, "after:step_started@done"),
        (1, "after:step_verified@done"),
        (2, "after:run_resumed"),
        (2, "after:action_sent@post"),
    ]
    assert cover(cases) == [
        (0, "after:run_started"),
        (0, "after:step_started@fetch"),
        (0, "after:step_verified@fetch"),
        (0, "after:step_started@post"),
        (0, "after:action_dispatched@post"),
        (1, "after:run_resumed"),
        (1, "after:step_started@done"),
        (2, "after:action_sent@post"),
    ]


def test_sigkill_at_every_kind_of_point_of_every_bundle_step_kind_on_postgres(tmp_path, pg_kinds, pg_enumerated):
    crash_matrix(tmp_path, pg_kinds, pg_enumerated, "bundle", cover)


def test_sigkill_at_every_journal_point_of_every_workflow_call_on_postgres(tmp_path, pg_kinds, pg_enumerated):
    """A Python workflow's calls (tool, ask_user, sleep, wait_signal, replay, child, the consequential tool and the
    approved domain action) killed at every point, as on the filesystem and in memory: the calls are the same durable
    calls as a bundle's, but the workflow's code runs again from the top on every resume — every point is worth it."""
    crash_matrix(tmp_path, pg_kinds, pg_enumerated, "workflow", every_case)
