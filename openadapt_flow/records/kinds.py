"""The `data` of each journal record kind, one TypedDict per kind: what `JournalWriter.append` is checked against at
every call (records/appender.py), and what records/models.py derives each kind's validating model (and its JSON
Schema) from: one definition of each shape. Types only, no I/O and no pydantic.

A key only some writers set is `NotRequired` (its model gives it the default None). Enum-valued keys (a run state, a
paused reason, a transaction outcome, a decision kind) are `str` here, as in the pause's documents (records/pausedoc.py):
the runtime passes enum members, a read record holds their values; the derived model checks each against its enum or
literal. Items whose keys are open by design are `dict[str, object]`: check evidence, rung evidence, a step's or a
workflow's JSON result, a system of record's value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, TypedDict

from openadapt_flow.records.pausedoc import JournaledDecision, OutcomeEvidence, PendingBody
from openadapt_flow.records.states import RecordType
from openadapt_flow.records.stepdoc import EffectDoc, ReadingDoc, RecheckedEffect, SkippedData, VerifiedData

__all__ = [
    "DATA_TYPES",
    "RecheckVerdict",
    "RunStart",
    "StepCall",
    "ActionDispatchedData",
    "ActionSentData",
    "AskedData",
    "BlockedData",
    "BundleUpgradedData",
    "CheckDoc",
    "ChecksData",
    "ChildStartedData",
    "EscalatedData",
    "EscalationDroppedData",
    "EscalationOpenedData",
    "FramesMaskedData",
    "HaltedData",
    "InterruptedData",
    "LlmCallData",
    "PatchedData",
    "PointerParkedData",
    "RecheckedData",
    "ResolvedData",
    "RunResumedData",
    "RunStartedData",
    "RunStopData",
    "StepStartedData",
    "SuspendedData",
    "TimerSetData",
    "WaitingSignalData",
    "WorkflowReturnedData",
]

Obj = dict[str, object]  # an open object: its keys are the writer's (evidence, a result)


# ---- the start and end of a run ----


class RunStart(TypedDict):
    """What a run's start says of it (`begin_run` adds the manifest's digest): bundle runs count steps, workflows name
    their entry."""

    steps: NotRequired[int | None]
    kind: NotRequired[Literal["workflow"] | None]
    entry: NotRequired[str | None]
    durable: bool
    lease_generation: int


class RunStartedData(RunStart):
    """Pins the manifest (its digest) before manifest.json is written. Bundle runs count steps; workflows name their entry."""

    manifest_digest: str


class RunStopData(TypedDict):
    """`run_finished` / `paused`: how the run stopped. A reject's end names its incident; a restored pause says so."""

    state: str  # a RunState's value
    paused_reason: NotRequired[str | None]  # a PausedReason's value
    transaction_outcome: NotRequired[str | None]  # a TransactionOutcome's value
    outcome_evidence: NotRequired[list[OutcomeEvidence] | None]
    frame_errors: NotRequired[list[str] | None]
    incident: NotRequired[str | None]
    restored: NotRequired[bool | None]
    landed: NotRequired[
        list[str] | None
    ]  # consequential steps whose write landed, when the run stops short of COMPLETED


class InterruptedData(TypedDict):
    message: str
    input_pending: NotRequired[bool | None]
    finalized: NotRequired[bool | None]
    transaction_outcome: NotRequired[str | None]  # a TransactionOutcome's value
    outcome_evidence: NotRequired[list[OutcomeEvidence] | None]


class HaltedData(TypedDict):
    category: str
    message: str
    input_sent: bool | None
    evidence: NotRequired[list[Mapping[str, object]] | None]  # what was weighed: JSON objects of any kind
    frame: NotRequired[str | None]
    # the template the step sought and the best candidate's crop, side by side in the report: {"template", "best"}
    pictures: NotRequired[dict[str, str] | None]


class BlockedData(TypedDict):
    id: str
    rule: str
    observed: object  # any JSON: what the rule saw
    limit: object  # any JSON: the rule's bound


class RunResumedData(TypedDict):
    lease_generation: int
    decision: str | None  # a DecisionKind's value
    pause_id: str | None
    operator: str | None
    decision_seq: NotRequired[int | None]


class SuspendedData(TypedDict):
    reason: str


class WorkflowReturnedData(TypedDict):
    result: object  # the workflow's JSON result


class BundleUpgradedData(TypedDict):
    bundle_dir: str
    digest: str
    from_digest: str
    source: str
    unchanged_through: int | None


# ---- one step ----


class StepHead(TypedDict):
    index: int
    action: str
    intent: NotRequired[str | None]


class StepCall(TypedDict):
    """What a workflow call's `step_started` adds to a step's: its name, the HMAC of its args, whether it writes."""

    name: NotRequired[str | None]
    inputs: NotRequired[str | None]
    consequential: NotRequired[bool | None]


class StepStartedData(StepHead, StepCall):
    """A bundle step (`action`, `intent`), or a workflow call (`action` is its kind, `inputs` the HMAC of its args)."""


class ResolvedData(TypedDict):
    role: Literal["target", "to"]
    ok: bool
    rung: str | None
    point: list[int] | None  # [x, y]
    category: Literal["resolution", "ambiguous"] | None
    message: str
    evidence: list[Obj]
    model_calls: int


class CheckDoc(TypedDict):
    """One verdict (`identity_checked`, and each of a `postconditions` record's checks) as `Check.to_json()` gives it:
    these keys, then the check's own evidence keys (open)."""

    kind: str
    expected: object
    ok: bool
    detail: str | None


class ChecksData(TypedDict):
    """`postconditions` / `checkpoint_reproved` / `start_checked` (the start state, before a run's first input)."""

    ok: bool
    checks: list[CheckDoc]


class ActionDispatchedData(TypedDict):
    """Written and fsync'd before any input is sent, with the lease generation it was sent under (spec §5)."""

    action: str
    point: NotRequired[list[int] | None]  # [x, y]
    call: NotRequired[str | None]
    lease_generation: int


class ActionSentData(TypedDict):
    dispatch_seq: int


RecheckVerdict = Literal["CONFIRMED", "ABSENT", "UNKNOWN", "RETRYABLE"]


class RecheckedData(TypedDict):
    verdict: RecheckVerdict
    effect: RecheckedEffect | None
    checks: list[CheckDoc]


class FramesMaskedData(TypedDict):
    box: list[int] | None  # [x, y, w, h]
    whole_frame: bool
    why: str


class PointerParkedData(TypedDict):
    """The pointer moved, no button pressed, to where it hovers nothing the step looks at, before the step's frame."""

    at: list[int]  # [x, y]
    why: str


# ---- durable kinds, workflow calls, children ----


class AskedData(TypedDict):
    index: int
    question: str
    choices: list[str] | None
    type: str | None


class WaitingSignalData(TypedDict):
    index: NotRequired[int | None]
    signal: str | None


class TimerSetData(TypedDict):
    index: int
    due_epoch: float


class LlmCallData(TypedDict):
    model_calls: int
    model: str | None


class ChildStartedData(TypedDict):
    """A bundle's child step (`child_run` relative to the runs root) or a workflow's child (`run_dir` under it)."""

    index: NotRequired[int | None]
    child_run: NotRequired[str | None]
    bundle: NotRequired[str | None]
    run_dir: NotRequired[str | None]
    what: NotRequired[str | None]


# ---- pauses and decisions ----


class EscalationOpenedData(TypedDict):
    """The whole pause (`pending`, as pending_escalation.json holds it without `schema`): the record of truth."""

    pause_id: str
    reason: str  # a PausedReason's value
    category: str
    allowed: list[str]  # DecisionKind values
    pending: PendingBody


# `from` is a Python keyword: the functional form (its model names the field `from_`, aliased)
EscalatedData = TypedDict(
    "EscalatedData",
    {
        "from": str,
        "pause_id": str,
        "level": str,
        "operator": str,
        "os_user": str,
        "note": str | None,
        "pending": PendingBody,
        "channel": NotRequired[str | None],
    },
)  # how the decision arrived (a Channel)


class EscalationDroppedData(TypedDict):
    pause_id: str
    why: str


class PatchedData(TypedDict):
    pause_id: str
    bundle_dir: str
    digest: str
    template: str
    region: list[int]  # [x, y, w, h]
    point: list[int]  # [x, y]


# Each record kind's data, by kind: the one map appender.py's overloads and models.py's DATA_MODELS follow (a test
# holds all three to the same kinds).
DATA_TYPES: dict[RecordType, type] = {
    RecordType.RUN_STARTED: RunStartedData,
    RecordType.RUN_FINISHED: RunStopData,
    RecordType.PAUSED: RunStopData,
    RecordType.INTERRUPTED: InterruptedData,
    RecordType.HALTED: HaltedData,
    RecordType.BLOCKED: BlockedData,
    RecordType.RUN_RESUMED: RunResumedData,
    RecordType.SUSPENDED: SuspendedData,
    RecordType.WORKFLOW_RETURNED: WorkflowReturnedData,
    RecordType.BUNDLE_UPGRADED: BundleUpgradedData,
    RecordType.STEP_STARTED: StepStartedData,
    RecordType.RESOLVED: ResolvedData,
    RecordType.IDENTITY_CHECKED: CheckDoc,
    RecordType.POSTCONDITIONS: ChecksData,
    RecordType.CHECKPOINT_REPROVED: ChecksData,
    RecordType.START_CHECKED: ChecksData,
    RecordType.EFFECT_BASELINE: ReadingDoc,
    RecordType.ACTION_DISPATCHED: ActionDispatchedData,
    RecordType.ACTION_SENT: ActionSentData,
    RecordType.EFFECT_VERIFIED: EffectDoc,
    RecordType.STEP_VERIFIED: VerifiedData,
    RecordType.STEP_SKIPPED: SkippedData,
    RecordType.RECHECKED: RecheckedData,
    RecordType.FRAMES_MASKED: FramesMaskedData,
    RecordType.POINTER_PARKED: PointerParkedData,
    RecordType.ASKED: AskedData,
    RecordType.WAITING_SIGNAL: WaitingSignalData,
    RecordType.TIMER_SET: TimerSetData,
    RecordType.LLM_CALL: LlmCallData,
    RecordType.CHILD_STARTED: ChildStartedData,
    RecordType.ESCALATION_OPENED: EscalationOpenedData,
    RecordType.ESCALATED: EscalatedData,
    RecordType.ESCALATION_DROPPED: EscalationDroppedData,
    RecordType.DECISION: JournaledDecision,
    RecordType.PATCHED: PatchedData,
}
