"""Shared machinery of the crash matrices: a forked `flow` command, journal points, and the operator who recovers.

A crash case SIGKILLs a real process, so it cannot run in the test's own process; starting a fresh interpreter
for every command (~1 s of imports) would make the matrix too slow to cover every point. `flow()` forks the
test process instead, after the package is imported once: the child is a real process running the real CLI
(`openadapt_flow.cli.app.main`) with its own environment, cwd and stdout/stderr, and it dies exactly as a
`flow` process would (SIGKILL at a crash point, or exit with the CLI's code).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openadapt_flow.cli.app as cli_app
import openadapt_flow.cli.durable  # noqa: F401  (imported once here so each fork starts warm)
import openadapt_flow.cli.replay  # noqa: F401
import openadapt_flow.cli.workflow  # noqa: F401
from openadapt_flow.store.journal import load_journal
from openadapt_flow.vision import ocr as _ocr
from openadapt_flow.vision.tesseract_lib import LibraryUnavailable, TesseractLibrary
from tests.support.cli import flow_env


def _warm_tesseract() -> None:
    """Load the Tesseract model once here (OpenMP limited to one thread, so no pool to break on fork); every forked
    command reads with this handle instead of loading its own (~0.4 s per process). What it reads is unchanged."""
    try:
        shared = TesseractLibrary("eng")
    except LibraryUnavailable:
        return
    _ocr.TesseractLibrary = lambda lang="eng": shared if lang == "eng" else TesseractLibrary(lang)  # type: ignore[assignment,misc]


_warm_tesseract()

__all__ = ["Result", "flow", "flow_env", "journal", "points_of", "state", "wait_for"]


@dataclass
class Result:
    args: list[str]
    returncode: int  # -9: SIGKILLed
    stdout: str
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL

    def json(self) -> Any:
        return json.loads(self.stdout)


def _child(args: list[str], cwd: Path, env: dict[str, str], out_fd: int, err_fd: int) -> None:
    code = 70
    try:
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        signal.alarm(0)  # pytest-timeout's alarm belongs to the test process
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            signal.signal(s, signal.SIG_DFL)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        for p in reversed([p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]):
            if p not in sys.path:
                sys.path.insert(0, p)
        sys.path.insert(0, str(cwd))  # as `python -m` puts the cwd first
        sys.argv = ["flow", *args]
        cli_app.main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def flow(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 90) -> Result:
    """Run `flow ARGS` in a forked process; SIGKILL it (and fail) if it outlives `timeout`."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(args, cwd, env, out.fileno(), err.fileno())
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise TimeoutError(f"flow {' '.join(args)} did not finish in {timeout}s")
            time.sleep(0.005)  # polling a child's exit; waitpid has no timeout
        out.seek(0)
        err.seek(0)
        return Result(args, os.waitstatus_to_exitcode(status), out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def journal(run: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The run's journal, its hash chain verified with the installation key of `env` (a broken chain fails)."""
    key = Path(env["FLOW_KEY_FILE"]).read_bytes().strip()
    return load_journal(run / "journal.jsonl", key).records


def state(run: Path) -> dict[str, Any]:
    return json.loads((run / "state.json").read_text())


def points_of(records: list[dict[str, Any]]) -> list[str]:
    """Every distinct `after:<type>[@step]` crash point these records pass, in journal order."""
    seen: list[str] = []
    for r in records:
        p = f"after:{r['type']}" + (f"@{r['step']}" if r.get("step") else "")
        if p not in seen:
            seen.append(p)
    return seen


def wait_for(cond: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


@dataclass
class Ledger:
    """What the operator was asked to do during recovery."""

    answers: int = 0
    signals: int = 0
    approvals: list[str] = field(default_factory=list)
