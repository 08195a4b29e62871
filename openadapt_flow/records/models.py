"""Typed journal records: the envelope `{seq, ts, type, step, data, prev_hash, hash}` of every line of
`journal.jsonl`, and the `data` of each record type the runtime writes, as a union discriminated on `type`.

The models accept exactly what the runtime writes (spec §5, §7). `data` models forbid unknown keys; a key that
only some writers of a type set is optional. Items whose keys are open by design stay open objects: check
evidence (`Check.to_json()` spreads each check's own evidence keys), rung evidence, step results (a tool's or a
workflow's JSON output) and effect readings (a system of record's value). Each kind's data is defined once, as a
TypedDict (records/kinds.py, records/stepdoc.py, records/pausedoc.py: what `append` is checked against), and its model
derived from it here; the three verdicts the verifiers build as objects (`Check`, `Reading`, `EffectVerdict`) are
classes whose `to_json()` gives their TypedDict (`CheckDoc`, `ReadingDoc`, `EffectDoc`; a test holds their keys equal).
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, Union, cast, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model

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
from openadapt_flow.records.states import PausedReason, RunState, TransactionOutcome
from openadapt_flow.records.stepdoc import ChangeDoc as ChangeDoc  # the verifiers name it here
from openadapt_flow.records.stepdoc import EffectDoc, ReadingDoc, SkippedData, Verification, VerifiedData
from openadapt_flow.records.stepdoc import EffectVerdictName as EffectVerdictName  # the verifiers name it here

Json = Any  # any JSON value: a tool's result, an answer, a signal's data
Obj = dict[str, Any]  # an open object in a JSON Schema (`additionalProperties: true`): what the models say, not Python
Point = list[int]  # [x, y]
Box = list[int]  # [x, y, w, h]
Decision = Literal["continue", "skip", "reject", "teach", "escalate", "reconcile", "answer", "signal"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


def _fields(doc: type, rules: Mapping[str, object]) -> dict[str, Any]:
    """`create_model`'s fields (its keyword arguments, which pydantic types `Any`) for the TypedDict `doc`: its keys
    in its order and their types; `rules` gives a key its constraint (`Field(...)`), or the `(type, default)` the
    model and its JSON Schema say instead (an enum's value checked against its enum, an item whose keys are open by
    design an open object). A `NotRequired` key no rule names is optional (default None); a key that is a Python
    keyword (`from`) is the field `from_`, aliased."""
    fields: dict[str, Any] = {}
    marked = get_type_hints(doc, include_extras=True)  # NotRequired kept (`__optional_keys__` misses it under PEP 563)
    for key, hint in get_type_hints(doc).items():
        rule = rules.get(key, None if get_origin(marked[key]) is NotRequired else ...)
        if keyword.iskeyword(key):
            fields[key + "_"] = (hint, Field(alias=key))
        else:
            fields[key] = rule if isinstance(rule, tuple) else (hint, rule)
    return fields


def _derived(doc: type, name: str, rules: Mapping[str, object], description: str | None = None) -> type[BaseModel]:
    """The model of a record's data whose definition is the TypedDict `doc` (records/kinds.py, records/stepdoc.py)."""
    return create_model(
        name,
        __base__=_Data,
        __doc__=description if description is not None else doc.__doc__,
        __module__=__name__,
        **_fields(doc, rules),
    )


# ---- the start and end of a run ----

RunStarted = _derived(RunStartedData, "RunStarted", {})
RunStop = _derived(
    RunStopData,
    "RunStop",
    {
        "state": (RunState, ...),
        "paused_reason": (PausedReason | None, None),
        "transaction_outcome": (TransactionOutcome | None, None),
        "outcome_evidence": (list[Obj] | None, None),
    },
)
Interrupted = _derived(
    InterruptedData,
    "Interrupted",
    {"transaction_outcome": (TransactionOutcome | None, None), "outcome_evidence": (list[Obj] | None, None)},
)
Halted = _derived(HaltedData, "Halted", {"evidence": (list[Obj] | None, None)})
Blocked = _derived(BlockedData, "Blocked", {"observed": (Json, ...), "limit": (Json, ...)})
RunResumed = _derived(RunResumedData, "RunResumed", {"decision": (Decision | None, ...)})
Suspended = _derived(SuspendedData, "Suspended", {})
WorkflowReturned = _derived(WorkflowReturnedData, "WorkflowReturned", {"result": (Json, ...)})
BundleUpgraded = _derived(BundleUpgradedData, "BundleUpgraded", {})


# ---- one step ----

StepStarted = _derived(StepStartedData, "StepStarted", {})
Resolved = _derived(ResolvedData, "Resolved", {"evidence": (list[Obj], ...)})


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

        def __init__(
            self,
            kind: str,
            expected: Json,
            ok: bool,
            detail: str | None = "",
            evidence: dict[str, object] | None = None,
            /,
            **fields: Any,
        ) -> None: ...
    else:

        def __init__(self, *args, **fields):
            if args:  # a verifier's verdict: positional, evidence last
                fields = {
                    "detail": "",
                    **dict(zip(("kind", "expected", "ok", "detail"), args)),
                    **fields,
                    **(args[4] if len(args) > 4 else {}),
                }
            super().__init__(**fields)

    @property
    def evidence(self) -> dict[str, object]:
        """What was seen: the check's own keys beside kind, expected, ok and detail."""
        return self.__pydantic_extra__ if self.__pydantic_extra__ is not None else {}

    def to_json(self) -> CheckDoc:
        """The check as its record carries it: kind, expected, ok, detail, then its own evidence keys (open: a TypedDict
        cannot name them, so the cast)."""
        return cast(
            CheckDoc,
            {"kind": self.kind, "expected": self.expected, "ok": self.ok, "detail": self.detail, **self.evidence},
        )


Checks = _derived(ChecksData, "Checks", {"checks": (list[Check], ...)})
ActionDispatched = _derived(ActionDispatchedData, "ActionDispatched", {})
ActionSent = _derived(ActionSentData, "ActionSent", {})


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


StepVerified = _derived(
    VerifiedData,
    "StepVerified",
    {
        "rung": (str | None, None),
        "elapsed_ms": (float | None, None),
        "verification": (Verification | None, None),
        "effect": (Obj | None, None),
        "result": (Json, None),
        "operator": (str | None, None),
        "screen_facts": (list[Obj], ...),
    },
    """A verified step: what a checkpoint is built from (engine steps carry rung and verification, durable kinds
and workflow calls a result, reconciled steps an effect, an operator's answer the operator).""",
)

StepSkipped = _derived(SkippedData, "StepSkipped", {}, "")  # no description in its schema, as before
Rechecked = _derived(RecheckedData, "Rechecked", {"effect": (Obj | None, ...), "checks": (list[Obj], ...)})
FramesMasked = _derived(FramesMaskedData, "FramesMasked", {})
PointerParked = _derived(PointerParkedData, "PointerParked", {})


# ---- durable kinds, workflow calls, children ----

Asked = _derived(AskedData, "Asked", {})
WaitingSignal = _derived(WaitingSignalData, "WaitingSignal", {})
TimerSet = _derived(TimerSetData, "TimerSet", {})
LlmCall = _derived(LlmCallData, "LlmCall", {})
ChildStarted = _derived(ChildStartedData, "ChildStarted", {})


# ---- pauses and decisions ----

EscalationOpened = _derived(
    EscalationOpenedData,
    "EscalationOpened",
    {"reason": (PausedReason, ...), "allowed": (list[Decision], ...), "pending": (Obj, ...)},
)
Escalated = _derived(
    EscalatedData, "Escalated", {"pending": (Obj, ...), "channel": (Literal["console", "phone", "cli"] | None, None)}
)
EscalationDropped = _derived(EscalationDroppedData, "EscalationDropped", {})
# Records of earlier code hold less than a decision's whole approval (JournaledDecision reads them with `.get`), but a
# `decision` record always names the decision, its effect and who decided (None where nobody did)
DecisionRecord = _derived(
    JournaledDecision,
    "DecisionRecord",
    {
        "decision": (Decision | None, ...),
        "effect": (Literal["landed", "absent"] | None, ...),
        "operator": (str | None, ...),
        "os_user": (str | None, ...),
        "note": (str | None, ...),
        "channel": (Literal["console", "phone", "cli"] | None, None),
        "votes": (list[Obj] | None, None),
        "payload": (Obj | None, None),
        "value": (Json, None),
    },
    """The operator's decision, journaled before it takes effect. A bundle run keeps the whole signed approval
(digests, votes, signature); a workflow the decision and, for an answer or signal, the value delivered.""",
)
Patched = _derived(PatchedData, "Patched", {})


def _record(name: str, data: type[BaseModel], doc: str) -> type[BaseModel]:
    """The envelope of one record type: `type` is the discriminator, `data` that type's model."""
    tag: Any = Literal[name]
    return create_model(
        _title(name), __base__=RecordEnvelope, __doc__=doc, __module__=__name__, type=(tag, ...), data=(data, ...)
    )


def _title(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Record"


# The envelope's constraints beyond its keys' types; its keys and types are JournalEntry's (records/entry.py), the one
# definition of a journal line.
_ENVELOPE_RULES: dict[str, object] = {
    "seq": Field(ge=1),
    "prev_hash": Field(pattern=r"^[0-9a-f]{64}$"),
    "hash": Field(pattern=r"^[0-9a-f]{64}$"),
}


RecordEnvelope: type[BaseModel] = create_model(
    "RecordEnvelope",
    __config__=ConfigDict(extra="forbid", defer_build=True),
    __module__=__name__,
    __doc__="`{seq, ts, type, step, data, prev_hash, hash}`; `hash` is the HMAC (installation key) of the rest.",
    **_fields(JournalEntry, _ENVELOPE_RULES),
)


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
