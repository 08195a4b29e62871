"""The checkpoint the journal implies (checkpoint.json's content), and its digest: pure functions of the records, shared
by the store (which writes it and rebuilds a lagging one) and the runtime's judge (which folds a journal)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from openadapt_flow.records.entry import CheckpointDoc, JournalEntry, step_of
from openadapt_flow.records.states import RecordType, is_a
from openadapt_flow.records.stepdoc import StepEffect

SCHEMA = "openadapt-flow/checkpoint@1"


def checkpoint_from_records(records: list[JournalEntry]) -> CheckpointDoc | None:
    """The checkpoint the journal implies: built from its last `step_verified` (or `step_skipped`) record."""
    results: dict[str, object] = {}
    effects: dict[str, StepEffect] = {}
    last: JournalEntry | None = None
    for r in records:
        if is_a(r, RecordType.STEP_VERIFIED, RecordType.STEP_SKIPPED):
            d = r["data"]
            if d.get("result") is not None:
                results[step_of(r)] = d["result"]
            if d.get("effect") is not None:
                effects[step_of(r)] = d["effect"]
            last = r
    if last is None:
        return None
    d = last["data"]
    return {
        "schema": SCHEMA,
        "seq": last["seq"],
        "journal_hash": last["hash"],
        "step": step_of(last),
        "step_index": d["index"],
        "next_index": d["index"] + 1,
        "verified_by": d.get("verified_by", "runtime"),
        "results": results,
        "effects": effects,
        "screen_facts": d.get("screen_facts", []),
    }


def checkpoint_digest(cp: Mapping[str, Any] | None) -> str:
    if cp is None:
        return "sha256:none"
    return "sha256:" + hashlib.sha256(json.dumps(cp, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
