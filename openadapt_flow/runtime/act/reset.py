"""Bring the app back to its start state (spec §22): the bundle's `reset:`, then the start check.

Two forms. `command` restarts the app on the runner host: the command runs in a session of its own (it may be the
app itself, running on, or a script that restarts it and returns), and the reset waits until the screen has moved
on from what it showed (or the command returned), then until `wait_for` holds, within `timeout_s`. `steps` is a
"home" sequence, run as a run of its own (non-durable: every step resolved, acted and verified as any step; a halt
fails the reset). Either way the reset has worked only when the start facts hold afterwards; a bundle with no
`reset:` is only checked. A command cannot restart an app on a remote desktop (VNC, RDP to another host): there the
reset is steps, or the command is one that reaches that host (ssh …).
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.bundle.models import Reset, Step
from openadapt_flow.errors import UsageError
from openadapt_flow.records.models import Check
from openadapt_flow.runtime.act.start_state import NOT_AT_START, as_loaded, judge_now
from openadapt_flow.runtime.start.backend_select import select_backend
from openadapt_flow.runtime.start.launch import BackendFactory, ReplayRequest, Reporter, Runs
from openadapt_flow.vision.ocr import OcrEngine

POLL_S = 0.5  # longest wait for a screen update between two looks at wait_for
STDERR_TAIL = 300  # characters of a failed command's stderr quoted in the reason


@dataclass
class ResetResult:
    """Whether the app is back at its start state; `reason`: why not (empty when it is)."""

    ok: bool
    reason: str = ""
    checks: list[Check] = field(default_factory=list)  # the start check after the reset
    run_dir: Path | None = None  # the reset steps' run (the steps form)
    waited_s: float = 0.0


def reset_app(
    bundle: Path | str | LoadedBundle,
    backend: BackendSpec | None,
    config: DeployConfig,
    runs: Runs,
    *,
    ocr: OcrEngine | None = None,
    reporter: Reporter | None = None,
    run_dir: Path | None = None,
    backend_factory: BackendFactory = open_backend,
) -> ResetResult:
    """Run the bundle's reset on the desktop `backend` names (None: the config's), then check the start state."""
    loaded = as_loaded(bundle)
    reset = loaded.model.reset
    spec = backend if backend is not None else select_backend(config.backend)
    if spec is None:
        raise UsageError("reset: no backend: give a BackendSpec or a config backend: section")
    t0 = time.monotonic()
    ocr = ocr if ocr is not None else OcrEngine()  # one reader for every look
    home: Path | None = None
    if reset is not None and reset.steps is not None:
        failed, home = _home(loaded, reset.steps, spec, config, runs, reporter, run_dir, backend_factory)
        if failed is not None:
            return ResetResult(False, failed, run_dir=home, waited_s=time.monotonic() - t0)
    desk = backend_factory(spec)
    try:
        if reset is not None and reset.command is not None:
            failed = _restart(loaded, reset, desk, config, ocr)
            if failed is not None:
                return ResetResult(False, failed, waited_s=time.monotonic() - t0)
        result = _checked(loaded, desk, config, ocr, t0, home)
    finally:
        desk.close()
    if reset is None and not result.ok:
        result.reason += " (the bundle declares no reset: to bring it back)"
    return result


def _checked(
    loaded: LoadedBundle,
    desk: Backend,
    config: DeployConfig,
    ocr: OcrEngine | None,
    t0: float,
    run_dir: Path | None = None,
) -> ResetResult:
    verdict, _ = judge_now(loaded, desk, config, None, ocr)
    reason = "" if verdict.ok else "after the reset, " + NOT_AT_START + verdict.differs()
    return ResetResult(verdict.ok, reason, verdict.checks, run_dir, time.monotonic() - t0)


def _restart(loaded: LoadedBundle, reset: Reset, desk: Backend, config: DeployConfig, ocr: OcrEngine) -> str | None:
    """Run the command; None once wait_for holds, else why it did not within the timeout."""
    assert reset.command is not None and reset.wait_for is not None
    deadline = time.monotonic() + reset.timeout_s
    was = desk.capture().pixels
    with tempfile.TemporaryFile() as log:
        try:
            proc = subprocess.Popen(
                reset.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
            )  # it may be the app itself: it outlives this call
        except OSError as e:
            return f"reset command {reset.command[0]!r} could not start: {e.strerror or e}"
        fact = f"{reset.wait_for.kind} {reset.wait_for.text or list(reset.wait_for.box or ())!r}"
        moved, last = False, "not looked at: the screen had not changed"
        while time.monotonic() < deadline:
            code = proc.poll()
            if code not in (None, 0):
                log.seek(0)
                tail = log.read().decode("utf-8", "replace").strip()[-STDERR_TAIL:]
                return f"reset command exited {code}" + (f": {tail}" if tail else "")
            # the old app's screen is no evidence: look once the command returned or the screen changed since it began
            moved = moved or code == 0 or _changed(was, desk)
            if moved:
                verdict, _ = judge_now(loaded, desk, config, None, ocr, facts=[reset.wait_for])
                if verdict.ok:
                    return None
                last = (verdict.checks[0].detail if verdict.checks else None) or "?"
            desk.wait_for_update(min(POLL_S, max(0.0, deadline - time.monotonic())))
    return f"reset: wait_for {fact} did not hold within {reset.timeout_s:g}s ({last})"


def _changed(was: np.ndarray, desk: Backend) -> bool:
    now = desk.capture().pixels
    return now.shape != was.shape or bool((now != was).any())


def _home(
    loaded: LoadedBundle,
    steps: list[Step],
    spec: BackendSpec,
    config: DeployConfig,
    runs: Runs,
    reporter: Reporter | None,
    run_dir: Path | None,
    backend_factory: BackendFactory,
) -> tuple[str | None, Path]:
    """Run the reset steps as a non-durable run of their own (a halt fails the reset, no operator waits on it): why
    it failed (None: every step verified) and its run."""
    model = loaded.model.model_copy(
        update={
            "name": f"{loaded.model.name} (reset)",
            "steps": steps,
            "start": [],
            "reset": None,
            "reset_before_each": False,
            "params": {},
        }
    )
    plain = config.model_copy(update={"runtime": config.runtime.model_copy(update={"durable": False})})
    outcome = runs.replay(
        ReplayRequest(loaded.root, {}, spec, plain, run_dir=run_dir, loaded=replace(loaded, model=model)),
        reporter=reporter,
        backend_factory=backend_factory,
    )
    if outcome.exit_code != 0:
        return f"reset step(s) did not complete ({outcome.state}): {outcome.message}", Path(outcome.run_dir)
    return None, Path(outcome.run_dir)
