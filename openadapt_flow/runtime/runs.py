"""Start and resume runs: the runtime's entry points and its composition root.

`replay` starts a bundle run, `start_workflow` a Python workflow's run, `resume` continues either kind. Each hands
the modules below the same `RUNS`, through which a step starts or continues a child run, so those modules never
import this one (or each other in a circle).

Runs live in the store the request's config names (`runtime.store`; spec §18): the filesystem by default, or
`memory:` — this process's memory, for development and tests (a run there is gone with the process). `resume` takes
a run handle or reference (a run directory, `memory:NAME`), as `RunOutcome.run_dir` gives it back.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.runtime import resume as resuming
from openadapt_flow.runtime.act import assemble
from openadapt_flow.runtime.act import reset as resetting
from openadapt_flow.runtime.act.reset import ResetResult
from openadapt_flow.runtime.resume.plan import ResumePlan, ResumeRequest
from openadapt_flow.runtime.start.context import Progress
from openadapt_flow.runtime.start.launch import (
    BackendFactory,
    ReplayRequest,
    Reporter,
    RunOutcome,
    Runs,
    WorkflowRequest,
)
from openadapt_flow.runtime.start.runref import RunRef
from openadapt_flow.runtime.workflow import run as workflow_run


def replay(
    req: ReplayRequest,
    progress: Progress | None = None,
    reporter: Reporter | None = None,
    backend_factory: BackendFactory = open_backend,
) -> RunOutcome:
    """Run a bundle once. Bad input raises (exit 2, no run dir); everything after is a RunOutcome."""
    return assemble.start_bundle(req, RUNS, progress, reporter, backend_factory)


def start_workflow(
    req: WorkflowRequest,
    progress: Progress | None = None,
    reporter: Reporter | None = None,
    backend_factory: BackendFactory = open_backend,
    stop: threading.Event | None = None,
) -> RunOutcome:
    """Start a Python workflow's run. Bad input raises before any run dir exists."""
    return workflow_run.start_workflow(req, RUNS, progress, reporter, backend_factory, stop)


def resume(run: RunRef, req: ResumeRequest | None = None, **fields: Any) -> RunOutcome:
    """Continue a paused or interrupted durable run of any kind (runtime/resume/): a handle, a run directory or
    `memory:NAME`. How: a ResumeRequest, or its fields by keyword (`backend=`, `require_approval=`, `params=`,
    `progress=`, `reporter=`, `backend_factory=`, `stop=`, `backend_flags=`, `backend_config=`, `upgrade_bundle=`,
    `bundle=`, `notice=`)."""
    return resuming.resume(run, RUNS, replace(req or ResumeRequest(), **fields))


def resume_plan(run: RunRef, req: ResumeRequest | None = None, **fields: Any) -> ResumePlan:
    """What `resume` would do to the run, as things stand, writing nothing (`flow resume --dry-run`): the same
    request, read and planned (runtime/resume/plan.py) without the lease and without acting."""
    return resuming.plan(run, replace(req or ResumeRequest(), **fields))


def reset_app(
    bundle: Path | str | LoadedBundle, backend: BackendSpec | None, config: DeployConfig, **options: Any
) -> ResetResult:
    """Bring the app back to the bundle's start state (its `reset:`), then check the start state (spec §22); a reset
    by steps runs them as a run of its own. `options`: `ocr=`, `reporter=`, `run_dir=`, `backend_factory=`."""
    return resetting.reset_app(bundle, backend, config, RUNS, **options)


RUNS = Runs(replay=replay, start_workflow=start_workflow, resume=resume)
