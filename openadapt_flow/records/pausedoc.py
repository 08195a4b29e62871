"""The typed shapes of a pause and its decision: the open pause (pending_escalation.json, and the `pending` its
journal record carries), its signed decision task, the signed approval (approval.json, decisions/<pause_id>.json) with
its votes, the decision a resume applies, the incident of a rejected run, the transaction outcome's evidence, the
operator book's records, and what `approve` and `reconcile` report. Types only, no I/O and no pydantic, so the
runtime may name them; records/runfiles.py derives the validating models (and JSON Schemas) of the pending escalation,
the approval and the incident from these classes: one definition of each.

Decision kinds, channels, effects, reasons and outcomes are `str` here (the runtime passes enum members, a read file
holds their values); the derived models check each against its enum or literal."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from openadapt_flow.records.entry import SchemaHead

__all__ = [
    "AppliedDecision",
    "ApprovalBody",
    "ApprovalDoc",
    "AskDoc",
    "CarriedDecision",
    "DecisionOutcome",
    "DecisionTaskDoc",
    "IncidentBody",
    "IncidentDoc",
    "JournaledDecision",
    "OperatorInfo",
    "OperatorRecord",
    "OutcomeEvidence",
    "PauseCore",
    "PauseHead",
    "PendingBody",
    "PendingDoc",
    "ReconcileRow",
    "SupersededDoc",
    "TaskBody",
    "VoteDoc",
]

Channel = Literal["console", "phone", "cli"]  # how an operator's decision arrived (spec §20)


# ---- the pause ----


class OutcomeEvidence(TypedDict):
    """One consequential step dispatched and not verified: what its last effect verdict said."""

    step: str
    dispatch_seq: int
    effect_verdict: str  # an effect verdict, or NOT_VERIFIED when none was read
    positively_absent: bool


class AskDoc(TypedDict):
    choices: list[str] | None
    type: str | None
    signal: str | None


class TaskBody(TypedDict):
    """A decision task before it is signed (and what its signature covers)."""

    run_id: str
    pause_id: str
    checkpoint_digest: str
    bundle_digest: str
    step: str
    expected_transition: Literal["PAUSED->RESUMING"]
    allowed_decisions: list[str]  # DecisionKind values
    expires_at: str
    idempotency_scope: str
    key_id: str
    question: str
    due_epoch: float | None
    quorum: int
    level: str
    ask: NotRequired[AskDoc | None]  # a waiting question's terms, signed with the task
    channels: NotRequired[list[str] | None]  # approvals.channels: only these (authenticated) channels may decide


class DecisionTaskDoc(TaskBody):
    """The signed, bounded question (ids, digests and the question only: no frames, OCR text or param values)."""

    signature: str


class PauseCore(TypedDict):
    """What a pause is, before its decision task is signed over it."""

    pause_id: str
    run_id: str
    paused_reason: str  # a PausedReason's value
    category: str
    step: str
    message: str
    transaction_outcome: str | None  # a TransactionOutcome's value
    evidence: list[OutcomeEvidence]
    allowed_decisions: list[str]
    created_at: str
    expires_at: str
    due_epoch: float | None
    level: int


class PendingBody(PauseCore):
    """A pause as the journal's `escalation_opened` / `escalated` record carries it (`pending`)."""

    task: DecisionTaskDoc
    escalated_from: NotRequired[str | None]  # a re-issued pause: the one it replaced


class PendingDoc(PendingBody):
    """pending_escalation.json: the open pause, a view of the journal; removed when it is resolved."""

    schema: str


class PauseHead(TypedDict):
    """A pause journaled before pauses carried their body: its id is all the journal holds (the signed file the rest)."""

    pause_id: str
    legacy: Literal[True]


# ---- the decision ----


class VoteDoc(TypedDict):
    operator: str
    os_user: str
    note: str | None
    decided_at: str
    channel: NotRequired[str | None]  # absent in runs decided before spec §20: the CLI
    authenticated: NotRequired[bool]  # the operator proved an enrolled credential (always, on console and phone)


class SupersededDoc(TypedDict):
    decision: str | None
    effect: str | None
    operator: str | None
    os_user: str | None
    note: str | None
    decided_at: str | None
    channel: NotRequired[str | None]


class ApprovalBody(TypedDict):
    """The approval as `approve` signs it: what operators decided about one pause, bound to its task and checkpoint by
    their digests."""

    run_id: str
    pause_id: str
    task_digest: str
    checkpoint_digest: str
    step: str
    decision: str  # a DecisionKind's value
    effect: str | None  # reconcile: "landed" or "absent"
    payload: dict[str, object] | None  # by decision: a teach's patch, an answer's value, a signal's name and data
    votes: list[VoteDoc]
    operator: str  # the first voter's
    os_user: str
    note: str | None
    decided_at: str  # the last vote's
    channel: NotRequired[str | None]
    superseded: NotRequired[list[SupersededDoc] | None]  # an operator's own earlier decisions on this pause, replaced


class ApprovalDoc(SchemaHead, ApprovalBody):
    """approval.json (and, once used, decisions/<pause_id>.json): the signed decision bound to one pause."""

    signature: str


class DecisionFields(TypedDict):
    """What a decision carries from its approval into its `decision` record, and from the record back out (besides
    the decision itself, which a carried decision always has)."""

    effect: str | None
    operator: str | None
    os_user: str | None
    note: str | None
    decided_at: str | None
    votes: list[VoteDoc] | None
    payload: dict[str, object] | None
    task_digest: str | None
    checkpoint_digest: str | None
    signature: str | None


class CarriedDecision(DecisionFields):
    """A decision the journal holds that has not taken effect yet (its process was killed after the `decision`
    record): the approval's fields as that record keeps them (None where a record of earlier code left one out)."""

    decision: str
    pause_id: str
    run_id: str
    step: str
    from_journal: int  # the seq of its `decision` record


AppliedDecision = ApprovalDoc | CarriedDecision  # what a resume applies: the checked approval, or the journal's


class JournaledDecision(TypedDict):
    """A `decision` record's data: the whole decision, journaled before it takes effect (the point of no return), enough
    to apply it from the journal alone. Records of earlier code hold less (some only `pause_id` and `decision`, a
    workflow's its delivered `value`): read them with `.get`."""

    pause_id: str
    decision: NotRequired[str | None]
    effect: NotRequired[str | None]
    operator: NotRequired[str | None]
    os_user: NotRequired[str | None]
    note: NotRequired[str | None]
    decided_at: NotRequired[str | None]
    channel: NotRequired[str | None]  # how the decision arrived (Channel)
    votes: NotRequired[list[VoteDoc] | None]
    payload: NotRequired[dict[str, object] | None]
    task_digest: NotRequired[str | None]
    checkpoint_digest: NotRequired[str | None]
    approval_digest: NotRequired[str | None]  # of the approval as signed (without `schema` and `signature`)
    signature: NotRequired[str | None]
    value: NotRequired[object]


class IncidentBody(TypedDict):
    """An incident as its writers build it (incident.json without its `schema`)."""

    id: str
    run_id: str
    rule: str
    decision: str  # "policy" or "reject"
    observed: object  # any JSON: what the rule saw
    limit: object  # any JSON: the rule's bound
    step: str | None
    message: NotRequired[str | None]
    operator: NotRequired[str | None]
    os_user: NotRequired[str | None]
    note: NotRequired[str | None]
    decided_at: (
        str | None
    )  # None only for a reject carried from a journal record that left it out (the model refuses it)


class IncidentDoc(SchemaHead, IncidentBody):
    """incident.json (ExecutionIncident): why a run ended BLOCKED — a policy rule, or an operator's reject."""


class DecisionOutcome(TypedDict):
    """What `approve`, `answer` and `signal` report: whether a vote was recorded (a repeat is a no-op), and on what."""

    recorded: bool
    noop: NotRequired[bool]
    decision: str
    pause_id: NotRequired[str]
    state: NotRequired[object]  # a run not paused: its state as read
    operator: NotRequired[str]
    os_user: NotRequired[str]
    authenticated: NotRequired[bool]  # the operator proved an enrolled credential
    replaced: NotRequired[str | None]  # the operator's own earlier decision this one replaced
    votes: NotRequired[int]  # distinct voters so far
    quorum: NotRequired[int]
    complete: NotRequired[bool]
    level: NotRequired[str]  # an escalation: the level the task was re-issued at
    settled: NotRequired[bool]  # a reconcile of a run that stopped for good: journaled, the run's outcome re-written
    transaction_outcome: NotRequired[str]  # that run's outcome now


# ---- the operators who decide (spec §20) ----


class OperatorInfo(TypedDict):
    """An operator as shown (never their credential's hash)."""

    name: str
    role: str
    disabled: bool
    created_at: str
    changed_at: str


class OperatorRecord(OperatorInfo):
    """An operator as the store keeps them: a credential is kept only as its argon2id hash."""

    hash: str


# ---- reconcile ----


class ReconcileRow(TypedDict):
    """One run of `flow reconcile`: what was done to it (none, finalized, unstarted, error) and why."""

    run_dir: str
    action: Literal["none", "finalized", "unstarted", "error"]
    state: NotRequired[object]  # as read (none), or as finalised
    transaction_outcome: NotRequired[str | None]
    reason: NotRequired[str]
    error: NotRequired[str]
