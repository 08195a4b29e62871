"""Run states, paused reasons, transaction outcomes and decision kinds (spec §6, §8), as str enums: each member compares equal to
the string written in state.json, so `RunState.PAUSED == "PAUSED"` and records stay byte-identical."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any


class RunState(str, Enum):
    """A run's state. `live`: a process owns the run; `paused`: waits for a decision or an event, holding no
    process; `terminal`: the run's process has stopped for good (`flow wait` returns); `final`: terminal and not
    resumable (INTERRUPTED is terminal but a durable run resumes from it)."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    RESUMING = "RESUMING"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    # a run that could not proceed after a consequential write of it landed (a non-durable halt; docs/decisions.md,
    # "A landed write is never a plain FAILED"): not resumable, and never run again from the start (it would write twice)
    FAILED_AFTER_EFFECT = "FAILED_AFTER_EFFECT"
    BLOCKED = "BLOCKED"
    INTERRUPTED = "INTERRUPTED"

    def __str__(self) -> str:
        return self.value

    @property
    def exit_code(self) -> int:
        """The exit code of every command that runs, resumes or waits on a run in this state."""
        return _EXIT_CODES[self]

    @property
    def live(self) -> bool:
        return self in (RunState.PENDING, RunState.RUNNING, RunState.RESUMING)

    @property
    def paused(self) -> bool:
        return self is RunState.PAUSED

    @property
    def terminal(self) -> bool:
        return self in (
            RunState.COMPLETED,
            RunState.FAILED,
            RunState.FAILED_AFTER_EFFECT,
            RunState.BLOCKED,
            RunState.INTERRUPTED,
        )

    @property
    def final(self) -> bool:
        return self.terminal and self is not RunState.INTERRUPTED

    @property
    def stopped(self) -> bool:
        """Paused or terminal: no process will move the run on by itself (`flow wait` returns)."""
        return self.paused or self.terminal


_EXIT_CODES = {
    RunState.COMPLETED: 0,
    RunState.FAILED: 1,
    RunState.FAILED_AFTER_EFFECT: 7,
    RunState.PAUSED: 3,
    RunState.BLOCKED: 4,
    RunState.INTERRUPTED: 5,
    RunState.PENDING: 0,
    RunState.RUNNING: 0,
    RunState.RESUMING: 0,
}

LIVE_STATES = frozenset(s for s in RunState if s.live)
TERMINAL_STATES = frozenset(s for s in RunState if s.terminal)
FINAL_STATES = frozenset(s for s in RunState if s.final)
STOPPED_STATES = frozenset(s for s in RunState if s.stopped)


class PausedReason(str, Enum):
    """Why a run is PAUSED (spec §6)."""

    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_USER = "awaiting_user"
    AWAITING_SIGNAL = "awaiting_signal"
    AWAITING_TIMER = "awaiting_timer"
    AWAITING_CHILD = "awaiting_child"
    SUSPENDED_ORPHAN = "suspended_orphan"

    def __str__(self) -> str:
        return self.value


class TransactionOutcome(str, Enum):
    """What is known about consequential steps that are not checkpointed (spec §8)."""

    HALTED_BEFORE_EFFECT = "HALTED_BEFORE_EFFECT"
    RECONCILIATION_REQUIRED = "RECONCILIATION_REQUIRED"

    def __str__(self) -> str:
        return self.value


class DecisionKind(str, Enum):
    """What an operator (or a workflow's caller) decides about a pause (SPEC §6); the `decision` of a decision
    record and of `run_resumed`."""

    CONTINUE = "continue"
    SKIP = "skip"
    REJECT = "reject"
    TEACH = "teach"
    ESCALATE = "escalate"
    RECONCILE = "reconcile"
    ANSWER = "answer"
    SIGNAL = "signal"

    def __str__(self) -> str:
        return self.value


class RecordType(str, Enum):
    """The `type` of a journal record (SPEC §5): one member per model of `records.models.DATA_MODELS`."""

    RUN_STARTED = "run_started"
    RUN_FINISHED = "run_finished"
    PAUSED = "paused"
    INTERRUPTED = "interrupted"
    HALTED = "halted"
    BLOCKED = "blocked"
    RUN_RESUMED = "run_resumed"
    SUSPENDED = "suspended"
    WORKFLOW_RETURNED = "workflow_returned"
    BUNDLE_UPGRADED = "bundle_upgraded"
    STEP_STARTED = "step_started"
    RESOLVED = "resolved"
    IDENTITY_CHECKED = "identity_checked"
    POSTCONDITIONS = "postconditions"
    CHECKPOINT_REPROVED = "checkpoint_reproved"
    START_CHECKED = "start_checked"
    EFFECT_BASELINE = "effect_baseline"
    ACTION_DISPATCHED = "action_dispatched"
    ACTION_SENT = "action_sent"
    EFFECT_VERIFIED = "effect_verified"
    STEP_VERIFIED = "step_verified"
    STEP_SKIPPED = "step_skipped"
    RECHECKED = "rechecked"
    FRAMES_MASKED = "frames_masked"
    POINTER_PARKED = "pointer_parked"
    ASKED = "asked"
    WAITING_SIGNAL = "waiting_signal"
    TIMER_SET = "timer_set"
    LLM_CALL = "llm_call"
    CHILD_STARTED = "child_started"
    ESCALATION_OPENED = "escalation_opened"
    ESCALATED = "escalated"
    ESCALATION_DROPPED = "escalation_dropped"
    DECISION = "decision"
    PATCHED = "patched"

    def __str__(self) -> str:
        return self.value


def is_a(rec: Mapping[str, Any], *types: RecordType) -> bool:
    """Whether a journal record (as read: a dict) is of one of `types`. The one place a record's `type` is compared."""
    return rec.get("type") in types
