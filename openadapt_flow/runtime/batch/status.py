"""An item's status and effect verdict, judged from its run's state and journal (pure: no store, no backend)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from openadapt_flow.bundle.models import Step
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.states import RecordType, RunState, TransactionOutcome


class ItemStatus(str, Enum):
    """What became of one work item in a batch."""

    DONE = "done"  # its run completed
    HALTED = "halted"  # its run stopped and provably wrote nothing (or was stopped, blocked, or could not resume)
    PAUSED = "paused"  # its durable run waits for a decision (`flow status RUN`)
    FAILED_AFTER_EFFECT = "failed_after_effect"  # its run stopped after its write landed: never sent again
    UNCERTAIN = "uncertain"  # its write may have landed (sent, never verified): never sent again; check it
    NOT_RUN = "not_run"  # not sent: the batch stopped before it (a halt with no reset, a failed reset, a signal)
    SKIPPED_DONE = "skipped_done"  # done by an earlier batch: not sent again

    def __str__(self) -> str:
        return self.value

    @property
    def failed(self) -> bool:
        """Counts toward exit 1."""
        return self in (ItemStatus.HALTED, ItemStatus.FAILED_AFTER_EFFECT, ItemStatus.UNCERTAIN, ItemStatus.NOT_RUN)

    @property
    def rerunnable(self) -> bool:
        """A later batch may send the item again: nothing of it can have landed."""
        return self in (ItemStatus.HALTED, ItemStatus.NOT_RUN)


@dataclass
class ItemResult:
    """One line of a batch's results: the item's line in its file, key, status, run, reason, effect verdict."""

    item: int
    key: str
    status: ItemStatus
    run_dir: str | None = None
    reason: str = ""
    effect: str | None = None

    def record(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "key": self.key,
            "status": self.status.value,
            "run_dir": self.run_dir,
            "reason": self.reason,
            "effect": self.effect,
        }


def status_of(state: str, outcome: str | None, landed: list[str], durable: bool) -> ItemStatus:
    """The item's status from its run's state, transaction outcome and landed writes."""
    if state == RunState.COMPLETED:
        return ItemStatus.DONE
    if state == RunState.PAUSED:
        return ItemStatus.PAUSED
    if state == RunState.INTERRUPTED and durable:
        return ItemStatus.HALTED  # resumable: the next batch resumes it, re-reading any uncertain write first
    if state == RunState.FAILED_AFTER_EFFECT or landed:
        return ItemStatus.FAILED_AFTER_EFFECT
    if outcome == TransactionOutcome.RECONCILIATION_REQUIRED:
        return ItemStatus.UNCERTAIN
    return ItemStatus.HALTED


def exit_code(results: Iterable[ItemResult]) -> int:
    """0 every item done, 1 any halted, failed or not run, else 3 when any paused."""
    statuses = [r.status for r in results]
    if any(s.failed for s in statuses):
        return 1
    return 3 if ItemStatus.PAUSED in statuses else 0


def effect_verdict(steps: Iterable[Step], records: Iterable[JournalEntry]) -> str | None:
    """CONFIRMED when every consequential step the run dispatched had its write read CONFIRMED; else the first other
    verdict (NOT_VERIFIED: dispatched, never read; NOT_DECLARED: no effect to read); None: none was dispatched."""
    consequential = {s.id: s for s in steps if s.is_consequential}
    verdicts: dict[str, str] = {}
    for r in records:
        step, typ = r.get("step"), r.get("type")
        if step not in consequential:
            continue
        if typ == RecordType.ACTION_DISPATCHED:
            verdicts[step] = "NOT_VERIFIED" if consequential[step].effect is not None else "NOT_DECLARED"
        elif typ == RecordType.EFFECT_VERIFIED and step in verdicts:
            verdict = (r.get("data") or {}).get("verdict")
            if isinstance(verdict, str):
                verdicts[step] = verdict
    if not verdicts:
        return None
    return next((v for v in verdicts.values() if v != "CONFIRMED"), "CONFIRMED")
