"""A run whose bundle snapshot cannot be read any more (a power loss left its files empty, a disk error) resumed with
its original bundle: `flow resume RUN --bundle PATH` (or `--upgrade-bundle PATH` naming that same version).

The run's manifest records the digest of the bundle it executes (and the journal's first record pins the manifest).
A bundle at PATH with exactly that digest is byte for byte the bundle the run recorded: it is used, the snapshot is
written again from it (so later resumes, a worker's too, need no flag), and one line says so. Any other digest is
refused (exit 6) in one line naming both digests; a snapshot that still reads well is never replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.errors import FlowError, RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.runtime.operate.teach import effective_bundle
from openadapt_flow.store.base import RunHandle

SNAPSHOT = "bundle"


def snapshot_fault(run: RunHandle, digest: str) -> str | None:
    """Why the run's snapshot is not the bundle it recorded (unreadable, or another digest), or None if it is."""
    try:
        snap = load_bundle(run.artifact_dir(SNAPSHOT))
    except FlowError as e:
        return str(e).splitlines()[0][:200] if str(e) else type(e).__name__
    return None if snap.digest == digest else f"its digest is {snap.digest}, the run recorded {digest}"


def original_bundle(path: Path, digest: str, flag: str = "--bundle") -> LoadedBundle:
    """The bundle at `path` if its digest is the run's recorded `digest`; else RefusedError naming both (a bundle that
    does not load: its own one-line error, exit 2)."""
    loaded = load_bundle(path)
    if loaded.digest != digest:
        raise RefusedError(
            f"{flag} {path}: digest {loaded.digest} differs from the run's recorded digest {digest}; "
            "only the run's original bundle can stand in for its snapshot; refusing"
        )
    return loaded


@dataclass(frozen=True)
class Rewrite:
    """The snapshot to write again from the run's original bundle (`given`, at `path`), and why."""

    given: LoadedBundle
    path: Path
    why: str


def planned_bundle(
    run: RunHandle, digest: str, records: list[JournalEntry], bundle: Path | None, upgrade: Path | None
) -> tuple[LoadedBundle, Rewrite | None]:
    """The bundle a bundle run's resume executes — its snapshot plus the journal's layers (effective_bundle) — or, for
    a snapshot that is not the recorded bundle, the run's original standing in for it and the `Rewrite` that writes
    the snapshot again (`bundle`, --bundle, must be the run's original; `upgrade` serves when it is that same
    version); else the refusal says how to resume. Reads only."""
    given = original_bundle(bundle, digest) if bundle is not None else None
    try:
        return effective_bundle(run, digest, records), None
    except RefusedError:
        why = snapshot_fault(run, digest)
        if why is None:
            raise  # the snapshot is whole: a patch's or an upgrade's folder is what is wrong
    if given is None and upgrade is not None:
        try:
            candidate: LoadedBundle | None = load_bundle(upgrade)
        except FlowError:
            candidate = None
        if candidate is not None and candidate.digest == digest:
            given, bundle = candidate, upgrade
    if given is None or bundle is None:
        raise RefusedError(
            f"{run.ref}/{SNAPSHOT}: the run's bundle snapshot is unreadable or changed ({why}); resume "
            f"with --bundle PATH naming the run's original bundle (digest {digest}); refusing"
        )
    return given, Rewrite(given, bundle, why)


def rewrite_snapshot(
    run: RunHandle, digest: str, records: list[JournalEntry], rw: Rewrite, notice: Callable[[str], None] | None
) -> LoadedBundle:
    """Write the snapshot again from the run's original bundle (under the run's lease); the bundle it now executes."""
    where = f"{run.ref}/{SNAPSHOT}"
    run.remove_artifacts(SNAPSHOT)
    for rel in rw.given.files:
        run.put_artifact(f"{SNAPSHOT}/{rel}", (rw.given.root / rel).read_bytes())
    again = snapshot_fault(run, digest)
    if again is not None:
        raise RefusedError(f"{where}: the snapshot written again from {rw.path} does not read back ({again}); refusing")
    if notice is not None:
        notice(
            f"{where}: the run's bundle snapshot was unreadable ({rw.why}); used the bundle at {rw.path} (digest "
            f"{digest}, the run's own) and wrote the snapshot again from it"
        )
    return effective_bundle(run, digest, records)
