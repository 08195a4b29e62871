"""Typed run files: a pydantic model for every JSON file of the run directory (spec §7), each named by the
`schema` it carries (`openadapt-flow/<name>@1`). `flow schema NAME` prints their JSON Schemas.

Models forbid unknown keys where every writer's field set is known. Left open, and why: `manifest.config` (a
DeployConfig dump; its model lives in runtime/, which store/ may not import — `flow schema config` prints it),
`manifest.backend` (a BackendSpec dump, likewise in backends/), and the report's per-step rows and the items
copied into it from other files (views for people, rebuilt from the records at every stop).
"""

from __future__ import annotations

from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from openadapt_flow.store.entry import CheckpointDoc, StateDoc
from openadapt_flow.store.records import Box, Decision, Json, Obj, Point
from openadapt_flow.store.states import PausedReason, RunState, TransactionOutcome

Sha = str  # "sha256:<hex>"


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


def _schema(name: str) -> Any:
    return Field(alias="schema", pattern=f"^openadapt-flow/{name}@1$")


class BundleRef(_File):
    path: str | None  # None for a Python workflow (no bundle folder)
    name: str
    digest: Sha
    files: list[str]


class Manifest(_File):
    """manifest.json: written once at start; pinned by the journal's `run_started` (its digest minus child_runs)."""
    schema_: str = _schema("manifest")
    run_id: str
    created_at: str
    tool_version: str
    host: str
    kind: Literal["workflow"] | None = None
    entry: str | None = None
    args: Obj | None = None
    bundle: BundleRef
    params: Obj
    backend: Obj | None
    step_ids: list[str]
    durable: bool
    allow_model: bool
    config: Obj
    parent_run: str | None
    child_runs: list[str]


def _model(doc: type, name: str, rules: dict[str, Any]) -> type[BaseModel]:
    """The validating model of a run document whose definition is the TypedDict `doc`: the same keys in the same
    order and their types; `rules` gives a key its constraint or default (`Field(...)`, or `(type, Field(...))` where
    the model checks more than the type says: an enum stored as its string), and `schema` is the aliased `schema_`."""
    fields: dict[str, Any] = {}
    for key, hint in get_type_hints(doc).items():
        rule = rules.get(key, ...)
        fields["schema_" if key == "schema" else key] = rule if isinstance(rule, tuple) else (hint, rule)
    return create_model(name, __base__=_File, __doc__=doc.__doc__, __module__=__name__, **fields)


State = _model(StateDoc, "State", {
    "schema": _schema("state"), "state": (RunState, ...), "paused_reason": (PausedReason | None, ...),
    "transaction_outcome": (TransactionOutcome | None, ...), "halt_category": None, "message": None,
    "journal_seq": (int | None, Field(default=None, ge=0)), "journal_hash": None, "seal": None})


Checkpoint = _model(CheckpointDoc, "Checkpoint", {
    "schema": _schema("checkpoint"), "seq": Field(ge=1), "step_index": Field(ge=0), "next_index": Field(ge=1),
    "results": (Obj, ...), "effects": (dict[str, Obj], ...), "screen_facts": (list[Obj], ...)})  # open in the schema


class Lease(_File):
    """lease.json: the owner process, renewed every few seconds; `generation` fences a replaced owner."""
    schema_: str = _schema("lease")
    host: str
    pid: int
    start_time: str | None
    boot_id: str
    heartbeat_at: str
    heartbeat_epoch: float
    generation: int = Field(ge=1)


Channel = Literal["console", "phone", "cli"]  # how an operator's decision arrived (spec §20)


class Ask(_File):
    choices: list[str] | None
    type: str | None
    signal: str | None


class DecisionTask(_File):
    """The signed, bounded question (ids, digests and the question only: no frames, OCR text or param values)."""
    run_id: str
    pause_id: str
    checkpoint_digest: Sha
    bundle_digest: Sha
    step: str
    expected_transition: Literal["PAUSED->RESUMING"]
    allowed_decisions: list[Decision]
    expires_at: str
    idempotency_scope: str
    key_id: str
    question: str
    due_epoch: float | None
    quorum: int = Field(ge=1)
    level: str
    ask: Ask | None = None
    channels: list[Channel] | None = None  # approvals.channels: only these (authenticated) channels may decide
    signature: str


class PendingBody(_File):
    """A pause as the journal's `escalation_opened` / `escalated` record carries it (`pending`)."""
    pause_id: str
    run_id: str
    paused_reason: PausedReason
    category: str
    step: str
    message: str
    transaction_outcome: TransactionOutcome | None
    evidence: list[Obj]
    allowed_decisions: list[Decision]
    created_at: str
    expires_at: str
    due_epoch: float | None
    level: int = Field(ge=0)
    task: DecisionTask
    escalated_from: str | None = None


class PendingEscalation(PendingBody):
    """pending_escalation.json: the open pause, a view of the journal; removed when it is resolved."""
    schema_: str = _schema("pending_escalation")


class Vote(_File):
    operator: str
    os_user: str
    note: str | None
    decided_at: str
    channel: Channel | None = None  # absent in runs decided before spec §20: the CLI


class Superseded(_File):
    decision: Decision | None
    effect: Literal["landed", "absent"] | None
    operator: str | None
    os_user: str | None
    note: str | None
    decided_at: str | None
    channel: Channel | None = None


class Approval(_File):
    """approval.json (and, once used, decisions/<pause_id>.json): the signed decision bound to one pause."""
    schema_: str = _schema("approval")
    run_id: str
    pause_id: str
    task_digest: Sha
    checkpoint_digest: Sha
    step: str
    decision: Decision
    effect: Literal["landed", "absent"] | None
    payload: Obj | None
    votes: list[Vote] = Field(min_length=1)
    operator: str
    os_user: str
    note: str | None
    decided_at: str
    channel: Channel | None = None
    superseded: list[Superseded] | None = None
    signature: str


class Incident(_File):
    """incident.json (ExecutionIncident): why a run ended BLOCKED — a policy rule, or an operator's reject."""
    schema_: str = _schema("incident")
    id: str
    run_id: str
    rule: str
    decision: Literal["policy", "reject"]
    observed: Json
    limit: Json
    step: str | None
    message: str | None = None
    operator: str | None = None
    os_user: str | None = None
    note: str | None = None
    decided_at: str


class Patch(_File):
    """patches/<pause_id>/patch.json: what `teach` cut from the halt frame (beside the diff and the crop)."""
    schema_: str = _schema("patch")
    pause_id: str
    step: str
    template: str
    region: Box
    point: Point
    base_flow_sha: str
    patched_flow_sha: str
    crop_sha: str
    bundle_dir: str
    digest: Sha


class ReportCandidate(_File):
    """One candidate the ladder weighed before a halt, lettered (a name, not a rank): none of them is the answer."""
    label: str
    box: Box
    scores: dict[str, float | None]  # by rung (template, template-edges, ocr, model)
    point: Point  # where a click on it would land (else the box's centre): what `approve --decision teach --point` takes


class ReportHalt(_File):
    step: str | None
    category: str | None
    message: str | None
    input_sent: bool | None
    frame: str | None
    candidates: list[ReportCandidate] = []
    show_frame: str | None = None  # the frame the candidates are drawn on: the raw halt frame where one was kept


class ReportStepTime(_File):
    id: str
    ms: float | None
    status: str | None
    weak: bool


class ReportSummary(_File):
    """The report's summary: outcome, running time (pauses excluded), steps by result."""
    state: RunState | None
    exit_code: int | None
    duration_s: float | None
    steps_total: int
    verified: int  # strongly verified
    weak: int
    halted: int
    skipped: int
    not_run: int
    step_ms: list[ReportStepTime]


class Report(_File):
    """report.json: rendered at every stop from the records only (REPORT.md and report.html show the same)."""
    schema_: str = _schema("report")
    run_id: str | None
    bundle: Obj
    backend: Obj | None
    params: Obj | None
    state: RunState | None
    paused_reason: PausedReason | None
    transaction_outcome: TransactionOutcome | None
    halt: ReportHalt | None
    started_at: str | None
    finished_at: str | None
    escalation: Obj | None
    decisions: list[Obj]
    incident: Obj | None
    checkpoint: Obj | None
    landed: list[str] = []  # consequential steps whose write landed when the run stopped short of COMPLETED
    weakly_verified: list[str]
    masked: list[Obj]
    model_calls: int
    steps: list[Obj]
    summary: ReportSummary | None = None  # absent from reports of earlier versions
    next_commands: list[str] = []  # the exact commands that move the run on from where it stopped


# Every JSON file a run directory holds, by the name its `schema` carries.
FILE_MODELS: dict[str, type[BaseModel]] = {
    "manifest": Manifest,
    "state": State,
    "checkpoint": Checkpoint,
    "lease": Lease,
    "pending_escalation": PendingEscalation,
    "approval": Approval,
    "incident": Incident,
    "patch": Patch,
    "report": Report,
}


def file_model(relpath: str) -> type[BaseModel] | None:
    """The model of the run file at `relpath` (relative to its run directory, `/`-separated); None for no JSON run file."""
    parts = relpath.split("/")
    if len(parts) == 1:
        top: dict[str, type[BaseModel]] = {"manifest.json": Manifest, "state.json": State, "checkpoint.json": Checkpoint, "lease.json": Lease,
                "pending_escalation.json": PendingEscalation, "approval.json": Approval, "incident.json": Incident,
                "report.json": Report}
        return top.get(parts[0])
    if len(parts) == 2 and parts[0] == "decisions" and parts[1].endswith(".json"):
        return Approval
    if len(parts) == 3 and parts[0] == "patches" and parts[2] == "patch.json":
        return Patch
    return None
