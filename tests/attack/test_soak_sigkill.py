"""A random-SIGKILL soak of a durable run with a consequential write, on a real desktop (scripts/soak.py, smaller).

The demo bundle's replay and the resumes after it are SIGKILLed from outside at random instants; after each kill the
run is reconciled and resumed, and an operator who is asked decides from what the database really holds. Every run
must end COMPLETED with exactly one row: none stuck, none doubled, none COMPLETED without its row. The seed is printed
(FLOW_SOAK_SEED reproduces a run's delays); `scripts/soak.py --kills 30` is the full figure.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

from tests.support.cli import REPO

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
    assert (fig.stuck, fig.double, fig.completed_without_row) == (0, 0, 0), fig.line() + "\n" + "\n".join(map(str, fig.stuck_runs))
    assert fig.completed_one_row == fig.runs
