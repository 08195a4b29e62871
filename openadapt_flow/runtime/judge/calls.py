"""A workflow run's calls, read from its journal: one `step_started` header per call (its position, kind, name and
a keyed digest of its arguments), then every record of its step id. Pure: what resume, reconcile and outcome
classification need to know of a workflow run's history, with no runtime objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from openadapt_flow.bundle.models import Step
from openadapt_flow.records.entry import JournalEntry, step_of
from openadapt_flow.records.states import RecordType, is_a


@dataclass
class Call:
    """What the journal says about one call position: its header and every record of its step id."""

    index: int
    step: str
    kind: str
    name: str
    inputs: str | None = None  # keyed digest of the call's arguments (None in journals written before it was kept)
    records: list[JournalEntry] = field(default_factory=list)

    def last(self, type_: RecordType | str) -> JournalEntry | None:
        """The call's last record of `type_` (a RecordType; a workflow's caller may still name it as its string)."""
        return next((r for r in reversed(self.records) if is_a(r, RecordType(type_))), None)

    @property
    def verified(self) -> JournalEntry | None:
        return self.last(RecordType.STEP_VERIFIED)

    @property
    def open_dispatch(self) -> JournalEntry | None:
        """The last action_dispatched, if nothing verified the call after it."""
        d, v = self.last(RecordType.ACTION_DISPATCHED), self.verified
        return d if d is not None and (v is None or v["seq"] < d["seq"]) else None

    def decision_after(self, seq: int) -> Mapping[str, object] | None:
        """The data of the call's last `decision` record after `seq` (None: no decision since)."""
        return next(
            (r["data"] for r in reversed(self.records) if is_a(r, RecordType.DECISION) and r["seq"] > seq), None
        )


def history(records: list[JournalEntry]) -> dict[int, Call]:
    """Calls by position, from the journal's `step_started` headers."""
    calls: dict[int, Call] = {}
    by_step: dict[str, Call] = {}
    for r in records:
        if is_a(r, RecordType.STEP_STARTED) and "name" in r["data"] and r["step"] not in by_step:
            call = Call(r["data"]["index"], step_of(r), r["data"]["action"], r["data"]["name"], r["data"].get("inputs"))
            calls[call.index] = by_step[call.step] = call
        if r["step"] in by_step:
            by_step[r["step"]].records.append(r)
    return calls


def call_steps(records: list[JournalEntry]) -> list[Step]:
    """The calls as Steps (id and whether they write): what outcome classification needs of a workflow run."""
    return [
        Step(
            id=c.step,
            action="tool",
            call=f"{c.kind}:{c.name}",
            consequential=bool(c.records[0]["data"].get("consequential")),
        )
        for c in sorted(history(records).values(), key=lambda c: c.index)
    ]
