"""The typed shapes the run store reads and writes: the journal's entry (what `JournalWriterBase.append` returns and a
journal's load yields) and the run documents defined here (`StateDoc`, `CheckpointDoc`). Types only, no I/O and no
pydantic, so the pure parts of the runtime may name them; records/models.py and records/runfiles.py derive their
validating models (and JSON Schemas) from these classes: one definition of each."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from openadapt_flow.records.stepdoc import ScreenFact, StepEffect, VerifiedBy

__all__ = ["CheckpointDoc", "JournalEntry", "SchemaHead", "StateDoc", "VerifiedBy", "step_of"]


class SchemaHead(TypedDict):
    """The `schema` a run file carries first (`openadapt-flow/<name>@1`): the base of every stored document's type."""

    schema: str


class JournalEntry(TypedDict):
    """One journal line, as written and as read: `{seq, ts, type, step, data, prev_hash, hash}`.

    A TypedDict, not a model: it costs nothing on the hot path (an entry is the very dict that was hashed and written,
    so the bytes and the chain are exactly what they were) while mypy checks every key. `data` is the record type's
    own object, validated by its model in records/models.py, which derives `RecordEnvelope` (the envelope's schema)
    from this class: one definition of the envelope."""

    seq: int
    ts: str
    type: str
    step: str | None
    data: dict[str, Any]
    prev_hash: str
    hash: str


def step_of(rec: JournalEntry) -> str:
    """The step a step's record names (a step's records always carry one; "" for a run-level record)."""
    return rec["step"] or ""


class StateBody(SchemaHead):
    """What a transition writes into state.json before the seal names the journal's end (`StateDoc` as stored)."""

    state: str  # a RunState's value
    paused_reason: str | None  # a PausedReason's value
    transaction_outcome: str | None  # a TransactionOutcome's value
    last_checkpoint_seq: int | None
    halt_category: NotRequired[str | None]
    message: NotRequired[str | None]
    updated_at: str


class StateDoc(StateBody):
    """state.json: replaced on every transition; sealed (HMAC, installation key) over the journal's end."""

    journal_seq: NotRequired[int | None]
    journal_hash: NotRequired[str | None]
    seal: NotRequired[str | None]


class CheckpointDoc(SchemaHead):
    """checkpoint.json: the last verified (or skipped) step, as the journal's records up to `seq` imply it."""

    seq: int
    journal_hash: str
    step: str
    step_index: int
    next_index: int
    verified_by: VerifiedBy
    results: dict[str, object]  # each step's JSON result
    effects: dict[str, StepEffect]  # each step's effect verdict, where it had one
    screen_facts: list[ScreenFact]  # the last step's one-frame facts: resume re-proves them before acting
