"""A `fixture:` run resumed in a new process: its recording starts again at the first screen (docs/decisions.md,
"Resume on a fixture: refused where the screen moved on")."""

from __future__ import annotations

import shlex

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.fixture import FixtureBackend
from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.rundoc import ManifestDoc
from openadapt_flow.records.states import RecordType, is_a


def refuse_restarted_fixture(backend: Backend, ref: str, manifest: ManifestDoc, records: list[JournalEntry]) -> None:
    """Refuse (exit 6, nothing sent, the decision kept unused) to resume a run that sent input on a fixture session
    that starts again at its first screen: every step after the checkpoint would look for its target on the wrong
    screen (and pause again: "not found")."""
    if not isinstance(backend, FixtureBackend) or not backend.untouched:
        return
    dispatched = {r.get("step") for r in records if is_a(r, RecordType.ACTION_DISPATCHED)}
    # an input that landed and was verified changed this fixture's screen; a session untouched since is another one
    sent = [r.get("step") for r in records if is_a(r, RecordType.STEP_VERIFIED) and r.get("step") in dispatched]
    if not sent:
        return  # no input landed: the first screen is where it stopped
    bundle = shlex.quote(str((manifest.get("bundle") or {}).get("path") or "BUNDLE"))
    raise RefusedError(
        f"{ref}: the screen is not where the run stopped: a fixture: URL plays its recording in this process from the "
        f"first screen, and this run had already sent input (last at step {sent[-1]!r}); nothing was sent, any decision "
        f"stays recorded. Start a new run instead (flow replay {bundle} --durable ...), after `flow patch apply "
        f"{shlex.quote(ref)} {bundle}` to keep what a teach decision taught"
    )
