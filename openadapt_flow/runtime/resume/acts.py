"""The acts of a resume's plan (plan.py): each one write, or one group of writes, that the executor (execute.py)
makes in the plan's order; each says in one line what it will do (`flow resume --dry-run`)."""

from __future__ import annotations

from dataclasses import dataclass

from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.bundle.models import Step
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry
from openadapt_flow.records.pausedoc import CarriedDecision, PendingBody
from openadapt_flow.records.states import RunState
from openadapt_flow.runtime.operate.truth import ViewRepairs
from openadapt_flow.runtime.operate.upgrade import Upgrade
from openadapt_flow.runtime.resume.snapshot import Rewrite

__all__ = [
    "Act",
    "AdoptUpgrade",
    "BlockRun",
    "CatchUpState",
    "ClaimLedger",
    "DropEscalation",
    "FinalizeInterrupted",
    "RebuildCheckpoint",
    "RepairViews",
    "RestorePause",
    "RewriteSnapshot",
    "Suspend",
]


@dataclass(frozen=True)
class RewriteSnapshot:
    rewrite: Rewrite

    def describe(self) -> str:
        return f"write the unreadable bundle snapshot again from {self.rewrite.path} ({self.rewrite.why})"


@dataclass(frozen=True)
class ClaimLedger:
    def describe(self) -> str:
        return "claim the run in the run ledger (refused if this is a copy of a run held elsewhere)"


@dataclass(frozen=True)
class CatchUpState:
    end: JournalEntry  # the journal's run_finished record the state lags

    def describe(self) -> str:
        return f"rebuild the state ({self.end['data']['state']}) from the journal's run_finished record (seq {self.end['seq']})"


@dataclass(frozen=True)
class FinalizeInterrupted:
    was: str
    steps: tuple[Step, ...]
    why: str = "owner process died; found by resume"

    def describe(self) -> str:
        return f"the run says {self.was} but its owner is gone (the executor holds the lease): record it INTERRUPTED"


@dataclass(frozen=True)
class Suspend:
    reason: str

    def describe(self) -> str:
        return f"suspend the run: {self.reason}"


@dataclass(frozen=True)
class AdoptUpgrade:
    upgrade: Upgrade
    current: LoadedBundle

    def describe(self) -> str:
        return (
            f"adopt bundle {self.upgrade.new.digest} (steps unchanged through index {self.upgrade.unchanged_through}): "
            "snapshot it, journal bundle_upgraded"
        )


@dataclass(frozen=True)
class RebuildCheckpoint:
    checkpoint: CheckpointDoc

    def describe(self) -> str:
        return (
            f"rebuild checkpoint.json from the journal (step {self.checkpoint['step']!r}, seq {self.checkpoint['seq']})"
        )


@dataclass(frozen=True)
class RepairViews:
    repairs: ViewRepairs

    def describe(self) -> str:
        return "; ".join(self.repairs.describe())


@dataclass(frozen=True)
class RestorePause:
    pending: PendingBody

    def describe(self) -> str:
        return f"restore pause {self.pending['pause_id']} (journaled by a run killed while pausing): state PAUSED"


@dataclass(frozen=True)
class DropEscalation:
    pending: PendingBody
    was: RunState

    def describe(self) -> str:
        return f"drop pause {self.pending['pause_id']} (the run was {self.was}; its code runs again and re-derives it)"


@dataclass(frozen=True)
class BlockRun:
    pending: PendingBody
    decision: CarriedDecision
    rec: JournalEntry

    def describe(self) -> str:
        return f"end the run BLOCKED: the journal's reject by {self.decision['operator']} (seq {self.rec['seq']})"


Act = (
    RewriteSnapshot
    | ClaimLedger
    | CatchUpState
    | FinalizeInterrupted
    | Suspend
    | AdoptUpgrade
    | RebuildCheckpoint
    | RepairViews
    | RestorePause
    | DropEscalation
    | BlockRun
)
