"""The loop `flow demo` shows after its healthy replay: a durable run halts, an operator decides, the run resumes.

The target is the recorded demo app with two identical Save buttons (the `twin` fixture), served over real RFB
from a thread of this process and kept in its state between connections, as a desktop would be. The demo bundle
halts there (`ambiguous`: it never picks one of two look-alikes); the demo then runs, as real `flow` processes
and echoed exactly as a user would type them, the operator's `flow approve … --decision teach` and the script's
`flow resume --require-approval`, and shows the row the run wrote.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from PIL import Image

from openadapt_flow.errors import FlowError
from openadapt_flow.fixture.model import load_fixture
from openadapt_flow.fixture.player import Player
from openadapt_flow.fixture.server import PlayerScreen, RfbServer
from openadapt_flow.records.states import DecisionKind
from openadapt_flow.report.meanings import category_words
from openadapt_flow.runtime import open_ref

LOOKALIKE = "twin"
# In the twin recording, Save sits twice at (170, 234) and (170, 286), 120x44 each; the recording clicked the lower.
LOWER_SAVE = (230, 308)
OPERATOR = "demo"
TIMEOUT_S = 120

OUTCOME_WORDS = {
    "HALTED_BEFORE_EFFECT": "nothing was written: no input was sent for this step",
    "RECONCILIATION_REQUIRED": "the step may have written: it is never retried until an operator reconciles it",
}


class DemoLoopError(FlowError):
    """A step of the loop did not end as the demo shows it. Exits with that `flow` command's own code when it is a
    run's outcome (FAILED 1, BLOCKED 4, INTERRUPTED 5, REFUSED 6); otherwise 70: the recorded look-alikes always
    halt, so a run that did not is a bug in the tool."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code if code in (1, 4, 5, 6) else 70


@dataclass
class LoopResult:
    run_dir: str = ""
    halt: dict[str, Any] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    state: str = ""
    rows: list[Any] = field(default_factory=list)


def _display(path: Path) -> str:
    """A path as a user would type it from here: relative to the working directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(path)


@contextmanager
def _served(fixture_dir: Path, db: Path) -> Iterator[int]:
    """The fixture on 127.0.0.1:<free port>, keeping its screen between connections (the run's next process
    finds the app where the last one left it)."""
    fixture = load_fixture(fixture_dir)
    screen = PlayerScreen(Player(fixture, db), f"fixture {fixture.model.name}", reset_when_idle=False)
    with RfbServer(screen, "127.0.0.1", 0) as server:
        yield server.port


class Loop:
    """Runs each `flow` command as its own process, echoing it as a user would type it."""

    def __init__(self, echo: Callable[[str], None], env: dict[str, str]) -> None:
        self.echo, self.env = echo, env
        self.result = LoopResult()

    def flow(self, *args: str) -> int:
        line = shlex.join(["flow", *args])
        self.result.commands.append(line)
        self.echo(f"$ {line}")
        # its output shown as it comes (progress, then the outcome line), indented under the command
        proc = subprocess.Popen(
            [sys.executable, "-m", "openadapt_flow", *args],
            env=self.env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        timer = threading.Timer(TIMEOUT_S, proc.kill)  # a hung command ends the demo instead of hanging it
        timer.start()
        try:
            assert proc.stdout is not None
            for text in proc.stdout:
                self.echo(f"    {text.rstrip()}")
            return proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _loop_dir(run_dir: Path | None) -> Path:
    if run_dir is not None:
        return run_dir.with_name(run_dir.name + "-loop")
    base = Path("runs") / datetime.now().strftime("loop-%Y%m%d-%H%M%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def explain(pending: dict[str, Any]) -> list[str]:
    """The pending escalation in plain words."""
    category, outcome = pending.get("category") or "", pending.get("transaction_outcome") or ""
    return [
        f"Step '{pending.get('step')}' stopped and waits for an operator: "
        f"{category_words(category, long=True) or category}.",
        f"  What it may already have done: {OUTCOME_WORDS.get(outcome, outcome)} ({outcome}).",
        f"  Decisions allowed: {', '.join(pending.get('allowed_decisions') or [])}; "
        f"the pause expires at {pending.get('expires_at')}.",
    ]


def run_loop(
    bundle: Path,
    fixtures: Path,
    params: dict[str, str],
    run_dir: Path | None,
    echo: Callable[[str], None],
    read_rows: Callable[[Path], list[Any]],
) -> LoopResult:
    """Halt → approve → resume on the look-alike fixture; raises DemoLoopError where it departs from that."""
    work = Path(tempfile.mkdtemp(prefix="flow-demo-loop-"))
    try:
        return _run(bundle, fixtures, params, run_dir, echo, read_rows, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(
    bundle: Path,
    fixtures: Path,
    params: dict[str, str],
    run_dir: Path | None,
    echo: Callable[[str], None],
    read_rows: Callable[[Path], list[Any]],
    work: Path,
) -> LoopResult:
    db = work / "invoices.db"
    dsn = f"sqlite:///{db}"
    loop = Loop(echo, dict(os.environ, DEMO_DB_DSN=dsn))
    res = loop.result
    target = _loop_dir(run_dir)
    res.run_dir = _display(target)
    with _served(fixtures / LOOKALIKE, db) as port:
        echo(f"$ export DEMO_DB_DSN={dsn}    # where the app keeps its invoices: the effect check reads it")
        param_args = [a for k, v in params.items() for a in ("--param", f"{k}={v}")]
        code = loop.flow(
            "replay",
            _display(bundle),
            "--url",
            f"vnc://127.0.0.1:{port}",
            "--durable",
            "--run-dir",
            res.run_dir,
            *param_args,
        )
        if code != 3:
            raise DemoLoopError(f"the durable run was meant to pause (exit 3) and exited {code}", code)
        pending: dict[str, Any] = dict(open_ref(target).read_pending() or {})
        res.halt = {
            k: pending.get(k) for k in ("step", "category", "transaction_outcome", "message", "allowed_decisions")
        }
        echo("")
        for text in explain(pending):
            echo(text)
        step = str(pending.get("step"))
        echo("")
        echo(
            f"The operator looks at {res.run_dir}/frames/halt-{step}.png, sees two Save buttons, and teaches the "
            f"lower one by its point on that frame (the taught crop takes in enough around it to be unique):"
        )
        point = f"{LOWER_SAVE[0]},{LOWER_SAVE[1]}"
        code = loop.flow(
            "approve",
            res.run_dir,
            "--decision",
            DecisionKind.TEACH,
            "--point",
            point,
            "--operator",
            OPERATOR,
            "--note",
            "the lower Save button",
        )
        if code != 0:
            raise DemoLoopError(f"flow approve exited {code}", code)
        echo("")
        echo("A script (or `flow worker`) resumes it; --require-approval refuses unless a valid decision exists:")
        code = loop.flow("resume", res.run_dir, "--require-approval")
        res.state = open_ref(target).state().get("state", "")
        res.rows = read_rows(db)
        if code != 0:
            raise DemoLoopError(f"flow resume exited {code} ({res.state})", code)
    return res
