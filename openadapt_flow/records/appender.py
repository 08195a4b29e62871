"""`append` typed per record kind: one overload per kind, each taking that kind's data (records/kinds.py), so mypy
--strict checks at every call that the data fits the kind. The store's `JournalWriter` protocol (store/base.py) is this
protocol; the runtime holds its journal as one.

Why overloads on the kind (not a record object per kind, nor a generic `Kind[D]` key): every call keeps naming its kind
as the enum member the journal writes (`journal.append(RecordType.ASKED, step, {...})`), a dict literal is checked
against the kind's TypedDict key by key (mypy cannot infer a generic key's TypedDict from a literal), and the one
broad implementation (store/journal.py's `JournalWriterBase.append`) stays the only code that writes. A kind computed
at run time must be narrowed to one member first. tests/unit/records/test_kinds.py holds these overloads, DATA_TYPES
and the models to the same kinds."""

from __future__ import annotations

from typing import Literal, Protocol, overload

from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.kinds import (
    ActionDispatchedData,
    ActionSentData,
    AskedData,
    BlockedData,
    BundleUpgradedData,
    CheckDoc,
    ChecksData,
    ChildStartedData,
    EscalatedData,
    EscalationDroppedData,
    EscalationOpenedData,
    FramesMaskedData,
    HaltedData,
    InterruptedData,
    LlmCallData,
    PatchedData,
    PointerParkedData,
    RecheckedData,
    ResolvedData,
    RunResumedData,
    RunStartedData,
    RunStopData,
    StepStartedData,
    SuspendedData,
    TimerSetData,
    WaitingSignalData,
    WorkflowReturnedData,
)
from openadapt_flow.records.pausedoc import JournaledDecision
from openadapt_flow.records.states import RecordType
from openadapt_flow.records.stepdoc import EffectDoc, ReadingDoc, SkippedData, VerifiedData

__all__ = ["RecordAppender"]


class RecordAppender(Protocol):
    """Appends one record of a kind with that kind's data (the journal's one writer)."""

    @overload
    def append(
        self,
        type_: Literal[RecordType.RUN_STARTED],
        step: str | None,
        data: RunStartedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.RUN_FINISHED], step: str | None, data: RunStopData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.PAUSED], step: str | None, data: RunStopData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.INTERRUPTED],
        step: str | None,
        data: InterruptedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.HALTED], step: str | None, data: HaltedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.BLOCKED], step: str | None, data: BlockedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.RUN_RESUMED],
        step: str | None,
        data: RunResumedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.SUSPENDED], step: str | None, data: SuspendedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.WORKFLOW_RETURNED],
        step: str | None,
        data: WorkflowReturnedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.BUNDLE_UPGRADED],
        step: str | None,
        data: BundleUpgradedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.STEP_STARTED],
        step: str | None,
        data: StepStartedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.RESOLVED], step: str | None, data: ResolvedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.IDENTITY_CHECKED], step: str | None, data: CheckDoc, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.POSTCONDITIONS], step: str | None, data: ChecksData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.CHECKPOINT_REPROVED],
        step: str | None,
        data: ChecksData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.START_CHECKED], step: str | None, data: ChecksData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.EFFECT_BASELINE],
        step: str | None,
        data: ReadingDoc,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.ACTION_DISPATCHED],
        step: str | None,
        data: ActionDispatchedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.ACTION_SENT],
        step: str | None,
        data: ActionSentData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.EFFECT_VERIFIED], step: str | None, data: EffectDoc, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.STEP_VERIFIED],
        step: str | None,
        data: VerifiedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.STEP_SKIPPED], step: str | None, data: SkippedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.RECHECKED], step: str | None, data: RecheckedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.FRAMES_MASKED],
        step: str | None,
        data: FramesMaskedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.POINTER_PARKED],
        step: str | None,
        data: PointerParkedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.ASKED], step: str | None, data: AskedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.WAITING_SIGNAL],
        step: str | None,
        data: WaitingSignalData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.TIMER_SET], step: str | None, data: TimerSetData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.LLM_CALL], step: str | None, data: LlmCallData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.CHILD_STARTED],
        step: str | None,
        data: ChildStartedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.ESCALATION_OPENED],
        step: str | None,
        data: EscalationOpenedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.ESCALATED], step: str | None, data: EscalatedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.ESCALATION_DROPPED],
        step: str | None,
        data: EscalationDroppedData,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self,
        type_: Literal[RecordType.DECISION],
        step: str | None,
        data: JournaledDecision,
        *,
        sync: bool | None = None,
    ) -> JournalEntry: ...

    @overload
    def append(
        self, type_: Literal[RecordType.PATCHED], step: str | None, data: PatchedData, *, sync: bool | None = None
    ) -> JournalEntry: ...

    def append(self, type_: RecordType, step: str | None, data: object, *, sync: bool | None = None) -> JournalEntry:
        """Chain and keep one record (store/journal.py's `JournalWriterBase.append` is the implementation)."""
        ...
