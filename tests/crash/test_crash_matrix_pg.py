"""The demo crash matrix (test_crash_matrix.py) on the PostgreSQL store: every journal point of every demo step and
every checkpoint write, SIGKILLing a real `flow` process whose runs live in a schema of the session's server
(crash_kit.pg_kit); the SIGTERM case; and a Python workflow's ctx.replay of the demo killed at each of its points. The same cases as the filesystem's, in a file of their own so that
`--dist loadfile` runs them beside the other matrices."""

from __future__ import annotations

from typing import Any

import pytest

from tests.crash.crash_kit import pg_kit  # noqa: F401  (the desk on the PostgreSQL store)
from tests.crash.crash_support import STEPS, desk  # noqa: F401  (desk: the module's desktop)
from tests.crash.test_crash_matrix import crash_and_recover, enumerate_points, sigterm_case, workflow_matrix

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def demo_points(pg_kit: Any) -> dict[str, list[str]]:
    return enumerate_points(pg_kit)


@pytest.mark.parametrize("step", ["run", *STEPS])
def test_sigkill_at_every_journal_point_of_every_demo_step_on_postgres(pg_kit, demo_points, step):
    points = demo_points[step]
    want = (
        {"after:run_started", "after:run_finished"}
        if step == "run"
        else {
            f"after:step_started@{step}",
            f"after:action_dispatched@{step}",
            f"after:action_sent@{step}",
            f"after:step_verified@{step}",
        }
    )
    assert want <= set(points), points  # the enumeration saw the whole lifecycle (a guard against an empty matrix)
    problems = [p for point in points for p in crash_and_recover(pg_kit, point)]
    assert not problems, f"{len(problems)} problem(s) over {len(points)} points:\n" + "\n".join(problems)


def test_sigterm_stops_at_a_safe_boundary_and_resumes_on_postgres(pg_kit):
    sigterm_case(pg_kit)


def test_sigkill_inside_a_workflow_replay_of_the_demo_on_postgres(pg_kit):
    """A Python workflow's ctx.replay of the demo killed at each of its points and the save's, its runs in PostgreSQL."""
    workflow_matrix(pg_kit)
