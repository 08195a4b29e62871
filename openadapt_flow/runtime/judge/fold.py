"""Run progress as a fold over the journal: the one derivation of what a run has done so far.

The same `RunProgress.note` reads every record: once over the journal at a run's start or resume
(`seed`), then for each record as it is appended (a journal observer). So the run context keeps no
second copy that could drift from the journal, and a resume sees exactly what the first process saw.
"""

from __future__ import annotations

from openadapt_flow.records.checkpoint import checkpoint_from_records
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry
from openadapt_flow.records.states import RecordType
from openadapt_flow.runtime.judge.policy import Budget

VERIFIED = ("step_verified", "step_skipped")


class RunProgress:
    """Verified steps and their results, questions asked, timers set, child runs started, and the policy budget."""

    def __init__(self) -> None:
        self.verified: list[JournalEntry] = []  # step_verified/step_skipped records, in journal order
        self.results: dict[
            str, object
        ] = {}  # step id -> its recorded JSON result ({steps.ID.…} interpolation reads it)
        self.asked: set[str] = set()  # ask_user steps whose question was journaled
        self.signals: set[str] = set()  # wait_signal steps whose wait was journaled
        self.timers: dict[str, float] = {}  # sleep/wait_until step id -> due epoch
        self.children: dict[str, str] = {}  # step id -> the child run it started, as journaled (relative to the run)
        self.input_sent = False  # has any input (or a child run, which sends its own) gone out: the start check is over
        self.budget = Budget([])

    def seed(self, records: list[JournalEntry]) -> None:
        """Fold the journal so far (in place: the interpolator holds `results`)."""
        self.verified.clear()
        self.results.clear()
        self.asked.clear()
        self.signals.clear()
        self.timers.clear()
        self.children.clear()
        self.input_sent = False
        for r in records:
            self._fold(r)
        self.budget = Budget(records)

    def note(self, rec: JournalEntry) -> None:
        """One record just appended (a journal observer)."""
        self._fold(rec)
        self.budget.note(rec)

    def _fold(self, r: JournalEntry) -> None:
        typ, step, d = r["type"], str(r.get("step")), r.get("data") or {}
        if typ in VERIFIED:
            self.verified.append(r)
            if d.get("result") is not None:
                self.results[step] = d["result"]
        elif typ == RecordType.ASKED:
            self.asked.add(step)
        elif typ == RecordType.WAITING_SIGNAL:
            self.signals.add(step)
        elif typ == RecordType.TIMER_SET:
            self.timers[step] = d["due_epoch"]
        elif typ == RecordType.ACTION_DISPATCHED:
            self.input_sent = True
        elif typ == RecordType.CHILD_STARTED:
            self.input_sent = True
            # under the run's children/ (`run_dir`, runtime/act/durable/child.py); a bundle run of earlier code named it
            # beside the run (`child_run`, RunHandle.sibling)
            self.children[step] = d["child_run"] if "child_run" in d else d["run_dir"]

    def saved(self, step_id: str) -> JournalEntry | None:
        """The record that made this step verified (or skipped), if the journal has one: its result is final."""
        return next((r for r in reversed(self.verified) if r["step"] == step_id), None)

    def checkpoint(self) -> CheckpointDoc | None:
        """The checkpoint the journal implies (records/checkpoint.py builds it from the verified records)."""
        return checkpoint_from_records(self.verified)

    def checkpoint_seq(self) -> int | None:
        """The journal seq of the checkpoint the journal implies (None before the first verified step)."""
        return self.verified[-1]["seq"] if self.verified else None

    @property
    def next_index(self) -> int:
        """The bundle step to run next: the one after the last verified (or skipped) one."""
        cp = self.checkpoint()
        return cp["next_index"] if cp else 0
