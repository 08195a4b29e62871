"""`flow resume --upgrade-bundle PATH` (spec §2): adopt a new version of a run's bundle mid-run, only where it cannot
change what was already done.

Adopted only when every step up to and including the last checkpoint — and any later step that was dispatched —
is unchanged (same ids in the same places, same definition, same template bytes), the recorded params still bind,
and the screen size is the same. The new version is snapshot into `upgrades/<n>/`, and the upgrade is journaled
(`bundle_upgraded`, with both digests); later resumes use that snapshot, checked against the journaled digest.
Anything else is refused (exit 6) and the run keeps its bundle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.bundle.models import Step
from openadapt_flow.bundle.params import bind_params
from openadapt_flow.errors import FlowError, RefusedError
from openadapt_flow.records.checkpoint import checkpoint_from_records
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.states import RecordType, is_a
from openadapt_flow.store.base import JournalWriter, RunHandle

UPGRADES = "upgrades"
RECORD: Final = RecordType.BUNDLE_UPGRADED


def _templates(step: Step) -> list[str]:
    """Every bundle file a step names (target, drag end, template postconditions)."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("template", "template_present") and isinstance(x, str):
                    out.append(x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(step.model_dump(mode="json"))
    return out


def _same_step(old: LoadedBundle, new: LoadedBundle, i: int) -> str | None:
    """Why step i differs between the two versions, or None."""
    if i >= len(new.model.steps):
        return f"step {i + 1} ({old.model.steps[i].id!r}) is gone"
    a, b = old.model.steps[i], new.model.steps[i]
    if a.id != b.id:
        return f"step {i + 1} is {b.id!r}, was {a.id!r}"
    if a.model_dump(mode="json") != b.model_dump(mode="json"):
        return f"step {a.id!r} changed"
    for rel in _templates(a):
        if (old.root / rel).read_bytes() != (new.root / rel).read_bytes():
            return f"template {rel} of step {a.id!r} changed"
    return None


@dataclass(frozen=True)
class Upgrade:
    """A new version found adoptable (`check_upgrade`): the bundle, and the last step index it keeps unchanged."""

    new: LoadedBundle
    unchanged_through: int


def check_upgrade(
    records: list[JournalEntry], current: LoadedBundle, params: Mapping[str, object], path: Path
) -> Upgrade | None:
    """Check the new version against what the run already did (reads only): the upgrade to adopt, None when it is
    the run's bundle already, RefusedError when it cannot be adopted."""
    try:
        new = load_bundle(path)
    except FlowError as e:
        raise RefusedError(f"--upgrade-bundle {path}: not a usable bundle ({e}); the run keeps its bundle") from None
    if new.digest == current.digest:
        return None
    cp = checkpoint_from_records(records)
    done = cp["step_index"] if cp else -1
    index = {s.id: i for i, s in enumerate(current.model.steps)}
    dispatched = [index[r["step"]] for r in records if is_a(r, RecordType.ACTION_DISPATCHED) and r["step"] in index]
    last = max([done, *dispatched])
    why = next((w for w in (_same_step(current, new, i) for i in range(last + 1)) if w), None)
    if why is None and new.model.screen != current.model.screen:
        why = "the screen size changed"
    if why is None:
        recorded = {
            k: v for k, v in params.items() if not (isinstance(v, dict) and "secret_env" in v)
        }  # the manifest's
        try:
            bind_params(new.model, recorded)
        except FlowError as e:
            why = f"the run's params do not bind to it ({e})"
    if why is not None:
        raise RefusedError(
            f"--upgrade-bundle {path}: {why}; steps up to the last checkpoint must be unchanged; refusing"
        )
    return Upgrade(new, last)


def adopt_upgrade(
    run: RunHandle, journal: JournalWriter, records: list[JournalEntry], current: LoadedBundle, up: Upgrade
) -> LoadedBundle:
    """Snapshot the checked new version into `upgrades/<n>/` and journal the upgrade (under the run's lease)."""
    new = up.new
    n = sum(1 for r in records if is_a(r, RECORD)) + 1
    rel = f"{UPGRADES}/{n}"
    run.remove_artifacts(rel)  # a snapshot left by an upgrade that died before it was journaled
    for f in new.files:
        run.put_artifact(f"{rel}/{f}", (new.root / f).read_bytes())
    dest = run.artifact_dir(rel)
    adopted = load_bundle(dest)
    if adopted.digest != new.digest:
        raise RefusedError(f"{dest}: snapshot of the new bundle does not match it; refusing")
    journal.append(
        RECORD,
        None,
        {
            "bundle_dir": rel,
            "digest": adopted.digest,
            "from_digest": current.digest,
            "source": str(new.root.resolve()),
            "unchanged_through": up.unchanged_through,
        },
    )
    return adopted
