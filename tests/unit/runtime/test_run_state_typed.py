"""A run's state is a `RunState` where the runtime hands it on (`RunOutcome.state`), and a state.json whose state is
none of them is refused by name, never acted on."""

from __future__ import annotations

import pytest

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.states import RunState
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store.keys import load_key
from tests.unit.runtime.test_durable import App, env, go, start  # noqa: F401 (env: a fixture)

pytestmark = pytest.mark.timeout(120)


def test_the_outcome_of_a_start_and_of_a_resume_is_a_run_state(tmp_path, env):
    app = App(env, refute=True)
    out = start(tmp_path, app)
    assert out.state is RunState.PAUSED and out.exit_code == RunState.PAUSED.exit_code == 3
    approve(out.run_dir, "reject", "bob")
    again = go(out.run_dir, app)  # a resume that finds the run over: its state read back from state.json
    assert again.state is RunState.BLOCKED and again.state.final and again.exit_code == 4


@pytest.mark.invalid_run_records("its state.json holds a state the models reject, on purpose")
def test_a_sealed_state_that_is_no_run_state_is_refused_by_name(tmp_path, env):
    app = App(env, refute=True)
    out = start(tmp_path, app)
    run = open_ref(out.run_dir)
    journal, _records = run.open_journal(load_key(create=False))
    run.write_state("SLEEPING", journal=journal)  # type: ignore[arg-type]  # sealed: only its value is foreign
    journal.close()
    with pytest.raises(RefusedError, match=r"state\.json.*'SLEEPING' is not a run state"):
        go(out.run_dir, app)
