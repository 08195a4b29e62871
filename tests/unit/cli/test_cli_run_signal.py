"""A run signal (Halt, Pause, StopRequested, PolicyBlock, a lost lease, a full disk) that reaches a command exits with its
code and one line, never a traceback (cli/common.py handle_errors)."""

import pytest
import typer
from typer.testing import CliRunner

from openadapt_flow.cli.common import handle_errors
from openadapt_flow.runtime.judge.halt import Halt, Pause, StopRequested
from openadapt_flow.runtime.judge.policy import PolicyBlock
from openadapt_flow.runtime.workflow.ctx import WorkflowStop
from openadapt_flow.store.lease import LeaseLost

pytestmark = pytest.mark.timeout(30)

SIGNALS = [
    (Pause("awaiting_approval", "post", "step 'post' needs an operator's approval"), 3, "needs an operator's approval"),
    (Halt("resolution", "button 'Save' not found", step="save"), 1, "button 'Save' not found"),
    (StopRequested(), 5, "stop requested"),
    (PolicyBlock("max_dispatches", 3, 2, "post", "step 'post' dispatched\ntoo often"), 4, "dispatched too often"),
    (LeaseLost("run/x: lease generation 1 was replaced"), 6, "lease generation 1 was replaced"),
    (WorkflowStop(Pause("awaiting_user", "ask", "which vendor?")), 3, "which vendor?"),
]


@pytest.mark.parametrize(
    ("signal", "code", "text"), SIGNALS, ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else None
)
def test_a_run_signal_reaching_a_command_exits_with_its_code_and_one_line(signal, code, text):
    app = typer.Typer()

    @app.command()
    @handle_errors
    def go() -> None:
        raise signal

    result = CliRunner().invoke(app, [])
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and text in lines[0]
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)  # exited, did not raise
