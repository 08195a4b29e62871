"""The journal's typed entry: what `JournalWriterBase.append` returns and a journal's load yields (types only, no I/O,
so the pure parts of the runtime may name it)."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["JournalEntry", "step_of"]


class JournalEntry(TypedDict):
    """One journal line, as written and as read: `{seq, ts, type, step, data, prev_hash, hash}`.

    A TypedDict, not a model: it costs nothing on the hot path (an entry is the very dict that was hashed and written,
    so the bytes and the chain are exactly what they were) while mypy checks every key. `data` is the record type's
    own object, validated by its model in store/records.py, which derives `RecordEnvelope` (the envelope's schema)
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
