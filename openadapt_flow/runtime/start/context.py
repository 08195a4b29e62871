"""Everything one run needs while it executes, in one place (built by the engine or by resume)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Required, TypedDict

from openadapt_flow.backends.base import Backend
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.bundle.models import Bundle, Step
from openadapt_flow.bundle.params import BoundParams, Interpolator
from openadapt_flow.errors import UsageError
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.ladder.types import Box
from openadapt_flow.records.entry import JournalEntry, step_of
from openadapt_flow.records.states import RecordType, is_a
from openadapt_flow.runtime.judge.fold import RunProgress
from openadapt_flow.runtime.judge.policy import Budget, check_dispatch
from openadapt_flow.runtime.start.launch import Runs
from openadapt_flow.store.base import JournalWriter, RunHandle, RunLease
from openadapt_flow.store.frames import FrameWriter
from openadapt_flow.verify.place import Anchor
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.vision.mask import WHOLE_FRAME, field_band, paint_over


class StepSummary(TypedDict, total=False):
    """What a progress display is told of a finished step: verified (`rung`, `score`, `ms`) or halted (`category`,
    `message`)."""

    ok: Required[bool]
    rung: str | None
    score: float | None
    ms: float
    category: str
    message: str


class Progress:
    """Callbacks the engine makes as steps run; the CLI renders them (rich on a TTY, plain otherwise)."""

    def step_started(self, index: int, total: int, step_id: str, intent: str | None) -> None: ...

    def step_finished(self, index: int, total: int, step_id: str, summary: StepSummary) -> None: ...


@dataclass
class RunContext:
    run_id: str
    bundle: LoadedBundle | None  # what a bundle run executes; None for a workflow run (its steps are its calls)
    params: BoundParams
    interp: Interpolator
    backend: Backend
    ladder: Ladder
    checks: ScreenChecks
    journal: JournalWriter
    run: RunHandle
    frames: FrameWriter
    config: DeployConfig
    progress: Progress = field(default_factory=Progress)
    reporter: Callable[[RunHandle], Any] | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    durable: bool = False
    lease: RunLease | None = None
    steps: dict[str, Step] = field(
        default_factory=dict
    )  # the run's steps by id: a bundle's, or a workflow's calls so far
    digest: str = ""  # what a decision task pins: the bundle's digest, or the workflow's source digest
    runs: Runs | None = None  # how a step starts or continues a child run (runtime/runs.py)
    fold: RunProgress = field(
        default_factory=RunProgress
    )  # what the journal says the run has done (runtime/judge/fold.py)
    approved_before: str | None = None  # an `approval: before` step the operator approved for this resume
    inbox: dict[str, Mapping[str, object]] = field(default_factory=dict)  # step id -> answer/signal delivered for it
    masks: dict[str, Box] = field(
        default_factory=dict
    )  # secret-typing step id -> the frame region painted over in every saved frame
    focus: Anchor | None = None  # where the last step with a target found it: a key step's facts are placed from there
    found: list[Anchor] = field(default_factory=list)  # every target found so far: where they agree, the window is
    pointer_parked: bool = False  # this process parked the pointer for the run (runtime/act/pointer.py)
    park_after: bool = False  # park the pointer right after the run's last input: another item follows (pointer.py)
    parked_at_end: bool = False  # that park was done
    ahead: object = None  # the next step's resolve done during the last settle (runtime/act/ahead.py)
    desk_fence: Callable[[], None] | None = None  # the desktop lock this run's input needs too (ReplayRequest.fence)

    @property
    def lease_generation(self) -> int:
        return self.lease.generation if self.lease else 0

    @property
    def model(self) -> Bundle:
        """The bundle a bundle run executes."""
        if self.bundle is None:
            raise UsageError("a workflow run has no bundle steps")
        return self.bundle.model

    @property
    def budget(self) -> Budget:
        return self.fold.budget

    def watch(self, records: list[JournalEntry]) -> None:
        """Fold the journal so far (progress, budget) and keep folding every record appended; mask the fields
        secrets were typed into so far (a resumed run masks its frames as the first process did)."""
        self.fold.seed(records)
        self.journal.observers.append(self.fold.note)
        self.journal.observers.append(self._seal_dispatch)
        noted = {step_of(r) for r in records if is_a(r, RecordType.FRAMES_MASKED)}
        # its own secret steps, and the masks a parent run handed over at its start (journaled as `parent:<step>`)
        secret_steps = {s.id for s in self.steps.values() if s.text and self.interp.uses_secret(s.text)} | noted
        for step_id, box in secret_regions(records, secret_steps, (self.checks.sx, self.checks.sy)).items():
            self.mask_secret(step_id, box, journal=step_id not in noted)

    def mask_secret(self, step_id: str, box: Box | None, *, journal: bool = True) -> None:
        """Paint `box` (None: the whole frame) over in every frame saved from now on: a secret was typed there."""
        self.masks[step_id] = box or WHOLE_FRAME
        self.frames.mask = partial(paint_over, boxes=tuple(self.masks.values()))
        if journal:
            self.journal.append(
                RecordType.FRAMES_MASKED,
                step_id,
                {"box": list(box) if box else None, "whole_frame": box is None, "why": "a secret was typed here"},
            )

    def _seal_dispatch(self, rec: JournalEntry) -> None:
        """A consequential step's `action_dispatched` (fsync'd) is sealed in the run ledger before its input is sent,
        so a journal cut back before it — which would let resume send the write again — is refused (spec §8)."""
        if not is_a(rec, RecordType.ACTION_DISPATCHED) or not self.durable:
            return
        step = self.steps.get(step_of(rec))
        if step is not None and step.is_consequential:
            self.run.ledger_seal(rec["seq"], rec["hash"])

    def before_dispatch(self, step: Step) -> None:
        """Right before any input: the retry budget, then fencing — re-read the lease (spec §5 invariant 7)."""
        blocked = check_dispatch(self.config.policy, self.budget, step)
        if blocked is not None:
            raise blocked
        if self.lease is not None:
            self.lease.fence()

    def guard_input(self) -> None:
        """Before every input call (runtime/start/fenced.py): the lease as this process sees it, then the desktop
        lock the run is driven under; LeaseLost (or DeskLost) stops the input at once."""
        if self.lease is not None:
            self.lease.guard()
        if self.desk_fence is not None:
            self.desk_fence()


def secret_regions(
    records: list[JournalEntry], secret_steps: set[str], scale: tuple[float, float]
) -> dict[str, Box | None]:
    """Where each secret-typing step that sent input typed (None: the whole frame), from the journal: its last
    `frames_masked` record, else the band around its dispatched point and matched target box."""
    out: dict[str, Box | None] = {}
    target: dict[str, Box | None] = {}
    for r in records:
        sid, d = r.get("step"), r.get("data") or {}
        if sid not in secret_steps:
            continue
        if is_a(r, RecordType.RESOLVED) and d.get("role") == "target":
            win = next((e for e in d.get("evidence") or [] if e.get("verdict") == "hit" and e.get("box")), None)
            target[sid] = _box(win["box"]) if win else None
        elif is_a(r, RecordType.ACTION_DISPATCHED):
            p = d.get("point")
            out[sid] = field_band((int(p[0]), int(p[1])), target.get(sid), scale) if p else None
        elif is_a(r, RecordType.FRAMES_MASKED):
            out[sid] = _box(d["box"]) if d.get("box") else None
    return out


def _box(v: list[Any]) -> Box:
    x, y, w, h = (int(n) for n in v)
    return (x, y, w, h)
