"""A run's records by name (spec §7): the file each record is in a run directory, which every store uses to name a
record in messages and which `flow export` writes; the manifest's digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import datetime

from openadapt_flow.errors import RunDirError
from openadapt_flow.records.states import RunState
from openadapt_flow.store.checkpoint import CHECKPOINT
from openadapt_flow.store.escalation import APPROVAL, DECISIONS, PENDING
from openadapt_flow.store.journal import JOURNAL_FILE
from openadapt_flow.store.lease import LEASE

__all__ = [
    "APPROVAL",
    "BUNDLE",
    "CHECKPOINT",
    "CHILDREN",
    "DECISIONS",
    "FRAMES",
    "INCIDENT",
    "JOURNAL_FILE",
    "LEASE",
    "MANIFEST",
    RunState.PENDING,
    "REPORT_FILES",
    "RUN_FILES",
    "STATE",
    "digest_manifest",
    "free_run_name",
]

MANIFEST = "manifest.json"
STATE = "state.json"
INCIDENT = "incident.json"
REPORT_FILES = ("report.json", "REPORT.md", "report.html")
FRAMES = "frames"
BUNDLE = "bundle"
CHILDREN = "children"  # a Python workflow's child runs (ctx.replay, ctx.child), one folder per call
RUN_FILES = {
    "manifest": MANIFEST,
    "state": STATE,
    "journal": JOURNAL_FILE,
    "checkpoint": CHECKPOINT,
    "lease": LEASE,
    "pending": PENDING,
    "approval": APPROVAL,
    "incident": INCIDENT,
    "report": REPORT_FILES[0],
    "report_md": REPORT_FILES[1],
    "report_html": REPORT_FILES[2],
}


def digest_manifest(manifest: Mapping[str, object]) -> str:
    """Digest of a manifest (as written, `schema` included) minus `child_runs`, the one field appended after the start."""
    body = {k: v for k, v in manifest.items() if k != "child_runs"}
    return "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


SAME_SECOND = 1000  # runs started in one second that still get a name of their own


def free_run_name(take: Callable[[str], bool], where: str, now: datetime | None = None) -> str:
    """The name a run started without one gets, in every store: `replay-YYYYMMDD-HHMMSS`, then `-2`, `-3`… for runs
    started in the same second. `take(name)` claims the name atomically (True) or finds it taken (False); a store's
    error while claiming is `take`'s to raise. The one loop that finds a free run name."""
    stamp = (now or datetime.now()).strftime("replay-%Y%m%d-%H%M%S")
    for n in range(1, SAME_SECOND + 1):
        name = stamp if n == 1 else f"{stamp}-{n}"
        if take(name):
            return name
    raise RunDirError(f"{where}: could not find a free run name for {stamp}")
