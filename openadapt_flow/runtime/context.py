"""Everything one run needs while it executes, in one place (built by the engine or by resume)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openadapt_flow.backends.base import Backend
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.bundle.params import BoundParams, Interpolator
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.bundle.models import Step
from openadapt_flow.runtime.config import DeployConfig
from openadapt_flow.runtime.policy import Budget, check_dispatch
from openadapt_flow.store import ledger
from openadapt_flow.store.journal import Journal
from openadapt_flow.store.lease import Lease
from openadapt_flow.store.rundir import FrameWriter, RunDir
from openadapt_flow.verify.screen import ScreenChecks


class Progress:
    """Callbacks the engine makes as steps run; the CLI renders them (rich on a TTY, plain otherwise)."""

    def step_started(self, index: int, total: int, step_id: str, intent: str | None) -> None: ...

    def step_finished(self, index: int, total: int, step_id: str, summary: dict[str, Any]) -> None: ...


@dataclass
class RunContext:
    run_id: str
    bundle: LoadedBundle
    params: BoundParams
    interp: Interpolator
    backend: Backend
    ladder: Ladder
    checks: ScreenChecks
    journal: Journal
    run: RunDir
    frames: FrameWriter
    config: DeployConfig
    progress: Progress = field(default_factory=Progress)
    reporter: Callable[[RunDir], Any] | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    durable: bool = False
    lease: Lease | None = None
    verified: list[dict[str, Any]] = field(default_factory=list)  # step_verified/step_skipped records so far
    approved_before: str | None = None  # an `approval: before` step the operator approved for this resume
    results: dict[str, Any] = field(default_factory=dict)  # step id -> checkpointed result ({steps.ID.…})
    inbox: dict[str, dict[str, Any]] = field(default_factory=dict)  # step id -> answer/signal delivered for it
    asked: set[str] = field(default_factory=set)  # ask_user steps whose question was already asked
    timers: dict[str, float] = field(default_factory=dict)  # sleep/wait_until step id -> due epoch
    budget: Budget = field(default_factory=lambda: Budget([]))
    children: dict[str, Path] = field(default_factory=dict)  # `flow` step id -> child run dir

    @property
    def lease_generation(self) -> int:
        return self.lease.generation if self.lease else 0

    def watch(self, records: list[dict[str, Any]]) -> None:
        """Seed the budget from the journal so far and keep it counting every record appended."""
        self.budget = Budget(records)
        self.journal.observers.append(self.budget.note)
        self.journal.observers.append(self._seal_dispatch)

    def _seal_dispatch(self, rec: dict[str, Any]) -> None:
        """A consequential step's `action_dispatched` (fsync'd) is sealed in the run ledger before its input is sent,
        so a journal cut back before it — which would let resume send the write again — is refused (SPEC §8)."""
        if rec["type"] != "action_dispatched" or not self.durable:
            return
        step = next((s for s in self.bundle.model.steps if s.id == rec["step"]), None)
        if step is not None and step.is_consequential:
            ledger.seal(self.run_id, self.run.path, rec["seq"], rec["hash"])

    def before_dispatch(self, step: Step) -> None:
        """Right before any input: the retry budget, then fencing — re-read the lease (SPEC §5 invariant 7)."""
        blocked = check_dispatch(self.config.policy, self.budget, step)
        if blocked is not None:
            raise blocked
        if self.lease is not None:
            self.lease.fence()
