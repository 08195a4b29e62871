"""The report's summary: outcome, running time and step counts, taken from the journal and the step rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.states import RecordType, RunState, is_a

STARTS = (RecordType.RUN_STARTED, RecordType.RUN_RESUMED)
STOPS = (RecordType.PAUSED, RecordType.RUN_FINISHED, RecordType.INTERRUPTED)


def _ts(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _seconds(a: Any, b: Any) -> float | None:
    start, end = _ts(a), _ts(b)
    return None if start is None or end is None else max(0.0, (end - start).total_seconds())


def running_seconds(records: list[JournalEntry]) -> float | None:
    """Time the run's processes spent on it: each start or resume to the stop that followed (a pause's wait is not
    counted); a segment with no recorded stop ends at the last record."""
    total, start, seen = 0.0, None, False
    for r in records:
        if is_a(r, *STARTS):
            start = r.get("ts")
        elif is_a(r, *STOPS) and start is not None:
            total += _seconds(start, r.get("ts")) or 0.0
            start, seen = None, True
    if start is not None and records:
        total += _seconds(start, records[-1].get("ts")) or 0.0
        seen = True
    return round(total, 3) if seen else None


def step_ms(row: dict[str, Any]) -> float | None:
    """A step's own time: its verified record's elapsed ms, else (halted) from its start to the halt."""
    if row.get("elapsed_ms") is not None:
        return round(float(row["elapsed_ms"]), 1)
    span = _seconds(row.get("started_at"), row.get("halted_at"))
    return round(span * 1000, 1) if span is not None else None


def summarize(state: str | None, rows: list[dict[str, Any]], records: list[JournalEntry]) -> dict[str, Any]:
    """Outcome (state and exit code), running time, and how many steps were verified, weakly verified, halted."""
    statuses = [r.get("status") for r in rows]
    weak = sum(1 for r in rows if r.get("status") == "verified" and r.get("verification") == "weak")
    try:
        exit_code: int | None = RunState(state).exit_code
    except ValueError:
        exit_code = None
    return {
        "state": state,
        "exit_code": exit_code,
        "duration_s": running_seconds(records),
        "steps_total": len(rows),
        "verified": statuses.count("verified") - weak,
        "weak": weak,
        "halted": statuses.count("halted"),
        "skipped": statuses.count("skipped"),
        "not_run": statuses.count("not_run"),
        "step_ms": [
            {"id": r["id"], "ms": step_ms(r), "status": r.get("status"), "weak": r.get("verification") == "weak"}
            for r in rows
            if r.get("status") != "not_run"
        ],
    }
