"""The typed shapes of what a step leaves behind: the data of its records (a reading of a system of record, an effect
verdict, the screen facts a checkpoint keeps, a verified step's data), the run ledger's entry, and the fields of a
Python workflow's durable call. Types only, no I/O and no pydantic, so the runtime may name them; records/models.py
derives the validating models of `step_verified` and `step_skipped` from these classes, and its `Reading` and
`EffectVerdict` say what their `to_json()` gives with them: one definition of each shape."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

__all__ = [
    "CallFields",
    "ChangeDoc",
    "ConsumedDecision",
    "EffectDoc",
    "EffectVerdictName",
    "LedgerEntry",
    "PatchInfo",
    "ReadingDoc",
    "RecheckedEffect",
    "ScreenFact",
    "Seal",
    "SkippedData",
    "StepEffect",
    "Verification",
    "VerifiedBy",
    "VerifiedData",
]

VerifiedBy = Literal["runtime", "reconciled", "operator"]
Verification = Literal[
    "strong", "weak", "none"
]  # a declared fact, effect or read-back / only a screen change / nothing
EffectVerdictName = Literal["CONFIRMED", "ABSENT", "CONFLICTING", "UNAVAILABLE", "INDETERMINATE"]


# ---- a step's records ----


class ReadingDoc(TypedDict):
    """One read of a system of record (`effect_baseline`, and an effect verdict's baseline and observation)."""

    ok: bool
    value: object  # the system of record's value: any JSON
    error: NotRequired[str]  # only when the read failed


class ChangeDoc(TypedDict):
    """One row a whole-change effect saw change between its baseline and its reading: its table, how it changed,
    its key, its values (after; before for a removed row; secrets masked; None when not known), and whether it is
    one the step declared (`expected`) or a collateral write."""

    table: str
    kind: Literal["added", "changed", "removed"]
    key: str
    values: dict[str, object] | None
    expected: bool


class EffectDoc(TypedDict):
    """What an effect verifier concluded (`effect_verified`, and a verified step's `effect`)."""

    verdict: EffectVerdictName
    baseline: ReadingDoc | None
    observed: ReadingDoc | None
    reads: int
    waited_s: float
    detail: str
    changes: NotRequired[list[ChangeDoc]]  # a whole-change effect: every row it saw change (at most MAX_LISTED)


class RecheckedEffect(TypedDict):
    """A resume's read-only re-read of an uncertain step's effect (`rechecked`, and a reconciled step's `effect`)."""

    verdict: EffectVerdictName
    baseline: ReadingDoc | None
    observed: ReadingDoc
    read_after_dispatch_s: float
    changes: NotRequired[list[ChangeDoc]]  # a whole-change effect: every row it saw change


StepEffect = EffectDoc | RecheckedEffect  # the `effect` a verified step (and the checkpoint) keeps


class ScreenFact(TypedDict, total=False):
    """A postcondition that one frame can re-prove (resume checks it before acting), as the step's record keeps it:
    its one kind (texts interpolated), and the region where it was found this time."""

    text_present: str
    text_absent: str
    template_present: str
    region: list[int]  # [x, y, w, h], recorded-frame pixels
    relative_to: Literal["target"]


class VerifiedData(TypedDict):
    """A `step_verified` record's data: what a checkpoint is built from. A GUI step carries its rung, time and
    verification; a durable kind or a workflow call its `result`; a reconciled step its `effect`; an operator's
    answer the operator."""

    index: int
    verified_by: VerifiedBy
    rung: NotRequired[str | None]
    elapsed_ms: NotRequired[float]
    verification: NotRequired[Verification]
    effect: NotRequired[StepEffect | None]
    result: NotRequired[object]  # the call's JSON result
    operator: NotRequired[str | None]
    screen_facts: list[ScreenFact]


class SkippedData(TypedDict):
    """A `step_skipped` record's data: the step an operator's `skip` passed over."""

    index: int
    verified_by: Literal["operator"]
    operator: str | None


class PatchInfo(TypedDict):
    """What a `teach` decision cut from the halt frame (patches/<pause_id>/patch.json without its `schema`): the
    digests its approval carries as the decision's payload."""

    pause_id: str
    step: str
    template: str  # the crop, relative to the patched bundle
    region: list[int]  # [x, y, w, h] of the crop on the halt frame
    point: list[int]  # [x, y] inside the crop
    base_flow_sha: str
    patched_flow_sha: str
    crop_sha: str
    bundle_dir: str
    digest: str


# ---- the run ledger (outside every run directory) ----


class Seal(TypedDict):
    """The journal's end (seq, hash) at the run's last state transition; seq 0: nothing sealed yet."""

    seq: int
    hash: str | None


class ConsumedDecision(TypedDict):
    """A pause's decision, used: the journal record that recorded it, the directory that used it, and when."""

    decision: str | None
    seq: int
    hash: str
    path: str
    at: str


class LedgerEntry(TypedDict, total=False):
    """One run's ledger entry (`{}` for a run the ledger never saw): the one place that holds the run, its seal and
    the decisions it used."""

    schema: str
    run_id: str
    updated_at: str
    path: str
    relocated_from: str  # where the run was before it moved (the ledger followed it)
    seal: Seal
    consumed: dict[str, ConsumedDecision]  # pause id -> its used decision


# ---- a Python workflow's durable call ----


class CallFields(TypedDict, total=False):
    """The step a workflow call runs as (`Step(id=..., **fields)`): its kind and what that kind needs."""

    action: str
    call: str
    consequential: bool
    approval: Literal["before"] | None
    question: str
    choices: list[str] | None
    type: str | None
    signal: str
    seconds: float
    bundle: str
    params: dict[str, object]
