"""What starts a run and what it ends with: the requests, the outcome, and `Runs`, the way back to the top.

A step may start or continue another run (a bundle's `flow` step, a workflow's `ctx.replay`/`ctx.child`). It does
so through the `Runs` its context carries, built once by runtime/runs.py (the composition root), so that no module
below it imports the modules that start runs: the runtime has no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.records.states import RunState
from openadapt_flow.store.base import RunHandle
from openadapt_flow.vision.ocr import OcrEngine

Reporter = Callable[[RunHandle], Any]
BackendFactory = Callable[[BackendSpec], Backend]


@dataclass
class RunOutcome:
    state: RunState
    exit_code: int
    run_dir: Path  # the run's reference (runtime/start/runref.py): its directory, or `memory:NAME`
    message: str = ""
    category: str | None = None
    parked: bool = (
        False  # the run's last input left the pointer parked (`ReplayRequest.park_after`), nothing sent since
    )


@dataclass
class ReplayRequest:
    bundle: Path
    params: Mapping[str, Any]
    backend: BackendSpec | None
    config: DeployConfig
    run_dir: Path | str | None = None  # a reference in the config's store (runtime.store); None: a fresh name
    durable: bool = False
    submitted: bool = False  # run_dir names a run `flow submit` created (PENDING, spec §19): start that run, once
    loaded: LoadedBundle | None = None  # `bundle` already loaded (a fleet worker's cache of the same bytes), else None
    ocr: OcrEngine | None = None  # an OCR engine to reuse (a fleet worker's, its model loaded once), else a new one
    allow_model: bool = False
    param_flags: frozenset[str] = frozenset()
    parent_run: str | None = None  # the parent's reference, for a child run started by a `flow` step
    # the parent's secret masks (step id -> frame box): what it typed may still be on the screen the child sees
    masks: Mapping[str, tuple[int, int, int, int]] = field(default_factory=dict)
    # A batch's hand-over of the pointer from one item to the next (runtime/act/pointer.py): `park_after`, another item
    # follows on this desktop, so the last input is followed by a park; `parked`, the item before on this desktop, in
    # this process, ended so (its outcome's `parked`) and nothing was sent since: this run need not park again.
    park_after: bool = False
    parked: bool = False
    # another run's bundle snapshot, durable on the same filesystem (a batch's item before): hard-linked where its files
    # hold the bundle's bytes, so only the new names are synced (store/fs/rundir.py `snapshot_bundle`)
    snapshot_like: Path | None = None
    # what else must still hold before every input besides the run's lease: a fleet worker's desktop lock
    # (runtime/fleet/desks.py); it raises LeaseLost (DeskLost) once lost
    fence: Callable[[], None] | None = None


@dataclass
class WorkflowRequest:
    entry: str  # module:function (or module:Agent.method)
    args: Mapping[str, Any]
    backend: BackendSpec | None  # what ctx.replay drives
    config: DeployConfig
    run_dir: Path | str | None = None
    args_from_text: bool = False  # `--arg k=v`: coerce to the function's annotations
    parent_run: str | None = None
    probe_backend: bool = True  # connect once before the run dir exists: an unreachable desktop is bad input


@dataclass(frozen=True)
class Runs:
    """Start a bundle run, start a workflow run, resume any run (runtime/runs.py's functions)."""

    replay: Callable[..., RunOutcome]
    start_workflow: Callable[..., RunOutcome]
    resume: Callable[..., RunOutcome]
