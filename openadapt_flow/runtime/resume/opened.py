"""A run opened for resume by the executor (execute.py): leased, its journal open and verified, its plan's acts made;
and `run_resumed`, journaled here alone, for a bundle's run as for a workflow's."""

from __future__ import annotations

from dataclasses import dataclass

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import LoadedBundle
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.rundoc import ManifestDoc
from openadapt_flow.records.states import RecordType, RunState
from openadapt_flow.runtime.resume.plan import ResumePlan, ResumeRequest
from openadapt_flow.runtime.start.context import RunContext
from openadapt_flow.runtime.start.launch import Runs
from openadapt_flow.store.base import JournalWriter, RunHandle, RunLease

__all__ = ["Opened", "resumed"]


@dataclass
class Opened:
    """A run opened for resume: leased, its journal open and verified, its plan's acts made, not terminal."""

    run: RunHandle
    manifest: ManifestDoc
    config: DeployConfig
    lease: RunLease
    journal: JournalWriter
    records: list[JournalEntry]
    dkey: bytes
    runs: Runs
    req: ResumeRequest
    loaded: LoadedBundle | None = None  # a bundle run's bundle (as taught or upgraded so far); None for a workflow's


def resumed(rc: RunContext, plan: ResumePlan) -> None:
    """Journal `run_resumed` (its one writer: the lease generation, the decision applied and the pause it resolves),
    then state RESUMING from the plan's checkpoint."""
    p, a, c, cp = plan.pending, plan.approval, plan.carried, plan.checkpoint
    rc.journal.append(
        RecordType.RUN_RESUMED,
        None,
        {
            "lease_generation": rc.lease_generation,
            "decision": plan.decision,
            "pause_id": p["pause_id"] if p else None,
            "operator": a["operator"] if a else None,
            "decision_seq": c["seq"] if c else None,
        },
    )
    rc.run.write_state(RunState.RESUMING, journal=rc.journal, last_checkpoint_seq=cp["seq"] if cp else None)
