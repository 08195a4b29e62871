"""Typed run files: a pydantic model for every JSON file of the run directory (spec §7), each named by the
`schema` it carries (`openadapt-flow/<name>@1`). `flow schema NAME` prints their JSON Schemas.

Models forbid unknown keys where every writer's field set is known. Left open, and why: `manifest.config` (a
DeployConfig dump; its model lives in runtime/, which store/ may not import — `flow schema config` prints it),
`manifest.backend` (a BackendSpec dump, likewise in backends/), and the report's per-step rows and the items
copied into it from other files (views for people, rebuilt from the records at every stop).
"""

from __future__ import annotations

from types import GenericAlias
from typing import Any, Literal, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, create_model

from openadapt_flow.records.entry import CheckpointDoc, StateDoc
from openadapt_flow.records.models import Box, Decision, Json, Obj, Point
from openadapt_flow.records.pausedoc import (
    ApprovalDoc,
    AskDoc,
    Channel,
    DecisionTaskDoc,
    IncidentDoc,
    PendingDoc,
    SupersededDoc,
    VoteDoc,
)
from openadapt_flow.records.rundoc import BundleRefDoc, EnginesDoc, ManifestDoc
from openadapt_flow.records.states import PausedReason, RunState, TransactionOutcome

Sha = str  # "sha256:<hex>"


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


def _schema(name: str) -> Any:
    return Field(alias="schema", pattern=f"^openadapt-flow/{name}@1$")


def _model(doc: type, name: str, rules: dict[str, object]) -> type[BaseModel]:
    """The validating model of a run document whose definition is the TypedDict `doc`: the same keys in the same
    order and their types; `rules` gives a key its constraint or default (`Field(...)`, or `(type, Field(...))` where
    the model checks more than the type says: an enum stored as its string), and `schema` is the aliased `schema_`."""
    fields: dict[str, Any] = {}  # pydantic's field definitions: (type, FieldInfo or default)
    for key, hint in get_type_hints(doc).items():
        rule = rules.get(key, ...)
        fields["schema_" if key == "schema" else key] = rule if isinstance(rule, tuple) else (hint, rule)
    return create_model(name, __base__=_File, __doc__=doc.__doc__, __module__=__name__, **fields)


BundleRef = _model(BundleRefDoc, "BundleRef", {})
Engines = _model(EnginesDoc, "Engines", {})


Manifest = _model(
    ManifestDoc,
    "Manifest",
    {
        "schema": _schema("manifest"),
        "kind": (Literal["workflow"] | None, None),
        "entry": (str | None, None),
        "args": (Obj | None, None),
        "bundle": (BundleRef, ...),
        "params": (Obj, ...),
        "backend": (Obj | None, ...),
        "config": (Obj, ...),
        "engines": (Engines | None, None),
    },
)


State = _model(
    StateDoc,
    "State",
    {
        "schema": _schema("state"),
        "state": (RunState, ...),
        "paused_reason": (PausedReason | None, ...),
        "transaction_outcome": (TransactionOutcome | None, ...),
        "halt_category": None,
        "message": None,
        "journal_seq": (int | None, Field(default=None, ge=0)),
        "journal_hash": None,
        "seal": None,
    },
)


Checkpoint = _model(
    CheckpointDoc,
    "Checkpoint",
    {
        "schema": _schema("checkpoint"),
        "seq": Field(ge=1),
        "step_index": Field(ge=0),
        "next_index": Field(ge=1),
        "results": (Obj, ...),
        "effects": (dict[str, Obj], ...),
        "screen_facts": (list[Obj], ...),
    },
)  # open in the schema


class LeaseInfo(_File):
    """lease.json: the owner process, renewed every few seconds; `generation` fences a replaced owner."""

    # the one type of a lease's holder, in every store (store/lease.py judges it: alive, held elsewhere); its schema's
    # title stays `Lease`
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True, title="Lease")
    schema_: str = _schema("lease")
    host: str
    pid: int
    start_time: str | None
    boot_id: str
    heartbeat_at: str
    heartbeat_epoch: float
    generation: int = Field(ge=1)


_CHANNEL = (Channel | None, None)  # absent in runs decided before spec §20: the CLI
_EFFECT = Literal["landed", "absent"] | None

Ask = _model(AskDoc, "Ask", {})


DecisionTask = _model(
    DecisionTaskDoc,
    "DecisionTask",
    {
        "allowed_decisions": (list[Decision], ...),
        "quorum": Field(ge=1),
        "ask": (Ask | None, None),
        "channels": (list[Channel] | None, None),
    },
)


PendingEscalation = _model(
    PendingDoc,
    "PendingEscalation",
    {
        "paused_reason": (PausedReason, ...),
        "transaction_outcome": (TransactionOutcome | None, ...),
        "evidence": (list[Obj], ...),
        "allowed_decisions": (list[Decision], ...),
        "level": Field(ge=0),
        "task": (DecisionTask, ...),
        "escalated_from": None,
        "schema": _schema("pending_escalation"),
    },
)


Vote = _model(VoteDoc, "Vote", {"channel": _CHANNEL, "authenticated": (bool, False)})


Superseded = _model(
    SupersededDoc, "Superseded", {"decision": (Decision | None, ...), "effect": (_EFFECT, ...), "channel": _CHANNEL}
)


Approval = _model(
    ApprovalDoc,
    "Approval",
    {
        "schema": _schema("approval"),
        "decision": (Decision, ...),
        "effect": (_EFFECT, ...),
        "payload": (Obj | None, ...),
        "votes": (GenericAlias(list, Vote), Field(min_length=1)),
        "channel": _CHANNEL,
        "superseded": (GenericAlias(list, Superseded) | None, None),
    },
)


Incident = _model(
    IncidentDoc,
    "Incident",
    {
        "schema": _schema("incident"),
        "decision": (Literal["policy", "reject"], ...),
        "observed": (Json, ...),
        "limit": (Json, ...),
        "message": None,
        "operator": None,
        "os_user": None,
        "note": None,
        "decided_at": (str, ...),
    },
)


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
    point: (
        Point  # where a click on it would land (else the box's centre): what `approve --decision teach --point` takes
    )


class ReportHalt(_File):
    step: str | None
    category: str | None
    message: str | None
    input_sent: bool | None
    frame: str | None
    candidates: list[ReportCandidate] = []
    show_frame: str | None = None  # the frame the candidates are drawn on: the raw halt frame where one was kept
    pictures: dict[str, str] | None = None  # the template sought and the best candidate's crop (report/pictures.py)


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
    outcome_evidence: list[Obj] = []  # the consequential steps dispatched and not verified at the run's last stop
    collateral: list[Obj] = []  # rows a whole-change effect saw change that no step declares (secrets masked)
    advice: list[str] = []  # what to check after a consequential input, and which decision records the answer


# Every JSON file a run directory holds, by the name its `schema` carries.
FILE_MODELS: dict[str, type[BaseModel]] = {
    "manifest": Manifest,
    "state": State,
    "checkpoint": Checkpoint,
    "lease": LeaseInfo,
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
        top: dict[str, type[BaseModel]] = {
            "manifest.json": Manifest,
            "state.json": State,
            "checkpoint.json": Checkpoint,
            "lease.json": LeaseInfo,
            "pending_escalation.json": PendingEscalation,
            "approval.json": Approval,
            "incident.json": Incident,
            "report.json": Report,
        }
        return top.get(parts[0])
    if len(parts) == 2 and parts[0] == "decisions" and parts[1].endswith(".json"):
        return Approval
    if len(parts) == 3 and parts[0] == "patches" and parts[2] == "patch.json":
        return Patch
    return None
