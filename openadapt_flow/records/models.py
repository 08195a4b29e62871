"""Typed journal records: the envelope `{seq, ts, type, step, data, prev_hash, hash}` of every line of
`journal.jsonl`, and the `data` of each record type the runtime writes, as a union discriminated on `type`.

The models accept exactly what the runtime writes (spec §5, §7). `data` models forbid unknown keys; a key that
only some writers of a type set is optional. Items whose keys are open by design stay open objects: check
evidence (`Check.to_json()` spreads each check's own evidence keys), rung evidence, step results (a tool's or a
workflow's JSON output) and effect readings (a system of record's value). The data of `step_verified` and
`step_skipped` are defined once, as TypedDicts (records/stepdoc.py), and their models derived from them; `Reading` and
`EffectVerdict` give theirs (`ReadingDoc`, `EffectDoc`) from `to_json()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, cast, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model

from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.stepdoc import EffectDoc, ReadingDoc, SkippedData, Verification, VerifiedData
from openadapt_flow.records.stepdoc import ChangeDoc as ChangeDoc  # the verifiers name it here
from openadapt_flow.records.stepdoc import EffectVerdictName as EffectVerdictName  # the verifiers name it here
from openadapt_flow.records.states import PausedReason, RunState, TransactionOutcome

Json = Any  # any JSON value: a tool's result, an answer, a signal's data
Obj = dict[str, Any]  # an open object in a JSON Schema (`additionalProperties: true`): what the models say, not Python
Point = list[int]  # [x, y]
Box = list[int]  # [x, y, w, h]
Decision = Literal["continue", "skip", "reject", "teach", "escalate", "reconcile", "answer", "signal"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


# ---- the start and end of a run ----

class RunStarted(_Data):
    """Pins the manifest (its digest) before manifest.json is written. Bundle runs count steps; workflows name their entry."""
    steps: int | None = None
    kind: Literal["workflow"] | None = None
    entry: str | None = None
    durable: bool
    lease_generation: int
    manifest_digest: str


class RunStop(_Data):
    """`run_finished` / `paused`: how the run stopped. A reject's end names its incident; a restored pause says so."""
    state: RunState
    paused_reason: PausedReason | None = None
    transaction_outcome: TransactionOutcome | None = None
    outcome_evidence: list[Obj] | None = None
    frame_errors: list[str] | None = None
    incident: str | None = None
    restored: bool | None = None
    landed: list[str] | None = None  # consequential steps whose write landed, when the run stops short of COMPLETED


class Interrupted(_Data):
    message: str
    input_pending: bool | None = None
    finalized: bool | None = None
    transaction_outcome: TransactionOutcome | None = None
    outcome_evidence: list[Obj] | None = None


class Halted(_Data):
    category: str
    message: str
    input_sent: bool | None
    evidence: list[Obj] | None = None
    frame: str | None = None
    # the template the step sought and the best candidate's crop, side by side in the report: {"template", "best"}
    pictures: dict[str, str] | None = None


class Blocked(_Data):
    id: str
    rule: str
    observed: Json
    limit: Json


class RunResumed(_Data):
    lease_generation: int
    decision: Decision | None
    pause_id: str | None
    operator: str | None
    decision_seq: int | None = None


class Suspended(_Data):
    reason: str


class WorkflowReturned(_Data):
    result: Json


class BundleUpgraded(_Data):
    bundle_dir: str
    digest: str
    from_digest: str
    source: str
    unchanged_through: int | None


# ---- one step ----

class StepStarted(_Data):
    """A bundle step (`action`, `intent`), or a workflow call (`action` is its kind, `inputs` the HMAC of its args)."""
    index: int
    action: str
    intent: str | None = None
    name: str | None = None
    inputs: str | None = None
    consequential: bool | None = None


class Resolved(_Data):
    role: Literal["target", "to"]
    ok: bool
    rung: str | None
    point: Point | None
    category: Literal["resolution", "ambiguous"] | None
    message: str
    evidence: list[Obj]
    model_calls: int


class Check(BaseModel):
    """One verdict (postcondition, identity, readback, re-proved fact). Open: each kind adds its own evidence keys."""
    # The verifiers build one as `Check(kind, expected, ok, detail, evidence)` (detail "" unless given); a journal's
    # record validates to the same class, its evidence keys kept as the model's extra fields.
    model_config = ConfigDict(extra="allow", defer_build=True)
    kind: str
    expected: Json = None
    ok: bool
    detail: str | None = None

    if TYPE_CHECKING:
        def __init__(self, kind: str, expected: Json, ok: bool, detail: str | None = "", evidence: dict[str, object] | None = None,
                     /, **fields: Any) -> None: ...
    else:
        def __init__(self, *args, **fields):
            if args:  # a verifier's verdict: positional, evidence last
                fields = {"detail": "", **dict(zip(("kind", "expected", "ok", "detail"), args)), **fields,
                          **(args[4] if len(args) > 4 else {})}
            super().__init__(**fields)

    @property
    def evidence(self) -> dict[str, object]:
        """What was seen: the check's own keys beside kind, expected, ok and detail."""
        return self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {}

    def to_json(self) -> dict[str, object]:
        """The check as its record carries it: kind, expected, ok, detail, then its own evidence keys (open)."""
        return {"kind": self.kind, "expected": self.expected, "ok": self.ok, "detail": self.detail, **self.evidence}


class Checks(_Data):
    """`postconditions` / `checkpoint_reproved` / `start_checked` (the start state, before a run's first input)."""
    ok: bool
    checks: list[Check]


class ActionDispatched(_Data):
    """Written and fsync'd before any input is sent, with the lease generation it was sent under (spec §5)."""
    action: str
    point: Point | None = None
    call: str | None = None
    lease_generation: int


class ActionSent(_Data):
    dispatch_seq: int


class Reading(_Data):
    """One read of a system of record (`effect_baseline`)."""
    # also an effect verdict's baseline and observation; the readers build one as `Reading(ok, value)` or
    # `Reading(False, error=...)`
    ok: bool
    value: Json
    error: str | None = None

    if TYPE_CHECKING:
        def __init__(self, ok: bool, value: Json = None, /, *, error: str | None = None) -> None: ...
    else:
        def __init__(self, *args, **fields):
            if args:
                fields = {"value": None, **dict(zip(("ok", "value"), args)), **fields}
            super().__init__(**fields)

    def to_json(self) -> ReadingDoc:
        doc: ReadingDoc = {"ok": self.ok, "value": self.value}
        if self.error:
            doc["error"] = self.error
        return doc


class EffectVerdict(_Data):
    # what an effect verifier concluded (`effect_verified`), from the baseline and its last reading
    verdict: EffectVerdictName
    baseline: Reading | None
    observed: Reading | None
    reads: int
    waited_s: float
    detail: str | None = None
    changes: list[Obj] | None = None  # a whole-change effect's rows that changed: ChangeDoc each (verify/changes.py)

    def to_json(self) -> EffectDoc:
        doc: EffectDoc = {
            "verdict": self.verdict,
            "baseline": self.baseline.to_json() if self.baseline else None,
            "observed": self.observed.to_json() if self.observed else None,
            "reads": self.reads,
            "waited_s": round(self.waited_s, 3),
            "detail": self.detail or "",
        }
        if self.changes is not None:
            doc["changes"] = cast("list[ChangeDoc]", self.changes)  # built as ChangeDoc by verify/changes.py
        return doc


def _fields(doc: type, rules: Mapping[str, object]) -> dict[str, Any]:
    """`create_model`'s fields (its keyword arguments, which pydantic types `Any`) for the TypedDict `doc`: its keys
    in its order and their types; `rules` gives a key its constraint (`Field(...)`), or the `(type, default)` the
    model and its JSON Schema say instead (a key only some writers set is optional, an item whose keys are open by
    design an open object)."""
    return {key: rule if isinstance(rule := rules.get(key, ...), tuple) else (hint, rule)
            for key, hint in get_type_hints(doc).items()}


def _derived(doc: type, name: str, rules: Mapping[str, object], description: str | None = None) -> type[BaseModel]:
    """The model of a record's data whose definition is the TypedDict `doc` (records/stepdoc.py)."""
    return create_model(name, __base__=_Data, __doc__=description, __module__=__name__, **_fields(doc, rules))


StepVerified = _derived(VerifiedData, "StepVerified", {
    "rung": (str | None, None), "elapsed_ms": (float | None, None),
    "verification": (Verification | None, None), "effect": (Obj | None, None), "result": (Json, None),
    "operator": (str | None, None), "screen_facts": (list[Obj], ...)},
    """A verified step: what a checkpoint is built from (engine steps carry rung and verification, durable kinds
and workflow calls a result, reconciled steps an effect, an operator's answer the operator).""")

StepSkipped = _derived(SkippedData, "StepSkipped", {})


class Rechecked(_Data):
    verdict: Literal["CONFIRMED", "ABSENT", "UNKNOWN", "RETRYABLE"]
    effect: Obj | None
    checks: list[Obj]


class FramesMasked(_Data):
    box: Box | None
    whole_frame: bool
    why: str


class PointerParked(_Data):
    """The pointer moved, no button pressed, to where it hovers nothing the step looks at, before the step's frame."""
    at: Point
    why: str


# ---- durable kinds, workflow calls, children ----

class Asked(_Data):
    index: int
    question: str
    choices: list[str] | None
    type: str | None


class WaitingSignal(_Data):
    index: int | None = None
    signal: str | None


class TimerSet(_Data):
    index: int
    due_epoch: float


class LlmCall(_Data):
    model_calls: int
    model: str | None


class ChildStarted(_Data):
    """A bundle's child step (`child_run` relative to the runs root) or a workflow's child (`run_dir` under it)."""
    index: int | None = None
    child_run: str | None = None
    bundle: str | None = None
    run_dir: str | None = None
    what: str | None = None


# ---- pauses and decisions ----

class EscalationOpened(_Data):
    """The whole pause (`pending`, as pending_escalation.json holds it without `schema`): the record of truth."""
    pause_id: str
    reason: PausedReason
    category: str
    allowed: list[Decision]
    pending: Obj


class Escalated(_Data):
    from_: str = Field(alias="from")
    pause_id: str
    level: str
    operator: str
    os_user: str
    note: str | None
    pending: Obj
    channel: Literal["console", "phone", "cli"] | None = None


class EscalationDropped(_Data):
    pause_id: str
    why: str


class DecisionRecord(_Data):
    """The operator's decision, journaled before it takes effect. A bundle run keeps the whole signed approval
    (digests, votes, signature); a workflow the decision and, for an answer or signal, the value delivered."""
    pause_id: str
    decision: Decision | None
    effect: Literal["landed", "absent"] | None
    operator: str | None
    os_user: str | None
    note: str | None
    decided_at: str | None = None
    channel: Literal["console", "phone", "cli"] | None = None
    votes: list[Obj] | None = None
    payload: Obj | None = None
    task_digest: str | None = None
    checkpoint_digest: str | None = None
    approval_digest: str | None = None
    signature: str | None = None
    value: Json = None


class Patched(_Data):
    pause_id: str
    bundle_dir: str
    digest: str
    template: str
    region: Box
    point: Point


def _record(name: str, data: type[BaseModel], doc: str) -> type[BaseModel]:
    """The envelope of one record type: `type` is the discriminator, `data` that type's model."""
    tag: Any = Literal[name]
    return create_model(_title(name), __base__=RecordEnvelope, __doc__=doc, __module__=__name__, type=(tag, ...), data=(data, ...))


def _title(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Record"


# The envelope's constraints beyond its keys' types; its keys and types are JournalEntry's (records/entry.py), the one
# definition of a journal line.
_ENVELOPE_RULES: dict[str, object] = {"seq": Field(ge=1), "prev_hash": Field(pattern=r"^[0-9a-f]{64}$"),
                                   "hash": Field(pattern=r"^[0-9a-f]{64}$")}


RecordEnvelope: type[BaseModel] = create_model(
    "RecordEnvelope", __config__=ConfigDict(extra="forbid", defer_build=True), __module__=__name__,
    __doc__="`{seq, ts, type, step, data, prev_hash, hash}`; `hash` is the HMAC (installation key) of the rest.",
    **_fields(JournalEntry, _ENVELOPE_RULES))


DATA_MODELS: dict[str, type[BaseModel]] = {
    "run_started": RunStarted,
    "run_finished": RunStop,
    "paused": RunStop,
    "interrupted": Interrupted,
    "halted": Halted,
    "blocked": Blocked,
    "run_resumed": RunResumed,
    "suspended": Suspended,
    "workflow_returned": WorkflowReturned,
    "bundle_upgraded": BundleUpgraded,
    "step_started": StepStarted,
    "resolved": Resolved,
    "identity_checked": Check,
    "postconditions": Checks,
    "checkpoint_reproved": Checks,
    "start_checked": Checks,
    "effect_baseline": Reading,
    "action_dispatched": ActionDispatched,
    "action_sent": ActionSent,
    "effect_verified": EffectVerdict,
    "step_verified": StepVerified,
    "step_skipped": StepSkipped,
    "rechecked": Rechecked,
    "frames_masked": FramesMasked,
    "pointer_parked": PointerParked,
    "asked": Asked,
    "waiting_signal": WaitingSignal,
    "timer_set": TimerSet,
    "llm_call": LlmCall,
    "child_started": ChildStarted,
    "escalation_opened": EscalationOpened,
    "escalated": Escalated,
    "escalation_dropped": EscalationDropped,
    "decision": DecisionRecord,
    "patched": Patched,
}
RECORD_TYPES = tuple(DATA_MODELS)
RECORD_MODELS: dict[str, type[BaseModel]] = {
    name: _record(name, data, f"A `{name}` journal record; its data: {data.__doc__ or data.__name__}")
    for name, data in DATA_MODELS.items()
}

JournalRecord: Any = Annotated[Union[tuple(RECORD_MODELS.values())], Field(discriminator="type")]


@cache
def journal_record_adapter() -> TypeAdapter[Any]:
    """The union's validator, built on first use (the models defer theirs too: importing this module stays cheap)."""
    return TypeAdapter(JournalRecord)


def validate_record(rec: Any) -> BaseModel:
    """One journal record, parsed into its type's model (pydantic.ValidationError if it is not one the runtime writes)."""
    return journal_record_adapter().validate_python(rec)  # type: ignore[no-any-return]
