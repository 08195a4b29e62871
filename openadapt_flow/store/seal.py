"""The state seal (spec §8): state names the journal's end (seq, hash) and is HMAC-signed with the installation key,
so a cut journal tail or an edited state is detected — the same check for every store."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any, cast, overload

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.rundoc import StateBody, StateDoc, StateFields
from openadapt_flow.records.states import RunState
from openadapt_flow.store.base import JournalWriter
from openadapt_flow.store.journal import now_iso

SCHEMA_PREFIX = "openadapt-flow/"


def state_seal(key: bytes, doc: Mapping[str, object]) -> str:
    body = {k: v for k, v in doc.items() if k != "seal"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()
    return hmac.new(key, b"openadapt-flow state seal\0" + canonical, hashlib.sha256).hexdigest()


def verify_seal(doc: Any, records: list[JournalEntry], key: bytes, where: str, journal_where: str) -> StateDoc | None:
    """A state document, verified: sealed with this installation's key, and the journal reaches the end it names.

    The journal may be AHEAD of the seal (records written before a crash, or between transitions); BEHIND is a
    cut tail or an older copy of the journal. None when the run has neither state nor journal yet.
    """
    if doc is None:
        if records:
            raise RefusedError(f"{where}: missing while the journal has {len(records)} records (deleted); refusing")
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("seal"), str):
        raise RefusedError(f"{where}: not sealed (edited, or not written by this tool); refusing")
    if not hmac.compare_digest(state_seal(key, doc), doc["seal"]):
        raise RefusedError(f"{where}: its seal does not verify (edited, or sealed with another key); refusing")
    seq, end = doc.get("journal_seq"), doc.get("journal_hash")
    if not isinstance(seq, int) or seq < 0:
        raise RefusedError(f"{where}: names no journal end; refusing")
    if seq > len(records) or (seq and records[seq - 1]["hash"] != end):
        raise RefusedError(
            f"{journal_where}: ends at seq {len(records)}, but state.json was sealed at seq {seq} "
            f"(the journal's tail was cut, or it is another copy's); refusing"
        )
    return cast(StateDoc, doc)  # its seal proves this installation wrote it, as a StateDoc


@overload
def sealed_state(state: RunState, fields: StateFields, journal: JournalWriter) -> StateDoc: ...
@overload
def sealed_state(state: RunState, fields: StateFields, journal: None) -> StateBody: ...
def sealed_state(state: RunState, fields: StateFields, journal: JournalWriter | None) -> StateBody | StateDoc:
    """The state document a transition writes; with the run's journal, sealed with its end (spec §8)."""
    body: StateBody = {
        "schema": SCHEMA_PREFIX + "state@1",
        "state": str(state),
        "paused_reason": None,
        "transaction_outcome": None,
        "last_checkpoint_seq": None,
        **fields,
        "updated_at": now_iso(),
    }
    if journal is None:
        return body
    journal.sync()  # the seal may name a record that was appended without its own fsync
    doc: StateDoc = {
        **body,
        "journal_seq": journal.seq,
        "journal_hash": journal.last_hash if journal.seq else None,
        "seal": None,
    }
    doc["seal"] = state_seal(journal.key, doc)
    return doc
