"""A batch's results: one record per item in a JSON lines file and the same rows in a CSV beside it, both replaced
atomically after every item (a killed batch leaves the items it finished; fsync'd at the batch's end), and the
summary's counts."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from openadapt_flow.runtime.batch.status import ItemResult, ItemStatus
from openadapt_flow.store.atomic import write_files_atomic

COLUMNS = ("item", "key", "status", "run_dir", "reason", "effect")


class BatchResult(BaseModel):
    """One line of results.jsonl (`flow schema batch-result`)."""

    model_config = ConfigDict(extra="forbid")

    item: int = Field(description="the item's line in the items file")
    key: str = Field(description="the item's key: its --key column's value, or h-<hash of its values>")
    status: ItemStatus
    run_dir: str | None = Field(description="the item's run (None: no run was started)")
    reason: str = Field(description="why it is not done, and what to do; empty when done")
    effect: str | None = Field(
        description="the effect verdict of its consequential steps (CONFIRMED, ABSENT, "
        "NOT_VERIFIED, …); None: none was dispatched"
    )


def csv_beside(out: Path) -> Path:
    return out.with_suffix(".csv")


def write_results(out: Path, results: Sequence[ItemResult], *, sync: bool = True) -> None:
    """Replace `out` (JSON lines) and the CSV beside it with `results`. `sync=False` while the batch goes on (the
    item ledger, fsync'd, is what a batch run again goes by; these files are its report), `sync=True` at its end."""
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r.record(), ensure_ascii=False) + "\n" for r in results)
    buf = io.StringIO(newline="")
    writer = csv.writer(buf)
    writer.writerow(COLUMNS)
    for r in results:
        rec = r.record()
        writer.writerow(["" if rec[c] is None else rec[c] for c in COLUMNS])
    # the CSV sits beside the JSON lines: one fsync of their folder for both
    write_files_atomic(
        out.parent, {out.name: lines.encode("utf-8"), csv_beside(out).name: buf.getvalue().encode("utf-8")}, sync=sync
    )


def counts(results: Sequence[ItemResult]) -> dict[str, int]:
    """How many items ended in each status (every status named, zeros included)."""
    seen = Counter(r.status for r in results)
    return {s.value: seen.get(s, 0) for s in ItemStatus}


def summary_line(results: Sequence[ItemResult]) -> str:
    """`3 items: 2 done, 1 halted` — the statuses that occurred, in the vocabulary's order."""
    parts = [f"{n} {status}" for status, n in counts(results).items() if n]
    return f"{len(results)} item{'s' if len(results) != 1 else ''}: " + (", ".join(parts) or "none")
